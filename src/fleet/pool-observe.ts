/**
 * What the pool controller reads of the world for one pass: which pool each cached
 * WindowsHost is in (assignPools over the cached pools, each selector checked by
 * checkPoolSpec), and per member host the PoolPassHost poolPass takes — its status.rollout, its
 * own Node (only one carrying the host's identity) as ObservedNode, the services version its
 * agent applied, and its agent's Windows Update report (winfleet.io/windows-updates, believed
 * only when made in the Node's current boot). Whether a node is drained is what the last drain
 * of this operator found (a restarted operator drains again to find out).
 */
import type * as k8s from '@kubernetes/client-node';
import {
  cordonedByAnnotation,
  cordonedByValues,
  servicesVersionAnnotation,
  windowsUpdatesAnnotation,
} from '../api/node-annotations.ts';
import { prePullAnnotation, prePullState } from '../api/pre-pull.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import {
  rebootRequestedAnnotation,
  retryRolloutAnnotation,
  type WindowsNodePool,
} from '../api/windows-node-pool.ts';
import { parseWindowsUpdateReport, type WindowsUpdateReport } from '../api/windows-updates.ts';
import type { Informer } from '../controller-runtime/informer.ts';
import { nodeIsReady } from '../controller-runtime/informer-factory.ts';
import type { HostObservation } from '../rollout/host-steps.ts';
import type { ObservedNode } from '../rollout/observed-node.ts';
import {
  assignPools,
  defaultPoolKey,
  type HostLabels,
  type Membership,
  owningPools,
  type PoolSelection,
  sortedPools,
} from '../rollout/pool-membership.ts';
import type { PoolPassHost } from '../rollout/pool-pass.ts';
import { checkPoolSpec } from '../rollout/pool-spec.ts';
import { carriesIdentity } from './node-claims.ts';

/** Which pool each cached host is in; every cached pool (and the default pool) is present. */
export function poolMembership(
  pools: readonly WindowsNodePool[],
  hosts: readonly WindowsHost[],
): Membership {
  return assignPools(pools.map(poolSelection), hosts.map(hostLabels));
}

/** What membership reads of a pool: its key and its selector (none when the spec is bad). */
export function poolSelection(pool: WindowsNodePool): PoolSelection {
  const selector = checkPoolSpec(pool.spec).policy.selector;
  return {
    namespace: pool.metadata.namespace ?? '',
    name: pool.metadata.name,
    ...(selector ? { selector } : {}),
  };
}

/**
 * The pool that governs `host`: the first by key of the pools selecting it, as the rollout's
 * assignPools decides; undefined for a host of no pool (the default pool).
 */
