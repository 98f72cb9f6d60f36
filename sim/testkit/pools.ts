/**
 * WindowsNodePools in tests: create, patch and read one, and a sampler that watches a rollout
 * from the outside every `intervalMs` (Nodes unavailable, cordons, pods of a Deployment
 * Ready), so a test can assert on the worst moment it saw.
 */
import * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../src/api/windows-host.ts';
import {
  type WindowsNodePool,
  type WindowsNodePoolSpec,
  windowsNodePoolResource,
} from '../../src/api/windows-node-pool.ts';
import { nodeIsReady } from '../../src/controller-runtime/informer-factory.ts';
import { listWindowsHosts } from './windows-hosts.ts';

const [group, version] = windowsNodePoolResource.apiVersion.split('/') as [string, string];
const plural = windowsNodePoolResource.plural;

export async function createPool(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  spec: WindowsNodePoolSpec,
): Promise<WindowsNodePool> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  return (await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural,
    body: {
      apiVersion: windowsNodePoolResource.apiVersion,
      kind: windowsNodePoolResource.kind,
      metadata: { name },
      spec,
    },
  })) as WindowsNodePool;
}

/** Merge-patches the pool's spec. */
export async function patchPoolSpec(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  spec: Partial<WindowsNodePoolSpec>,
): Promise<void> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await custom.patchNamespacedCustomObject(
    { group, version, namespace, plural, name, body: { spec } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

export async function readPool(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
): Promise<WindowsNodePool> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  return (await custom.getNamespacedCustomObject({
    group,
    version,
    namespace,
    plural,
    name,
  })) as WindowsNodePool;
}

/** The pool's condition of `type`, if it has one. */
export function poolCondition(pool: WindowsNodePool, type: string) {
  return pool.status?.conditions?.find((c) => c.type === type);
}

/** Sets a label on every WindowsHost of the namespace (so a pool selects them). */
export async function labelHosts(
  kc: k8s.KubeConfig,
  namespace: string,
  labels: Record<string, string>,
): Promise<WindowsHost[]> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const hosts = await listWindowsHosts(kc, namespace);
  for (const host of hosts) {
    await custom.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace,
        plural: 'windowshosts',
        name: host.metadata.name,
        body: { metadata: { labels } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }
  return hosts;
}

export interface RolloutSample {
  at: number;
  /** Nodes of the watched set that are NotReady or unschedulable, by name. */
  unavailable: string[];
  /** Nodes of the watched set that are cordoned (spec.unschedulable). */
  cordoned: string[];
  /** Ready pods carrying the watched label, when one was given. */
  readyPods?: number;
  /** Each Node's bootID. */
  bootIds: Record<string, string>;
}

/**
 * Samples the Nodes named by `nodeNames()` every `intervalMs` until stopped, and at most
 * `maxSamples` times (a bound: a forgotten sampler stops by itself).
 */
export function sampleRollout(
  kc: k8s.KubeConfig,
  options: {
    nodeNames: () => readonly string[];
    pods?: { namespace: string; labelSelector: string };
    intervalMs?: number;
    maxSamples?: number;
  },
): { samples: RolloutSample[]; stop(): Promise<RolloutSample[]> } {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const samples: RolloutSample[] = [];
  const intervalMs = options.intervalMs ?? 200;
  const maxSamples = options.maxSamples ?? 10_000;
  let stopped = false;
  const loop = (async () => {
    while (!stopped && samples.length < maxSamples) {
      const names = new Set(options.nodeNames());
      const nodes = (await core.listNode()).items.filter((n) => names.has(n.metadata!.name!));
      const sample: RolloutSample = {
        at: Date.now(),
        unavailable: nodes
          .filter((n) => !nodeIsReady(n) || n.spec?.unschedulable === true)
          .map((n) => n.metadata!.name!),
        cordoned: nodes.filter((n) => n.spec?.unschedulable === true).map((n) => n.metadata!.name!),
        bootIds: Object.fromEntries(
          nodes.map((n) => [n.metadata!.name!, n.status?.nodeInfo?.bootID ?? '']),
        ),
      };
      if (options.pods) {
        const pods = await core.listNamespacedPod({
          namespace: options.pods.namespace,
          labelSelector: options.pods.labelSelector,
        });
        sample.readyPods = pods.items.filter(
          (p) =>
            !p.metadata?.deletionTimestamp &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ).length;
      }
      samples.push(sample);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    samples,
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}
