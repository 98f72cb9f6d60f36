/**
 * Removing a WindowsHost (its finalizer): cordon the node, drain it through the Eviction API
 * (PodDisruptionBudgets are honoured: a refused eviction is retried, never forced), have the
 * agent stop and delete the services and undo its files, networks and environment, remove
 * winfleet's directory, delete the Node and the bootstrap token, and only then let the object
 * go. The host stays reachable and as it was before winfleet. A session the host drops during
 * the cleanup (removing the HNS network resets its adapter) is noted and the pass requeued: the
 * next pass runs the cleanup again over a new session, and only repeated drops are a failure.
 *
 * Like `kubectl drain`, the drain refuses pods that no controller manages (evicting one deletes
 * it for good) unless the host carries winfleet.io/drain-unmanaged-pods=true, and every pod it
 * evicts is named in an Event on the host. A host that cannot be deconfigured, or whose
 * kubelet never finishes evicted pods, for hosts.removalTimeoutSeconds says so in its Ready
 * condition (RemovalBlocked), with the annotation that lets the removal finish without it
 * (winfleet.io/skip-deconfigure=true: no deconfiguring, no waiting for those pods).
 */

import * as k8s from '@kubernetes/client-node';
import {
  cordonedByAnnotation,
  cordonedByValues,
  hostAnnotation,
  hostIdentity,
} from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType, EventReason, JoinStep } from '../../api/reasons.ts';
import {
  drainUnmanagedPodsAnnotation,
  hostFinalizer,
  isPullHost,
  type WindowsHost,
} from '../../api/windows-host.ts';
import { errorCode } from '../../errors/catalog.ts';
import { HostStatus, patchHostMetadata, writeHostStatus } from '../../fleet/host-status.ts';
import { carriesIdentity } from '../../fleet/node-claims.ts';
import { openRemoteHost } from '../../hostaccess/host-session.ts';
import type { RemoteHost } from '../../hostaccess/remote-host.ts';
import { deleteBootstrapToken } from '../../join/bootstrap-tokens.ts';
import { retireNodeName } from '../../join/retired-node-names.ts';
import { isConflict, isNotFound } from '../../kube/client.ts';
import { drainNode } from '../../kube/drain.ts';
import { leaveDomain, poolActiveDirectory } from './active-directory-join.ts';
import { withHost } from './host-connect.ts';
import type { HostControllerDeps } from './host-deps.ts';

/** Annotation a user sets when the host is gone for good: skip deconfiguring it. */
export const skipDeconfigureAnnotation = 'winfleet.io/skip-deconfigure';

/**
 * How a removal deconfigures the host: over SSH (the default), or for a Pull-mode host through
 * its agent (pull-host-removal.ts). Returns how long to wait before looking again, or
 * undefined once the host is deconfigured.
 */
export type DeconfigureStep = (
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node | undefined,
) => Promise<number | undefined>;

/** @package */
export async function reconcileRemoval(
  deps: HostControllerDeps,
  host: WindowsHost,
  deconfigure: DeconfigureStep = deconfigureOverSsh,
): Promise<{ requeueAfterMs?: number }> {
  const hs = new HostStatus(host);
  try {
    return await removalPass(deps, host, hs, deconfigure);
  } finally {
    // The object may be gone already: nothing left to report on.
    if (hs.changed()) await writeHostStatus(deps.kc, host, hs.status).catch(() => {});
  }
}

/** Deconfigures the host over SSH, unless winfleet never changed it. */
const deconfigureOverSsh: DeconfigureStep = async (deps, host, hs) => {
  if (!mayHaveChangedHost(hs.status)) return undefined;
  try {
    return await deconfigureHost(deps, host, hs);
  } catch (error) {
    return deconfigureFailed(deps, host, hs, error);
  }
};

