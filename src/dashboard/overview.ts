/**
 * What the dashboard shows, built from plain lists of objects (the operator's informer caches)
 * so it is a pure function of them: every WindowsHost with its conditions and its Node's health,
 * every Node, the WindowsNodePools with their rollouts, the RuntimeClasses, and one host's detail
 * (conditions, versions, join steps, rollout, remediation and recent Events).
 *
 * Everything here is data: the page renders every string as text (dashboard-script.ts).
 */

import type * as k8s from '@kubernetes/client-node';
import {
  desiredServicesVersionAnnotation,
  servicesVersionAnnotation,
} from '../api/node-annotations.ts';
import { type HostPrePullStatus, prePullConditionType } from '../api/pre-pull.ts';
import { ConditionType, nodeHealthConditions, PrePullReason } from '../api/reasons.ts';
import { hostAddressLabel, isPullHost, type WindowsHost } from '../api/windows-host.ts';
import type { WindowsNodePool } from '../api/windows-node-pool.ts';
import type { Condition } from '../controller-runtime/conditions.ts';
import { poolMembership } from '../fleet/pool-observe.ts';
import { defaultPoolKey } from '../rollout/pool-membership.ts';
import { windowsBuildLabel } from '../windows/builds.ts';

/** How a row or badge is coloured: fine, needs attention, broken, or nothing to say. */
export type Tone = 'ok' | 'warn' | 'bad' | 'none';

/** A condition as the page shows it. */
export interface ShownCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
  since?: string;
  tone: Tone;
}

export interface OverviewHost {
  /** "namespace/name": the key of the detail view (/api/hosts/namespace/name). */
  key: string;
  namespace: string;
  name: string;
  address: string;
  hostname?: string;
  /** The pools whose selector matches the host (more than one is a conflict), else spec.pool. */
  pool?: string;
  node?: string;
  windowsVersion?: string;
  kubeletVersion?: string;
  servicesVersion?: string;
  /** "Ready", "Degraded (DiskFull)", "Ready: NodeNotReady", "Removing", "Pending". */
  state: string;
  tone: Tone;
  message: string;
  lastError?: string;
  /** The WindowsHost's conditions, in join order (Reachable … Ready, then Degraded). */
  conditions: ShownCondition[];
  /** The Node's Ready condition (undefined without a Node). */
  nodeReady?: ShownCondition;
  /** The Node's health conditions that report a problem (status True). */
  nodeProblems: ShownCondition[];
  /** The pool rollout step the host is at, if it is in a change. */
  rolloutStep?: string;
  /** The remediation rung running on it, if any. */
  remediationRung?: string;
}

export interface OverviewNode {
  name: string;
  os: string;
  build?: string;
  kernelVersion?: string;
  kubeletVersion?: string;
  servicesVersion?: string;
  desiredServicesVersion?: string;
  ready: boolean;
  schedulable: boolean;
  /** Health conditions reporting a problem (status True). */
  problems: ShownCondition[];
}

export interface OverviewPool {
  key: string;
  namespace: string;
  name: string;
  paused: boolean;
  hosts: number;
  readyHosts: number;
  updatedHosts: number;
  unavailableHosts: number;
  maxUnavailable: string;
  /** "Rolling out", "Complete", "Paused", "Degraded (…)", "Waiting for window", "Unknown". */
  state: string;
  tone: Tone;
  conditions: ShownCondition[];
  inProgress: { name: string; step: string; since: string }[];
}

export interface OverviewRuntimeClass {
  name: string;
  handler: string;
  build?: string;
  managed: boolean;
}

/** @package */
export interface Overview {
  generatedAt: string;
  summary: {
    hosts: number;
    readyHosts: number;
    degradedHosts: number;
    nodes: number;
    notReadyNodes: number;
    pools: number;
    rollingOut: number;
  };
  hosts: OverviewHost[];
  nodes: OverviewNode[];
  pools: OverviewPool[];
  runtimeClasses: OverviewRuntimeClass[];
}

/** The objects an overview is built from. */
export interface OverviewSources {
  hosts: readonly WindowsHost[];
  nodes: readonly k8s.V1Node[];
  pools: readonly WindowsNodePool[];
  runtimeClasses: readonly k8s.V1RuntimeClass[];
}

