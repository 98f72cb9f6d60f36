/**
 * The pool controller's part of a pool-to-pool migration (src/rollout/pool-migration.ts says
 * the rules): for a pool with spec.replaces, what its pass reads — its own hosts' Nodes (Ready,
 * build), the old pool's hosts (build, retired), and when the gate asks, the workloads with pods
 * on the old pool's Nodes planned against the new build (src/migration) — and the
 * status.migration and Migrated condition it writes. The old pool's own pass retires its hosts
 * (pool-reconcile.ts, `retire`).
 */
import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { BlockedWorkload, WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import { observeNode } from '../../fleet/pool-observe.ts';
import { workloadsOnNodes } from '../../migration/read-workloads.ts';
import {
  lookupsFromFacts,
  planWorkload,
  type Workload,
  type WorkloadPlan,
} from '../../migration/workload-plan.ts';
import {
  type MigrationGate,
  migrationGate,
  replacesProblem,
} from '../../rollout/pool-migration.ts';
import type { PodImageResolver } from '../../webhook/pod-admission.ts';
import type { RuntimeClassSelectors } from '../../webhook/pod-os.ts';
import { windowsBuildLabel, windowsReleases } from '../../windows/builds.ts';

/** What a migration reads beyond the caches (bound to the API and the image resolver). */
export interface MigrationReads {
  /** The workloads with pods on these Nodes (not DaemonSets, mirror or finished pods). */
  workloadsOnNodes(nodeNames: readonly string[]): Promise<Workload[]>;
  /** The workload's plan for a build: its images looked up, what pins it. */
  planWorkload(workload: Workload, target: { build: string; name: string }): Promise<WorkloadPlan>;
}

/** How long the image lookups of one workload may take in a pass. */
const lookupBudgetMs = 15_000;

/**
 * MigrationReads bound to the API server behind `kc` and the webhook's image resolver (its
 * mirrors, cache and address policy, the pods' pull secrets).
 */
export function apiMigrationReads(
  kc: k8s.KubeConfig,
  resolveImages: PodImageResolver,
  runtimeClasses: RuntimeClassSelectors,
): MigrationReads {
  return {
    workloadsOnNodes: (nodeNames) => workloadsOnNodes(kc, nodeNames),
    async planWorkload(workload, target) {
      const facts = await resolveImages(
        workload.pod,
        workload.namespace,
        AbortSignal.timeout(lookupBudgetMs),
      );
      return planWorkload(workload, lookupsFromFacts(facts), target, runtimeClasses);
    },
  };
}

/** What the migration of one pool reads. */
export interface MigrationContext {
  pools: Pick<Informer<WindowsNodePool>, 'list'>;
  nodes: Informer<k8s.V1Node>;
  /** The hosts of a pool key ("namespace/name"), as the pass sees them. */
  hostsOf(poolKey: string): WindowsHost[];
  reads?: MigrationReads;
}

/** A workload plan as status.migration lists it, when it cannot move to a pool (else undefined). */
export function blockedWorkload(plan: WorkloadPlan, hyperV: boolean): BlockedWorkload | undefined {
  const reasons = [...plan.blockers];
  for (const image of plan.images) {
    if (image.verdict === 'unknown')
      reasons.push(
        `${image.container} image ${image.image} could not be looked up: ${image.reason}`,
      );
    if (image.verdict === 'hyperv' && !hyperV)
      reasons.push(
        `${image.container} image ${image.image} runs there only under Hyper-V isolation: set spec.isolation.hyperV: true on this pool, or use an image for the new build`,
      );
  }
  if (reasons.length === 0) return undefined;
  return {
    namespace: plan.namespace,
    kind: plan.kind,
    name: plan.name,
    images: [...new Set(plan.images.map((i) => i.image))],
    reasons,
  };
}

/** The build of a host's own Node, and whether it is Ready. */
function nodeFacts(host: WindowsHost, nodes: Informer<k8s.V1Node>) {
  const seen = observeNode(host, nodes);
  const build = seen?.raw.metadata?.labels?.[windowsBuildLabel];
  return { seen, ...(build ? { build } : {}) };
}

/** The migration of `pool` (it has spec.replaces): the gate, with the workloads checked when it asks. */
export async function poolMigration(
  ctx: MigrationContext,
  pool: WindowsNodePool,
): Promise<MigrationGate> {
  const namespace = pool.metadata.namespace ?? '';
  const replaces = String(pool.spec.replaces);
  const problem = replacesProblem(pool, ctx.pools.list());
  const key = `${namespace}/${pool.metadata.name}`;
  const newHosts = ctx.hostsOf(key).map((h) => {
    const { seen, build } = nodeFacts(h, ctx.nodes);
    return {
      key: `${namespace}/${h.metadata.name}`,
      ready: seen?.node.ready === true,
      ...(build ? { build } : {}),
    };
  });
  // Only a sound spec.replaces leads to another pool's hosts: a name in this namespace.
  const oldMembers = problem ? [] : ctx.hostsOf(`${namespace}/${replaces}`);
  const oldHosts = oldMembers.map((h) => {
    const { build } = nodeFacts(h, ctx.nodes);
    return {
      key: `${namespace}/${h.metadata.name}`,
      retired: h.status?.rollout?.retired !== undefined,
      ...(build ? { build } : {}),
    };
  });
  const input = {
    replaces,
    ...(pool.metadata.generation !== undefined ? { generation: pool.metadata.generation } : {}),
    ...(problem ? { problem } : {}),
    newHosts,
    oldHosts,
  };
  const first = migrationGate(input);
  if (!first.checkWorkloads) return first;
  const { build } = first.checkWorkloads;
  if (!ctx.reads) {
    return migrationGate({
      ...input,
      blocked: [
        {
          namespace,
          kind: 'WindowsNodePool',
          name: pool.metadata.name,
          images: [],
          reasons: ['this operator cannot read workloads, so it cannot check them'],
        },
      ],
    });
  }
  const nodeNames = oldMembers
    .filter((h) => h.status?.rollout?.retired === undefined)
    .map((h) => observeNode(h, ctx.nodes)?.node.name)
    .filter((n): n is string => n !== undefined);
  const target = { build, name: windowsReleases.find((r) => r.build === build)?.name ?? build };
  const hyperV = pool.spec.isolation?.hyperV === true;
  const blocked: BlockedWorkload[] = [];
  for (const workload of await ctx.reads.workloadsOnNodes(nodeNames)) {
    const found = blockedWorkload(await ctx.reads.planWorkload(workload, target), hyperV);
    if (found) blocked.push(found);
  }
  return migrationGate({ ...input, blocked });
}
