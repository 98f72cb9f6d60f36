/**
 * The operator as its own process, as it runs for real: for the lab, the benchmarks and the
 * tests that kill it. By default from source (`node src/operator/main.ts`); with `shipped`, as
 * the image runs it: the esbuild bundle scripts/build-image.ts makes, with the image's Node
 * flags and environment.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IMAGE_ENV, IMAGE_NODE_FLAGS, writeOperatorBundle } from '../../scripts/build-image.ts';
import type { LogLevel } from '../../src/log/logger.ts';
import { refuseSharedCluster } from './test-cluster.ts';

const operatorMain = fileURLToPath(new URL('../../src/operator/main.ts', import.meta.url));
const buildImageScript = fileURLToPath(new URL('../../scripts/build-image.ts', import.meta.url));
/** Where the shipped bundle is built (gitignored), once per process. */
export const operatorBundlePath = fileURLToPath(
  new URL('../../.cache/operator-bundle/winfleet-operator.cjs', import.meta.url),
);
let bundleBuilt: Promise<string> | undefined;
let bundleReady = false;

/**
 * Builds the operator bundle as the image ships it (scripts/build-image.ts's own code) into
 * .cache/operator-bundle/, once per process; its path. Await it before spawning with
 * `shipped` so the spawn does not build it synchronously.
 */
export function buildOperatorBundle(): Promise<string> {
  bundleBuilt ??= writeOperatorBundle(operatorBundlePath).then((path) => {
    bundleReady = true;
    return path;
  });
  return bundleBuilt;
}

function operatorBundleNow(): string {
  if (bundleReady && existsSync(operatorBundlePath)) return operatorBundlePath;
  // The same code as buildOperatorBundle, in a child, for a caller that did not await it.
  execFileSync(process.execPath, [buildImageScript, '--bundle-only', operatorBundlePath], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  bundleReady = true;
  bundleBuilt = Promise.resolve(operatorBundlePath);
  return operatorBundlePath;
}

export interface OperatorProcessOptions {
  kubeconfig: string;
  namespace: string;
  payloadDir?: string;
  /** More flags (a registry payload's --payload-image and its companions). */
  args?: string[];
  /** Serve the webhook on this loopback port (registered by URL); without it, no webhook. */
  webhookPort?: number;
  /** Port of /healthz, /readyz, /metrics and /config (default: any free one). */
  statusPort?: number;
  /** Where its output goes (default: discarded). */
  logFile?: string;
  /** WINFLEET_LOG_LEVEL of the process (default: inherited, else info). */
  logLevel?: LogLevel;
  /**
   * Run it as the image ships it: the bundle (see buildOperatorBundle), and by default the
   * image's Node flags and environment (IMAGE_NODE_FLAGS, IMAGE_ENV). Default: from source.
   */
  shipped?: boolean;
  /** Run this script instead (a bench's variant of the bundle); `shipped` still sets the defaults. */
  script?: string;
  /** Node flags before the script (default: IMAGE_NODE_FLAGS when shipped, else none). */
  nodeFlags?: string[];
  /** Added to the inherited environment (default: IMAGE_ENV when shipped, else nothing). */
  env?: Record<string, string>;
}

/** Starts the operator process. */
export function spawnOperator(options: OperatorProcessOptions): ChildProcess {
  refuseSharedCluster(options.kubeconfig, 'An operator process');
  const nodeFlags = options.nodeFlags ?? (options.shipped ? IMAGE_NODE_FLAGS : []);
  const args = [
    ...nodeFlags,
    options.script ?? (options.shipped ? operatorBundleNow() : operatorMain),
    '--kubeconfig',
    options.kubeconfig,
    '--namespace',
    options.namespace,
    '--no-leader-elect',
  ];
  args.push('--status-port', String(options.statusPort ?? 0), '--dashboard-port', '0');
  if (options.payloadDir) args.push('--payload-dir', options.payloadDir);
  if (options.args) args.push(...options.args);
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
  const env = {
    ...process.env,
    ...(options.logLevel ? { WINFLEET_LOG_LEVEL: options.logLevel } : {}),
    ...(options.env ?? (options.shipped ? IMAGE_ENV : {})),
  };
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