const joinOrder: readonly string[] = [
  ConditionType.Reachable,
  ConditionType.Bootstrapped,
  ConditionType.NodeRegistered,
  ConditionType.Ready,
  ConditionType.Degraded,
];

const healthTypes: ReadonlySet<string> = new Set(nodeHealthConditions);

function isoTime(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const date = value instanceof Date ? value : new Date(String(value));
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** A WindowsHost condition: Degraded True is bad, any other True good, False bad/warn. */
function hostCondition(c: Condition): ShownCondition {
  const problem = c.type === ConditionType.Degraded ? c.status === 'True' : c.status !== 'True';
  const tone: Tone = !problem ? 'ok' : c.type === ConditionType.Degraded ? 'bad' : 'warn';
  return {
    type: c.type,
    status: c.status,
    reason: c.reason ?? '',
    message: c.message ?? '',
    since: isoTime(c.lastTransitionTime),
    tone,
  };
}

/**
 * A Node condition: Ready True is good; the kubelet's pressure conditions and winfleet's health
 * conditions are problems when True.
 */
function nodeCondition(c: k8s.V1NodeCondition): ShownCondition {
  const ready = c.type === 'Ready';
  const problem = ready ? c.status !== 'True' : c.status === 'True';
  return {
    type: c.type,
    status: c.status,
    reason: c.reason ?? '',
    message: c.message ?? '',
    since: isoTime(c.lastTransitionTime),
    tone: problem ? 'bad' : 'ok',
  };
}

function sortedHostConditions(conditions: readonly Condition[]): ShownCondition[] {
  const rank = (type: string) => {
    const i = joinOrder.indexOf(type);
    return i < 0 ? joinOrder.length : i;
  };
  return [...conditions]
    .sort((a, b) => rank(a.type) - rank(b.type) || a.type.localeCompare(b.type))
    .map(hostCondition);
}

/** The one-line state of a host, from its conditions. */
export function hostState(host: WindowsHost): { state: string; tone: Tone; message: string } {
  const conditions = host.status?.conditions ?? [];
  const ready = conditions.find((c) => c.type === ConditionType.Ready);
  if (host.metadata.deletionTimestamp)
    return { state: 'Removing', tone: 'warn', message: ready?.message ?? '' };
  const degraded = conditions.find((c) => c.type === ConditionType.Degraded && c.status === 'True');
  if (degraded)
    return { state: `Degraded (${degraded.reason})`, tone: 'bad', message: degraded.message };
  if (ready?.status === 'True') return { state: 'Ready', tone: 'ok', message: ready.message };
  const latest = [...conditions]
    .filter((c) => c.type !== ConditionType.Degraded)
    .sort((a, b) => (a.lastTransitionTime ?? '').localeCompare(b.lastTransitionTime ?? ''))
    .at(-1);
  return {
    state: latest ? `${latest.type}: ${latest.reason}` : 'Pending',
    tone: 'warn',
    message: latest?.message ?? '',
  };
}

function nodeIsReadyNow(node: k8s.V1Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

function nodeProblems(node: k8s.V1Node | undefined): ShownCondition[] {
  const conditions = node?.status?.conditions ?? [];
  return [
    ...conditions
      .filter((c) => c.type !== 'Ready' && c.status === 'True')
      .filter((c) => healthTypes.has(c.type) || /Pressure$|Unavailable$/.test(c.type))
      .map(nodeCondition),
    // The pool's images while they are pulled (warn) or when they could not be (bad).
    ...conditions
      .filter((c) => c.type === prePullConditionType && c.status === 'False')
      .map((c) => ({
        ...nodeCondition(c),
        tone: (c.reason === PrePullReason.PrePulling ? 'warn' : 'bad') as Tone,
      })),
  ];
}

function hostRow(
  host: WindowsHost,
  node: k8s.V1Node | undefined,
  pools?: readonly string[],
): OverviewHost {
  const namespace = host.metadata.namespace ?? '';
  const status = host.status ?? {};
  const readyCondition = node?.status?.conditions?.find((c) => c.type === 'Ready');
  const nodeState = hostState(host);
  // A host whose WindowsHost says Ready but whose Node is not: the Node is the fresher news.
  const nodeDown = node !== undefined && !nodeIsReadyNow(node);
  const problems = nodeProblems(node);
  return {
    key: `${namespace}/${host.metadata.name}`,
    namespace,
    name: host.metadata.name,
    address: hostAddressLabel(host),
    hostname: status.hostname,
    pool: pools?.length ? pools.join(', ') : host.spec.pool,
    node: status.nodeName,
    windowsVersion: status.windowsVersion ?? node?.status?.nodeInfo?.kernelVersion,
    kubeletVersion: node?.status?.nodeInfo?.kubeletVersion,
    servicesVersion: status.servicesVersion,
    // A host whose WindowsHost still says Ready but whose Node is not: the Node is the fresher
    // news. Either way the kubelet's own words say why.
    ...(nodeDown
      ? {
          state: nodeState.tone === 'ok' ? 'Node NotReady' : nodeState.state,
          tone: 'bad' as Tone,
          message: `Node: ${readyCondition?.message || readyCondition?.reason || 'not Ready'}`,
        }
      : nodeState),
    lastError: status.lastError
      ? `${status.lastError.step}: ${status.lastError.message}`
      : undefined,
    conditions: sortedHostConditions(status.conditions ?? []),
    nodeReady: readyCondition
      ? nodeCondition(readyCondition)
      : node
        ? {
            type: 'Ready',
            status: 'Unknown',
            reason: '',
            message: 'the Node has not reported',
            tone: 'bad',
          }
        : undefined,
    nodeProblems: problems,
    rolloutStep: status.rollout?.current?.step,
    remediationRung: status.remediation?.current?.rung,
  };
}

function nodeRow(n: k8s.V1Node): OverviewNode {
  return {
    name: n.metadata?.name ?? '',
    os: n.metadata?.labels?.['kubernetes.io/os'] ?? n.status?.nodeInfo?.operatingSystem ?? '',
    build: n.metadata?.labels?.[windowsBuildLabel],
    kernelVersion: n.status?.nodeInfo?.kernelVersion,
    kubeletVersion: n.status?.nodeInfo?.kubeletVersion,
    servicesVersion: n.metadata?.annotations?.[servicesVersionAnnotation],
    desiredServicesVersion: n.metadata?.annotations?.[desiredServicesVersionAnnotation],
    ready: nodeIsReadyNow(n),
    schedulable: !n.spec?.unschedulable,
    problems: nodeProblems(n),
  };
}

/** A migration (spec.replaces) shows while it goes on, and as a problem when it stopped. */
function migratedTone(status: string, reason: string | undefined): Tone {
  if (status === 'True') return 'ok';
  return reason === 'MigrationBlocked' || reason === 'InvalidSpec' ? 'bad' : 'warn';
}

/** A pool's one-line state, from its Degraded and Progressing conditions. */
function poolState(pool: WindowsNodePool): { state: string; tone: Tone } {
  const conditions = pool.status?.conditions ?? [];
  const degraded = conditions.find((c) => c.type === 'Degraded' && c.status === 'True');
  if (degraded) return { state: `Degraded (${degraded.reason})`, tone: 'bad' };
  if (pool.spec.paused) return { state: 'Paused', tone: 'warn' };
  const progressing = conditions.find((c) => c.type === 'Progressing');
  if (!progressing) return { state: 'Unknown', tone: 'none' };
  if (progressing.status === 'True') return { state: 'Rolling out', tone: 'warn' };
  const words = progressing.reason.replace(/([a-z])([A-Z])/g, '$1 $2');
  const available = conditions.find((c) => c.type === 'Available');
  const tone: Tone = available?.status === 'False' ? 'bad' : 'ok';
  return { state: words.charAt(0) + words.slice(1).toLowerCase(), tone };
}

function poolRow(pool: WindowsNodePool): OverviewPool {
  const namespace = pool.metadata.namespace ?? '';
  const s = pool.status ?? {};
  return {
    key: `${namespace}/${pool.metadata.name}`,
    namespace,
    name: pool.metadata.name,
    paused: pool.spec.paused ?? false,
    hosts: s.hosts ?? 0,
    readyHosts: s.readyHosts ?? 0,
    updatedHosts: s.updatedHosts ?? 0,
    unavailableHosts: s.unavailableHosts ?? 0,
    maxUnavailable: String(pool.spec.maxUnavailable ?? 1),
    ...poolState(pool),
    conditions: (s.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason ?? '',
      message: c.message ?? '',
      since: isoTime(c.lastTransitionTime),
      tone: (c.type === 'Migrated'
        ? migratedTone(c.status, c.reason)
        : c.type === 'Degraded'
          ? c.status === 'True'
            ? 'bad'
            : 'ok'
          : c.type === 'Available'
            ? c.status === 'True'
              ? 'ok'
              : 'bad'
            : c.status === 'True'
              ? 'warn'
              : 'ok') as Tone,
    })),
    inProgress: (s.hostsInProgress ?? []).map((h) => ({
      name: h.name,
      step: h.step,
      since: h.since,
    })),
  };
}

