/**
 * The rows of `winfleet hosts list` and the host part of `winfleet status`, built from the
 * objects alone (no API calls, no clock but `now`), so odd objects (a host the operator never
 * looked at, a pool without status) are tested without a cluster. A host's state is the
 * dashboard's (hostState), so the CLI and the dashboard never disagree.
 */
import type * as k8s from '@kubernetes/client-node';
import { nodeHealthConditions } from '../../api/reasons.ts';
import { hostAddressLabel, type WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { hostState } from '../../dashboard/overview.ts';
import { assignPools, defaultPoolKey } from '../../rollout/pool-membership.ts';

/** kubectl's AGE: 45s, 12m, 5h, 3d (and "-" when unknown or in the future by clock skew). */
export function formatAge(since: string | Date | undefined, now: Date): string {
  if (since === undefined) return '-';
  const start = since instanceof Date ? since.getTime() : Date.parse(since);
  if (Number.isNaN(start)) return '-';
  const seconds = Math.max(0, Math.floor((now.getTime() - start) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

const key = (o: { metadata?: { namespace?: string; name?: string } }) =>
  `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * Host key ("namespace/name") → the names of the pools that select it; empty for a host only
 * the implicit default pool has. Without pools (the pool CRD missing), every host maps to [].
 */
export function poolsOfHosts(
  hosts: readonly WindowsHost[],
  pools: readonly WindowsNodePool[],
): Map<string, string[]> {
  const membership = assignPools(
    pools.map((p) => ({
      namespace: p.metadata.namespace ?? '',
      name: p.metadata.name,
      selector: p.spec?.selector,
    })),
    hosts.map((h) => ({
      namespace: h.metadata.namespace ?? '',
      name: h.metadata.name,
      labels: h.metadata.labels,
    })),
  );
  const result = new Map<string, string[]>(hosts.map((h) => [key(h), []]));
  for (const [poolKey, members] of membership.pools) {
    if (poolKey === defaultPoolKey) continue;
    const poolName = poolKey.slice(poolKey.indexOf('/') + 1);
    for (const host of members.hosts) result.get(host)?.push(poolName);
  }
  return result;
}

/** The Node conditions of the agent's health checks that hold (status True), by type. */
export function nodeProblems(node: k8s.V1Node | undefined): string[] {
  const health = new Set<string>(nodeHealthConditions);
  return (node?.status?.conditions ?? [])
    .filter((c) => health.has(c.type) && c.status === 'True')
    .map((c) => c.type)
    .sort();
}

/** @package */
export interface HostRow {
  namespace: string;
  name: string;
  /** "address:port". */
  address: string;
  node?: string;
  /** The pools that select the host; "(default)" when none does and pools exist. */
  pools: string[];
  windows?: string;
  services?: string;
  state: string;
  message: string;
  ready: boolean;
  /** Node Ready (undefined: no Node). */
  nodeReady?: boolean;
  /** "Type=Status" of every WindowsHost condition, in the operator's order. */
  conditions: string[];
  /** NodeHealthCondition types True on the host's Node. */
  nodeProblems: string[];
  lastError?: string;
  age: string;
}

export interface RowContext {
  now: Date;
  pools?: Map<string, string[]>;
  /** Nodes by name. */
  nodes?: Map<string, k8s.V1Node>;
}

export function hostRow(host: WindowsHost, context: RowContext): HostRow {
  const status = host.status;
  const conditions = status?.conditions ?? [];
  const nodeName = status?.nodeName;
  const node = nodeName ? context.nodes?.get(nodeName) : undefined;
  const { state, message } = hostState(host);
  const pools = context.pools?.get(key(host));
  return {
    namespace: host.metadata.namespace ?? '',
    name: host.metadata.name,
    address: hostAddressLabel(host),
    ...(nodeName ? { node: nodeName } : {}),
    pools: pools === undefined ? [] : pools.length ? pools : [defaultPoolKey],
    ...(status?.windowsVersion || status?.windowsBuild
      ? { windows: status.windowsVersion ?? status.windowsBuild }
      : {}),
    ...(status?.servicesVersion ? { services: status.servicesVersion } : {}),
    state,
    message,
    ready: conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    ...(node
      ? {
          nodeReady:
            node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ??
            false,
        }
      : {}),
    conditions: conditions.map((c) => `${c.type}=${c.status}`),
    nodeProblems: nodeProblems(node),
    ...(status?.lastError
      ? { lastError: `${status.lastError.step}: ${status.lastError.message}` }
      : {}),
    age: formatAge(host.metadata.creationTimestamp, context.now),
  };
}

/** Rows sorted by namespace, then name. */
export function hostRows(
  hosts: readonly WindowsHost[],
  context: Omit<RowContext, 'pools'> & { pools?: readonly WindowsNodePool[] },
): HostRow[] {
  const pools = context.pools ? poolsOfHosts(hosts, context.pools) : undefined;
  const rowContext: RowContext = {
    now: context.now,
    ...(context.nodes ? { nodes: context.nodes } : {}),
    ...(pools ? { pools } : {}),
  };
  return hosts
    .map((h) => hostRow(h, rowContext))
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}

export const hostListHeaders = [
  'NAME',
  'ADDRESS',
  'NODE',
  'POOL',
  'WINDOWS',
  'SERVICES',
  'STATE',
  'AGE',
];

/** The cells of a `hosts list` row; wide adds CONDITIONS and LAST ERROR, -A adds NAMESPACE. */
export function hostListTable(
  rows: readonly HostRow[],
  options: { wide: boolean; allNamespaces: boolean; tone?: (row: HostRow, text: string) => string },
): { headers: string[]; rows: string[][] } {
  const headers = [
    ...(options.allNamespaces ? ['NAMESPACE'] : []),
    ...hostListHeaders,
    ...(options.wide ? ['CONDITIONS', 'LAST ERROR'] : []),
  ];
  const cells = rows.map((r) => [
    ...(options.allNamespaces ? [r.namespace] : []),
    r.name,
    r.address,
    r.node ?? '-',
    r.pools.join(',') || '-',
    r.windows ?? '-',
    r.services ?? '-',
    options.tone ? options.tone(r, r.state) : r.state,
    r.age,
    ...(options.wide
      ? [
          [...r.conditions, ...r.nodeProblems.map((p) => `node:${p}`)].join(',') || '-',
          oneLine(r.lastError) ?? '-',
        ]
      : []),
  ]);
  return { headers, rows: cells };
}

/** Text for one table cell: newlines and control characters flattened, long text cut. */
export function oneLine(text: string | undefined, max = 120): string | undefined {
  if (text === undefined) return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are flattened on purpose
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A WindowsHost as -o json|yaml print it: the object without managedFields. */
export function printableObject<T extends k8s.KubernetesObject>(object: T): T {
  if (!object.metadata?.managedFields) return object;
  const { managedFields: _, ...metadata } = object.metadata;
  return { ...object, metadata } as T;
}
