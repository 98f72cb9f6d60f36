/**
 * A simulated Windows host in a process of its own (`node sim/hosts/cli.ts`), so a test can do
 * to it what happens to a hung machine: SIGSTOP freezes every program on it at once (kubelet,
 * agent, SSH server), nothing it holds is released, and SIGCONT lets it run on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { SimulatedHostDescription } from '../hosts/fleet.ts';
import { nextBaseAddress } from './loopback-range.ts';

const cli = fileURLToPath(new URL('../hosts/cli.ts', import.meta.url));

export interface HostProcess {
  host: SimulatedHostDescription;
  pid: number;
  /** SIGSTOP: every program of the host stops where it is. */
  freeze(): void;
  /** SIGCONT: it runs on. */
  resume(): void;
  /** What the process wrote on stderr (its progress and failures). */
  stderr(): string;
  /** Resumes it if frozen, asks it to stop (SIGTERM), and kills it after 20 s. */
  stop(): Promise<void>;
}

/** Starts one simulated host in its own process, trusting `authorizedKey`; resolves once up. */
export async function startHostProcess(options: {
  authorizedKey: string;
  release?: string;
  startTimeoutMs?: number;
}): Promise<HostProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-host-process-'));
  const keyFile = join(dir, 'authorized.pub');
  await writeFile(keyFile, `${options.authorizedKey}\n`);
  const child: ChildProcess = spawn(
    process.execPath,
    [
      cli,
      '--count=1',
      `--releases=${options.release ?? '2022'}`,
      `--authorized-key=${keyFile}`,
      `--base-address=${nextBaseAddress()}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err = (err + chunk).slice(-20_000);
  });
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  };
  try {
    const lines = createInterface({ input: child.stdout! });
    const first = new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      void exited.then(([code]) =>
        reject(new Error(`the host process exited (${code}) before it was up:\n${err}`)),
      );
    });
    const timeoutMs = options.startTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const line = await Promise.race([
      first,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the host process was not up within ${timeoutMs} ms:\n${err}`)),
          timeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    const host = JSON.parse(line) as SimulatedHostDescription;
    return {
      host,
      pid: child.pid!,
      freeze: () => child.kill('SIGSTOP'),
      resume: () => child.kill('SIGCONT'),
      stderr: () => err,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