const byName = <T extends { name: string; namespace?: string }>(a: T, b: T) =>
  (a.namespace ?? '').localeCompare(b.namespace ?? '') || a.name.localeCompare(b.name);

/**
 * Host key → the names of the pools that select it (the default pool left out). The overview
 * and a host's detail both take a host's pools from here, so they show the same pool.
 * @package
 */
export function hostPools(
  sources: Pick<OverviewSources, 'hosts' | 'pools'>,
): Map<string, string[]> {
  const result = new Map<string, string[]>();
  if (sources.pools.length === 0) return result;
  for (const [poolKey, members] of poolMembership(sources.pools, sources.hosts).pools) {
    if (poolKey === defaultPoolKey) continue;
    const name = poolKey.slice(poolKey.indexOf('/') + 1);
    for (const host of members.hosts) result.set(host, [...(result.get(host) ?? []), name]);
  }
  return result;
}

/** The overview of everything the operator's caches hold, at `now`. */
export function buildOverview(sources: OverviewSources, now: Date = new Date()): Overview {
  const nodesByName = new Map(sources.nodes.map((n) => [n.metadata?.name ?? '', n]));
  const poolsOf = hostPools(sources);
  const hosts = sources.hosts
    .map((h) =>
      hostRow(
        h,
        h.status?.nodeName ? nodesByName.get(h.status.nodeName) : undefined,
        poolsOf.get(`${h.metadata.namespace ?? ''}/${h.metadata.name}`),
      ),
    )
    .sort(byName);
  const nodes = sources.nodes.map(nodeRow).sort(byName);
  const pools = sources.pools.map(poolRow).sort(byName);
  return {
    generatedAt: now.toISOString(),
    summary: {
      hosts: hosts.length,
      readyHosts: hosts.filter((h) => h.state === 'Ready').length,
      degradedHosts: hosts.filter((h) => h.tone === 'bad').length,
      nodes: nodes.length,
      notReadyNodes: nodes.filter((n) => !n.ready).length,
      pools: pools.length,
      rollingOut: pools.filter((p) => p.state === 'Rolling out').length,
    },
    hosts,
    nodes,
    pools,
    runtimeClasses: sources.runtimeClasses
      .map((r) => ({
        name: r.metadata?.name ?? '',
        handler: r.handler,
        build: r.scheduling?.nodeSelector?.[windowsBuildLabel],
        managed: r.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'winfleet',
      }))
      .sort(byName),
  };
}

