/**
 * The operator as its own process (`node src/operator/main.ts`), as it runs for real: for the
 * lab, the benchmarks and the tests that kill it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LogLevel } from '../../src/log/logger.ts';

const operatorMain = fileURLToPath(new URL('../../src/operator/main.ts', import.meta.url));

export interface OperatorProcessOptions {
  kubeconfig: string;
  namespace: string;
  payloadDir?: string;
  /** Serve the webhook on this loopback port (registered by URL); without it, no webhook. */
  webhookPort?: number;
  /** Port of /healthz, /readyz, /metrics and /config (default: any free one). */
  statusPort?: number;
  /** Where its output goes (default: discarded). */
  logFile?: string;
  /** WINFLEET_LOG_LEVEL of the process (default: inherited, else info). */
  logLevel?: LogLevel;
}

/** Starts the operator process. */
export function spawnOperator(options: OperatorProcessOptions): ChildProcess {
  const args = [
    operatorMain,
    '--kubeconfig',
    options.kubeconfig,
    '--namespace',
    options.namespace,
    '--no-leader-elect',
  ];
  args.push('--status-port', String(options.statusPort ?? 0), '--dashboard-port', '0');
  if (options.payloadDir) args.push('--payload-dir', options.payloadDir);
  if (options.webhookPort) {
    args.push(
      '--webhook-host',
      '127.0.0.1',
      '--webhook-port',
      String(options.webhookPort),
      '--webhook-url',
      `https://127.0.0.1:${options.webhookPort}`,
    );
  } else {
    args.push('--no-webhook');
  }
  const out = options.logFile ? openSync(options.logFile, 'a') : 'ignore';
  const env = options.logLevel
    ? { ...process.env, WINFLEET_LOG_LEVEL: options.logLevel }
    : process.env;
  return spawn(process.execPath, args, { stdio: ['ignore', out, out], env });
}

/** Stops a child process: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * An operator process a test kills and starts again: each run logs to
 * `<logDir>/operator-<n>.log`; `lastLog()` reads the latest run's last lines for a failure
 * report. The test's `after` hook should call `kill()`.
 */
export function restartableOperator(
  options: Omit<OperatorProcessOptions, 'logFile'> & { logDir: string },
): {
  start(): void;
  /** SIGKILL, waiting for the exit. */
  kill(): Promise<void>;
  runs(): number;
  lastLog(lines: number): Promise<string>;
} {
  const { logDir, ...rest } = options;
  let child: ChildProcess | undefined;
  let runs = 0;
  const logFile = (n: number) => join(logDir, `operator-${n}.log`);
  return {
    start() {
      child = spawnOperator({ ...rest, logFile: logFile(++runs) });
    },
    async kill() {
      const dying = child;
      if (!dying || dying.exitCode !== null || dying.signalCode !== null) return;
      const exited = once(dying, 'exit');
      dying.kill('SIGKILL');
      await exited;
    },
    runs: () => runs,
    async lastLog(lines) {
      const text = await readFile(logFile(runs), 'utf8').catch(() => '');
      return text.split('\n').slice(-lines).join('\n');
    },
  };
}
