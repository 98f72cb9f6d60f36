/**
 * One pass of the WindowsNodePool controller over one pool key (see pool-controller.ts for
 * what a pass reads, remembers and writes). `reconcilePool(state, key)` is a module-level
 * function over an explicit state: the caches it reads, what it remembers between passes, the
 * clock, and the small functions through which it writes (`PoolWrites`, bound to the API client
 * by the wiring in pool-controller.ts). A unit test drives it over a stated cache with its own
 * recorders for those functions, without watches or a work queue.
 */
import { isDeepStrictEqual } from 'node:util';
import type * as k8s from '@kubernetes/client-node';
import { EventReason, PoolConditionType } from '../../api/reasons.ts';
import type { HostWindowsUpdates, WindowsHost } from '../../api/windows-host.ts';
import {
  retryRolloutAnnotation,
  type WindowsNodePool,
  type WindowsNodePoolStatus,
} from '../../api/windows-node-pool.ts';
import { summarizeReport } from '../../api/windows-updates.ts';
import { setCondition } from '../../controller-runtime/conditions.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { type Informer, objectKey } from '../../controller-runtime/informer.ts';
import type { ReconcileResult } from '../../controller-runtime/work-queue.ts';
import { type DrainSeen, passHost } from '../../fleet/pool-observe.ts';
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
import type { StepAction, StepResult } from '../../rollout/host-steps.ts';
import { defaultPoolKey } from '../../rollout/pool-membership.ts';
import { type MigrationGate, retiringBy } from '../../rollout/pool-migration.ts';
import { poolPass } from '../../rollout/pool-pass.ts';
import { checkPoolSpec, defaultPoolPolicy } from '../../rollout/pool-spec.ts';
import type { DrainOutcome, HostRecord } from './pool-actions.ts';
import type { PoolIndex } from './pool-index.ts';
import { type MigrationReads, poolMigration } from './pool-migration.ts';
import { healthHost, mergeHealthDegraded, remediationNodePatch } from './pool-remediation.ts';

/** The payload the operator runs, as the rollout needs it. */
export interface PoolPayload {
  servicesVersion: string;
  kubeletVersion: string;
}

/** How often a pool with a host in a change is looked at again (drains are not watched). */
export const inChangeRecheckMs = 2000;

/** What a pass remembers between passes (pool-controller.ts says why each is safe to lose). */
export interface PoolMemory {
  /** Per host: the rollout written, and the resourceVersion of the object it was computed from. */
  written: Map<string, { readAt: string; record: HostRecord }>;
  /** Per host: what the last drain found in the Drain step. */
  drains: Map<string, DrainSeen>;
  /** Per object ("Kind/namespace/name"), per reason: the message last told in an Event. */
  reported: Map<string, Map<string, string>>;
}

/** An empty PoolMemory (a fresh operator). */
export function newPoolMemory(): PoolMemory {
  return { written: new Map(), drains: new Map(), reported: new Map() };
}

/** Everything a pass writes to the world, or asks of it; pool-controller.ts binds it to the API. */
export interface PoolWrites {
  /** status.rollout/remediation guarded by the resourceVersion read; undefined: a conflict. */
  writeHostRecord(host: WindowsHost, record: HostRecord): Promise<string | undefined>;
  /** Removes a host annotation only while it still holds `value`. */
  removeHostAnnotation(host: WindowsHost, key: string, value: string): Promise<unknown>;
  /** The one rollout action on the host's Node (cordon, uncordon, drain, apply, reboot). */
  takeAction(
    host: WindowsHost,
    node: k8s.V1Node,
    action: StepAction,
  ): Promise<DrainOutcome | undefined>;
  /** Drops the rollout levels from a Node out of any change. */
  dropLevels(node: k8s.V1Node): Promise<void>;
  /** Merge-patches a Node (remediation's cordon or its lifting). */
  patchNode(name: string, body: object): Promise<void>;
  /** Copies the agent's Windows Update report into the host's status. */
  copyReport(host: WindowsHost, summary: HostWindowsUpdates): Promise<void>;
  /** Writes the pool's status through /status (a pool gone is no error). */
  writePoolStatus(pool: WindowsNodePool, status: WindowsNodePoolStatus): Promise<void>;
}