// ---------------------------------------------------------------------------------------------
// One host's detail.

export interface ShownEvent {
  type: string;
  reason: string;
  message: string;
  /** "WindowsHost" or "Node". */
  object: string;
  count: number;
  lastSeen?: string;
  source: string;
}

/** @package */
export interface HostDetail {
  host: OverviewHost;
  /**
   * How winfleet reaches the host: SSH, or Pull (it joined by itself; its agent pulls and
   * winfleet never connects to it, so it has no SSH account or host key).
   */
  mode: 'SSH' | 'Pull';
  /** The SSH account; a Pull host has none. */
  username?: string;
  addresses: string[];
  hostKeyFingerprint?: string;
  versions: {
    windowsVersion?: string;
    windowsBuild?: string;
    /** The Update Build Revision: the last part of the full version ("2582" of 10.0.20348.2582). */
    ubr?: string;
    kernelVersion?: string;
    kubeletVersion?: string;
    kubeProxyVersion?: string;
    containerRuntime?: string;
    servicesVersion?: string;
    desiredServicesVersion?: string;
  };
  /** The join steps in order, from the host's conditions, with the bootstrap time. */
  joinSteps: ShownCondition[];
  bootstrappedAt?: string;
  lastError?: { step: string; message: string; time: string };
  nodeConditions: ShownCondition[];
  rollout?: {
    step: string;
    startedAt: string;
    stepStartedAt: string;
    changes: string[];
    target: string;
    failure?: string;
  };
  lastRebootAt?: string;
  remediation: {
    current?: { rung: string; since: string; problem: string; held?: string };
    failed?: string;
    lastActions: { time: string; rung: string; result: string; message: string }[];
  };
  windowsUpdates?: {
    searchedAt?: string;
    available: string[];
    installed: string[];
    failed: string[];
    rebootPending: boolean;
    error?: string;
  };
  /** Images before pods: the host's status.prePull (its Node's ImagesPrePulled), if any. */
  prePull?: HostPrePullStatus;
  events: ShownEvent[];
  /** Why the Events could not be read, if they could not. */
  eventsError?: string;
}

