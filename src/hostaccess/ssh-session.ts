/**
 * One SSH session to a Windows host: key authentication only, the host key checked against a
 * pinned fingerprint (or captured on first contact), connect/command/keepalive timeouts,
 * commands run through powershell.exe -EncodedCommand, and files copied over SFTP. Every
 * failure is a WinfleetError whose code says what went wrong: WF_SSH_UNREACHABLE,
 * WF_SSH_AUTH_REFUSED, WF_SSH_HOST_KEY_CHANGED, WF_SSH_KEY_INVALID, WF_SSH_TIMEOUT,
 * WF_SSH_DROPPED or WF_SSH_FILE_COPY.
 */
import { createHash } from 'node:crypto';
import ssh2, { Client, type ClientChannel, type SFTPWrapper } from 'ssh2';
import { WinfleetError } from '../errors/catalog.ts';

export interface SshTarget {
  host: string;
  port: number;
  username: string;
  /** PEM/OpenSSH private key. Never logged. */
  privateKey: string | Buffer;
  /** "SHA256:…" the host key must have; undefined on first contact (trust on first use). */
  pinnedFingerprint?: string;
  connectTimeoutMs?: number;
  keepaliveIntervalMs?: number;
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** What WF_SSH_HOST_KEY_CHANGED carries. */
export interface HostKeyChange {
  presented: string;
  pinned: string;
}

/** OpenSSH's fingerprint format: "SHA256:" + unpadded base64 of the key's SHA-256. */
export function hostKeyFingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

/** Windows OpenSSH's SFTP form of a Windows path: C:\k\x → /C:/k/x. */
export function sftpPath(windowsPath: string): string {
  return `/${windowsPath.replaceAll('\\', '/')}`;
}

export class SshSession {
  readonly client: Client;
  /** The fingerprint the host presented. */
  readonly fingerprint: string;
  #sftp: Promise<SFTPWrapper> | undefined;
  #closed = false;

  private constructor(client: Client, fingerprint: string) {
    this.client = client;
    this.fingerprint = fingerprint;
    client.on('close', () => {
      this.#closed = true;
    });
  }

