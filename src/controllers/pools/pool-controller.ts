/**
 * The WindowsNodePool controller (issue 12): per pool key it works out the pool's hosts
 * (pool-observe.ts), runs poolPass (src/rollout) and does what it says — per host, record
 * status.rollout first, then take the one action (pool-actions.ts) — and writes the pool's
 * status (hosts, readyHosts, updatedHosts, unavailableHosts, observedGeneration, Available,
 * Progressing, Degraded) through /status.
 *
 * Keys are "namespace/name" of a pool, or defaultPoolKey: hosts no pool selects, with
 * maxUnavailable 1. The default pool has no object: its rollout is told by the hosts' Events
 * and status.rollout, and its Degraded state by a Warning Event on each host concerned.
 *
 * What a pass reads: the cached pools, hosts and Nodes; the payload the operator runs (its
 * services version and kubelet version); the API server's version (for the kubelet skew
 * policy). What it remembers between passes, and why that is safe to lose:
 * - written: the rollout status it wrote per host and the resourceVersion it read, until the
 *   cache shows a newer object (ReplicaSet-style expectations: a lagging cache must not start
 *   more hosts than maxUnavailable). Lost on a restart, when the caches are fresh anyway.
 * - drains: what the last drain found per host in the Drain step. Lost: the host is drained
 *   again, which evicts what is left and finds the same.
 *
 * The pass itself is pool-reconcile.ts (reconcilePool over an explicit state); this file is the
 * wiring: the API-bound writes, the work queue and the watches.
 *
 * A host or Node event enqueues only the pools of the hosts it touches (a Node finds its hosts
 * through the host cache's node-name index, so a Node no host names enqueues nothing); a pool
 * event, rarer, enqueues every pool, as a selector change moves hosts between pools. A pass
 * reads only caches (plus a pod list for a host being drained) and writes only what changed.
 */
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { prePullState } from '../../api/pre-pull.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../../api/windows-node-pool.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { type Informer, objectKey } from '../../controller-runtime/informer.ts';
import { nodeIsReady } from '../../controller-runtime/informer-factory.ts';
import { hostsByNode } from '../../fleet/host-indexes.ts';
import { removeHostAnnotation } from '../../fleet/host-status.ts';
import { cachedApiServerVersion } from '../../kube/api-server-version.ts';
import { isNotFound } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import type { HealthMetrics } from '../../remediation/health-metrics.ts';
import { defaultPoolKey } from '../../rollout/pool-membership.ts';
import { copyReport, dropLevels, patchNode, takeAction, writeHostRecord } from './pool-actions.ts';
import { type PoolIndex, poolIndex } from './pool-index.ts';
import type { MigrationReads } from './pool-migration.ts';
import {
  newPoolMemory,
  type PoolMemory,
  type PoolPayload,
  type PoolReconcileState,
  type PoolWrites,
  reconcilePool,
} from './pool-reconcile.ts';

export type { PoolPayload } from './pool-reconcile.ts';

export interface PoolControllerDeps {
  kc: k8s.KubeConfig;
  pools: Informer<WindowsNodePool>;
  hosts: Informer<WindowsHost>;
  nodes: Informer<k8s.V1Node>;
  events: EventRecorder;
  log: Logger;
  /** The payload to roll out; undefined: no payload (the operator joins no hosts). */
  payload?: () => Promise<PoolPayload>;
  /** Where the health pass's metrics go (the operator's /metrics), if anywhere. */
  healthMetrics?: HealthMetrics;
  /** The API server's gitVersion; default: asked of the API server (cached 5 minutes). */
  apiServerVersion?: () => Promise<string>;
  now?: () => Date;
  /** What a pool with spec.replaces reads of workloads; absent: such a migration is blocked. */
  migrationReads?: MigrationReads;
}

