/**
 * The SSH face of a simulated host: an ssh2 server on the host's own loopback address that
 * looks like Windows OpenSSH (its identification string, cmd.exe command semantics, SFTP with
 * /C:/ paths). Public-key authentication only, against the configured authorized keys (which
 * are also written to C:\ProgramData\ssh\administrators_authorized_keys); passwords and
 * keyboard-interactive are refused. Non-administrator accounts can be added with their own
 * keys (as C:\Users\<name>\.ssh\authorized_keys holds them); their SFTP requests are checked
 * against the file system's DACLs, and they may not run commands (the simulated host runs
 * only the operator's catalog scripts, which need an administrator). It follows the machine's power: at shutdown every
 * connection drops and the port stops listening until the machine is up again (and not while
 * the refuse-connections fault is on). Removing an HNS network that bound the host's adapter
 * drops every connection too, and refuses new ones for a moment, as the address moves back to
 * the adapter. powershell.exe without `-InputFormat None` exits only once the client ends its
 * stdin (remote-commands.ts powerShellReadsStdin). Sockets are accepted here and handed to ssh2, so faults
 * can slow, drop or refuse them, and a changed host key applies to new connections.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import ssh2, { type Connection, type ParsedKey, type Server, type ServerChannel } from 'ssh2';
import { HostFaults } from './faults.ts';
import { administratorPrincipal, type Principal, standardUserPrincipal } from './file-security.ts';
import type { SimMachine } from './machine.ts';
import {
  classifyCommand,
  powerShellReadsStdin,
  runRemoteCommand,
  sshWorkingDirectory,
} from './remote-commands.ts';
import { serveSftp } from './sftp-server.ts';
import { generateSshKeyPair } from './ssh-keys.ts';
import { ThrottledSocket } from './throttled-socket.ts';

/** What Windows Server's OpenSSH says when a client connects. */
export const windowsOpenSshIdent = 'OpenSSH_for_Windows_9.5';

/** Where Windows OpenSSH reads the keys of administrators. */
export const administratorsAuthorizedKeys = 'C:\\ProgramData\\ssh\\administrators_authorized_keys';

export type HostKeyType = 'ed25519' | 'rsa';

export interface SimSshServerOptions {
  machine: SimMachine;
  /** Port on the machine's address; 0 (default) lets the OS choose. */
  port?: number;
  /** OpenSSH public key lines (`ssh-ed25519 AAAA... comment`) allowed to log in. */
  authorizedKeys: readonly (string | Buffer)[];
  /** Accounts that exist (case-insensitive). Default: Administrator. */
  users?: readonly string[];
  hostKeyType?: HostKeyType;
  /**
   * How long the host's address is gone when removing an HNS network resets its adapter
   * (machine.removeHnsNetwork): open connections drop and new ones are refused. Default 1500 ms.
   */
  networkResetDowntimeMs?: number;
}

