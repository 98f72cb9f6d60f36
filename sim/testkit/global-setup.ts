/** node:test global setup: one cluster for the whole run, handed to test files by env. */
import { type Cluster, startCluster } from '../cluster/start-cluster.ts';
import { sharedKubeconfigEnv } from './test-cluster.ts';

let cluster: Cluster | undefined;

export async function globalSetup(): Promise<void> {
  cluster = await startCluster({
    onProgress: (m) => process.stderr.write(`[test cluster] ${m}\n`),
  });
  process.env[sharedKubeconfigEnv] = cluster.kubeconfigPath;
}

export async function globalTeardown(): Promise<void> {
  await cluster?.stop();
}