/** The explicit state a pass runs over. */
export interface PoolReconcileState {
  pools: Pick<Informer<WindowsNodePool>, 'get' | 'list'>;
  hosts: Pick<Informer<WindowsHost>, 'get'>;
  nodes: Informer<k8s.V1Node>;
  /** Which pool each host is in (pool-index.ts). */
  membership: Pick<PoolIndex, 'members'>;
  memory: PoolMemory;
  writes: PoolWrites;
  events: EventRecorder;
  log: Logger;
  now: () => Date;
  /** The payload to roll out; undefined: no payload. */
  payload?: () => Promise<PoolPayload>;
  apiServerVersion: () => Promise<string>;
  healthMetrics?: HealthMetrics;
  /** What a pool with spec.replaces reads of workloads (pool-migration.ts); absent: none. */
  migrationReads?: MigrationReads;
}

/** A member host as the pass sees it, with its poolPass input. */
interface PassMember {
  host: WindowsHost;
  pass: ReturnType<typeof passHost>;
}

/** The host as the cache has it, or with the rollout this controller wrote if it lags. */
export function hostView(state: PoolReconcileState, key: string): WindowsHost | undefined {
  const { written } = state.memory;
  const host = state.hosts.get(key);
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
export function tell(
  state: PoolReconcileState,
  object: WindowsHost | WindowsNodePool,
  reason: string,
  message: string,
  type: 'Normal' | 'Warning' = 'Warning',
): void {
  const { reported } = state.memory;
  const key = `${object.kind}/${objectKey(object)}`;
  const told = reported.get(key) ?? new Map<string, string>();
  if (told.get(reason) === message) return;
  told.set(reason, message);
  reported.set(key, told);
  state.events.record(object, type, reason, message);
}

/**
 * One host's part of a pass: record its rollout state, then act. 'conflict': the record
 * could not be written (stale read), so nothing was done and the pass must read again.
 */
export async function doHost(
  state: PoolReconcileState,
  { host, pass }: PassMember,
  step: StepResult,
  problems: readonly string[],
  ladder: HostHealthResult,
): Promise<'done' | 'conflict'> {
  const { writes, events } = state;
  if (pass.reportProblem) tell(state, host, EventReason.InvalidEntry, pass.reportProblem);
  for (const problem of problems) tell(state, host, EventReason.InvalidEntry, problem);
  const record: HostRecord = {
    ...(step.status !== pass.status ? { rollout: step.status } : {}),
    ...(!isDeepStrictEqual(ladder.status, host.status?.remediation ?? {})
      ? { remediation: ladder.status }
      : {}),
  };
  if (record.rollout || record.remediation) {
    const rv = await writes.writeHostRecord(host, record);
    if (rv === undefined) return 'conflict';
    state.memory.written.set(pass.key, { readAt: host.metadata.resourceVersion!, record });
  }
  for (const e of ladder.events) events.record(host, e.type, e.reason, e.message);
  for (const e of step.events) events.record(host, e.type, e.reason, e.message);
  const retry = host.metadata.annotations?.[retryRolloutAnnotation];
  if (step.retryConsumed && retry !== undefined)
    await writes.removeHostAnnotation(host, retryRolloutAnnotation, retry);
  if (pass.nodeObject) await actOnNode(state, { host, pass }, pass.nodeObject, step, ladder);
  // Last: a copy for people to read; its failure touches nothing above.
  if (pass.report) await writes.copyReport(host, summarizeReport(pass.report));
  return 'done';
}

/** The host's Node part of doHost: the rollout's action, then remediation's cordon. */
async function actOnNode(
  state: PoolReconcileState,
  { host, pass }: PassMember,
  node: k8s.V1Node,
  step: StepResult,
  ladder: HostHealthResult,
): Promise<void> {
  const { writes } = state;
  // Remediation keeping the node cordoned as the rollout ends its change: the cordon changes
  // hands (one patch below), and the node is never schedulable in between.
  const handOver = ladder.action.kind === 'cordon' && step.action.kind === 'uncordon';
  const drained = handOver ? undefined : await writes.takeAction(host, node, step.action);
  if (drained) {
    state.memory.drains.set(pass.key, { drained: drained.drained, blockers: drained.blockers });
    for (const pod of drained.evicted) {
      state.events.record(
        host,
        'Normal',
        EventReason.PodEvicted,
        `Evicted ${pod} from Node ${node.metadata?.name} for the rollout`,
      );
    }
  }
  // A Node out of any change carries none of a change's levels.
  if (!step.status.current && step.action.kind === 'none') await writes.dropLevels(node);
  // Remediation's own cordon (RemediationFailed) or its lifting, after the rollout's action.
  const cordon = remediationNodePatch(ladder.action, node, host);
  if (cordon) await writes.patchNode(node.metadata!.name!, cordon);
}

/** The pool's member hosts as the pass sees them (drains forgotten out of the Drain step). */
function passMembers(state: PoolReconcileState, key: string): PassMember[] {
  const { drains } = state.memory;
  const members = state.membership.members(key);
  const shared = new Map(members.shared.map((s) => [s.host, s.otherPools]));
  return members.hosts.flatMap((hostKey) => {
    const host = hostView(state, hostKey);
    if (!host) return [];
    if (host.status?.rollout?.current?.step !== 'Drain') drains.delete(hostKey);
    return [
      {
        host,
        pass: passHost(host, state.nodes, shared.get(hostKey) ?? [], drains.get(hostKey)),
      },
    ];
  });
}

/** The health pass over the members (the default pool: the default health policy). */
function poolHealth(
  state: PoolReconcileState,
  key: string,
  pool: WindowsNodePool | undefined,
  hosts: readonly PassMember[],
): ReturnType<typeof healthPass> {
  const health = pool
    ? checkHealthSpec(pool.spec.health)
    : { policy: defaultHealthPolicy, problems: [] as string[] };
  const healthResult = healthPass({
    pool: key,
    policy: health.policy,
    specProblems: health.problems,
    hosts: hosts.map(({ host, pass }) => healthHost(pass.key, host, pass.nodeObject)),
    now: state.now(),
  });
  state.log.debug('health pass', {
    pool: key,
    unhealthy: healthResult.unhealthy,
    shortCircuited: healthResult.shortCircuited,
  });
  return healthResult;
}

/** The rollout pass over the members, with the repairs the health pass asks for. */
async function poolRollout(
  state: PoolReconcileState,
  pool: WindowsNodePool | undefined,
  hosts: readonly PassMember[],
  healthResult: ReturnType<typeof healthPass>,
  retire: boolean,
): Promise<ReturnType<typeof poolPass>> {
  const { policy, problems } = pool
    ? checkPoolSpec(pool.spec)
    : { policy: defaultPoolPolicy, problems: [] as string[] };
  const payload = state.payload ? await state.payload() : undefined;
  const generation = pool?.metadata.generation;
  return poolPass({
    ...(generation !== undefined ? { generation } : {}),
    policy,
    specProblems: problems,
    hosts: hosts.map(({ pass }) => {
      const repair = healthResult.hosts.get(pass.key)?.repairRebootRequestedAt;
      return repair ? { ...pass, repairRequestedAt: repair } : pass;
    }),
    ...(payload ? { payload } : {}),
    apiServerVersion: payload ? await state.apiServerVersion() : '',
    now: state.now(),
    ...(retire ? { retire } : {}),
  });
}

/** What doing every host of a pass came to; 'conflict': a record was refused, read again. */
type HostsOutcome = 'conflict' | { inChange: boolean; firstError: unknown; recorded: string[] };

/**
 * Does each host's part of the pass. One host's failure (an API error, a report the API server
 * will not store) must not hold back the others' steps or the pool's status: each host is done
 * on its own, and the first error is kept to be raised once the pass is over.
 */
async function doHosts(
  state: PoolReconcileState,
  key: string,
  hosts: readonly PassMember[],
  result: ReturnType<typeof poolPass>,
  healthResult: ReturnType<typeof healthPass>,
): Promise<HostsOutcome> {
  let inChange = false;
  let firstError: unknown;
  const recorded: string[] = [];
  for (const member of hosts) {
    const { pass } = member;
    const step = result.hosts.get(pass.key)!;
    if (step.status.current) inChange = true;
    try {
      const outcome = await doHost(
        state,
        member,
        step,
        result.hostProblems.get(pass.key) ?? [],
        healthResult.hosts.get(pass.key)!,
      );
      if (outcome === 'conflict') return 'conflict'; // read again; never act on it
      recorded.push(pass.key);
    } catch (error) {
      firstError ??= error;
      state.log.warn('pool pass: a host step failed', {
        pool: key,
        host: pass.key,
        error: (error as Error).message,
      });
    }
  }
  return { inChange, firstError, recorded };
}

/** The default pool's Degraded state, as a Warning Event on each of its hosts. */
export function reportDefaultPool(
  state: PoolReconcileState,
  hosts: readonly WindowsHost[],
  status: {
    conditions: readonly { type: string; status: string; reason: string; message: string }[];
  },
): void {
  const degraded = status.conditions.find((c) => c.type === 'Degraded');
  if (degraded?.status !== 'True') return;
  for (const host of hosts) {
    tell(
      state,
      host,
      degraded.reason,
      `default pool (hosts no WindowsNodePool selects): ${degraded.message}`,
    );
  }
}

/** The pool's status with its conditions moved on at `now`; written only when it changed. */
export async function writePoolStatus(
  state: PoolReconcileState,
  pool: WindowsNodePool,
  computed: ReturnType<typeof poolPass>['status'],
  migration?: MigrationGate,
): Promise<void> {
  const at = state.now();
  // Migrated only while spec.replaces is set (a merge patch writes the whole list).
  let conditions = migration
    ? pool.status?.conditions
    : pool.status?.conditions?.filter((c) => c.type !== PoolConditionType.Migrated);
  const inputs = migration
    ? [
        ...computed.conditions,
        {
          ...migration.condition,
          ...(computed.observedGeneration !== undefined
            ? { observedGeneration: computed.observedGeneration }
            : {}),
        },
      ]
    : computed.conditions;
  for (const c of inputs) conditions = setCondition(conditions, c, at);
  const next: WindowsNodePoolStatus = {
    ...computed,
    ...(migration ? { migration: migration.status } : {}),
    conditions,
  };
  if (isDeepStrictEqual(next, pool.status ?? {})) return;
  // A migration that is over (spec.replaces removed) leaves no status.migration behind.
  const body =
    !migration && pool.status?.migration
      ? ({ ...next, migration: null } as unknown as WindowsNodePoolStatus)
      : next;
  await state.writes.writePoolStatus(pool, body);
}

/** The pool's outcome: metrics, then its status (or the default pool's Events). */
async function publishPool(
  state: PoolReconcileState,
  key: string,
  pool: WindowsNodePool | undefined,
  hosts: readonly PassMember[],
  result: ReturnType<typeof poolPass>,
  healthResult: ReturnType<typeof healthPass>,
  recorded: readonly string[],
  migration: MigrationGate | undefined,
): Promise<void> {
  // The counters count only the rungs whose ending was recorded (a pass whose write failed
  // finds the same ending again).
  state.healthMetrics?.applyPoolPass(key, [
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
    for (const e of healthResult.poolEvents) tell(state, pool, e.reason, e.message, e.type);
    await writePoolStatus(state, pool, status, migration);
  } else {
    reportDefaultPool(
      state,
      hosts.map((h) => h.host),
      status,
    );
  }
}

/** When the pool is looked at again: the soonest due time, or inChangeRecheckMs in a change. */
function nextPassMs(
  state: PoolReconcileState,
  recheckAt: readonly (Date | undefined)[],
  inChange: boolean,
): number {
  // recheckAt is on the rollout clock, like `now`.
  const dueTimes = recheckAt.filter((t): t is Date => t !== undefined).map((t) => t.getTime());
  const due =
    dueTimes.length > 0 ? Math.max(0, Math.min(...dueTimes) - state.now().getTime()) : undefined;
  return Math.min(due ?? Infinity, inChange ? inChangeRecheckMs : Infinity);
}

/** How often a stopped migration (Blocked, Invalid) is checked again: workloads are not watched. */
export const stoppedMigrationRecheckMs = 10_000;

/**
 * When a migration is looked at again: every few seconds while it waits or goes on (the other
 * pool's hosts are not watched from here), less often while it is stopped, never once complete.
 */
function migrationRecheck(
  state: PoolReconcileState,
  migration: MigrationGate | undefined,
): Date | undefined {
  const phase = migration?.status.phase;
  if (phase === undefined || phase === 'Complete') return undefined;
  const ms =
    phase === 'Blocked' || phase === 'Invalid' ? stoppedMigrationRecheckMs : inChangeRecheckMs;
  return new Date(state.now().getTime() + ms);
}

function hasReplaces(pool: WindowsNodePool): boolean {
  return pool.spec?.replaces !== undefined && pool.spec.replaces !== null;
}

/** The migration of a pool with spec.replaces, over the caches (pool-migration.ts). */
function migrationOf(state: PoolReconcileState, pool: WindowsNodePool): Promise<MigrationGate> {
  return poolMigration(
    {
      pools: state.pools,
      nodes: state.nodes,
      hostsOf: (poolKey) =>
        state.membership.members(poolKey).hosts.flatMap((hostKey) => {
          const host = hostView(state, hostKey);
          return host ? [host] : [];
        }),
      ...(state.migrationReads ? { reads: state.migrationReads } : {}),
    },
    pool,
  );
}

/** One pass over the pool `key` (a "namespace/name", or defaultPoolKey). */
export async function reconcilePool(
  state: PoolReconcileState,
  key: string,
): Promise<ReconcileResult | undefined> {
  const pool = key === defaultPoolKey ? undefined : state.pools.get(key);
  if (key !== defaultPoolKey && !pool) return undefined;
  const hosts = passMembers(state, key);
  const healthResult = poolHealth(state, key, pool, hosts);
  // Another pool replaces this one and its migration says go: retire the hosts.
  const retire = pool ? retiringBy(pool, state.pools.list()) !== undefined : false;
  const result = await poolRollout(state, pool, hosts, healthResult, retire);
  const done = await doHosts(state, key, hosts, result, healthResult);
  if (done === 'conflict') return { requeueAfterMs: 500 };
  const migration = pool && hasReplaces(pool) ? await migrationOf(state, pool) : undefined;
  await publishPool(state, key, pool, hosts, result, healthResult, done.recorded, migration);
  const soonest = nextPassMs(
    state,
    [result.recheckAt, healthResult.recheckAt, migrationRecheck(state, migration)],
    done.inChange,
  );
  state.log.debug('pool pass done', { pool: key, requeueMs: soonest });
  if (done.firstError !== undefined) throw done.firstError;
  return Number.isFinite(soonest) ? { requeueAfterMs: Math.max(soonest, 100) } : undefined;
}
