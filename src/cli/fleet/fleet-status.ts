/**
 * `winfleet status`: the fleet at a glance, built from the objects alone. A summary (hosts
 * Ready of all, Windows nodes by build, kubelet and services versions), the hosts with their
 * conditions and their Nodes' health conditions, the pools (counts, rollout, remediation) and
 * the RuntimeClasses. -o json|yaml print the same data the table shows.
 */
import type * as k8s from '@kubernetes/client-node';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import { PoolConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { nodeIsReady } from '../../controller-runtime/informer-factory.ts';
import { windowsBuildLabel } from '../../windows/builds.ts';
import { formatTable, type Tone } from '../output.ts';
import { formatAge, type HostRow, hostRows, oneLine } from './host-rows.ts';

export interface PoolSummary {
  namespace: string;
  name: string;
  hosts: number;
  ready: number;
  updated: number;
  unavailable: number;
  /** "RollingOut: 1 of 3 updated", "RolloutComplete", "Paused", or "-" (no status yet). */
  rollout: string;
  /** Hosts in a change: "name (step since age)". */
  inProgress: string[];
  /** Hosts of the pool under remediation or whose ladder failed: "name: rung" / "name: failed". */
  remediation: string[];
  /** The pool's Degraded message when True. */
  degraded?: string;
  paused: boolean;
}

export interface FleetStatus {
  generatedAt: string;
  summary: {
    hosts: { total: number; ready: number };
    windowsNodes: { total: number; ready: number; byBuild: Record<string, number> };
    kubeletVersions: Record<string, number>;
    servicesVersions: Record<string, number>;
    pools: number;
  };
  hosts: HostRow[];
  pools: PoolSummary[];
  runtimeClasses: { name: string; handler: string; build?: string; managed: boolean }[];
  /** What could not be read (a missing CRD, a forbidden list), so the rest still shows. */
  unavailable: string[];
}

/** @package */
export interface FleetObjects {
  hosts: readonly WindowsHost[];
  nodes: readonly k8s.V1Node[];
  /** Undefined when the pool CRD is not installed or not readable. */
  pools?: readonly WindowsNodePool[];
  runtimeClasses: readonly k8s.V1RuntimeClass[];
  unavailable?: string[];
}

const count = (into: Record<string, number>, value: string | undefined) => {
  const k = value || 'unknown';
  into[k] = (into[k] ?? 0) + 1;
};

function isWindows(node: k8s.V1Node): boolean {
  return (
    (node.metadata?.labels?.['kubernetes.io/os'] ?? node.status?.nodeInfo?.operatingSystem) ===
    'windows'
  );
}

function poolSummary(
  pool: WindowsNodePool,
  hosts: readonly WindowsHost[],
  members: Set<string>,
  now: Date,
): PoolSummary {
  const status = pool.status;
  const condition = (type: string) => status?.conditions?.find((c) => c.type === type);
  const progressing = condition(PoolConditionType.Progressing);
  const degraded = condition(PoolConditionType.Degraded);
  const total = status?.hosts ?? 0;
  const updated = status?.updatedHosts ?? 0;
  let rollout = '-';
  if (progressing) {
    rollout =
      progressing.status === 'True' && progressing.reason === 'RollingOut'
        ? `RollingOut: ${updated} of ${total} updated`
        : progressing.reason;
  }
  if (pool.spec?.paused && rollout !== 'Paused')
    rollout = rollout === '-' ? 'Paused' : `${rollout} (paused)`;
  const namespace = pool.metadata.namespace ?? '';
  const remediation: string[] = [];
  for (const host of hosts) {
    if (!members.has(`${host.metadata.namespace ?? ''}/${host.metadata.name}`)) continue;
    const r = host.status?.remediation;
    if (r?.failed) remediation.push(`${host.metadata.name}: failed`);
    else if (r?.current)
      remediation.push(
        `${host.metadata.name}: ${r.current.rung}${r.current.held ? ` (held: ${r.current.held.reason})` : ''}`,
      );
  }
  return {
    namespace,
    name: pool.metadata.name,
    hosts: total,
    ready: status?.readyHosts ?? 0,
    updated,
    unavailable: status?.unavailableHosts ?? 0,
    rollout,
    inProgress: (status?.hostsInProgress ?? []).map(
      (h) => `${h.name} (${h.step} ${formatAge(h.since, now)})`,
    ),
    remediation,
    ...(degraded?.status === 'True' ? { degraded: `${degraded.reason}: ${degraded.message}` } : {}),
    paused: pool.spec?.paused === true,
  };
}

export function buildFleetStatus(objects: FleetObjects, now: Date): FleetStatus {
  const nodes = new Map(objects.nodes.map((n) => [n.metadata?.name ?? '', n]));
  const rows = hostRows(objects.hosts, {
    now,
    nodes,
    ...(objects.pools ? { pools: objects.pools } : {}),
  });
  const windowsNodes = objects.nodes.filter(isWindows);
  const byBuild: Record<string, number> = {};
  const kubeletVersions: Record<string, number> = {};
  const servicesVersions: Record<string, number> = {};
  for (const node of windowsNodes) {
    count(byBuild, node.metadata?.labels?.[windowsBuildLabel]);
    count(kubeletVersions, node.status?.nodeInfo?.kubeletVersion);
    count(servicesVersions, node.metadata?.annotations?.[servicesVersionAnnotation]);
  }
  const membersOf = new Map<string, Set<string>>();
  for (const row of rows)
    for (const pool of row.pools) {
      const k = `${row.namespace}/${pool}`;
      if (!membersOf.has(k)) membersOf.set(k, new Set());
      membersOf.get(k)!.add(`${row.namespace}/${row.name}`);
    }
  const pools = (objects.pools ?? [])
    .map((p) =>
      poolSummary(
        p,
        objects.hosts,
        membersOf.get(`${p.metadata.namespace ?? ''}/${p.metadata.name}`) ?? new Set(),
        now,
      ),
    )
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  return {
    generatedAt: now.toISOString(),
    summary: {
      hosts: { total: rows.length, ready: rows.filter((r) => r.ready).length },
      windowsNodes: {
        total: windowsNodes.length,
        ready: windowsNodes.filter(nodeIsReady).length,
        byBuild,
      },
      kubeletVersions,
      servicesVersions,
      pools: pools.length,
    },
    hosts: rows,
    pools,
    runtimeClasses: objects.runtimeClasses
      .map((r) => ({
        name: r.metadata?.name ?? '',
        handler: r.handler,
        ...(r.scheduling?.nodeSelector?.[windowsBuildLabel]
          ? { build: r.scheduling.nodeSelector[windowsBuildLabel] }
          : {}),
        managed: r.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'winfleet',
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    unavailable: objects.unavailable ?? [],
  };
}

const tally = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ×${n}`)
    .join(', ') || 'none';

/** The tone of a host's state: Ready good, Degraded/Removing bad, anything else in between. */
export function stateTone(row: Pick<HostRow, 'state' | 'ready' | 'nodeProblems'>): Tone {
  if (row.state.startsWith('Degraded')) return 'bad';
  if (row.ready && row.nodeProblems.length === 0) return 'good';
  return 'warn';
}

/** Colours text by its tone (identity when not on a TTY). */
type Paint = (tone: Tone, text: string) => string;

/** The first line of `winfleet status`: hosts, Windows nodes, versions, pools. */
function summaryLine(summary: FleetStatus['summary'], p: Paint): string {
  const hostsTone: Tone =
    summary.hosts.total === 0
      ? 'dim'
      : summary.hosts.ready === summary.hosts.total
        ? 'good'
        : 'warn';
  return (
    `Hosts: ${p(hostsTone, `${summary.hosts.ready}/${summary.hosts.total} Ready`)}   ` +
    `Windows nodes: ${summary.windowsNodes.ready}/${summary.windowsNodes.total} Ready (builds: ${tally(summary.windowsNodes.byBuild)})   ` +
    `kubelet: ${tally(summary.kubeletVersions)}   services: ${tally(summary.servicesVersions)}   ` +
    `pools: ${summary.pools}`
  );
}

/** The hosts table (NAMESPACE when there are several; CONDITIONS and MESSAGE when wide). */
function hostsTable(hosts: HostRow[], wide: boolean, p: Paint): string {
  if (hosts.length === 0) return 'No WindowsHosts. Add one with: winfleet hosts add';
  const allNamespaces = new Set(hosts.map((h) => h.namespace)).size > 1;
  return formatTable(
    [
      ...(allNamespaces ? ['NAMESPACE'] : []),
      'HOST',
      'NODE',
      'POOL',
      'WINDOWS',
      'SERVICES',
      'STATE',
      'NODE READY',
      'NODE HEALTH',
      ...(wide ? ['CONDITIONS', 'MESSAGE'] : []),
    ],
    hosts.map((h) => [
      ...(allNamespaces ? [h.namespace] : []),
      h.name,
      h.node ?? '-',
      h.pools.join(',') || '-',
      h.windows ?? '-',
      h.services ?? '-',
      p(stateTone(h), h.state),
      h.nodeReady === undefined ? '-' : h.nodeReady ? 'True' : p('bad', 'False'),
      h.nodeProblems.length ? p('bad', h.nodeProblems.join(',')) : 'OK',
      ...(wide ? [h.conditions.join(',') || '-', oneLine(h.lastError ?? h.message) || '-'] : []),
    ]),
  ).trimEnd();
}

/** The pools table, or why there is none. */
function poolsTable(status: FleetStatus, p: Paint): string {
  if (status.pools.length === 0)
    return status.unavailable.some((u) => u.startsWith('pools'))
      ? 'Pools: not readable'
      : 'Pools: none (hosts are in the implicit default pool)';
  return formatTable(
    ['POOL', 'HOSTS', 'READY', 'UPDATED', 'UNAVAILABLE', 'ROLLOUT', 'IN PROGRESS', 'REMEDIATION'],
    status.pools.map((pool) => [
      pool.name,
      String(pool.hosts),
      String(pool.ready),
      String(pool.updated),
      pool.unavailable ? p('warn', String(pool.unavailable)) : '0',
      pool.degraded ? p('bad', oneLine(`${pool.rollout}; ${pool.degraded}`, 80)!) : pool.rollout,
      pool.inProgress.join(', ') || '-',
      pool.remediation.length ? p('warn', pool.remediation.join(', ')) : '-',
    ]),
  ).trimEnd();
}

/** The RuntimeClasses table, or that there is none. */
function runtimeClassesTable(runtimeClasses: FleetStatus['runtimeClasses']): string {
  if (runtimeClasses.length === 0) return 'RuntimeClasses: none';
  return formatTable(
    ['RUNTIMECLASS', 'HANDLER', 'BUILD', 'MANAGED'],
    runtimeClasses.map((r) => [r.name, r.handler, r.build ?? '-', r.managed ? 'winfleet' : '-']),
  ).trimEnd();
}

/** The table form of `winfleet status`; `paint` colours (identity when not on a TTY). */
export function renderFleetStatus(
  status: FleetStatus,
  options: { wide: boolean; paint: Paint },
): string {
  const p = options.paint;
  const lines = [
    summaryLine(status.summary, p),
    '',
    hostsTable(status.hosts, options.wide, p),
    '',
    poolsTable(status, p),
    '',
    runtimeClassesTable(status.runtimeClasses),
  ];
  for (const what of status.unavailable) lines.push(p('warn', `warning: ${what}`));
  return `${lines.join('\n')}\n`;
}
