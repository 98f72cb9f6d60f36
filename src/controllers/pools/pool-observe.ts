/**
 * What the pool controller reads of the world for one pass: which pool each cached
 * WindowsHost is in (assignPools over the cached pools, each selector checked by
 * checkPoolSpec), and per member host the PoolPassHost poolPass takes — its status.rollout and
 * its own Node (only one carrying the host's identity) as ObservedNode.
 *
 * Not observed yet (the host actions come with them): whether a node is drained, the agent's
 * available updates and pending reboot. Until then a host reports no updates and no pending
 * reboot, and a drain is never seen finished.
 */
import type * as k8s from '@kubernetes/client-node';
import { cordonedByAnnotation, servicesVersionAnnotation } from '../../api/node-annotations.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import {
  rebootRequestedAnnotation,
  retryRolloutAnnotation,
  type WindowsNodePool,
} from '../../api/windows-node-pool.ts';
import type { Informer } from '../../controller/informer.ts';
import { nodeIsReady } from '../../controller/informer-factory.ts';
import type { HostObservation, ObservedNode } from '../../rollout/host-steps.ts';
import { assignPools, type Membership } from '../../rollout/pool-membership.ts';
import type { PoolPassHost } from '../../rollout/pool-pass.ts';
import { checkPoolSpec } from '../../rollout/pool-spec.ts';
import { carriesIdentity } from '../hosts/node-claims.ts';

/** Which pool each cached host is in; every cached pool (and the default pool) is present. */
export function poolMembership(
  pools: readonly WindowsNodePool[],
  hosts: readonly WindowsHost[],
): Membership {
  return assignPools(
    pools.map((p) => {
      const selector = checkPoolSpec(p.spec).policy.selector;
      return {
        namespace: p.metadata.namespace ?? '',
        name: p.metadata.name,
        ...(selector ? { selector } : {}),
      };
    }),
    hosts.map((h) => ({
      namespace: h.metadata.namespace ?? '',
      name: h.metadata.name,
      ...(h.metadata.labels ? { labels: h.metadata.labels } : {}),
    })),
  );
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
  return {
    raw,
    node: {
      name,
      ready: nodeIsReady(raw),
      unschedulable: raw.spec?.unschedulable === true,
      cordonedByWinfleet: raw.metadata?.annotations?.[cordonedByAnnotation] !== undefined,
      ...(bootId ? { bootId } : {}),
    },
  };
}

/** The PoolPassHost of one member host. */
export function passHost(
  host: WindowsHost,
  nodes: Informer<k8s.V1Node>,
  otherPools: readonly string[],
): PoolPassHost {
  const seen = observeNode(host, nodes);
  const servicesVersion = seen?.raw.metadata?.annotations?.[servicesVersionAnnotation];
  const createdAt = host.metadata.creationTimestamp;
  const retry = host.metadata.annotations?.[retryRolloutAnnotation];
  const observed: HostObservation = {
    ...(seen ? { node: seen.node } : {}),
    drained: false,
    ...(retry !== undefined ? { retryAnnotation: retry } : {}),
    deleting: Boolean(host.metadata.deletionTimestamp),
    facts: {
      ...(servicesVersion ? { servicesVersion } : {}),
      availableUpdates: [],
      rebootPending: false,
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
  };
}
