/**
 * One SSH session to a Windows host: key authentication only, the host key checked against a
 * pinned fingerprint (or captured on first contact), connect/command/keepalive timeouts,
 * commands run through powershell.exe -EncodedCommand, and files copied over SFTP. Every
 * failure is a WinfleetError whose code says what went wrong: WF_SSH_UNREACHABLE,
 * WF_SSH_AUTH_REFUSED, WF_SSH_HOST_KEY_CHANGED, WF_SSH_KEY_INVALID, WF_SSH_TIMEOUT,
 * WF_SSH_DROPPED or WF_SSH_FILE_COPY.
 */
import { createHash } from 'node:crypto';
import { type FileHandle, open } from 'node:fs/promises';
import ssh2, { Client, type ClientChannel, type SFTPWrapper } from 'ssh2';
import { WinfleetError } from '../errors/catalog.ts';
import { countBytesSent } from './bytes-sent.ts';

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

/** The most output (stdout and stderr together) the operator keeps from one command. */
export const maxCommandOutputBytes = 16 * 1024 * 1024;
/** Bytes per SFTP WRITE of a file copy, and how many WRITEs one copy keeps in flight. */
const uploadChunkBytes = 32 * 1024;
const uploadWritesInFlight = 16;

/** 16777216 → "16 MiB"; a size that is not whole MiB in bytes. */
function sizeText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/** @package */
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
   * timeout. A command that prints more than `maxOutputBytes` is stopped and rejects with
   * WF_REMOTE_COMMAND_FAILED: its output is never kept whole.
   *
   * `input`, when given, is written to the command's stdin before the EOF: the only way a
   * secret (a domain join's password) reaches a host, in memory, never in the command line
   * (which Windows records in process-creation events) and never in a file.
   */
  exec(
    command: string,
    timeoutMs = 120_000,
    maxOutputBytes = maxCommandOutputBytes,
    input?: string,
  ): Promise<CommandResult> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (error, channel: ClientChannel) => {
        if (error)
          return reject(
            new WinfleetError('WF_SSH_DROPPED', `Cannot start a command: ${error.message}`, {
              cause: error,
            }),
          );
        // EOF on the channel: the remote command's stdin ends (SSH_MSG_CHANNEL_EOF).
        if (input !== undefined) channel.end(input);
        else channel.end();
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
        let outputBytes = 0;
        const keep = (into: Buffer[]) => (d: Buffer) => {
          if (settled) return;
          outputBytes += d.length;
          if (outputBytes > maxOutputBytes) {
            settled = true;
            clearTimeout(timer);
            channel.destroy();
            reject(
              new WinfleetError(
                'WF_REMOTE_COMMAND_FAILED',
                `The command printed more than ${sizeText(maxOutputBytes)} of output, the most the operator keeps; it was stopped`,
              ),
            );
            return;
          }
          into.push(d);
        };
        channel.on('data', keep(stdout));
        channel.stderr.on('data', keep(stderr));
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
      const stream = sftp.createWriteStream(sftpPath(windowsPath));
      const timer = setTimeout(() => {
        stream.destroy();
        reject(
          new WinfleetError('WF_SSH_TIMEOUT', `Copying ${windowsPath} took over ${timeoutMs} ms`),
        );
      }, timeoutMs);
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
      countBytesSent(data.length);
    });
  }

  /**
   * Copies the local file at `localPath` to a Windows path over SFTP as a stream: read in
   * chunks, with a bounded number of WRITEs in flight, never the whole file in memory.
   * Returns the size and SHA-256 of the bytes sent. Rejects with WF_SSH_TIMEOUT,
   * WF_SSH_FILE_COPY or WF_SSH_DROPPED.
   */
  async uploadFile(
    windowsPath: string,
    localPath: string,
    timeoutMs = 300_000,
  ): Promise<{ size: number; sha256: string }> {
    const sftp = await this.#sftpChannel();
    const copyFailed = (error: unknown) =>
      error instanceof WinfleetError
        ? error
        : new WinfleetError(
            this.#closed ? 'WF_SSH_DROPPED' : 'WF_SSH_FILE_COPY',
            `Cannot write ${windowsPath}: ${(error as Error).message}`,
            { cause: error },
          );
    const deadline = uploadDeadline(windowsPath, timeoutMs);
    const { expired } = deadline;
    const local = await open(localPath, 'r');
    let handle: Buffer | undefined;
    try {
      handle = await Promise.race([
        new Promise<Buffer>((resolve, reject) =>
          sftp.open(sftpPath(windowsPath), 'w', (error, h) => (error ? reject(error) : resolve(h))),
        ),
        expired,
      ]);
      const sent = await writeChunks(sftp, handle, local, deadline);
      const closing = handle;
      handle = undefined;
      await Promise.race([
        new Promise<void>((resolve, reject) =>
          sftp.close(closing, (error) => (error ? reject(error) : resolve())),
        ),
        expired,
      ]);
      return sent;
    } catch (error) {
      throw copyFailed(error);
    } finally {
      clearTimeout(deadline.timer);
      await local.close();
      // After a failure the handle is closed without waiting: the channel may be gone.
      if (handle) {
        try {
          sftp.close(handle, () => {});
        } catch {
          // The SFTP channel closed meanwhile.
        }
      }
    }
  }

  close(): void {
    this.client.end();
  }
}

