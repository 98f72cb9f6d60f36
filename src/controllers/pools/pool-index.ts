/**
 * Which pool each WindowsHost is in, kept as an index of the host cache (by pool key), so a
 * pass over one pool reads its own hosts rather than assigning every host to every pool, and
 * an event on one host finds its pools without a walk. It gives what poolMembership gives for
 * the whole cache (pool-membership.ts decides; this only keeps its answer per host).
 *
 * A host's pools depend on the pools that exist and their selectors, so a change to a pool
 * (added, deleted, spec changed) re-files every host: call refresh() from that pool event,
 * before any other event is handled (a host must leave the buckets it was filed under by the
 * selections it was filed with). Pool changes are rare; host events are not.
 */
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { type Informer, objectKey } from '../../controller-runtime/informer.ts';
import { hostLabels, poolSelection } from '../../fleet/pool-observe.ts';
import {
  owningPools,
  type PoolMembers,
  type PoolSelection,
  sortedPools,
} from '../../rollout/pool-membership.ts';

export const hostsByPoolIndex = 'pool';

/** @package */
export interface PoolIndex {
  /** The pool's hosts, sorted by key, with those another pool selects too (PoolMembers). */
  members(poolKey: string): PoolMembers;
  /** The keys of the pools `host` is in (a host no pool selects: the default pool's). */
  poolsOf(host: WindowsHost): string[];
  /** The pools changed: every host is filed again. */
  refresh(): void;
}

/** Adds the index to `hosts`, over the pools in `pools` now; see refresh(). */
export function poolIndex(
  pools: Informer<WindowsNodePool>,
  hosts: Informer<WindowsHost>,
): PoolIndex {
  let selections: PoolSelection[] = [];
  const select = () => {
    selections = sortedPools(pools.list().map(poolSelection));
  };
  select();
  const poolsOf = (host: WindowsHost) => owningPools(selections, hostLabels(host));
  hosts.addIndex(hostsByPoolIndex, poolsOf);
  return {
    members(poolKey) {
      const members: PoolMembers = { hosts: [], shared: [] };
      const byKey = hosts
        .byIndex(hostsByPoolIndex, poolKey)
        .map((host) => [objectKey(host), host] as const)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      for (const [key, host] of byKey) {
        members.hosts.push(key);
        const owners = poolsOf(host);
        if (owners.length > 1) {
          members.shared.push({ host: key, otherPools: owners.filter((o) => o !== poolKey) });
        }
      }
      return members;
    },
    poolsOf,
    refresh() {
      select();
      hosts.reindex(hostsByPoolIndex);
    },
  };
}