/** drain the node → deconfigure the host → delete the node and token → release the finalizer. */
async function removalPass(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  deconfigure: DeconfigureStep,
): Promise<{ requeueAfterMs?: number }> {
  if (!host.metadata.finalizers?.includes(hostFinalizer)) return {};
  const node = await ownNode(deps, host, hs.status.nodeName);
  const nodeName = node?.metadata?.name;
  if (nodeName) {
    const waitMs = await drainForRemoval(deps, host, hs, nodeName);
    if (waitMs !== undefined) return { requeueAfterMs: waitMs };
  }
  if (host.metadata.annotations?.[skipDeconfigureAnnotation] !== 'true') {
    const waitMs = await deconfigure(deps, host, hs, node);
    if (waitMs !== undefined) return { requeueAfterMs: waitMs };
  }
  if (nodeName) await deleteNode(deps.kc, nodeName, node?.metadata?.uid);
  // A Pull-mode host joined with a join token and never had a bootstrap token of its own.
  if (!isPullHost(host)) await deleteBootstrapToken(deps.kc, host.metadata.uid!);
  // Its name was issued with a node certificate that outlives the host: not issued again
  // while that may be valid (join/retired-node-names.ts).
  const days = deps.config().hosts.retiredNodeNameDays;
  if (isPullHost(host) && host.spec.nodeName && days > 0) {
    const now = new Date();
    await retireNodeName(
      deps.kc,
      deps.operatorNamespace,
      host.spec.nodeName,
      {
        until: new Date(now.getTime() + days * 86_400_000).toISOString(),
        host: `${host.metadata.namespace}/${host.metadata.name}`,
      },
      now,
    );
  }
  await patchHostMetadata(deps.kc, host, {
    finalizers: (host.metadata.finalizers ?? []).filter((f) => f !== hostFinalizer),
  });
  deps.log.info('host removed', {
    host: `${host.metadata.namespace}/${host.metadata.name}`,
    node: nodeName,
    ...(isPullHost(host) ? { mode: 'Pull' } : {}),
  });
  return {};
}

/**
 * The host's Node, read from the API, if it exists and carries the host's identity. Any other
 * Node of that name is left alone — never cordoned, drained or deleted — and an Event says so.
 */
