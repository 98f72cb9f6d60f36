/**
 * Removing a WindowsHost (its finalizer): cordon the node, drain it through the Eviction API
 * (PodDisruptionBudgets are honoured: a refused eviction is retried, never forced), have the
 * agent stop and delete the services and undo its files, networks and environment, remove
 * winfleet's directory, delete the Node and the bootstrap token, and only then let the object
 * go. The host stays reachable and as it was before winfleet.
 */
import * as k8s from '@kubernetes/client-node';
import { cordonedByAnnotation, hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType, EventReason, JoinStep } from '../../api/reasons.ts';
import { hostFinalizer, type WindowsHost } from '../../api/windows-host.ts';
import { httpStatus, isConflict, isNotFound } from '../../kube/client.ts';
import { deleteBootstrapToken } from './bootstrap-tokens.ts';
import { connectHost } from './host-connect.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { HostStatus, patchHostMetadata, writeHostStatus } from './host-status.ts';
import { carriesIdentity } from './node-claims.ts';

/** Annotation a user sets when the host is gone for good: skip deconfiguring it. */
export const skipDeconfigureAnnotation = 'winfleet.io/skip-deconfigure';

function isDaemonSetPod(pod: k8s.V1Pod): boolean {
  return pod.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet') ?? false;
}
function isMirrorPod(pod: k8s.V1Pod): boolean {
  return pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined;
}

/** Cordons and evicts what can be evicted; true when only DaemonSet/mirror pods remain. */
export async function drainNode(
  kc: k8s.KubeConfig,
  nodeName: string,
): Promise<{ drained: boolean; blocked: string[] }> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const node = await core.readNode({ name: nodeName });
  if (!node.spec?.unschedulable) {
    await core.patchNode(
      {
        name: nodeName,
        body: {
          spec: { unschedulable: true },
          metadata: { annotations: { [cordonedByAnnotation]: 'winfleet' } },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }
  const pods = (
    await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` })
  ).items.filter(
    (p) =>
      !isDaemonSetPod(p) &&
      !isMirrorPod(p) &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed',
  );
  const blocked: string[] = [];
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue;
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
    } catch (error) {
      if (isNotFound(error)) continue;
      // 429: a PodDisruptionBudget refuses the eviction for now.
      if (httpStatus(error) === 429) {
        blocked.push(`${pod.metadata!.namespace}/${pod.metadata!.name}`);
        continue;
      }
      throw error;
    }
  }
  return { drained: pods.length === 0, blocked };
}

export async function reconcileRemoval(
  deps: HostControllerDeps,
  host: WindowsHost,
): Promise<{ requeueAfterMs?: number }> {
  const hs = new HostStatus(host);
  try {
    return await removalPass(deps, host, hs);
  } finally {
    // The object may be gone already: nothing left to report on.
    if (hs.changed()) await writeHostStatus(deps.kc, host, hs.status).catch(() => {});
  }
}

/** drain the node → deconfigure the host → delete the node and token → release the finalizer. */
async function removalPass(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
): Promise<{ requeueAfterMs?: number }> {
  if (!host.metadata.finalizers?.includes(hostFinalizer)) return {};
  const node = await ownNode(deps, host, hs.status.nodeName);
  const nodeName = node?.metadata?.name;
  if (nodeName && !(await drainForRemoval(deps, hs, nodeName))) return { requeueAfterMs: 2000 };
  if (
    host.metadata.annotations?.[skipDeconfigureAnnotation] !== 'true' &&
    mayHaveChangedHost(hs.status)
  ) {
    await deconfigureHost(deps, host, hs);
  }
  if (nodeName) await deleteNode(deps.kc, nodeName, node?.metadata?.uid);
  await deleteBootstrapToken(deps.kc, host.metadata.uid!);
  await patchHostMetadata(deps.kc, host, {
    finalizers: (host.metadata.finalizers ?? []).filter((f) => f !== hostFinalizer),
  });
  deps.log.info('host removed', {
    host: `${host.metadata.namespace}/${host.metadata.name}`,
    node: nodeName,
  });
  return {};
}

/**
 * The host's Node, read from the API, if it exists and carries the host's identity. Any other
 * Node of that name is left alone — never cordoned, drained or deleted — and an Event says so.
 */
async function ownNode(
  deps: HostControllerDeps,
  host: WindowsHost,
  nodeName: string | undefined,
): Promise<k8s.V1Node | undefined> {
  if (!nodeName) return undefined;
  let node: k8s.V1Node;
  try {
    node = await deps.kc.makeApiClient(k8s.CoreV1Api).readNode({ name: nodeName });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  if (carriesIdentity(node, host)) return node;
  const carried = node.metadata?.annotations?.[hostAnnotation];
  deps.events.record(
    host,
    'Warning',
    EventReason.NodeNotOwned,
    `Left Node ${nodeName} alone: it carries ${carried === undefined ? `no ${hostAnnotation}` : `${hostAnnotation}=${carried}`}, not this host's identity ${hostIdentity(host)}, so winfleet neither drains nor deletes it`,
  );
  return undefined;
}

/** Drains the host's node if it still exists; false while pods are still leaving. */
async function drainForRemoval(
  deps: HostControllerDeps,
  hs: HostStatus,
  nodeName: string,
): Promise<boolean> {
  const core = deps.kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.readNode({ name: nodeName });
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
  const { drained, blocked } = await drainNode(deps.kc, nodeName);
  if (drained) return true;
  const message =
    blocked.length > 0
      ? `Draining ${nodeName}: eviction refused by a PodDisruptionBudget for ${blocked.join(', ')}; retrying`
      : `Draining ${nodeName}: waiting for pods to leave`;
  hs.set(ConditionType.Ready, 'False', ConditionReason.Draining, message);
  return false;
}

/**
 * Whether winfleet may have put anything on the host. The join records its bootstrap token in
 * the status before it creates the first directory or copies the first file, and the token,
 * bootstrappedAt or the services version stay until removal, so a host with none of them never
 * got anything from winfleet: removing it needs no SSH (a host that was never reachable can
 * then be deleted without waiting for it).
 */
function mayHaveChangedHost(status: WindowsHost['status']): boolean {
  return Boolean(status?.bootstrapTokenId || status?.bootstrappedAt || status?.servicesVersion);
}

/** Has the agent remove winfleet's services and files; the host must be reachable for it. */
async function deconfigureHost(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
): Promise<void> {
  const remote = await connectHost(deps, host, hs, {
    step: JoinStep.Deconfigure,
    hint: `the host must be reachable to remove winfleet from it (annotate ${skipDeconfigureAnnotation}=true if it is gone for good)`,
  });
  try {
    await remote.removeWinfleet();
  } finally {
    remote.close();
  }
  deps.events.record(
    host,
    'Normal',
    EventReason.Deconfigured,
    `Removed winfleet's services and files from ${host.spec.address}`,
  );
}

/** Deletes the Node with this uid (the one checked to be the host's, never a newer one). */
async function deleteNode(
  kc: k8s.KubeConfig,
  name: string,
  uid: string | undefined,
): Promise<void> {
  try {
    await kc
      .makeApiClient(k8s.CoreV1Api)
      .deleteNode({ name, body: uid ? { preconditions: { uid } } : undefined });
  } catch (error) {
    // 409: the uid no longer matches — that Node is gone and the one now there is not ours.
    if (!isNotFound(error) && !isConflict(error)) throw error;
  }
}
