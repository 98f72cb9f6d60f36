/**
 * winfleet-cluster: starts a loopback Kubernetes cluster from the Go-built binaries and keeps
 * it up until Ctrl-C.
 *
 *   node sim/cluster/cli.ts [--dir DIR] [--linux-nodes N] [--timeout SECONDS]
 */
import { parseArgs } from 'node:util';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { runUntilSignal } from '../../src/process/run-until-signal.ts';
import { createLinuxNode } from '../testkit/nodes.ts';
import { startCluster } from './start-cluster.ts';

const usage = 'Usage: winfleet-cluster [--dir DIR] [--linux-nodes N] [--timeout SECONDS]';

function parseCount(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new RangeError(`--${flag} must be a whole number ≥ 0, got "${value}"`);
  return n;
}

async function main(): Promise<void> {
  let values: { dir?: string; 'linux-nodes'?: string; timeout?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        dir: { type: 'string' },
        'linux-nodes': { type: 'string' },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new TypeError(`${(error as Error).message}\n${usage}`);
  }
  if (values.help) {
    console.log(usage);
    return;
  }
  const linuxNodes = parseCount('linux-nodes', values['linux-nodes'], 0);
  const timeout = parseCount('timeout', values.timeout, 120);
  const cluster = await startCluster({
    ...(values.dir ? { dir: values.dir } : {}),
    startTimeoutMs: timeout * 1000,
    onProgress: (message) => console.error(`[cluster] ${message}`),
  });
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  for (let i = 1; i <= linuxNodes; i++) await createLinuxNode(kc, { name: `linux-${i}` });
  console.log(`export KUBECONFIG=${cluster.kubeconfigPath}`);
  console.error(
    `API server ${cluster.server}; logs in ${cluster.dir}/logs. Ctrl-C stops the cluster.`,
  );
  await runUntilSignal(() => cluster.stop());
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
