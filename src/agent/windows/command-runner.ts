/**
 * How the Windows HostOS runs programs (sc.exe, powershell.exe, shutdown.exe): one injected
 * function with execFile's shape, so tests replay recorded outputs and assert the exact argv.
 *
 * The default runner spawns without a shell (arguments are quoted by libuv for the C runtime
 * rules, never by cmd.exe), hides the console window and gives the child no stdin: Windows
 * PowerShell without a console can otherwise wait forever for input. A non-zero exit is a
 * result, not an error; only a program that cannot start or runs past its timeout rejects.
 * It works on any OS (its tests run node itself); on Windows it is what the agent uses.
 */
import { spawn } from 'node:child_process';
import { WinfleetError } from '../../errors/catalog.ts';

/** @package */
export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** How long a command may run when neither it nor the runner says otherwise: 2 minutes. */
export const defaultCommandTimeoutMs = 120_000;

export interface CommandOptions {
  /**
   * Kill the program after this many ms. Default: the runner's default (2 minutes).
   * `Infinity`: never killed (a program that would leave Windows half changed, such as DISM
   * adding a package, long-operations.ts).
   */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Runs `file` with `args` (no shell) and resolves with its exit code and output. */
export type CommandRunner = (
  file: string,
  args: readonly string[],
  options?: CommandOptions,
) => Promise<CommandResult>;

export interface ChildProcessRunnerOptions {
  /** Default timeout per command, in ms. Default: defaultCommandTimeoutMs (120000). */
  timeoutMs?: number;
  /** Output kept per stream, in bytes; the rest is dropped. Default: 16 MiB. */
  maxOutputBytes?: number;
}

/** The runner the agent uses on Windows: node:child_process, no shell, no stdin. */
export function childProcessRunner(defaults: ChildProcessRunnerOptions = {}): CommandRunner {
  const maxOutputBytes = defaults.maxOutputBytes ?? 16 * 1024 * 1024;
  return function runChildProcess(file, args, options = {}) {
    const timeoutMs = options.timeoutMs ?? defaults.timeoutMs ?? defaultCommandTimeoutMs;
    return new Promise<CommandResult>((resolve, reject) => {
      const child = spawn(file, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
        signal: options.signal,
      });
      const stdout = collect(child.stdout, maxOutputBytes);
      const stderr = collect(child.stderr, maxOutputBytes);
      let timedOut = false;
      // setTimeout would take Infinity (or anything over 2^31-1 ms) as 1 ms: no timer at all.
      const timer = Number.isFinite(timeoutMs)
        ? setTimeout(() => {
            timedOut = true;
            child.kill();
          }, timeoutMs)
        : undefined;
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(
          new WinfleetError('WF_WINDOWS_COMMAND_FAILED', `Cannot run "${file}": ${err.message}`, {
            cause: err,
          }),
        );
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (timedOut) {
          reject(
            new WinfleetError(
              'WF_TIMEOUT',
              `"${file} ${args.join(' ').slice(0, 200)}" did not finish within ${timeoutMs} ms and was killed`,
            ),
          );
          return;
        }
        if (code === null) {
          reject(
            new WinfleetError(
              'WF_WINDOWS_COMMAND_FAILED',
              `"${file}" was killed by ${signal ?? 'a signal'}`,
            ),
          );
          return;
        }
        resolve({ exitCode: code, stdout: stdout(), stderr: stderr() });
      });
    });
  };
}

function collect(stream: NodeJS.ReadableStream, max: number): () => string {
  const chunks: Buffer[] = [];
  let size = 0;
  stream.on('data', (chunk: Buffer) => {
    if (size >= max) return;
    chunks.push(chunk.subarray(0, max - size));
    size += chunk.length;
  });
  return () => Buffer.concat(chunks).toString('utf8');
}
