/**
 * Pool-to-pool migration (issue 35), pure: a WindowsNodePool whose spec.replaces names another
 * pool of its namespace takes that pool's work. Once every host of the new pool is Ready on its
 * build, the old pool's rollout retires its hosts (Cordon → Drain, then left cordoned;
 * host-steps.ts), at most the old pool's maxUnavailable at a time, never past a
 * PodDisruptionBudget, and the webhook places the evicted pods on the new build. Before each
 * pass that may cordon another old host, the workloads with pods on the old pool are checked
 * against the new build (src/migration); one that cannot move stops the migration
 * (MigrationBlocked, naming it), nothing more is cordoned and the old pool's hosts are
 * uncordoned, so the old pool keeps serving.
 *
 * Who decides what: the new pool's pass computes the migration (`migrationGate`) and writes it
 * as its status.migration and Migrated condition; the old pool's pass reads that status from
 * the cache (`retiringBy`) and retires its hosts only while it says Migrating or Complete for
 * the spec it was computed for. Each host's retirement is recorded in its status.rollout before
 * any action, so a killed operator resumes it.
 *
 * spec.replaces is a name in the pool's own namespace and nothing else: a pool can never make
 * winfleet drain the hosts of another namespace's pool.
 */
import { ConditionReason, PoolConditionType } from '../api/reasons.ts';
import type {
  BlockedWorkload,
  MigrationPhase,
  PoolMigrationStatus,
  WindowsNodePool,
} from '../api/windows-node-pool.ts';
import type { ConditionInput } from '../controller-runtime/conditions.ts';

/** A DNS-1123 subdomain, as metadata.name of a WindowsNodePool is. */
const poolNamePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The pools of `namespace` (by name) from a list of pools. */
function poolsIn(pools: readonly WindowsNodePool[], namespace: string): WindowsNodePool[] {
  return pools.filter((p) => (p.metadata.namespace ?? '') === namespace);
}

/**
 * Why `pool`'s spec.replaces cannot be followed ("spec.replaces: …", naming the fix), or
 * undefined when it can (or is unset). `pools` is every pool the caller knows; only those of the
 * pool's own namespace count.
 */
export function replacesProblem(
  pool: WindowsNodePool,
  pools: readonly WindowsNodePool[],
): string | undefined {
  const replaces: unknown = pool.spec?.replaces;
  if (replaces === undefined || replaces === null) return undefined;
  const namespace = pool.metadata.namespace ?? '';
  if (typeof replaces !== 'string' || replaces.length > 253 || !poolNamePattern.test(replaces))
    return `spec.replaces: ${JSON.stringify(replaces)} is not a pool name; write the name of a WindowsNodePool in namespace ${namespace} (a pool can replace only one of its own namespace)`;
  if (replaces === pool.metadata.name)
    return `spec.replaces: names this pool itself; write the name of the pool whose hosts this one replaces`;
  const same = poolsIn(pools, namespace);
  const old = same.find((p) => p.metadata.name === replaces);
  if (!old)
    return `spec.replaces: no WindowsNodePool ${replaces} in namespace ${namespace}; create it or fix the name (a pool can replace only one of its own namespace)`;
  if (old.spec?.replaces !== undefined && old.spec?.replaces !== null)
    return old.spec.replaces === pool.metadata.name
      ? `spec.replaces: pool ${replaces} replaces this pool (a cycle); remove spec.replaces from one of them`
      : `spec.replaces: pool ${replaces} itself replaces ${String(old.spec.replaces)}; finish that migration and remove its spec.replaces first`;
  const rivals = same
    .filter((p) => p.metadata.name !== pool.metadata.name && p.spec?.replaces === replaces)
    .map((p) => p.metadata.name)
    .sort();
  if (rivals.length > 0)
    return `spec.replaces: pool ${replaces} is replaced by ${rivals.join(', ')} too; one pool at a time may replace it: remove spec.replaces from all but one`;
  return undefined;
}

/** Phases in which the old pool's hosts are retired (Complete keeps them so). */
const retiringPhases: readonly MigrationPhase[] = ['Migrating', 'Complete'];