export async function ownNode(
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

/**
 * Drains the host's node if it still exists: undefined once drained, else how long to wait
 * before looking again. Each evicted pod gets an Event; pods no controller manages are named
 * in the Ready condition and a Warning Event until they go or the user opts in.
 */
export async function drainForRemoval(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  nodeName: string,
): Promise<number | undefined> {
  const core = deps.kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.readNode({ name: nodeName });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  const evictUnmanaged = host.metadata.annotations?.[drainUnmanagedPodsAnnotation] === 'true';
  const { drained, blocked, unmanaged, evicted, terminating } = await drainNode(deps.kc, nodeName, {
    evictUnmanaged,
    cordonAnnotations: { [cordonedByAnnotation]: cordonedByValues.rollout },
  });
  for (const pod of evicted) {
    deps.events.record(
      host,
      'Normal',
      EventReason.PodEvicted,
      `Evicted pod ${pod} from node ${nodeName} to remove the host`,
    );
  }
  if (drained) return undefined;
  if (unmanaged.length > 0) {
    const message = `Draining ${nodeName} waits for pods that no controller manages (evicting one deletes it for good): ${unmanaged.join(', ')}; delete or move them, or let winfleet evict them: kubectl annotate windowshost ${host.metadata.name} -n ${host.metadata.namespace} ${drainUnmanagedPodsAnnotation}=true`;
    // One Event per change of the blocking set, not one per pass.
    if (hs.condition(ConditionType.Ready)?.message !== message) {
      deps.events.record(host, 'Warning', EventReason.UnmanagedPods, message);
    }
    hs.set(ConditionType.Ready, 'False', ConditionReason.UnmanagedPods, message);
    // Only the user can move these; the annotation brings the host back at once.
    return 5000;
  }
  if (blocked.length === 0 && evicted.length === 0 && terminating.length > 0) {
    // Only pods that are being deleted are left, and only the host's kubelet can finish that.
    // A host gone for good never will: deleting its Node lets the pod garbage collector
    // remove them (kubectl drain --skip-wait-for-delete-timeout does the same).
    if (host.metadata.annotations?.[skipDeconfigureAnnotation] === 'true') return undefined;
    if (removalWaitedMs(host) >= removalTimeoutMs(deps)) {
      blockRemoval(
        deps,
        host,
        hs,
        `Removal cannot drain ${nodeName}: pods ${terminating.join(', ')} have not finished terminating in ${Math.round(removalWaitedMs(host) / 1000)}s (only the kubelet on ${host.spec.address ?? nodeName} can finish that)`,
      );
      return 60_000;
    }
  }
  const message =
    blocked.length > 0
      ? `Draining ${nodeName}: eviction refused by a PodDisruptionBudget for ${blocked.join(', ')}; retrying`
      : `Draining ${nodeName}: waiting for pods to leave`;
  hs.set(ConditionType.Ready, 'False', ConditionReason.Draining, message);
  return 2000;
}

/** How long the host has been being deleted. */
export function removalWaitedMs(host: WindowsHost): number {
  return Date.now() - new Date(host.metadata.deletionTimestamp ?? Date.now()).getTime();
}

/** @package */
export function removalTimeoutMs(deps: HostControllerDeps): number {
  return deps.config().hosts.removalTimeoutSeconds * 1000;
}

/**
 * Says, in the Ready condition and (on the first pass that blocks) a Warning Event, what
 * stops the removal and the annotation that finishes it without the host.
 * @package
 */
export function blockRemoval(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  what: string,
): void {
  const message = `${what}; if the host is gone for good, let the removal finish without it: kubectl annotate windowshost ${host.metadata.name} -n ${host.metadata.namespace} ${skipDeconfigureAnnotation}=true`;
  if (hs.condition(ConditionType.Ready)?.reason !== ConditionReason.RemovalBlocked) {
    deps.events.record(host, 'Warning', EventReason.RemovalBlocked, message);
  }
  hs.set(ConditionType.Ready, 'False', ConditionReason.RemovalBlocked, message);
}

/**
 * Deconfiguring failed: retried, more slowly as time passes, and once the removal has waited
 * hosts.removalTimeoutSeconds the Ready condition (and one Warning Event) says how to finish
 * without the host. Returns when to try again.
 */
function deconfigureFailed(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  error: unknown,
): number {
  const waitedMs = removalWaitedMs(host);
  const timeoutMs = removalTimeoutMs(deps);
  const detail = (error as Error)?.message ?? String(error);
  deps.log.warn('cannot deconfigure host', {
    host: `${host.metadata.namespace}/${host.metadata.name}`,
    error: detail,
  });
  if (waitedMs < timeoutMs) {
    return Math.max(100, Math.min(timeoutMs - waitedMs, Math.max(2000, waitedMs / 2), 30_000));
  }
  blockRemoval(
    deps,
    host,
    hs,
    `Removal cannot remove winfleet from ${host.spec.address} (tried for ${Math.round(waitedMs / 1000)}s): ${detail}`,
  );
  // Keep trying: a host that comes back is deconfigured after all.
  return 60_000;
}

/**
 * Whether winfleet may have put anything on the host. The join records its bootstrap token in
 * the status before it creates the first directory or copies the first file, and the token,
 * bootstrappedAt or the services version stay until removal, so a host with none of them never
 * got anything from winfleet: removing it needs no SSH (a host that was never reachable can
 * then be deleted without waiting for it).
 */
function mayHaveChangedHost(status: WindowsHost['status']): boolean {
  return Boolean(
    status?.bootstrapTokenId ||
      status?.bootstrappedAt ||
      status?.servicesVersion ||
      // Renamed or joined to its pool's domain before any token (active-directory-join.ts).
      status?.activeDirectoryRestartAt,
  );
}

/** How many dropped sessions one removal takes before a further drop counts as a failure. */
const cleanupDropsAllowed = 3;
/** How long a host that dropped the session mid-cleanup may take to answer SSH again. */
const reconnectAfterDropMs = 30_000;
/** When the pass after a dropped session runs: the adapter comes back within seconds. */
const requeueAfterDropMs = 2000;

/**
 * The sessions each host (by uid) dropped during its cleanup in this operator: how many, and
 * when the last one dropped. Kept out of the API: losing it on a restart only allows a few more
 * drops, and the removal timeout still bounds the whole removal.
 */
const cleanupDrops = new Map<string, { count: number; lastAt: number }>();

/**
 * Has the agent remove winfleet's services and files; the host must be reachable for it.
 * Removing the CNI's HNS network resets the host's adapter, which can drop the SSH session (and
 * end the cleanup) mid-way: that is no failure. The drop is noted (the Reachable condition,
 * with how many so far) and the pass requeued; the next pass runs the idempotent cleanup again
 * over a new session, while the host not answering yet is expected for reconnectAfterDropMs.
 * Only a drop after cleanupDropsAllowed of them is a failure. Returns when to look again, or
 * undefined once the host is deconfigured.
 */
async function deconfigureHost(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
): Promise<number | undefined> {
  const key = host.metadata.uid ?? `${host.metadata.namespace}/${host.metadata.name}`;
  const dropped = cleanupDrops.get(key);
  // Then the pool's domain, locally and without credentials (active-directory-join.ts).
  const ad = poolActiveDirectory(deps.pools?.list() ?? [], host);
  const removeWinfleet = async (remote: RemoteHost) => {
    await remote.removeWinfleet();
    if (ad && ad.problems.length === 0) await leaveDomain(deps, host, remote, ad);
  };
  const name = `${host.metadata.namespace}/${host.metadata.name}`;
  try {
    if (dropped) {
      // Reconnecting after a drop: connection failures are expected for a while, so they are
      // not reported as connectHost reports them (the host key stays pinned).
      const remote = await openRemoteHost(deps.kc, deps.config(), { ...host, status: hs.status });
      try {
        await removeWinfleet(remote);
      } finally {
        remote.close();
      }
      hs.set(
        ConditionType.Reachable,
        'True',
        ConditionReason.Connected,
        `SSH to ${host.spec.username}@${host.spec.address}:${host.spec.port ?? 22}`,
      );
    } else {
      await withHost(deps, host, hs, removeWinfleet, {
        step: JoinStep.Deconfigure,
        hint: 'the host must be reachable to remove winfleet from it',
      });
    }
  } catch (error) {
    const code = errorCode(error);
    const count = dropped?.count ?? 0;
    if (code === 'WF_SSH_DROPPED' && count < cleanupDropsAllowed) {
      cleanupDrops.set(key, { count: count + 1, lastAt: Date.now() });
      deps.log.info('host dropped the SSH session during cleanup; running it again', {
        host: name,
        drops: count + 1,
        error: (error as Error).message,
      });
      hs.set(
        ConditionType.Reachable,
        'False',
        ConditionReason.ConnectionDropped,
        `${host.spec.address} dropped the SSH session during cleanup (${count + 1} of ${cleanupDropsAllowed} allowed: removing its HNS network resets its adapter); the cleanup runs again`,
      );
      return requeueAfterDropMs;
    }
    if (
      dropped &&
      code === 'WF_SSH_UNREACHABLE' &&
      Date.now() - dropped.lastAt < reconnectAfterDropMs
    ) {
      deps.log.info('host not answering yet after dropping the session; trying again', {
        host: name,
        error: (error as Error).message,
      });
      return requeueAfterDropMs;
    }
    cleanupDrops.delete(key);
    throw error;
  }
  cleanupDrops.delete(key);
  deps.events.record(
    host,
    'Normal',
    EventReason.Deconfigured,
    `Removed winfleet's services and files from ${host.spec.address}`,
  );
  return undefined;
}

/** Deletes the Node with this uid (the one checked to be the host's, never a newer one). */
export async function deleteNode(
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
