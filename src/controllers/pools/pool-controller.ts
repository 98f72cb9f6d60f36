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
 * A host or Node event enqueues only the pools of the hosts it touches (a Node finds its hosts
 * through the host cache's node-name index, so a Node no host names enqueues nothing); a pool
 * event, rarer, enqueues every pool, as a selector change moves hosts between pools. A pass
 * reads only caches (plus a pod list for a host being drained) and writes only what changed.
 */
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import {
  retryRolloutAnnotation,
  type WindowsNodePool,
  type WindowsNodePoolStatus,
  windowsNodePoolResource,
} from '../../api/windows-node-pool.ts';
import { summarizeReport } from '../../api/windows-updates.ts';
import { setCondition } from '../../controller-runtime/conditions.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { type Informer, objectKey } from '../../controller-runtime/informer.ts';
import { nodeIsReady } from '../../controller-runtime/informer-factory.ts';
import type { ReconcileResult } from '../../controller-runtime/work-queue.ts';
import { hostsByNode } from '../../fleet/host-indexes.ts';
import { removeHostAnnotation } from '../../fleet/host-status.ts';
import { type DrainSeen, passHost } from '../../fleet/pool-observe.ts';
import { cachedApiServerVersion } from '../../kube/api-server-version.ts';
import { isNotFound } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import type { HealthMetrics } from '../../remediation/health-metrics.ts';
import {
  checkHealthSpec,
  defaultHealthPolicy,
  type HostHealthResult,
  healthPass,
  metricNames,
  outcomeSamples,
} from '../../remediation/index.ts';
import type { StepResult } from '../../rollout/host-steps.ts';
import { defaultPoolKey } from '../../rollout/pool-membership.ts';
import { poolPass } from '../../rollout/pool-pass.ts';
import { checkPoolSpec, defaultPoolPolicy } from '../../rollout/pool-spec.ts';
import {
  copyReport,
  dropLevels,
  type HostRecord,
  patchNode,
  takeAction,
  writeHostRecord,
} from './pool-actions.ts';
import { poolIndex } from './pool-index.ts';
import { healthHost, mergeHealthDegraded, remediationNodePatch } from './pool-remediation.ts';

/** The payload the operator runs, as the rollout needs it. */
export interface PoolPayload {
  servicesVersion: string;
  kubeletVersion: string;
}

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
}

/** How often a pool with a host in a change is looked at again (drains are not watched). */
const inChangeRecheckMs = 2000;