/**
 * The pool that retires `old`'s hosts now, if any: the one pool of its namespace whose
 * spec.replaces names it, whose spec.replaces is sound, and whose status.migration — computed
 * for its current generation and for this pool — says Migrating or Complete.
 */
export function retiringBy(
  old: WindowsNodePool,
  pools: readonly WindowsNodePool[],
): WindowsNodePool | undefined {
  const namespace = old.metadata.namespace ?? '';
  const replacers = poolsIn(pools, namespace).filter(
    (p) => p.spec?.replaces === old.metadata.name && p.metadata.name !== old.metadata.name,
  );
  if (replacers.length !== 1) return undefined;
  const replacer = replacers[0]!;
  if (replacesProblem(replacer, pools) !== undefined) return undefined;
  const migration = replacer.status?.migration;
  if (
    !migration ||
    migration.replaces !== old.metadata.name ||
    migration.observedGeneration !== replacer.metadata.generation ||
    !retiringPhases.includes(migration.phase)
  )
    return undefined;
  return replacer;
}

/** A host of the new pool, as the gate reads it. */
export interface GateNewHost {
  key: string;
  /** Its Node exists (carrying its identity) and is Ready. */
  ready: boolean;
  /** Its Node's node.kubernetes.io/windows-build. */
  build?: string;
}

/** A host of the old pool, as the gate reads it. */
export interface GateOldHost {
  key: string;
  build?: string;
  /** status.rollout.retired is recorded. */
  retired: boolean;
}

export interface MigrationGateInput {
  /** The new pool's spec.replaces (a name). */
  replaces: string;
  generation?: number;
  /** replacesProblem's answer. */
  problem?: string;
  newHosts: readonly GateNewHost[];
  oldHosts: readonly GateOldHost[];
  /**
   * The workloads with pods on the old pool that cannot run on the new build; undefined: not
   * checked yet (the gate then asks for the check: `checkWorkloads`).
   */
  blocked?: readonly BlockedWorkload[];
}

export interface MigrationGate {
  status: PoolMigrationStatus;
  condition: Omit<ConditionInput, 'observedGeneration'>;
  /** Set when the answer depends on the workloads: check them against this build, call again. */
  checkWorkloads?: { build: string };
}

/** At most this many workloads are named in the condition's message (all are in the status). */
const namedWorkloads = 5;

const reasonOf: Record<MigrationPhase, ConditionReason> = {
  Invalid: ConditionReason.InvalidSpec,
  Waiting: ConditionReason.MigrationWaiting,
  Migrating: ConditionReason.MigrationInProgress,
  Blocked: ConditionReason.MigrationBlocked,
  Complete: ConditionReason.MigrationComplete,
};

/** "ns/Deployment/name (why; why)". */
export function describeBlocked(w: BlockedWorkload): string {
  return `${w.namespace}/${w.kind}/${w.name} (${w.reasons.join('; ') || w.images.join(', ')})`;
}

/** A gate's answer: the status with its phase and message, and the Migrated condition. */
function gateAnswer(
  base: Omit<PoolMigrationStatus, 'phase' | 'message'>,
  phase: MigrationPhase,
  message: string,
  extra: Partial<PoolMigrationStatus> = {},
): MigrationGate {
  return {
    status: { ...base, ...extra, phase, message },
    condition: {
      type: PoolConditionType.Migrated,
      status: phase === 'Complete' ? 'True' : 'False',
      reason: reasonOf[phase],
      message,
    },
  };
}

type Answer = (
  phase: MigrationPhase,
  message: string,
  extra?: Partial<PoolMigrationStatus>,
) => MigrationGate;

