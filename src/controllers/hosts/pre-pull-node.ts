/**
 * The operator's side of images before pods (src/api/pre-pull.ts, src/agent/pre-pull.ts):
 * - the pool's spec.prePull reaches each of its Nodes as the signed command prePullAnnotation
 *   (its agent obeys no list a `patch nodes` principal wrote), and goes away with the spec;
 * - an SSH host of such a pool registers its Node with prePullTaint (the kubelet's
 *   --register-with-taints, host-bootstrap.ts); a Node that exists already (an upgrade, a
 *   reboot, a host that joined by command and was placed in the pool afterwards) gets it from
 *   the operator as soon as its agent reports PrePulling;
 * - the operator lifts that taint — a node may not change its own (NodeRestriction) — once the
 *   agent's ImagesPrePulled condition is anything but PrePulling, once the pool has no
 *   spec.prePull, or once the Node has been Ready (or its agent last reported PrePulling, if
 *   later) for the spec's timeout and two minutes more without an ending (an agent that stops
 *   reporting keeps no node from pods).
 * The list carries each image's compressed size for the Node's Windows build when the operator
 * could look it up (pre-pull-sizes.ts), so that the agent checks its free disk first.
 * keepPrePull does both on every pass of a joined host, SSH or Pull. Only prePullTaint is ever
 * added or removed: an administrator's taints and cordon (spec.unschedulable) stay as they are.
 */