/** An upload's time limit: `expired` rejects with WF_SSH_TIMEOUT once `timeoutMs` has passed. */
interface UploadDeadline {
  expired: Promise<never>;
  timedOut: boolean;
  timer: NodeJS.Timeout | undefined;
}

/** Starts the time limit of copying `windowsPath`. */
function uploadDeadline(windowsPath: string, timeoutMs: number): UploadDeadline {
  const timing = { timedOut: false, timer: undefined as NodeJS.Timeout | undefined };
  const expired = new Promise<never>((_resolve, reject) => {
    timing.timer = setTimeout(() => {
      timing.timedOut = true;
      reject(
        new WinfleetError('WF_SSH_TIMEOUT', `Copying ${windowsPath} took over ${timeoutMs} ms`),
      );
    }, timeoutMs);
  });
  expired.catch(() => {});
  // The same object: `timedOut` read later sees the timer's write.
  return Object.assign(timing, { expired });
}

/**
 * Streams the local file into the open SFTP `handle`: read in chunks, with at most
 * uploadWritesInFlight WRITEs outstanding; the size and SHA-256 of the bytes sent.
 */
async function writeChunks(
  sftp: SFTPWrapper,
  handle: Buffer,
  local: FileHandle,
  deadline: UploadDeadline,
): Promise<{ size: number; sha256: string }> {
  const { expired } = deadline;
  const { size } = await local.stat();
  const hash = createHash('sha256');
  const inFlight = new Set<Promise<void>>();
  let position = 0;
  // Bounded: `position` grows by each chunk read and stops at the size seen at the start.
  while (position < size && !deadline.timedOut) {
    const buffer = Buffer.allocUnsafe(Math.min(uploadChunkBytes, size - position));
    const { bytesRead } = await local.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    hash.update(chunk);
    const at = position;
    const write = new Promise<void>((resolve, reject) =>
      sftp.write(handle, chunk, 0, chunk.length, at, (error) =>
        error ? reject(error) : resolve(),
      ),
    );
    write.catch(() => {});
    countBytesSent(chunk.length);
    inFlight.add(write);
    write.then(
      () => inFlight.delete(write),
      () => {},
    );
    position += bytesRead;
    if (inFlight.size >= uploadWritesInFlight) await Promise.race([...inFlight, expired]);
  }
  await Promise.race([Promise.all(inFlight), expired]);
  return { size: position, sha256: hash.digest('hex') };
}
