/**
 * Which hosts may run Hyper-V isolated containers: those whose governing pool (the first by key
 * of the pools selecting it, as the rollout's assignPools decides) has spec.isolation.hyperV
 * true. Their Node carries winfleet.io/hyperv-isolation=true, which the agent reads to add
 * containerd's Hyper-V handler, the RuntimeClass controller to keep the Hyper-V classes, and
 * the webhook to place pods on.
 */
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { governingPool } from '../../fleet/pool-observe.ts';
import { hyperVIsolationLabel } from '../../windows/isolation.ts';

/**
 * True when the pool governing `host` allows Hyper-V isolation (spec.isolation.hyperV is
 * exactly true; anything else is false).
 * @package
 */
export function poolAllowsHyperV(pools: readonly WindowsNodePool[], host: WindowsHost): boolean {
  return governingPool(pools, host)?.spec.isolation?.hyperV === true;
}

/**
 * `labels` (a host's spec.labels, already checked against NodeRestriction) with the Hyper-V
 * label as the host's pool decides it: "true" when the pool allows Hyper-V isolation, else
 * absent, whatever spec.labels says. Whoever may edit a WindowsHost but not its pool cannot
 * opt a node in (containerd's Hyper-V handler, pods needing it sent there) or out.
 * @package
 */
export function withPoolIsolation(
  labels: Record<string, string>,
  pools: readonly WindowsNodePool[],
  host: WindowsHost,
): Record<string, string> {
  const { [hyperVIsolationLabel]: _claimed, ...rest } = labels;
  return poolAllowsHyperV(pools, host) ? { ...rest, [hyperVIsolationLabel]: 'true' } : rest;
}

/**
 * The label patch that brings a Node's Hyper-V label in line with its host's pool (a pool that
 * opted in or out after the host joined; a label the kubelet set itself), or undefined when it
 * already is.
 * @package
 */
export function hyperVLabelPatch(
  pools: readonly WindowsNodePool[],
  host: WindowsHost,
  nodeLabels: Record<string, string> | undefined,
): Record<string, string | null> | undefined {
  const wanted = poolAllowsHyperV(pools, host) ? 'true' : undefined;
  const current = nodeLabels?.[hyperVIsolationLabel];
  if (current === wanted) return undefined;
  return { [hyperVIsolationLabel]: wanted ?? null };
}
