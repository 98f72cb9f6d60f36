/**
 * An ssh2 client for the simulated-host tests, used the way the operator uses one: key
 * authentication, a host verifier that records (and can pin) the host key's SHA256
 * fingerprint, exec with collected output and exit code, and promise-based SFTP calls.
 */
import { createHash } from 'node:crypto';
import ssh2, { type Client, type ConnectConfig, type SFTPWrapper } from 'ssh2';
import { generateSshKeyPair } from './ssh-keys.ts';

export interface TestKey {
  privateKey: string;
  publicKey: string;
}

/** A fresh ed25519 key pair (OpenSSH format). */
export function generateTestKey(): TestKey {
  const pair = generateSshKeyPair('ed25519', 'winfleet-test');
  return { privateKey: pair.private, publicKey: pair.public };
}

export interface Connected {
  client: Client;
  /** The fingerprint the host presented. */
  hostKeyFingerprint: string;
}

/**
 * Connects; rejects on authentication failure, a refused connection or, when `pinned` is
 * given, a host key with another fingerprint. Bounded by `readyTimeout`.
 */
export function connect(
  target: { address: string; port: number },
  options: Partial<ConnectConfig> & { key?: TestKey; pinned?: string } = {},
): Promise<Connected> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    let fingerprint = '';
    client.once('ready', () => {
      // Without it, Nagle's algorithm and delayed ACKs cost ~40 ms per SFTP round trip.
      client.setNoDelay(true);
      resolve({ client, hostKeyFingerprint: fingerprint });
    });
    client.once('error', (error) => {
      client.end();
      reject(error);
    });
    const { key, pinned, ...config } = options;
    client.connect({
      host: target.address,
      port: target.port,
      username: 'Administrator',
      readyTimeout: 5000,
      ...(key ? { privateKey: key.privateKey } : {}),
      hostVerifier: (hostKey: Buffer) => {
        fingerprint = `SHA256:${createHash('sha256').update(hostKey).digest('base64').replace(/=+$/, '')}`;
        return pinned === undefined || pinned === fingerprint;
      },
      ...config,
    });
  });
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number | undefined;
  /** Set when the connection closed before the command finished. */
  closedEarly: boolean;
}

/** Runs a command; resolves when its channel closes (bounded by `timeoutMs`). */
export function exec(client: Client, command: string, timeoutMs = 20_000): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`exec timed out: ${command.slice(0, 80)}`)),
      timeoutMs,
    );
    client.exec(command, (error, channel) => {
      if (error) {
        clearTimeout(timer);
        reject(error);
        return;
      }
      let stdout = '';
      let stderr = '';
      let code: number | undefined;
      channel.on('data', (d: Buffer) => {
        stdout += d.toString('utf8');
      });
      channel.stderr.on('data', (d: Buffer) => {
        stderr += d.toString('utf8');
      });
      channel.on('exit', (c: number | null) => {
        code = c ?? undefined;
      });
      channel.on('close', () => {
        clearTimeout(timer);
        resolve({ stdout, stderr, code, closedEarly: code === undefined });
      });
    });
  });
}

export function openSftp(client: Client): Promise<SFTPWrapper> {
  return new Promise((resolve, reject) =>
    client.sftp((error, sftp) => (error ? reject(error) : resolve(sftp))),
  );
}

/** Promise form of an SFTP callback method. */
export function sftpCall<T>(
  call: (done: (error: Error | null | undefined, value?: T) => void) => void,
): Promise<T> {
  return new Promise((resolve, reject) =>
    call((error, value) => (error ? reject(error) : resolve(value as T))),
  );
}