export function governingPool(
  pools: readonly WindowsNodePool[],
  host: WindowsHost,
): WindowsNodePool | undefined {
  const [key] = owningPools(sortedPools(pools.map(poolSelection)), hostLabels(host));
  if (key === undefined || key === defaultPoolKey) return undefined;
  return pools.find((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name}` === key);
}

/** What membership reads of a host: its key and labels. */
export function hostLabels(host: WindowsHost): HostLabels {
  return {
    namespace: host.metadata.namespace ?? '',
    name: host.metadata.name,
    ...(host.metadata.labels ? { labels: host.metadata.labels } : {}),
  };
}

/**
 * The agent's pulls of the Node's boot and services version (images before pods, host-steps.ts):
 * 'ended' for a Node that carries no pre-pull list (nothing to pull: an auto pool whose
 * workloads have no image for its build), so its rollout does not wait for a report that never
 * comes.
 */
export function observedPrePull(raw: k8s.V1Node): ObservedNode['prePull'] {
  if (raw.metadata?.annotations?.[prePullAnnotation] === undefined) return 'ended';
  return prePullState(raw);
}

/** The host's own Node, as the rollout sees it; undefined when it has none (or not its own). */
export function observeNode(
  host: WindowsHost,
  nodes: Informer<k8s.V1Node>,
): { node: ObservedNode; raw: k8s.V1Node } | undefined {
  const name = host.status?.nodeName;
  if (!name) return undefined;
  const raw = nodes.get(name);
  if (!raw || !carriesIdentity(raw, host)) return undefined;
  const bootId = raw.status?.nodeInfo?.bootID;
  const ready = raw.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
  const readyAt = ready?.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : NaN;
  const readySince = Number.isNaN(readyAt) ? undefined : new Date(readyAt).toISOString();
  const prePull = observedPrePull(raw);
  return {
    raw,
    node: {
      name,
      ready: nodeIsReady(raw),
      unschedulable: raw.spec?.unschedulable === true,
      // The rollout's own cordon; remediation's (RemediationFailed) is not the rollout's to lift.
      // The annotation, which the node itself may write, counts only with winfleet's record.
      cordonedByWinfleet:
        raw.metadata?.annotations?.[cordonedByAnnotation] === cordonedByValues.rollout &&
        host.status?.rollout?.cordoned === name,
      ...(bootId ? { bootId } : {}),
      ...(readySince ? { readySince } : {}),
      ...(prePull ? { prePull } : {}),
    },
  };
}

/**
 * The agent's report, if it made one in the Node's current boot; a report the parser refuses
 * is a problem to tell, and counts as no report.
 */
export function agentReport(raw: k8s.V1Node | undefined): {
  report?: WindowsUpdateReport;
  problem?: string;
} {
  const text = raw?.metadata?.annotations?.[windowsUpdatesAnnotation];
  if (text === undefined) return {};
  try {
    const report = parseWindowsUpdateReport(text);
    const bootId = raw?.status?.nodeInfo?.bootID;
    return bootId !== undefined && report.bootId === bootId ? { report } : {};
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

/** What the last drain found, per host key (the controller keeps it while a host drains). */
export interface DrainSeen {
  drained: boolean;
  blockers: readonly string[];
}

/** The PoolPassHost of one member host, and a refused agent report if there was one. */
export function passHost(
  host: WindowsHost,
  nodes: Informer<k8s.V1Node>,
  otherPools: readonly string[],
  drain?: DrainSeen,
): PoolPassHost & {
  reportProblem?: string;
  report?: WindowsUpdateReport;
  /** The host's own Node as cached (identity-checked), for the actions. */
  nodeObject?: k8s.V1Node;
} {
  const seen = observeNode(host, nodes);
  const servicesVersion = seen?.raw.metadata?.annotations?.[servicesVersionAnnotation];
  const createdAt = host.metadata.creationTimestamp;
  const retry = host.metadata.annotations?.[retryRolloutAnnotation];
  const { report, problem } = agentReport(seen?.raw);
  const failed = report?.failed.map((f) => `${f.kb} failed: ${f.error}`).join('; ');
  const observed: HostObservation = {
    ...(seen ? { node: seen.node } : {}),
    drained: drain?.drained ?? false,
    ...(drain?.blockers.length ? { drainBlockers: drain.blockers } : {}),
    ...(failed ? { agentError: failed } : report?.error ? { agentError: report.error } : {}),
    ...(retry !== undefined ? { retryAnnotation: retry } : {}),
    deleting: Boolean(host.metadata.deletionTimestamp),
    facts: {
      ...(servicesVersion ? { servicesVersion } : {}),
      // An update installed and waiting for its reboot is not "available", whatever the search
      // said (some builds still offer it until the reboot).
      availableUpdates:
        report?.available.filter(
          (u) => !(report.rebootPending && report.installed.includes(u.kb)),
        ) ?? [],
      updatesReported: report !== undefined,
      rebootPending: report?.rebootPending ?? false,
      ...(createdAt ? { createdAt: new Date(createdAt).toISOString() } : {}),
    },
  };
  const rebootRequested = host.metadata.annotations?.[rebootRequestedAnnotation];
  return {
    key: `${host.metadata.namespace}/${host.metadata.name}`,
    ...(otherPools.length > 0 ? { otherPools } : {}),
    status: host.status?.rollout ?? {},
    observed,
    ...(rebootRequested !== undefined ? { rebootRequested } : {}),
    // Joined: the host controller reported it Ready on a version, and its agent reports one.
    ...(!host.status?.servicesVersion || !servicesVersion ? { joining: true } : {}),
    ...(problem ? { reportProblem: problem } : {}),
    ...(report ? { report } : {}),
    ...(seen ? { nodeObject: seen.raw } : {}),
  };
}
