/**
 * Draining a Node as `kubectl drain` does, by eviction only (never a delete, never forced):
 * DaemonSet and mirror pods stay, a PodDisruptionBudget that refuses is waited for, and pods no
 * controller manages are evicted only when the caller allows it.
 */
import * as k8s from '@kubernetes/client-node';
import { timeOf } from './api-time.ts';
import { isNotFound, isTooManyRequests } from './client.ts';

function isDaemonSetPod(pod: k8s.V1Pod): boolean {
  return pod.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet') ?? false;
}
function isMirrorPod(pod: k8s.V1Pod): boolean {
  return pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined;
}
/** A pod some controller (ReplicaSet, Job, StatefulSet, …) recreates elsewhere once evicted. */
function isManagedPod(pod: k8s.V1Pod): boolean {
  return pod.metadata?.ownerReferences?.some((o) => o.controller === true) ?? false;
}
function podKey(pod: k8s.V1Pod): string {
  return `${pod.metadata?.namespace}/${pod.metadata?.name}`;
}

export interface DrainResult {
  /** True when only DaemonSet and mirror pods (and finished ones) remain. */
  drained: boolean;
  /** Pods whose eviction a PodDisruptionBudget refused for now ("namespace/name"). */
  blocked: string[];
  /** Pods no controller manages, left alone because `evictUnmanaged` was not set. */
  unmanaged: string[];
  /** Pods evicted by this call. */
  evicted: string[];
  /** Pods already being deleted, still on the node (a kubelet that does not answer keeps them). */
  terminating: string[];
}

/**
 * Cordons the node and evicts what can be evicted. Pods no controller manages are evicted only
 * with `evictUnmanaged`; without it, as with `kubectl drain`, nothing is evicted while one is
 * there. With `skipWaitForDeleteSeconds` (kubectl drain's --skip-wait-for-delete-timeout, which
 * Cluster API sets for an unreachable node), a pod whose deletion time passed that long ago no
 * longer counts: a kubelet that does not answer never confirms it gone.
 */
export async function drainNode(
  kc: k8s.KubeConfig,
  nodeName: string,
  options: {
    evictUnmanaged?: boolean;
    skipWaitForDeleteSeconds?: number;
    /** Annotations the cordon sets with spec.unschedulable (who cordoned). */
    cordonAnnotations?: Record<string, string>;
  } = {},
): Promise<DrainResult> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const node = await core.readNode({ name: nodeName });
  if (!node.spec?.unschedulable) {
    await core.patchNode(
      {
        name: nodeName,
        body: {
          spec: { unschedulable: true },
          metadata: { annotations: options.cordonAnnotations ?? {} },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }
  const skipBefore =
    options.skipWaitForDeleteSeconds === undefined
      ? undefined
      : Date.now() - options.skipWaitForDeleteSeconds * 1000;
  const pods = (
    await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` })
  ).items.filter(
    (p) =>
      !isDaemonSetPod(p) &&
      !isMirrorPod(p) &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed' &&
      !(skipBefore !== undefined && deletedBefore(p, skipBefore)),
  );
  const leaving = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const terminating = pods.filter((p) => p.metadata?.deletionTimestamp).map(podKey);
  const unmanaged = leaving.filter((p) => !isManagedPod(p)).map(podKey);
  if (unmanaged.length > 0 && !options.evictUnmanaged) {
    return { drained: false, blocked: [], unmanaged, evicted: [], terminating };
  }
  const blocked: string[] = [];
  const evicted: string[] = [];
  for (const pod of leaving) {
    try {
      await core.createNamespacedPodEviction({
        name: pod.metadata!.name!,
        namespace: pod.metadata!.namespace!,
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: pod.metadata!.name!, namespace: pod.metadata!.namespace! },
        },
      });
      evicted.push(podKey(pod));
    } catch (error) {
      if (isNotFound(error)) continue;
      // 429: a PodDisruptionBudget refuses the eviction for now.
      if (isTooManyRequests(error)) {
        blocked.push(podKey(pod));
        continue;
      }
      throw error;
    }
  }
  return { drained: pods.length === 0, blocked, unmanaged: [], evicted, terminating };
}

/** The pod's deletion time (now + its grace period when deleted) is before `ms`. */
function deletedBefore(pod: k8s.V1Pod, ms: number): boolean {
  const time = timeOf(pod.metadata?.deletionTimestamp);
  return time !== undefined && time < ms;
}