/** The most Events a detail shows (newest first). */
export const detailEventLimit = 30;

function eventTime(e: k8s.CoreV1Event): string | undefined {
  return (
    isoTime(e.series?.lastObservedTime) ??
    isoTime(e.lastTimestamp) ??
    isoTime(e.eventTime) ??
    isoTime(e.firstTimestamp) ??
    isoTime(e.metadata?.creationTimestamp)
  );
}

/**
 * The `limit` newest of `events`, newest first (by the last time each was seen). The API server
 * lists Events by name, not time, so whoever reads them sorts them here.
 * @package
 */
export function newestEvents(events: readonly k8s.CoreV1Event[], limit: number): k8s.CoreV1Event[] {
  return events
    .map((e) => ({ e, at: eventTime(e) ?? '' }))
    .sort((a, b) => b.at.localeCompare(a.at))
    .slice(0, limit)
    .map(({ e }) => e);
}

function shownEvent(e: k8s.CoreV1Event): ShownEvent {
  return {
    type: e.type ?? '',
    reason: e.reason ?? '',
    message: e.message ?? '',
    object: e.involvedObject?.kind ?? '',
    count: e.series?.count ?? e.count ?? 1,
    lastSeen: eventTime(e),
    source: e.reportingComponent || e.source?.component || '',
  };
}

function describeTarget(t: {
  servicesVersion?: string;
  patchPolicy?: string;
  rebootRequestedAt?: string;
  repairRequestedAt?: string;
}): string {
  const parts: string[] = [];
  if (t.servicesVersion) parts.push(`services ${t.servicesVersion}`);
  if (t.patchPolicy && t.patchPolicy !== 'None') parts.push(`patches ${t.patchPolicy}`);
  if (t.rebootRequestedAt) parts.push(`reboot requested ${t.rebootRequestedAt}`);
  if (t.repairRequestedAt) parts.push(`repair reboot ${t.repairRequestedAt}`);
  return parts.join(', ');
}

/** The host's versions: Windows (with its UBR), the Node's components, the services'. */
function hostVersions(host: WindowsHost, node: k8s.V1Node | undefined): HostDetail['versions'] {
  const status = host.status ?? {};
  const info = node?.status?.nodeInfo;
  const fullVersion = status.windowsVersion ?? info?.kernelVersion;
  const ubr = fullVersion?.match(/^\d+\.\d+\.\d+\.(\d+)$/)?.[1];
  return {
    windowsVersion: fullVersion,
    windowsBuild: status.windowsBuild ?? node?.metadata?.labels?.[windowsBuildLabel],
    ubr,
    kernelVersion: info?.kernelVersion,
    kubeletVersion: info?.kubeletVersion,
    kubeProxyVersion: info?.kubeProxyVersion,
    containerRuntime: info?.containerRuntimeVersion,
    servicesVersion: status.servicesVersion,
    desiredServicesVersion: node?.metadata?.annotations?.[desiredServicesVersionAnnotation],
  };
}