/** The SHA-256 fingerprint of an SSH public key (wire format), as OpenSSH prints it. */
export function sshFingerprint(publicKeyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(publicKeyBlob).digest('base64').replace(/=+$/, '')}`;
}

function parsePublicKey(line: string | Buffer): ParsedKey {
  const parsed = ssh2.utils.parseKey(line);
  if (parsed instanceof Error) {
    throw new RangeError(
      `Cannot use authorized key "${String(line).slice(0, 60)}": ${parsed.message}; give an OpenSSH public key line such as "ssh-ed25519 AAAA... user@host"`,
    );
  }
  return Array.isArray(parsed) ? parsed[0]! : parsed;
}

interface HostKey {
  privateKey: string;
  publicKey: string;
  fingerprint: string;
}

function generateHostKey(type: HostKeyType): HostKey {
  const pair = generateSshKeyPair(type);
  const fingerprint = sshFingerprint(parsePublicKey(pair.public).getPublicSSH());
  return { privateKey: pair.private, publicKey: pair.public, fingerprint };
}

export class SimSshServer {
  readonly machine: SimMachine;
  readonly faults: HostFaults;
  readonly #authorized: ParsedKey[];
  readonly #users: Set<string>;
  readonly #standardUsers = new Map<string, { principal: Principal; keys: ParsedKey[] }>();
  readonly #hostKeyType: HostKeyType;
  readonly #connections = new Set<Socket>();
  #hostKey: HostKey;
  #ssh: Server;
  #listener?: NetServer;
  #port: number;
  #stopped = false;
  #listening: Promise<void> = Promise.resolve();
  #listenError?: Error;
  #waitingForStdin = 0;
  readonly #networkResetDowntimeMs: number;
  #networkDownUntil = 0;
  readonly #unsubscribe: (() => void)[] = [];

  private constructor(options: SimSshServerOptions) {
    this.machine = options.machine;
    this.#authorized = options.authorizedKeys.map(parsePublicKey);
    this.#users = new Set((options.users ?? ['Administrator']).map((u) => u.toLowerCase()));
    this.#hostKeyType = options.hostKeyType ?? 'ed25519';
    this.#hostKey = generateHostKey(this.#hostKeyType);
    this.#ssh = this.#sshServer();
    this.#port = options.port ?? 0;
    this.#networkResetDowntimeMs = options.networkResetDowntimeMs ?? 1500;
    this.faults = new HostFaults({
      machine: this.machine,
      dropConnections: () => this.dropConnections(),
      changeHostKey: () => this.changeHostKey(),
      updateListening: () => this.#updateListening(),
    });
  }

  /** Starts listening on the machine's address. */
  static async start(options: SimSshServerOptions): Promise<SimSshServer> {
    if (options.authorizedKeys.length === 0) {
      throw new RangeError(
        'Cannot start a simulated host without authorized keys: public-key authentication is the only way in; pass authorizedKeys',
      );
    }
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new RangeError(`Cannot listen on port ${port}; use 0 (any free port) or 1 to 65535`);
    }
    const server = new SimSshServer(options);
    await server.machine.fs.writeFileAtomic(
      administratorsAuthorizedKeys,
      `${options.authorizedKeys.map((k) => String(k).trim()).join('\r\n')}\r\n`,
    );
    await server.#updateListening();
    server.#unsubscribe.push(
      server.machine.onShutdown(() => {
        server.dropConnections();
        server.#followPower();
      }),
      server.machine.onBoot(() => server.#followPower()),
      server.machine.onNetworkReset(() => {
        server.#networkDownUntil = Date.now() + server.#networkResetDowntimeMs;
        server.dropConnections();
      }),
    );
    return server;
  }

  get address(): string {
    return this.machine.address;
  }

  get port(): number {
    return this.#port;
  }

  /**
   * Adds a local account that is only in Users (not an administrator), which logs in with
   * `publicKey`; returns who it is, for checks against the file system's DACLs.
   */
  addStandardUser(name: string, publicKey: string | Buffer): Principal {
    if (this.#users.has(name.toLowerCase())) {
      throw new RangeError(`Cannot add standard user "${name}": it is an administrator here`);
    }
    const principal = standardUserPrincipal(name, 1001 + this.#standardUsers.size);
    this.#standardUsers.set(name.toLowerCase(), { principal, keys: [parsePublicKey(publicKey)] });
    return principal;
  }

  /** SHA256 fingerprint of the current host key (`SHA256:...`). */
  get hostKeyFingerprint(): string {
    return this.#hostKey.fingerprint;
  }

  /** The current host public key as an OpenSSH line (for known_hosts). */
  get hostPublicKey(): string {
    return this.#hostKey.publicKey;
  }

  /** Open SSH connections. */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Drops every connection at once (as a host that vanished). */
  dropConnections(): void {
    for (const socket of this.#connections) socket.destroy();
    this.#connections.clear();
  }

  /** New connections get a freshly generated host key; returns its fingerprint. */
  changeHostKey(): string {
    this.#hostKey = generateHostKey(this.#hostKeyType);
    this.#ssh = this.#sshServer();
    return this.#hostKey.fingerprint;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    this.faults.clear();
    this.dropConnections();
    await this.#updateListening();
  }

  /** Why the port could not listen again after a reboot, if it could not. */
  get listenError(): Error | undefined {
    return this.#listenError;
  }

  #followPower(): void {
    this.#updateListening().then(
      () => {
        this.#listenError = undefined;
      },
      (error: unknown) => {
        this.#listenError = error as Error;
      },
    );
  }

  /** Listens exactly while the machine is up, not stopped and not refusing. */
  #updateListening(): Promise<void> {
    this.#listening = this.#listening
      .catch(() => {})
      .then(async () => {
        const wanted =
          !this.#stopped && this.machine.powerState === 'up' && !this.faults.refuseConnections;
        if (wanted && !this.#listener) await this.#listen();
        if (!wanted && this.#listener) {
          const listener = this.#listener;
          this.#listener = undefined;
          await new Promise<void>((resolve) => listener.close(() => resolve()));
        }
      });
    return this.#listening;
  }

  async #listen(): Promise<void> {
    const listener = createServer((socket) => this.#accept(socket));
    for (let attempt = 1; ; attempt++) {
      try {
        await new Promise<void>((resolve, reject) => {
          listener.once('error', reject);
          listener.listen({ host: this.machine.address, port: this.#port, exclusive: true }, () => {
            listener.off('error', reject);
            resolve();
          });
        });
        break;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // The port was ours a moment ago (before a reboot); the OS may need a moment.
        if (code !== 'EADDRINUSE' || this.#port === 0 || attempt >= 20) {
          throw new Error(
            `Cannot listen for SSH on ${this.machine.address}:${this.#port}: ${(error as Error).message}${code === 'EACCES' ? '; ports below 1024 need root or CAP_NET_BIND_SERVICE' : ''}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const address = listener.address();
    if (address && typeof address === 'object') this.#port = address.port;
    this.#listener = listener;
  }

  #accept(socket: Socket): void {
    if (
      this.machine.powerState !== 'up' ||
      this.faults.refuseConnections ||
      this.#stopped ||
      Date.now() < this.#networkDownUntil
    ) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    this.#connections.add(socket);
    socket.on('close', () => this.#connections.delete(socket));
    socket.on('error', () => {});
    const wrapped = new ThrottledSocket(socket, () => this.faults.slowLinkMs);
    wrapped.on('error', () => {});
    this.#ssh.injectSocket(wrapped as unknown as Socket);
  }

  #sshServer(): Server {
    const server = new ssh2.Server(
      { hostKeys: [this.#hostKey.privateKey], ident: windowsOpenSshIdent },
      (client) => this.#client(client),
    );
    server.on('error', () => {});
    return server;
  }

  #client(client: Connection): void {
    // The socket ssh2 got is our wrapper; dropping the real one is done through #connections.
    client.on('error', () => {});
    let principal = administratorPrincipal;
    client.on('authentication', (ctx) => {
      const standard = this.#standardUsers.get(ctx.username.toLowerCase());
      if (
        ctx.method !== 'publickey' ||
        (!standard && !this.#users.has(ctx.username.toLowerCase()))
      ) {
        ctx.reject(['publickey']);
        return;
      }
      const keys = standard ? standard.keys : this.#authorized;
      const key = keys.find((k) => k.getPublicSSH().equals(ctx.key.data));
      if (!key) {
        ctx.reject(['publickey']);
        return;
      }
      if (ctx.signature && ctx.blob && key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) {
        ctx.reject(['publickey']);
        return;
      }
      if (ctx.signature) principal = standard?.principal ?? administratorPrincipal;
      ctx.accept();
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('pty', (accept) => accept?.());
        session.on('env', (accept) => accept?.());
        session.on('window-change', (accept) => accept?.());
        session.on('shell', (_accept, reject) => reject?.());
        session.on('exec', (accept, _reject, info) => {
          if (principal !== administratorPrincipal) {
            const channel = accept();
            channel.stderr.write(
              `The simulated host runs commands only for administrators; ${principal.name} is not one\r\n`,
            );
            channel.exit(1);
            channel.end();
            return;
          }
          this.#exec(accept(), info.command, client);
        });
        session.on('sftp', (accept) => {
          serveSftp(accept(), this.machine.fs, {
            home:
              principal === administratorPrincipal
                ? sshWorkingDirectory
                : `C:\\Users\\${principal.name}`,
            owner: principal.name,
            principal,
          });
        });
      });
      client.on('tcpip', (_accept, reject) => reject());
      // Global requests (keepalive@openssh.com, tcpip-forward): OpenSSH answers failure,
      // which a keepalive counts as an answer.
      client.on('request', (_accept, reject) => reject?.());
    });
  }

  /** Commands that finished but wait for their stdin to end before they exit. */
  get execsWaitingForStdin(): number {
    return this.#waitingForStdin;
  }

  #exec(channel: ServerChannel, command: string, client: Connection): void {
    const classified = classifyCommand(command);
    // The command's stdin is the channel: it ends when the client sends EOF (or closes it).
    let stdinEnded = false;
    const stdinEnd = new Promise<void>((resolve) => {
      const ended = () => {
        stdinEnded = true;
        resolve();
      };
      channel.once('end', ended);
      channel.once('close', ended);
    });
    // What the client writes to the command's stdin (a domain join's credentials), in memory.
    const input: Buffer[] = [];
    channel.on('data', (chunk: Buffer) => {
      if (!stdinEnded) input.push(chunk);
    });
    this.faults.execStarted(classified, () => {
      const socket = (client as unknown as { _sock?: ThrottledSocket })._sock;
      socket?.destroy();
    });
    const controller = new AbortController();
    const abort = () => controller.abort();
    channel.on('close', abort);
    channel.on('error', abort);
    // A dropped connection does not always close its channels: watch the connection too.
    client.once('close', abort);
    controller.signal.addEventListener('abort', () => client.off('close', abort), { once: true });
    const write = (stream: NodeJS.WritableStream, text: string) => {
      if (controller.signal.aborted) return;
      try {
        stream.write(text);
      } catch {
        // The channel closed.
      }
    };
    // Windows PowerShell reads a redirected stdin to its end before it exits, unless told
    // -InputFormat None (remote-commands.ts powerShellReadsStdin).
    const readsStdin = classified.kind !== 'agent' && powerShellReadsStdin(command);
    runRemoteCommand(
      this.machine,
      command,
      {
        stdout: (text) => write(channel, text),
        stderr: (text) => write(channel.stderr, text),
        signal: controller.signal,
        stdin: async () => {
          await Promise.race([
            stdinEnd,
            new Promise((resolve) =>
              controller.signal.addEventListener('abort', resolve, { once: true }),
            ),
          ]);
          // The bytes as sent: the command decodes them as Windows does (remote-commands.ts).
          return Buffer.concat(input);
        },
      },
      classified,
    )
      .catch((error: unknown) => {
        write(channel.stderr, `${(error as Error).message}\r\n`);
        return 1;
      })
      .then(async (code) => {
        if (readsStdin && !stdinEnded && !controller.signal.aborted) {
          this.#waitingForStdin++;
          await Promise.race([
            stdinEnd,
            new Promise((resolve) =>
              controller.signal.addEventListener('abort', resolve, { once: true }),
            ),
          ]);
          this.#waitingForStdin--;
        }
        client.off('close', abort);
        if (controller.signal.aborted) return;
        try {
          channel.exit(code);
          channel.end();
        } catch {
          // The channel closed.
        }
      });
  }
}
