/**
 * Clusters for tests. `sharedCluster()` returns the run's shared cluster (started once by the
 * global setup, or once per test process when run alone); `freshCluster()` starts a private
 * one. Tests on a shared cluster keep to their own namespace from `testNamespace()`.
 */
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { type Cluster, type ClusterOptions, startCluster } from '../cluster/start-cluster.ts';

/** The environment variable the global setup uses to hand its cluster to test processes. */
export const sharedKubeconfigEnv = 'WINFLEET_TEST_KUBECONFIG';

export interface TestCluster {
  kubeconfigPath: string;
  kc: k8s.KubeConfig;
}

let shared: Promise<TestCluster> | undefined;
/** The API server of this process's shared cluster, once known. */
let sharedServer: string | undefined;

/** The shared cluster of this test run. */
export function sharedCluster(): Promise<TestCluster> {
  shared ??= (async () => {
    const fromSetup = process.env[sharedKubeconfigEnv];
    // Run alone (e.g. `node --test one.test.ts`): start one for this process; the exit hook
    // of startCluster stops it.
    const kubeconfigPath = fromSetup ?? (await startCluster()).kubeconfigPath;
    const kc = loadKubeConfig(kubeconfigPath);
    sharedServer = kc.getCurrentCluster()?.server;
    return { kubeconfigPath, kc };
  })();
  return shared;
}

/**
 * Throws when `kc` points at the run's shared cluster. Test files run side by side on it, each
 * in its own namespace, so nothing may run there that acts on the whole cluster: the operator
 * decides every kubelet CSR, applies RuntimeClasses for every Windows node and registers the
 * one pod webhook configuration. A file that starts one owns those and says so by starting it
 * on `freshCluster()`.
 */
export function refuseSharedCluster(target: k8s.KubeConfig | string, what: string): void {
  const fromSetup = process.env[sharedKubeconfigEnv];
  let shared: boolean;
  if (typeof target === 'string') {
    // A kubeconfig path (an operator process): the shared cluster's, or not.
    shared = fromSetup !== undefined && target === fromSetup;
  } else {
    const server = target.getCurrentCluster()?.server;
    const sharedOne =
      sharedServer ??
      (fromSetup ? loadKubeConfig(fromSetup).getCurrentCluster()?.server : undefined);
    shared = server !== undefined && server === sharedOne;
  }
  if (shared) {
    throw new Error(
      `${what} acts on the whole cluster (kubelet CSRs, RuntimeClasses, the pod webhook configuration) and cannot run on the shared test cluster, where other test files run beside it: start it on freshCluster()`,
    );
  }
}

/** A private cluster, stopped when `t` ends (or by the caller). */
export async function freshCluster(
  t?: { after(fn: () => Promise<void>): void },
  options?: ClusterOptions,
): Promise<Cluster & TestCluster> {
  const cluster = await startCluster(options);
  t?.after(() => cluster.stop());
  return Object.assign(cluster, { kc: loadKubeConfig(cluster.kubeconfigPath) });
}

/** A random suffix for names that must not collide between tests on one cluster. */
export function uniqueSuffix(): string {
  return randomBytes(3).toString('hex');
}

/** Creates a namespace with a unique name and waits for its default service account. */
export async function testNamespace(kc: k8s.KubeConfig, prefix: string): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = `${prefix}-${uniqueSuffix()}`;
  await core.createNamespace({
    body: { metadata: { name, labels: { 'winfleet.io/test': 'true' } } },
  });
  // The ServiceAccount admission plugin rejects pods until the controller manager made it.
  await waitFor(
    async () =>
      (await core.readNamespacedServiceAccount({ name: 'default', namespace: name })) && true,
    { description: `the default service account in ${name}`, timeoutMs: 30_000 },
  );
  return name;
}