  /** Connects and authenticates; rejects with a WinfleetError. */
  static connect(target: SshTarget): Promise<SshSession> {
    const parsed = ssh2.utils.parseKey(target.privateKey);
    if (parsed instanceof Error) {
      // The key's content is never put in the message.
      return Promise.reject(
        new WinfleetError(
          'WF_SSH_KEY_INVALID',
          `The SSH private key for ${target.username}@${target.host} cannot be parsed (${parsed.message}); put an unencrypted PEM or OpenSSH private key in the Secret`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const client = new Client();
      let seen: string | undefined;
      let mismatch = false;
      const fail = (error: WinfleetError) => {
        client.removeAllListeners('ready');
        client.end();
        reject(error);
      };
      client.on('ready', () => {
        // Without it, Nagle's algorithm and delayed ACKs cost ~40 ms per SFTP round trip.
        client.setNoDelay(true);
        resolve(new SshSession(client, seen ?? ''));
      });
      client.on('error', (error: Error & { level?: string; code?: string }) => {
        if (mismatch) {
          return fail(
            new WinfleetError<HostKeyChange>(
              'WF_SSH_HOST_KEY_CHANGED',
              `Host key of ${target.host}:${target.port} is ${seen}, but ${target.pinnedFingerprint} is pinned; if the host was rebuilt on purpose, annotate the WindowsHost winfleet.io/trust-host-key=${seen}`,
              { details: { presented: seen ?? '', pinned: target.pinnedFingerprint ?? '' } },
            ),
          );
        }
        if (error.level === 'client-authentication') {
          return fail(
            new WinfleetError(
              'WF_SSH_AUTH_REFUSED',
              `${target.username}@${target.host}:${target.port} refused the SSH key (only public-key authentication is used); check the key Secret and the host's administrators_authorized_keys`,
              { cause: error },
            ),
          );
        }
        if (error.level === 'client-timeout' || /Timed out/i.test(error.message)) {
          return fail(
            new WinfleetError(
              'WF_SSH_UNREACHABLE',
              `No SSH handshake with ${target.host}:${target.port} within ${target.connectTimeoutMs ?? 15_000} ms`,
              { cause: error },
            ),
          );
        }
        fail(
          new WinfleetError(
            'WF_SSH_UNREACHABLE',
            `Cannot reach ${target.host}:${target.port} over SSH: ${error.message}`,
            { cause: error },
          ),
        );
      });
      client.connect({
        host: target.host,
        port: target.port,
        username: target.username,
        privateKey: target.privateKey,
        readyTimeout: target.connectTimeoutMs ?? 15_000,
        keepaliveInterval: target.keepaliveIntervalMs ?? 10_000,
        keepaliveCountMax: 3,
        tryKeyboard: false,
        hostVerifier: (key: Buffer) => {
          seen = hostKeyFingerprint(key);
          mismatch = target.pinnedFingerprint !== undefined && seen !== target.pinnedFingerprint;
          return !mismatch;
        },
      });
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs a command line; rejects with WF_SSH_TIMEOUT or WF_SSH_DROPPED. The command gets no
   * input: its stdin is closed at once, as a program that reads it (powershell.exe without
   * `-InputFormat None` reads it as pipeline input) would otherwise wait for it until the
   * timeout.
   */
  exec(command: string, timeoutMs = 120_000): Promise<CommandResult> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (error, channel: ClientChannel) => {
        if (error)
          return reject(
            new WinfleetError('WF_SSH_DROPPED', `Cannot start a command: ${error.message}`, {
              cause: error,
            }),
          );
        // EOF on the channel: the remote command's stdin ends (SSH_MSG_CHANNEL_EOF).
        channel.end();
        const stdout: Buffer[] = [];
        const stderr: Buffer[] = [];
        let settled = false;
        const timer = setTimeout(() => {
          settled = true;
          channel.destroy();
          reject(
            new WinfleetError('WF_SSH_TIMEOUT', `Command did not finish within ${timeoutMs} ms`),
          );
        }, timeoutMs);
        channel.on('data', (d: Buffer) => stdout.push(d));
        channel.stderr.on('data', (d: Buffer) => stderr.push(d));
        channel.on('close', (code: number | null) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          if (code === null || code === undefined) {
            reject(
              new WinfleetError(
                'WF_SSH_DROPPED',
                'The connection dropped before the command finished',
              ),
            );
            return;
          }
          resolve({
            code,
            stdout: Buffer.concat(stdout).toString('utf8'),
            stderr: Buffer.concat(stderr).toString('utf8'),
          });
        });
      });
    });
  }

  #sftpChannel(): Promise<SFTPWrapper> {
    this.#sftp ??= new Promise((resolve, reject) => {
      this.client.sftp((error, sftp) =>
        error
          ? reject(
              new WinfleetError('WF_SSH_FILE_COPY', `SFTP is not available: ${error.message}`, {
                cause: error,
              }),
            )
          : resolve(sftp),
      );
    });
    return this.#sftp;
  }

  /** Writes `data` to a Windows path over SFTP. */
  async upload(windowsPath: string, data: Buffer, timeoutMs = 300_000): Promise<void> {
    const sftp = await this.#sftpChannel();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new WinfleetError('WF_SSH_TIMEOUT', `Copying ${windowsPath} took over ${timeoutMs} ms`),
          ),
        timeoutMs,
      );
      const stream = sftp.createWriteStream(sftpPath(windowsPath));
      stream.on('error', (error: Error) => {
        clearTimeout(timer);
        reject(
          new WinfleetError('WF_SSH_FILE_COPY', `Cannot write ${windowsPath}: ${error.message}`, {
            cause: error,
          }),
        );
      });
      stream.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
      stream.end(data);
    });
  }

  close(): void {
    this.client.end();
  }
}
