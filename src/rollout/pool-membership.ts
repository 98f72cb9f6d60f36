/**
 * Which pool each WindowsHost belongs to. A pool selects WindowsHosts of its own namespace by
 * their labels. A host no pool selects belongs to the implicit default pool, one pool for the
 * whole cluster (a default pool per namespace would let a change reach every host of a fleet
 * spread one host per namespace at once). A host two or more pools select is a conflict: each
 * of those pools is Degraded naming it, no change starts on it, and it counts against every one
 * of their budgets while it is unavailable.
 */
import type { LabelSelector } from '../api/windows-node-pool.ts';
import { matchesSelector } from './label-selector.ts';

/** The implicit default pool's key; no "namespace/name" key can equal it. */
export const defaultPoolKey = '(default)';

export interface PoolSelection {
  namespace: string;
  name: string;
  /** Undefined selects nothing (a selector with problems). */
  selector?: LabelSelector;
}

export interface HostLabels {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
}

export interface PoolMembers {
  /** Every host the pool selects ("namespace/name", sorted), shared ones included. */
  hosts: string[];
  /** Hosts another pool selects too, each with the other pools' keys. */
  shared: { host: string; otherPools: string[] }[];
}

export interface Membership {
  /** Pool key ("namespace/name", or defaultPoolKey) → its hosts. Every pool is present. */
  pools: Map<string, PoolMembers>;
  /**
   * Host key → the pool whose policy (timeouts) governs a change already under way on it: its
   * pool, the first by key of a conflict's pools, or the default pool.
   */
  governingPool: Map<string, string>;
}

/** "namespace/name", the key hosts and pools are sorted and named by. */
export function objectKey(o: { namespace: string; name: string }): string {
  return `${o.namespace}/${o.name}`;
}

const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Pools in the order owningPools reads them: by key. */
export function sortedPools(pools: readonly PoolSelection[]): PoolSelection[] {
  return [...pools].sort((a, b) => byKey(objectKey(a), objectKey(b)));
}

/**
 * The keys of the pools `host` is in: the pools of its namespace that select it, by key, or
 * [defaultPoolKey] when none does (more than one is a conflict). `pools` must be sortedPools'.
 */
export function owningPools(pools: readonly PoolSelection[], host: HostLabels): string[] {
  const selecting: string[] = [];
  for (const pool of pools) {
    if (
      pool.namespace === host.namespace &&
      pool.selector !== undefined &&
      matchesSelector(pool.selector, host.labels)
    ) {
      selecting.push(objectKey(pool));
    }
  }
  return selecting.length > 0 ? selecting : [defaultPoolKey];
}

/**
 * Assigns hosts to pools. Deterministic: the result does not depend on the order of `pools`
 * or `hosts`.
 *
 * @example
 * assignPools([{ namespace: 'win', name: 'web', selector: { matchLabels: { pool: 'web' } } }],
 *   [{ namespace: 'win', name: 'a', labels: { pool: 'web' } }, { namespace: 'win', name: 'b' }])
 * // pools: win/web → [win/a]; (default) → [win/b]
 */
export function assignPools(
  pools: readonly PoolSelection[],
  hosts: readonly HostLabels[],
): Membership {
  const sorted = sortedPools(pools);
  const poolKeys = sorted.map(objectKey);
  const members = new Map<string, PoolMembers>(
    [...poolKeys, defaultPoolKey].map((k) => [k, { hosts: [], shared: [] }]),
  );
  const governingPool = new Map<string, string>();
  for (const host of [...hosts].sort((a, b) => byKey(objectKey(a), objectKey(b)))) {
    const hostKey = objectKey(host);
    const owners = owningPools(sorted, host);
    for (const k of owners) {
      const entry = members.get(k)!;
      entry.hosts.push(hostKey);
      if (owners.length > 1) {
        entry.shared.push({ host: hostKey, otherPools: owners.filter((o) => o !== k) });
      }
    }
    governingPool.set(hostKey, owners[0]!);
  }
  return { pools: members, governingPool };
}