/** The Blocked answer, naming the workloads (the first few in the message, all in the status). */
function blockedAnswer(
  answer: Answer,
  replaces: string,
  build: string,
  blocked: readonly BlockedWorkload[],
): MigrationGate {
  const named = blocked.slice(0, namedWorkloads).map(describeBlocked).join('; ');
  const more =
    blocked.length > namedWorkloads
      ? ` and ${blocked.length - namedWorkloads} more (status.migration.blockedWorkloads)`
      : '';
  return answer(
    'Blocked',
    `${blocked.length} workload(s) on ${replaces} cannot run on build ${build}: ${named}${more}. Nothing more is cordoned and ${replaces}'s hosts are uncordoned; give them an image for ${build} (winfleet migrate plan shows each), and the migration goes on by itself`,
    { build, blockedWorkloads: [...blocked] },
  );
}

/**
 * The migration's state for the new pool's status: whether the old pool's hosts may be retired
 * now, and the Migrated condition. The gate opens when the new pool has hosts, all of them Ready
 * on one build (once an old host is retired, at least one), the old pool's hosts run another
 * build, and no workload on the old pool is blocked; it is Complete once every host of the old
 * pool is retired.
 */
export function migrationGate(input: MigrationGateInput): MigrationGate {
  const { replaces, newHosts, oldHosts } = input;
  const retiredHosts = oldHosts.filter((h) => h.retired).length;
  const base = {
    replaces,
    ...(input.generation !== undefined ? { observedGeneration: input.generation } : {}),
    oldHosts: oldHosts.length,
    retiredHosts,
  };
  const answer: Answer = (phase, message, extra) => gateAnswer(base, phase, message, extra);
  if (input.problem)
    return answer('Invalid', `${input.problem}; no host of ${replaces} is touched`);
  const ready = newHosts.filter((h) => h.ready && h.build);
  const notReady = newHosts.filter((h) => !h.ready || !h.build).map((h) => h.key);
  if (newHosts.length === 0)
    return answer(
      'Waiting',
      `This pool has no hosts yet; ${replaces}'s hosts are drained once this pool's hosts are all Ready`,
    );
  // Before the first old host is retired, every new host must be Ready; once the migration is
  // under way, a new host down for a while (its own rollout's reboot) does not undo it.
  if (notReady.length > 0 && (retiredHosts === 0 || ready.length === 0))
    return answer(
      'Waiting',
      `Waiting for this pool's hosts to be Ready: ${notReady.slice(0, namedWorkloads).join(', ')}${notReady.length > namedWorkloads ? ` and ${notReady.length - namedWorkloads} more` : ''}; nothing of ${replaces} is touched until they are`,
    );
  const builds = [...new Set(ready.map((h) => h.build!))].sort();
  if (builds.length > 1)
    return answer(
      'Invalid',
      `spec.replaces: this pool's hosts run different Windows builds (${builds.join(', ')}); a migration moves workloads to one build: select hosts of one build`,
    );
  const build = builds[0]!;
  const withBuild = { build };
  if (oldHosts.some((h) => h.build === build))
    return answer(
      'Invalid',
      `spec.replaces: ${replaces}'s hosts run build ${build} too; a migration moves to another build (to change hosts of one build, change the pools' selectors instead)`,
      withBuild,
    );
  if (oldHosts.length > 0 && retiredHosts === oldHosts.length)
    return answer(
      'Complete',
      `All ${oldHosts.length} host(s) of ${replaces} are drained and left cordoned; their workloads run on build ${build}. Delete those WindowsHosts, then remove spec.replaces and delete pool ${replaces}`,
      withBuild,
    );
  if (oldHosts.length === 0)
    return answer(
      'Complete',
      `Pool ${replaces} has no hosts left; remove spec.replaces, then delete pool ${replaces}`,
      withBuild,
    );
  if (input.blocked === undefined)
    return {
      ...answer('Waiting', `Checking the workloads on ${replaces}`, withBuild),
      checkWorkloads: { build },
    };
  if (input.blocked.length > 0) return blockedAnswer(answer, replaces, build, input.blocked);
  return answer(
    'Migrating',
    `${retiredHosts} of ${oldHosts.length} host(s) of ${replaces} drained and left cordoned; the rest follow through ${replaces}'s rollout (its maxUnavailable, PodDisruptionBudgets respected), their pods recreated on build ${build}`,
    withBuild,
  );
}