import * as k8s from '@kubernetes/client-node';
import {
  formatPrePullCommand,
  hostPrePullStatus,
  type PrePullSpec,
  prePullAnnotation,
  prePullCommand,
  prePullConditionType,
  prePullDefaults,
  prePullGraceMs,
  prePullLimits,
  prePullProblems,
  prePullTaint,
} from '../../api/pre-pull.ts';
import { PrePullReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { type CommandSigner, commandSigner } from '../../fleet/command-signer.ts';
import type { HostStatus } from '../../fleet/host-status.ts';
import { governingPool } from '../../fleet/pool-observe.ts';
import type { JoinContext } from './join-context.ts';
import { autoListKept, autoPrePullImages } from './pre-pull-auto.ts';
import { nodeWindowsBuild } from './pre-pull-sizes.ts';

/**
 * The spec.prePull of the pool that governs `host` (the first by key of those selecting it, as
 * the rollout decides), when it has a valid one.
 * @package
 */
export function poolPrePull(
  pools: readonly WindowsNodePool[],
  host: WindowsHost,
): PrePullSpec | undefined {
  const spec = governingPool(pools, host)?.spec.prePull;
  // A spec with problems is reported on the pool (checkPoolSpec) and never reaches a node.
  return spec && prePullProblems(spec).length === 0 ? spec : undefined;
}

/**
 * The annotations of a merge patch that make `node` carry `spec`'s command signed for it (or
 * none of it, without a spec); {} when it already does.
 * @package
 */
export function prePullAnnotations(
  signer: CommandSigner,
  node: k8s.V1Node,
  spec: PrePullSpec | undefined,
  sizes: ReadonlyMap<string, number> = new Map(),
): Record<string, string | null> {
  const value = spec ? formatPrePullCommand(prePullCommand(spec, sizes)) : undefined;
  if (signer.holds(node, prePullAnnotation, value)) return {};
  return signer.annotations(node, prePullAnnotation, value ?? null);
}

/**
 * The value of the Node's list for `spec`: the command with the sizes known for the Node's build
 * (pre-pull-sizes.ts; an image whose size is unknown goes without one) and, for spec.prePull.auto,
 * the workload images the build runs (pre-pull-auto.ts) — or the list signed on the Node as it is,
 * when autoListKept says so (no churn on a running node). Undefined when the command would
 * list no image (an auto pool with nothing to pull).
 */
async function prePullList(
  ctx: JoinContext,
  signer: CommandSigner,
  node: k8s.V1Node,
  spec: PrePullSpec,
): Promise<string | undefined> {
  const build = nodeWindowsBuild(node);
  const explicit = spec.images ?? [];
  if (spec.auto) {
    const onNode = node.metadata?.annotations?.[prePullAnnotation];
    const signed = onNode !== undefined && signer.holds(node, prePullAnnotation, onNode);
    if (autoListKept(node, spec, signed ? onNode : undefined)) return onNode;
  }
  const workload =
    spec.auto && ctx.prePullWorkloads && ctx.prePullSizes && build
      ? (await ctx.prePullWorkloads.images()).slice(0, 4 * prePullLimits.maxImages)
      : [];
  const sizes = ctx.prePullSizes
    ? await ctx.prePullSizes.sizes([...explicit, ...workload], build)
    : new Map<string, number>();
  const command = prePullCommand(spec, sizes, autoPrePullImages(workload, sizes));
  return command.images.length === 0 ? undefined : formatPrePullCommand(command);
}

/** When a pass whose list or taint update failed looks again. @package */
export const prePullRetryMs = 5_000;

/** Whether the operator lifts the pre-pull taint of `node` now (see the header). @package */
export function prePullTaintDone(
  node: k8s.V1Node,
  spec: PrePullSpec | undefined,
  now: number = Date.now(),
): boolean {
  if (!spec) return true;
  const conditions = node.status?.conditions ?? [];
  const condition = conditions.find((c) => c.type === prePullConditionType);
  if (condition && condition.reason !== PrePullReason.PrePulling) return true;
  return now > prePullTaintDeadline(node, spec, now);
}

/**
 * When a Node still waiting for its pulls takes pods all the same: the spec's timeout and the
 * grace after it became Ready, or after its agent's last PrePulling report if later (an upgrade
 * that kept the Node Ready; an agent that stopped reporting mid-way).
 */
function prePullTaintDeadline(node: k8s.V1Node, spec: PrePullSpec, now: number): number {
  const conditions = node.status?.conditions ?? [];
  const time = (c: k8s.V1NodeCondition | undefined) => {
    const at = c?.lastTransitionTime ? new Date(c.lastTransitionTime).getTime() : Number.NaN;
    return Number.isNaN(at) ? undefined : at;
  };
  const ready = time(conditions.find((c) => c.type === 'Ready' && c.status === 'True')) ?? now;
  const pulling = conditions.find(
    (c) => c.type === prePullConditionType && c.reason === PrePullReason.PrePulling,
  );
  const timeoutMs = (spec.timeoutSeconds ?? prePullDefaults.timeoutSeconds) * 1000;
  return Math.max(ready, time(pulling) ?? ready) + timeoutMs + prePullGraceMs;
}

/** Whether the taint is to be added (pulling, none yet) or removed (done, still there). */
function prePullTaintChange(node: k8s.V1Node, spec: PrePullSpec | undefined, now: number): boolean {
  const has = node.spec?.taints?.some((t) => t.key === prePullTaint.key) ?? false;
  const done = prePullTaintDone(node, spec, now);
  const pulling =
    node.status?.conditions?.find((c) => c.type === prePullConditionType)?.reason ===
    PrePullReason.PrePulling;
  return has ? done : !done && pulling;
}

/**
 * Keeps prePullTaint on the Node while its pull runs: added when the agent reports PrePulling
 * on a Node without it (after an upgrade or a reboot the Node exists, and the kubelet registers
 * taints only when it creates one), removed when prePullTaintDone says so. Returns what it did.
 * The taints are replaced as read (a JSON patch that tests them first).
 * @package
 */
export async function syncPrePullTaint(
  core: k8s.CoreV1Api,
  cached: k8s.V1Node,
  spec: PrePullSpec | undefined,
  now: number = Date.now(),
): Promise<'added' | 'removed' | undefined> {
  // The operator's cache keeps winfleet's taints only (slimNode): it says whether to act; the
  // Node as the API server has it says how.
  if (!prePullTaintChange(cached, spec, now)) return undefined;
  const node = await core.readNode({ name: cached.metadata!.name! });
  if (!prePullTaintChange(node, spec, now)) return undefined;
  const taints = node.spec?.taints ?? [];
  const has = taints.some((t) => t.key === prePullTaint.key);
  const next = has
    ? taints.filter((t) => t.key !== prePullTaint.key)
    : [...taints, { ...prePullTaint }];
  // A JSON patch that tests the taints as read: a concurrent change of them fails it (the next
  // pass tries again), while the kubelet's and the agent's status writes do not.
  const body = node.spec?.taints
    ? [
        { op: 'test', path: '/spec/taints', value: taints },
        { op: 'replace', path: '/spec/taints', value: next },
      ]
    : [{ op: 'add', path: '/spec/taints', value: next }];
  await core.patchNode(
    { name: node.metadata!.name!, body },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
  );
  return has ? 'removed' : 'added';
}

/**
 * Copies the Node's ImagesPrePulled condition into the host's status.prePull (written at the
 * pass's end with the rest of the status; removed when the Node has none).
 * @package
 */
export function recordPrePull(hs: HostStatus, node: k8s.V1Node): void {
  const prePull = hostPrePullStatus(node);
  if (prePull) hs.status.prePull = prePull;
  else delete hs.status.prePull;
}

/**
 * Every pass of a joined host (SSH or Pull): the pool's list signed on its Node, then the taint
 * added or lifted (syncPrePullTaint). A failure is logged and a pass prePullRetryMs later tries
 * again. Returns
 * in how many ms to look again when the Node keeps the taint while it waits (its deadline), so
 * that a silent agent does not keep it longer than the timeout and grace.
 * @package
 */
export async function keepPrePull(
  ctx: JoinContext,
  host: WindowsHost,
  node: k8s.V1Node,
  now: number = Date.now(),
): Promise<number | undefined> {
  const spec = poolPrePull(ctx.pools?.list() ?? [], host);
  const tainted = (n: k8s.V1Node) => (n.spec?.taints ?? []).some((t) => t.key === prePullTaint.key);
  // A pool without spec.prePull, a Node without its list or taint: nothing to do, nothing asked.
  if (!spec && node.metadata?.annotations?.[prePullAnnotation] === undefined && !tainted(node))
    return undefined;
  const name = node.metadata!.name!;
  try {
    const core = ctx.kc.makeApiClient(k8s.CoreV1Api);
    let current = node;
    const signer = commandSigner(ctx.kc);
    const value = spec && (await prePullList(ctx, signer, node, spec));
    // An auto pool whose hosts have nothing to pull: no list, and no taint to wait for.
    const effective = value === undefined ? undefined : spec;
    const annotations = signer.holds(node, prePullAnnotation, value)
      ? {}
      : signer.annotations(node, prePullAnnotation, value ?? null);
    if (Object.keys(annotations).length > 0) {
      current = await core.patchNode(
        { name, body: { metadata: { annotations } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    }
    const change = await syncPrePullTaint(core, current, effective, now);
    const keeps = change === 'added' || (change === undefined && tainted(current));
    if (!effective || !keeps) return undefined;
    return Math.max(1000, prePullTaintDeadline(current, effective, now) - now + 1000);
  } catch (error) {
    ctx.log.warn('cannot update the pre-pull list or taint; the next pass tries again', {
      node: name,
      error: (error as Error).message,
    });
    // Soon, not at the healthy host's recheck: a taint the test of the JSON patch kept (the
    // taints changed meanwhile, as when the Node turns Ready) must not outlive the pulls by
    // minutes when no other change of the Node comes.
    return prePullRetryMs;
  }
}