/** The Node's conditions: Ready first, then the bad ones, then by type. */
function sortedNodeConditions(node: k8s.V1Node | undefined): HostDetail['nodeConditions'] {
  return (node?.status?.conditions ?? [])
    .map(nodeCondition)
    .sort(
      (a, b) =>
        Number(b.type === 'Ready') - Number(a.type === 'Ready') ||
        Number(b.tone === 'bad') - Number(a.tone === 'bad') ||
        a.type.localeCompare(b.type),
    );
}

/** The host's rollout step now, if one runs. */
function rolloutDetail(host: WindowsHost): HostDetail['rollout'] {
  const current = host.status?.rollout?.current;
  if (!current) return undefined;
  return {
    step: current.step,
    startedAt: current.startedAt,
    stepStartedAt: current.stepStartedAt,
    changes: [...current.changes],
    target: describeTarget(current.target),
    failure: current.failure
      ? `${current.failure.step}: ${current.failure.reason}: ${current.failure.message}`
      : undefined,
  };
}

/** The host's repair ladder: the rung now, a failure, and the last actions, newest first. */
function remediationDetail(host: WindowsHost): HostDetail['remediation'] {
  const remediation = host.status?.remediation;
  const ladder = remediation?.current;
  return {
    current: ladder
      ? {
          rung: ladder.rung,
          since: ladder.rungStartedAt,
          problem: `${ladder.problem.type}=${ladder.problem.status} since ${ladder.problem.since}`,
          held: ladder.held ? `${ladder.held.reason} since ${ladder.held.since}` : undefined,
        }
      : undefined,
    failed: remediation?.failed
      ? `${remediation.failed.since}: ${remediation.failed.message}`
      : undefined,
    lastActions: [...(remediation?.lastActions ?? [])].reverse().map((a) => ({
      time: a.time,
      rung: a.rung,
      result: a.result,
      message: a.message,
    })),
  };
}

/** What the host's last Windows Update search found, if there was one. */
function windowsUpdatesDetail(host: WindowsHost): HostDetail['windowsUpdates'] {
  const updates = host.status?.windowsUpdates;
  if (!updates) return undefined;
  return {
    searchedAt: updates.searchedAt,
    available: updates.available ?? [],
    installed: updates.installed ?? [],
    failed: updates.failed ?? [],
    rebootPending: updates.rebootPending ?? false,
    error: updates.error,
  };
}

/**
 * One host's detail: its overview row, versions, join steps, the Node's conditions, rollout,
 * remediation, Windows Update and the Events about the host and its Node, newest first.
 * `pools` are the pools that select the host (hostPools): with them the detail's `host` is the
 * overview's row for the host, field for field, so the page can tell when the row changed.
 * @package
 */
export function buildHostDetail(
  host: WindowsHost,
  node: k8s.V1Node | undefined,
  events: readonly k8s.CoreV1Event[],
  { eventsError, pools }: { eventsError?: string; pools?: readonly string[] } = {},
): HostDetail {
  const status = host.status ?? {};
  const shown = newestEvents(events, detailEventLimit).map(shownEvent);
  return {
    host: hostRow(host, node, pools),
    mode: isPullHost(host) ? 'Pull' : 'SSH',
    username: host.spec.username,
    addresses: status.addresses ?? [],
    hostKeyFingerprint: status.hostKeyFingerprint,
    versions: hostVersions(host, node),
    joinSteps: sortedHostConditions(
      (status.conditions ?? []).filter((c) => c.type !== ConditionType.Degraded),
    ),
    bootstrappedAt: status.bootstrappedAt,
    lastError: status.lastError,
    nodeConditions: sortedNodeConditions(node),
    rollout: rolloutDetail(host),
    lastRebootAt: status.rollout?.lastRebootAt,
    remediation: remediationDetail(host),
    windowsUpdates: windowsUpdatesDetail(host),
    prePull: host.status?.prePull,
    events: shown,
    ...(eventsError ? { eventsError } : {}),
  };
}
