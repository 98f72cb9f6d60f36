/**
 * The labels a host joining a pool by command gets on its WindowsHost: the pool's
 * `spec.selector.matchLabels`. A join token carries them (its record), so the pool must be one
 * those labels alone make select the host: a selector whose matchExpressions need more (an
 * `Exists` on a key matchLabels does not set, an `In` on another key) cannot be satisfied by a
 * host winfleet creates, and is refused when the token is made. So is a pool whose labels
 * another pool of the namespace selects too: a host two pools select gets no change at all.
 */
import type { WindowsNodePool } from '../api/windows-node-pool.ts';
import { matchesSelector, selectorProblems } from '../rollout/label-selector.ts';

/** The labels for hosts joining `pool`, or why the pool cannot take hosts joining by command. */
export function poolJoinLabels(
  pool: WindowsNodePool,
  poolsOfNamespace: readonly WindowsNodePool[],
): { labels: Record<string, string> } | { problem: string } {
  const ref = `WindowsNodePool ${pool.metadata.namespace}/${pool.metadata.name}`;
  const selector = pool.spec?.selector;
  const problems = selector ? selectorProblems(selector, 'spec.selector') : ['no spec.selector'];
  if (problems.length > 0) return { problem: `${ref} has a bad selector: ${problems.join('; ')}` };
  const labels = { ...(selector!.matchLabels ?? {}) };
  if (!matchesSelector(selector!, labels)) {
    return {
      problem: `${ref}'s selector cannot be met by its matchLabels alone (its matchExpressions ask for more), and a host joining by command gets exactly the pool's matchLabels as its labels; give the pool a selector of matchLabels only`,
    };
  }
  const others = poolsOfNamespace
    .filter((p) => p.metadata.name !== pool.metadata.name && p.spec?.selector)
    .filter((p) => selectorProblems(p.spec.selector, 'spec.selector').length === 0)
    .filter((p) => matchesSelector(p.spec.selector, labels))
    .map((p) => p.metadata.name);
  if (others.length > 0) {
    return {
      problem: `the labels ${JSON.stringify(labels)} that hosts joining ${ref} get are selected by WindowsNodePool ${others.join(', ')} too, and a host two pools select gets no change; give the pools selectors that do not overlap`,
    };
  }
  return { labels };
}