/** The pass's writes bound to the API server behind `kc` (pool-actions.ts does each). */
export function apiPoolWrites(kc: k8s.KubeConfig): PoolWrites {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const [group, version] = windowsNodePoolResource.apiVersion.split('/') as [string, string];
  return {
    writeHostRecord: (host, record) => writeHostRecord(kc, host, record),
    removeHostAnnotation: (host, key, value) => removeHostAnnotation(kc, host, key, value),
    takeAction: (host, node, action) => takeAction({ kc, host, node }, action),
    dropLevels: (node) => dropLevels(kc, node),
    patchNode: (name, body) => patchNode(kc, name, body),
    copyReport: (host, summary) => copyReport(kc, host, summary),
    async writePoolStatus(pool, status) {
      try {
        await custom.patchNamespacedCustomObjectStatus(
          {
            group,
            version,
            namespace: pool.metadata.namespace!,
            plural: windowsNodePoolResource.plural,
            name: pool.metadata.name,
            body: { status },
          },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
      } catch (error) {
        if (isNotFound(error)) return; // the pool went; its delete event follows
        throw error;
      }
    },
  };
}

/** The explicit state the operator's passes run over, from the controller's deps. */
export function poolReconcileState(
  deps: PoolControllerDeps,
  membership: PoolIndex,
): PoolReconcileState {
  return {
    pools: deps.pools,
    hosts: deps.hosts,
    nodes: deps.nodes,
    membership,
    memory: newPoolMemory(),
    writes: apiPoolWrites(deps.kc),
    events: deps.events,
    log: deps.log,
    now: deps.now ?? (() => new Date()),
    ...(deps.payload ? { payload: deps.payload } : {}),
    apiServerVersion: deps.apiServerVersion ?? cachedApiServerVersion(deps.kc),
    ...(deps.healthMetrics ? { healthMetrics: deps.healthMetrics } : {}),
    ...(deps.migrationReads ? { migrationReads: deps.migrationReads } : {}),
  };
}

/** Creates the controller and wires it to pool, host and node events. */
export function createPoolController(deps: PoolControllerDeps): Controller {
  /** Which pool each host is in, by index: a pass reads its own pool's hosts. */
  const membership = poolIndex(deps.pools, deps.hosts);
  const state = poolReconcileState(deps, membership);
  /** Pools deleted since the last pass over everything: their metric series go. */
  const forgotten: string[] = [];
  const controller = new Controller({
    name: 'windowsnodepools',
    log: deps.log,
    baseDelayMs: 1000,
    maxDelayMs: 5 * 60_000,
    async reconcile(key) {
      if (key === everythingKey) {
        for (const pool of deps.pools.list()) controller.enqueue(objectKey(pool));
        for (const gone of forgotten.splice(0)) deps.healthMetrics?.forgetPool(gone);
        controller.enqueue(defaultPoolKey);
        return undefined;
      }
      return reconcilePool(state, key);
    },
  });
  const wiring = { controller, membership, memory: state.memory };
  watchPools(wiring, deps.pools, forgotten);
  watchHosts(wiring, deps.hosts);
  watchNodes(wiring, deps.hosts, deps.nodes);
  return controller;
}

/** What the watches act on: the queue, the pool index and the pass's memory. */
interface PoolWiring {
  controller: Controller;
  membership: PoolIndex;
  memory: PoolMemory;
}

/**
 * A pool that comes, goes or changes its spec may move hosts: they are filed again, and
 * every pool is looked at.
 */
function watchPools(
  { controller, membership, memory }: PoolWiring,
  pools: Informer<WindowsNodePool>,
  forgotten: string[],
): void {
  const everything = () => {
    membership.refresh();
    controller.enqueue(everythingKey);
  };
  pools
    .on('add', everything)
    .on('delete', (pool) => {
      forgotten.push(objectKey(pool));
      memory.reported.delete(`${pool.kind}/${objectKey(pool)}`);
      everything();
    })
    .on('update', (pool, old) => {
      // Our own status writes need no pass; a spec change (generation) may move hosts.
      if (pool.metadata.generation !== old.metadata.generation) everything();
      // A migration's new state is the replaced pool's signal to retire its hosts, or stop.
      else if (!isDeepStrictEqual(pool.status?.migration, old.status?.migration)) {
        for (const replaced of new Set([pool.spec?.replaces, old.spec?.replaces]))
          if (typeof replaced === 'string')
            controller.enqueue(`${pool.metadata.namespace ?? ''}/${replaced}`);
      }
    });
}

/** Enqueues the pools of each host. */
function enqueuePoolsOf({ controller, membership }: PoolWiring, ...hosts: WindowsHost[]): void {
  for (const host of hosts) for (const pool of membership.poolsOf(host)) controller.enqueue(pool);
}

/** True when a host update changes what a pass reads of it (or which pool it is in). */
export function hostChanged(host: WindowsHost, old: WindowsHost): boolean {
  return (
    !isDeepStrictEqual(host.metadata.labels, old.metadata.labels) ||
    !isDeepStrictEqual(host.metadata.annotations, old.metadata.annotations) ||
    host.metadata.deletionTimestamp !== old.metadata.deletionTimestamp ||
    host.status?.nodeName !== old.status?.nodeName ||
    !isDeepStrictEqual(host.status?.rollout, old.status?.rollout) ||
    !isDeepStrictEqual(host.status?.remediation, old.status?.remediation) ||
    host.status?.bootstrappedAt !== old.status?.bootstrappedAt ||
    !isDeepStrictEqual(host.status?.lastError, old.status?.lastError)
  );
}

/** A host event enqueues only its own pools (both, for a host moving between pools). */
function watchHosts(wiring: PoolWiring, hosts: Informer<WindowsHost>): void {
  const { memory } = wiring;
  hosts
    .on('add', (host) => enqueuePoolsOf(wiring, host))
    .on('delete', (host) => {
      // Nothing is kept for a host that is gone.
      const key = objectKey(host);
      memory.written.delete(key);
      memory.drains.delete(key);
      memory.reported.delete(`${host.kind}/${key}`);
      enqueuePoolsOf(wiring, host);
    })
    .on('update', (host, old) => {
      // Both: a label change may move the host from one pool to another.
      if (hostChanged(host, old)) enqueuePoolsOf(wiring, host, old);
    });
}

/** What of a Node a pass reads, to tell an update that matters from a heartbeat. */
export function nodeState(n: k8s.V1Node) {
  return {
    ready: nodeIsReady(n),
    unschedulable: n.spec?.unschedulable,
    annotations: n.metadata?.annotations,
    bootId: n.status?.nodeInfo?.bootID,
    // Health: each condition's status (the kubelet's heartbeat times change every few seconds).
    conditions: (n.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`).join(','),
    // The agent's pulls of this boot and version ended: a WaitReady may go on (host-steps.ts).
    prePull: prePullState(n),
  };
}

/** A Node event enqueues the pools of the hosts that name it (through the node-name index). */
function watchNodes(
  wiring: PoolWiring,
  hosts: Informer<WindowsHost>,
  nodes: Informer<k8s.V1Node>,
): void {
  const hostsOfNode = hostsByNode(hosts);
  const enqueueForNode = (node: k8s.V1Node) => {
    const name = node.metadata?.name;
    if (name) enqueuePoolsOf(wiring, ...hostsOfNode(name));
  };
  nodes
    .on('add', enqueueForNode)
    .on('delete', enqueueForNode)
    .on('update', (node, old) => {
      if (!isDeepStrictEqual(nodeState(node), nodeState(old))) enqueueForNode(node);
    });
}
