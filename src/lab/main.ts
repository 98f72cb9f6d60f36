/**
 * `make lab`: a local cluster on loopback (real control plane built from Go modules, kwok for
 * simulated nodes) with a Linux worker, kept up until Ctrl-C.
 */
import { runUntilSignal } from '../cluster/run-until-signal.ts';
import { startCluster } from '../cluster/start-cluster.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { createLinuxNode } from '../testing/nodes.ts';

async function main(): Promise<void> {
  const step = (message: string) => console.error(`[lab] ${message}`);
  const cluster = await startCluster({ onProgress: step, dir: process.env.WINFLEET_LAB_DIR });
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  step('registering a kwok-managed Linux worker node');
  await createLinuxNode(kc, { name: 'lab-linux-1' });

  const rows = cluster.components.map((c) => `  ${c.name.padEnd(24)} pid ${c.pid}`);
  console.log(
    [
      '',
      `winfleet lab is up (control plane healthy in ${(cluster.startupMs / 1000).toFixed(1)}s)`,
      '',
      'Running:',
      ...rows,
      `  ${'kwok node'.padEnd(24)} lab-linux-1 (Linux worker)`,
      '',
      `API server: ${cluster.server}`,
      `Logs:       ${cluster.dir}/logs`,
      '',
      'Use it from another shell:',
      '',
      `export KUBECONFIG=${cluster.kubeconfigPath}`,
      'kubectl get nodes',
      '',
      'Ctrl-C stops everything.',
    ].join('\n'),
  );
  await runUntilSignal(() => cluster.stop());
}

main().catch((error: unknown) => {
  console.error(`[lab] failed: ${(error as Error).message}`);
  process.exit(1);
});
