/**
 * The WindowsNodePool controller (issue 12), status only for now: per pool key it works out
 * the pool's hosts (pool-observe.ts), runs poolPass and writes the pool's status — hosts,
 * readyHosts, updatedHosts, unavailableHosts, hostsInProgress, observedGeneration and the
 * Available, Progressing and Degraded conditions — through /status. It takes no host action
 * yet (no cordon, drain, apply or reboot; see src/rollout/index.ts for the plan), so it gives
 * poolPass no change to make: no payload target, no reboot request, no agent reports. The
 * counts of hosts, Ready and unavailable hosts and the Degraded condition (a spec problem, a
 * host two pools select) are real; updatedHosts counts every host not in a change and
 * Progressing says RolloutComplete until the changes are wired.
 *
 * Keys are "namespace/name" of a pool, or defaultPoolKey (hosts no pool selects; it has no
 * object, so nothing is written for it yet). Membership links hosts to several pools, so
 * every relevant event enqueues every pool: a pass reads only caches and writes only what
 * changed, so it is cheap.
 */
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import {
  type WindowsNodePool,
  type WindowsNodePoolStatus,
  windowsNodePoolResource,
} from '../../api/windows-node-pool.ts';
import { setCondition } from '../../controller/conditions.ts';
import { Controller, everythingKey } from '../../controller/controller.ts';
import type { EventRecorder } from '../../controller/events.ts';
import { type Informer, objectKey } from '../../controller/informer.ts';
import { nodeIsReady } from '../../controller/informer-factory.ts';
import type { ReconcileResult } from '../../controller/work-queue.ts';
import { isNotFound } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import { defaultPoolKey } from '../../rollout/pool-membership.ts';
import { poolPass } from '../../rollout/pool-pass.ts';
import { checkPoolSpec } from '../../rollout/pool-spec.ts';
import { passHost, poolMembership } from './pool-observe.ts';

export interface PoolControllerDeps {
  kc: k8s.KubeConfig;
  pools: Informer<WindowsNodePool>;
  hosts: Informer<WindowsHost>;
  nodes: Informer<k8s.V1Node>;
  events: EventRecorder;
  log: Logger;
  now?: () => Date;
}

/** Creates the controller and wires it to pool, host and node events. */
export function createPoolController(deps: PoolControllerDeps): Controller {
  const now = deps.now ?? (() => new Date());
  const custom = deps.kc.makeApiClient(k8s.CustomObjectsApi);
  const [group, version] = windowsNodePoolResource.apiVersion.split('/') as [string, string];

  async function reconcilePool(key: string): Promise<ReconcileResult | undefined> {
    if (key === defaultPoolKey) return undefined; // no object to write (see the module comment)
    const pool = deps.pools.get(key);
    if (!pool) return undefined;
    const membership = poolMembership(deps.pools.list(), deps.hosts.list());
    const members = membership.pools.get(key) ?? { hosts: [], shared: [] };
    const shared = new Map(members.shared.map((s) => [s.host, s.otherPools]));
    const { policy, problems } = checkPoolSpec(pool.spec);
    const hosts = members.hosts.flatMap((hostKey) => {
      const host = deps.hosts.get(hostKey);
      return host ? [passHost(host, deps.nodes, shared.get(hostKey) ?? [])] : [];
    });
    const generation = pool.metadata.generation;
    const result = poolPass({
      ...(generation !== undefined ? { generation } : {}),
      // No change is wired yet: no reboot request and no payload (see the module comment).
      policy: { ...policy, rebootRequestedAt: undefined },
      specProblems: problems,
      hosts: hosts.map((h) => ({ ...h, rebootRequested: undefined })),
      // Read only with a payload, which is not passed yet.
      apiServerVersion: '',
      now: now(),
    });
    const at = now();
    let conditions = pool.status?.conditions;
    for (const c of result.status.conditions) conditions = setCondition(conditions, c, at);
    const next: WindowsNodePoolStatus = { ...result.status, conditions };
    if (isDeepStrictEqual(next, pool.status ?? {})) return undefined;
    try {
      await custom.patchNamespacedCustomObjectStatus(
        {
          group,
          version,
          namespace: pool.metadata.namespace!,
          plural: windowsNodePoolResource.plural,
          name: pool.metadata.name,
          body: { status: next },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    } catch (error) {
      if (isNotFound(error)) return undefined; // the pool went; its delete event follows
      throw error;
    }
    return undefined;
  }

  const controller = new Controller({
    name: 'windowsnodepools',
    log: deps.log,
    baseDelayMs: 1000,
    maxDelayMs: 5 * 60_000,
    async reconcile(key) {
      if (key === everythingKey) {
        for (const pool of deps.pools.list()) controller.enqueue(objectKey(pool));
        controller.enqueue(defaultPoolKey);
        return undefined;
      }
      return reconcilePool(key);
    },
  });

  const everything = () => controller.enqueue(everythingKey);
  deps.pools
    .on('add', everything)
    .on('delete', everything)
    .on('update', (pool, old) => {
      // Our own status writes need no pass; a spec change (generation) may move hosts.
      if (pool.metadata.generation !== old.metadata.generation) everything();
    });
  deps.hosts
    .on('add', everything)
    .on('delete', everything)
    .on('update', (host, old) => {
      if (
        !isDeepStrictEqual(host.metadata.labels, old.metadata.labels) ||
        !isDeepStrictEqual(host.metadata.annotations, old.metadata.annotations) ||
        host.status?.nodeName !== old.status?.nodeName ||
        !isDeepStrictEqual(host.status?.rollout, old.status?.rollout)
      ) {
        everything();
      }
    });
  const nodeState = (n: k8s.V1Node) => ({
    ready: nodeIsReady(n),
    unschedulable: n.spec?.unschedulable,
    annotations: n.metadata?.annotations,
    bootId: n.status?.nodeInfo?.bootID,
  });
  deps.nodes
    .on('add', everything)
    .on('delete', everything)
    .on('update', (node, old) => {
      if (!isDeepStrictEqual(nodeState(node), nodeState(old))) everything();
    });
  return controller;
}