/** Creates the controller and wires it to pool, host and node events. */
export function createPoolController(deps: PoolControllerDeps): Controller {
  const now = deps.now ?? (() => new Date());
  const apiServerVersion = deps.apiServerVersion ?? cachedApiServerVersion(deps.kc);
  const custom = deps.kc.makeApiClient(k8s.CustomObjectsApi);
  const [group, version] = windowsNodePoolResource.apiVersion.split('/') as [string, string];
  /** Per host: the rollout written, and the resourceVersion of the object it was computed from. */
  const written = new Map<string, { readAt: string; record: HostRecord }>();
  const drains = new Map<string, DrainSeen>();
  /** Per object ("Kind/namespace/name"), per reason: the message last told in an Event. */
  const reported = new Map<string, Map<string, string>>();
  /** Which pool each host is in, by index: a pass reads its own pool's hosts. */
  const membership = poolIndex(deps.pools, deps.hosts);

  /** The host as the cache has it, or with the rollout this controller wrote if it lags. */
  function hostView(key: string): WindowsHost | undefined {
    const host = deps.hosts.get(key);
    if (!host) {
      written.delete(key);
      return undefined;
    }
    const mine = written.get(key);
    if (!mine) return host;
    // The cache moved past the object that was read before the write: it shows the write (or
    // something newer), so it is the truth again.
    if (host.metadata.resourceVersion !== mine.readAt) {
      written.delete(key);
      return host;
    }
    return { ...host, status: { ...host.status, ...mine.record } };
  }

  /**
   * An Event once per distinct message per object and reason (a problem, or TooManyUnhealthy
   * on a pool, is found again every pass; the recorder aggregates besides).
   */
  function tell(
    object: WindowsHost | WindowsNodePool,
    reason: string,
    message: string,
    type: 'Normal' | 'Warning' = 'Warning',
  ): void {
    const key = `${object.kind}/${objectKey(object)}`;
    const told = reported.get(key) ?? new Map<string, string>();
    if (told.get(reason) === message) return;
    told.set(reason, message);
    reported.set(key, told);
    deps.events.record(object, type, reason, message);
  }

  /**
   * One host's part of a pass: record its rollout state, then act. 'conflict': the record
   * could not be written (stale read), so nothing was done and the pass must read again.
   */
  async function doHost(
    host: WindowsHost,
    pass: ReturnType<typeof passHost>,
    step: StepResult,
    problems: readonly string[],
    ladder: HostHealthResult,
  ): Promise<'done' | 'conflict'> {
    if (pass.reportProblem) tell(host, EventReason.InvalidEntry, pass.reportProblem);
    for (const problem of problems) tell(host, EventReason.InvalidEntry, problem);
    const record: HostRecord = {
      ...(step.status !== pass.status ? { rollout: step.status } : {}),
      ...(!isDeepStrictEqual(ladder.status, host.status?.remediation ?? {})
        ? { remediation: ladder.status }
        : {}),
    };
    if (record.rollout || record.remediation) {
      const rv = await writeHostRecord(deps.kc, host, record);
      if (rv === undefined) return 'conflict';
      written.set(pass.key, { readAt: host.metadata.resourceVersion!, record });
    }
    for (const e of ladder.events) deps.events.record(host, e.type, e.reason, e.message);
    for (const e of step.events) deps.events.record(host, e.type, e.reason, e.message);
    const retry = host.metadata.annotations?.[retryRolloutAnnotation];
    if (step.retryConsumed && retry !== undefined)
      await removeHostAnnotation(deps.kc, host, retryRolloutAnnotation, retry);
    const node = pass.nodeObject;
    if (node) {
      // Remediation keeping the node cordoned as the rollout ends its change: the cordon changes
      // hands (one patch below), and the node is never schedulable in between.
      const handOver = ladder.action.kind === 'cordon' && step.action.kind === 'uncordon';
      const drained = handOver
        ? undefined
        : await takeAction({ kc: deps.kc, host, node }, step.action);
      if (drained) {
        drains.set(pass.key, { drained: drained.drained, blockers: drained.blockers });
        for (const pod of drained.evicted) {
          deps.events.record(
            host,
            'Normal',
            EventReason.PodEvicted,
            `Evicted ${pod} from Node ${node.metadata?.name} for the rollout`,
          );
        }
      }
      // A Node out of any change carries none of a change's levels.
      if (!step.status.current && step.action.kind === 'none') await dropLevels(deps.kc, node);
      // Remediation's own cordon (RemediationFailed) or its lifting, after the rollout's action.
      const cordon = remediationNodePatch(ladder.action, node, host);
      if (cordon) await patchNode(deps.kc, node.metadata!.name!, cordon);
    }
    // Last: a copy for people to read; its failure touches nothing above.
    if (pass.report) await copyReport(deps.kc, host, summarizeReport(pass.report));
    return 'done';
  }

  async function reconcilePool(key: string): Promise<ReconcileResult | undefined> {
    const pool = key === defaultPoolKey ? undefined : deps.pools.get(key);
    if (key !== defaultPoolKey && !pool) return undefined;
    const members = membership.members(key);
    const shared = new Map(members.shared.map((s) => [s.host, s.otherPools]));
    const { policy, problems } = pool
      ? checkPoolSpec(pool.spec)
      : { policy: defaultPoolPolicy, problems: [] as string[] };
    const hosts = members.hosts.flatMap((hostKey) => {
      const host = hostView(hostKey);
      if (!host) return [];
      if (host.status?.rollout?.current?.step !== 'Drain') drains.delete(hostKey);
      return [
        {
          host,
          pass: passHost(host, deps.nodes, shared.get(hostKey) ?? [], drains.get(hostKey)),
        },
      ];
    });
    const health = pool
      ? checkHealthSpec(pool.spec.health)
      : { policy: defaultHealthPolicy, problems: [] as string[] };
    const healthResult = healthPass({
      pool: key,
      policy: health.policy,
      specProblems: health.problems,
      hosts: hosts.map(({ host, pass }) => healthHost(pass.key, host, pass.nodeObject)),
      now: now(),
    });
    deps.log.debug('health pass', {
      pool: key,
      unhealthy: healthResult.unhealthy,
      shortCircuited: healthResult.shortCircuited,
    });
    const payload = deps.payload ? await deps.payload() : undefined;
    const generation = pool?.metadata.generation;
    const result = poolPass({
      ...(generation !== undefined ? { generation } : {}),
      policy,
      specProblems: problems,
      hosts: hosts.map(({ pass }) => {
        const repair = healthResult.hosts.get(pass.key)?.repairRebootRequestedAt;
        return repair ? { ...pass, repairRequestedAt: repair } : pass;
      }),
      ...(payload ? { payload } : {}),
      apiServerVersion: payload ? await apiServerVersion() : '',
      now: now(),
    });

    let inChange = false;
    // One host's failure (an API error, a report the API server will not store) must not hold
    // back the others' steps or the pool's status: each host is done on its own, and the first
    // error is raised once the pass is over (the work queue then retries with backoff).
    let firstError: unknown;
    const recorded: string[] = [];
    for (const { host, pass } of hosts) {
      const step = result.hosts.get(pass.key)!;
      if (step.status.current) inChange = true;
      try {
        const outcome = await doHost(
          host,
          pass,
          step,
          result.hostProblems.get(pass.key) ?? [],
          healthResult.hosts.get(pass.key)!,
        );
        if (outcome === 'conflict') return { requeueAfterMs: 500 }; // read again; never act on it
        recorded.push(pass.key);
      } catch (error) {
        firstError ??= error;
        deps.log.warn('pool pass: a host step failed', {
          pool: key,
          host: pass.key,
          error: (error as Error).message,
        });
      }
    }
    // The counters count only the rungs whose ending was recorded (a pass whose write failed
    // finds the same ending again).
    deps.healthMetrics?.applyPoolPass(key, [
      ...healthResult.metrics.filter((m) => m.name !== metricNames.remediationsTotal),
      ...recorded.flatMap((hostKey) =>
        outcomeSamples(key, healthResult.hosts.get(hostKey)?.outcomes ?? []),
      ),
    ]);
    const status = {
      ...result.status,
      conditions: mergeHealthDegraded(result.status.conditions, healthResult.degraded),
    };
    if (pool) {
      for (const e of healthResult.poolEvents) tell(pool, e.reason, e.message, e.type);
      await writePoolStatus(pool, status);
    } else {
      reportDefaultPool(
        hosts.map((h) => h.host),
        status,
      );
    }
    // recheckAt is on the rollout clock, like `now`.
    const dueTimes = [result.recheckAt, healthResult.recheckAt]
      .filter((t): t is Date => t !== undefined)
      .map((t) => t.getTime());
    const due =
      dueTimes.length > 0 ? Math.max(0, Math.min(...dueTimes) - now().getTime()) : undefined;
    const soonest = Math.min(due ?? Infinity, inChange ? inChangeRecheckMs : Infinity);
    deps.log.debug('pool pass done', { pool: key, requeueMs: soonest });
    if (firstError !== undefined) throw firstError;
    return Number.isFinite(soonest) ? { requeueAfterMs: Math.max(soonest, 100) } : undefined;
  }

  /** The default pool's Degraded state, as a Warning Event on each of its hosts. */
  function reportDefaultPool(
    hosts: readonly WindowsHost[],
    status: {
      conditions: readonly { type: string; status: string; reason: string; message: string }[];
    },
  ): void {
    const degraded = status.conditions.find((c) => c.type === 'Degraded');
    if (degraded?.status !== 'True') return;
    for (const host of hosts) {
      tell(
        host,
        degraded.reason,
        `default pool (hosts no WindowsNodePool selects): ${degraded.message}`,
      );
    }
  }

  async function writePoolStatus(
    pool: WindowsNodePool,
    computed: ReturnType<typeof poolPass>['status'],
  ): Promise<void> {
    const at = now();
    let conditions = pool.status?.conditions;
    for (const c of computed.conditions) conditions = setCondition(conditions, c, at);
    const next: WindowsNodePoolStatus = { ...computed, conditions };
    if (isDeepStrictEqual(next, pool.status ?? {})) return;
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
      if (isNotFound(error)) return; // the pool went; its delete event follows
      throw error;
    }
  }

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
      return reconcilePool(key);
    },
  });

  // A pool that comes, goes or changes its spec may move hosts: they are filed again, and
  // every pool is looked at.
  const everything = () => {
    membership.refresh();
    controller.enqueue(everythingKey);
  };
  /** Pools deleted since the last pass over everything: their metric series go. */
  const forgotten: string[] = [];
  deps.pools
    .on('add', everything)
    .on('delete', (pool) => {
      forgotten.push(objectKey(pool));
      reported.delete(`${pool.kind}/${objectKey(pool)}`);
      everything();
    })
    .on('update', (pool, old) => {
      // Our own status writes need no pass; a spec change (generation) may move hosts.
      if (pool.metadata.generation !== old.metadata.generation) everything();
    });
  const enqueuePoolsOf = (...hosts: WindowsHost[]) => {
    for (const host of hosts) for (const pool of membership.poolsOf(host)) controller.enqueue(pool);
  };
  const hostsOfNode = hostsByNode(deps.hosts);
  const enqueueForNode = (node: k8s.V1Node) => {
    const name = node.metadata?.name;
    if (name) enqueuePoolsOf(...hostsOfNode(name));
  };
  deps.hosts
    .on('add', (host) => enqueuePoolsOf(host))
    .on('delete', (host) => {
      // Nothing is kept for a host that is gone.
      const key = objectKey(host);
      written.delete(key);
      drains.delete(key);
      reported.delete(`${host.kind}/${key}`);
      enqueuePoolsOf(host);
    })
    .on('update', (host, old) => {
      if (
        !isDeepStrictEqual(host.metadata.labels, old.metadata.labels) ||
        !isDeepStrictEqual(host.metadata.annotations, old.metadata.annotations) ||
        host.metadata.deletionTimestamp !== old.metadata.deletionTimestamp ||
        host.status?.nodeName !== old.status?.nodeName ||
        !isDeepStrictEqual(host.status?.rollout, old.status?.rollout) ||
        !isDeepStrictEqual(host.status?.remediation, old.status?.remediation) ||
        host.status?.bootstrappedAt !== old.status?.bootstrappedAt ||
        !isDeepStrictEqual(host.status?.lastError, old.status?.lastError)
      ) {
        // Both: a label change may move the host from one pool to another.
        enqueuePoolsOf(host, old);
      }
    });
  const nodeState = (n: k8s.V1Node) => ({
    ready: nodeIsReady(n),
    unschedulable: n.spec?.unschedulable,
    annotations: n.metadata?.annotations,
    bootId: n.status?.nodeInfo?.bootID,
    // Health: each condition's status (the kubelet's heartbeat times change every few seconds).
    conditions: (n.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`).join(','),
  });
  deps.nodes
    .on('add', enqueueForNode)
    .on('delete', enqueueForNode)
    .on('update', (node, old) => {
      if (!isDeepStrictEqual(nodeState(node), nodeState(old))) enqueueForNode(node);
    });
  return controller;
}
