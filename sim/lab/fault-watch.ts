/**
 * `npm run lab:fault -- <host> <fault> --watch`: after the fault is injected, watch the host's
 * Node, its Events and its WindowsHost through the API server and print, in seconds since the
 * injection, what winfleet noticed and what it did, until the fault is repaired, needs a
 * person, or the timeout passes. This is how the lab measures detection and repair times.
 *
 * The pure part (what to watch per fault, what changed between two looks, when to stop, how a
 * line reads) is separate from the polling loop, so it is tested without a cluster.
 *
 * @example
 * const plan = watchPlanFor({ host: 'simwin-10', fault: 'clock-skew', seconds: 600 });
 * // plan.conditions: ['ClockSkew']; plan.needsPerson: false
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { apiGroup } from '../../src/api/group-version.ts';
import { NodeHealthCondition, NodeHealthEventReason } from '../../src/api/reasons.ts';
import { windowsHostResource } from '../../src/api/windows-host.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { serviceCondition } from '../../src/node-health/detector.ts';
import type { FaultRequest } from './fault-requests.ts';

/** --timeout: default and bounds, seconds. */
export const watchTimeout = { defaultSeconds: 900, minSeconds: 10, maxSeconds: 3600 } as const;

/** How often the loop looks, ms. */
export const pollIntervalMs = 500;

/** What to watch for one fault. */
export interface WatchPlan {
  /** Node condition types whose changes are printed (Ready is always watched as well). */
  conditions: string[];
  /** Event reasons on the Node that show the fault was noticed. */
  events: string[];
  /** Only Events whose message starts with this (the service's name) count as noticing it. */
  eventPrefix?: string;
  /** Ready not True is itself the sign (the host is gone: no agent writes anything). */
  readyIsSignal: boolean;
  /** Nothing in winfleet repairs it: stop once it is noticed and say who must act. */
  needsPerson: boolean;
  /** `clear`: nothing to notice; stop once the host is healthy again. */
  recovery: boolean;
}

/** The Node condition the agent sets for a node service, if it checks that service. */
const serviceConditionOf: Record<string, string> = serviceCondition;

/** Which conditions and Events show this fault, and whether winfleet repairs it. */
export function watchPlanFor(request: FaultRequest): WatchPlan {
  const base = { events: [], readyIsSignal: false, needsPerson: false, recovery: false };
  switch (request.fault) {
    case 'service-down':
      return {
        ...base,
        conditions: [
          ...(serviceConditionOf[request.service] ? [serviceConditionOf[request.service]!] : []),
          NodeHealthCondition.FrequentServiceRestart,
        ],
        events: [NodeHealthEventReason.ServiceRestarted],
        eventPrefix: `${request.service} `,
      };
    case 'crash-loop':
      return {
        ...base,
        conditions: [
          NodeHealthCondition.FrequentServiceRestart,
          ...(serviceConditionOf[request.service] ? [serviceConditionOf[request.service]!] : []),
        ],
      };
    case 'hns-delete':
      return { ...base, conditions: [NodeHealthCondition.HNSNetworkMissing] };
    case 'clock-skew':
      return { ...base, conditions: [NodeHealthCondition.ClockSkew] };
    case 'disk-full':
      return {
        ...base,
        conditions: [NodeHealthCondition.SystemDiskLow],
        events: [NodeHealthEventReason.SystemDiskLow],
        needsPerson: true,
      };
    case 'unreachable':
      return { ...base, conditions: [], readyIsSignal: true, needsPerson: true };
    case 'clear':
      return { ...base, conditions: Object.values(NodeHealthCondition), recovery: true };
  }
}

/** A Node condition as the watch keeps it. */
export interface SeenCondition {
  status: string;
  reason?: string;
  message?: string;
}

export interface SeenEvent {
  uid: string;
  reason: string;
  type: string;
  /** What the Event is about, e.g. `Node simwin-10` or `WindowsHost simwin-10`. */
  about: string;
  message: string;
}

export interface SeenAction {
  time: string;
  rung: string;
  result: string;
  message?: string;
}

/** One look at the host: its Node, its WindowsHost's status.remediation and its Events. */
export interface HostSnapshot {
  /** Undefined: the Node could not be read this time. */
  node?: { conditions: Record<string, SeenCondition>; unschedulable: boolean };
  remediation?: {
    current?: { rung: string; problem?: string; held?: string };
    failed?: string;
    lastActions: SeenAction[];
  };
  events: SeenEvent[];
}

/** What the watch remembers between looks. */
export interface WatchState {
  previous: HostSnapshot;
  /** Events and ladder results that existed before the injection, or were printed already. */
  seenEvents: Set<string>;
  seenActions: Set<string>;
  /** ms since the injection when the fault was first noticed. */
  detectedAfterMs?: number;
  /** Rungs that ended since the injection, `rung:result`, in order. */
  rungs: string[];
}

export type WatchOutcome =
  | { kind: 'repaired'; afterMs: number; detectedAfterMs?: number; by: string }
  | { kind: 'needs-person'; afterMs: number };

const actionKey = (a: SeenAction) => `${a.time} ${a.rung} ${a.result}`;

/** The state before the injection: what exists then is not news. */
export function startWatch(baseline: HostSnapshot): WatchState {
  return {
    previous: baseline,
    seenEvents: new Set(baseline.events.map((e) => e.uid)),
    seenActions: new Set((baseline.remediation?.lastActions ?? []).map(actionKey)),
    rungs: [],
  };
}

/** `+ 12.5s`, padded so that the columns line up. */
export function formatElapsed(ms: number): string {
  return `+${(ms / 1000).toFixed(1).padStart(7)}s`;
}

/** One line of text from the cluster, short and without control characters. */
export function clip(text: string | undefined, max = 160): string {
  const flat = (text ?? '').replace(/\p{Cc}+/gu, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function describeCondition(c: SeenCondition | undefined): string {
  if (!c) return '(none)';
  const why = [c.reason, clip(c.message, 120)].filter(Boolean).join(': ');
  return why ? `${c.status} (${why})` : c.status;
}

/**
 * Compares a new look with the last one: the lines to print, and the updated state. A look
 * whose Node could not be read keeps the last Node (no change is invented from a failed read).
 */
export function observe(
  plan: WatchPlan,
  state: WatchState,
  next: HostSnapshot,
  elapsedMs: number,
): { lines: string[]; state: WatchState } {
  const at = formatElapsed(elapsedMs);
  const lines: string[] = [];
  const previous = state.previous;
  const node = next.node ?? previous.node;
  let noticed = false;

  for (const type of ['Ready', ...plan.conditions]) {
    const before = previous.node?.conditions[type];
    const after = node?.conditions[type];
    if (after && (before?.status !== after.status || before?.reason !== after.reason)) {
      lines.push(
        `${at}  Node ${type}: ${before?.status ?? '(none)'} → ${describeCondition(after)}`,
      );
    }
    if (type !== 'Ready' && after?.status === 'True') noticed = true;
  }
  const ready = node?.conditions.Ready?.status;
  if (plan.readyIsSignal && ready !== undefined && ready !== 'True') noticed = true;
  if (previous.node && node && previous.node.unschedulable !== node.unschedulable) {
    lines.push(`${at}  Node ${node.unschedulable ? 'cordoned' : 'uncordoned'}`);
  }

  const seenEvents = new Set(state.seenEvents);
  for (const e of next.events) {
    if (seenEvents.has(e.uid)) continue;
    seenEvents.add(e.uid);
    lines.push(`${at}  Event ${e.reason} (${e.type}) on ${e.about}: ${clip(e.message)}`);
    if (plan.events.includes(e.reason) && e.message.startsWith(plan.eventPrefix ?? '')) {
      noticed = true;
    }
  }

  const remediation = next.remediation ?? previous.remediation;
  const was = previous.remediation?.current;
  const now = remediation?.current;
  if (was?.rung !== now?.rung) {
    lines.push(
      now
        ? `${at}  ladder: rung ${now.rung}${now.problem ? ` (for ${now.problem})` : ''}`
        : `${at}  ladder: ended`,
    );
  }
  if (now?.held !== was?.held && now) {
    lines.push(`${at}  ladder: ${now.held ? `held (${now.held})` : 'no longer held'}`);
  }
  if (remediation?.failed && !previous.remediation?.failed) {
    lines.push(`${at}  ladder: RemediationFailed: ${clip(remediation.failed)}`);
  }
  const seenActions = new Set(state.seenActions);
  const rungs = [...state.rungs];
  for (const a of remediation?.lastActions ?? []) {
    const key = actionKey(a);
    if (seenActions.has(key)) continue;
    seenActions.add(key);
    rungs.push(`${a.rung}:${a.result}`);
    lines.push(`${at}  ${a.rung}:${a.result}${a.message ? ` ${clip(a.message)}` : ''}`);
  }
  if (now) noticed = true;

  const detectedAfterMs =
    state.detectedAfterMs ?? (noticed && !plan.recovery ? elapsedMs : undefined);
  if (detectedAfterMs !== undefined && state.detectedAfterMs === undefined) {
    lines.push(`${at}  detected`);
  }
  return {
    lines,
    state: {
      previous: {
        node,
        remediation,
        events: next.events,
      },
      seenEvents,
      seenActions,
      rungs,
      ...(detectedAfterMs !== undefined ? { detectedAfterMs } : {}),
    },
  };
}

/**
 * Whether to stop: repaired (noticed, then the watched conditions not True, Ready True and no
 * ladder running or failed), or, for a fault only a person can fix, once its condition shows
 * (an Event before it, like disk-full's early SystemDiskLow, is printed but does not stop).
 */
export function outcomeOf(
  plan: WatchPlan,
  state: WatchState,
  elapsedMs: number,
): WatchOutcome | undefined {
  const node = state.previous.node;
  if (!node) return undefined;
  const detected = state.detectedAfterMs;
  if (plan.needsPerson) {
    // The condition itself (or Ready not True), not an early Event: then a person must act.
    const shown =
      plan.conditions.some((type) => node.conditions[type]?.status === 'True') ||
      (plan.readyIsSignal && (node.conditions.Ready?.status ?? 'True') !== 'True');
    return shown ? { kind: 'needs-person', afterMs: elapsedMs } : undefined;
  }
  if (detected === undefined && !plan.recovery) return undefined;
  const healthy =
    node.conditions.Ready?.status === 'True' &&
    plan.conditions.every((type) => node.conditions[type]?.status !== 'True') &&
    !state.previous.remediation?.current &&
    !state.previous.remediation?.failed;
  if (!healthy) return undefined;
  const succeeded = state.rungs.filter((r) => r.endsWith(':Succeeded')).map((r) => r.split(':')[0]);
  return {
    kind: 'repaired',
    afterMs: elapsedMs,
    ...(detected !== undefined ? { detectedAfterMs: detected } : {}),
    by: succeeded.length
      ? `rung ${succeeded.join(', ')}`
      : plan.recovery
        ? 'clear'
        : 'the agent (no rung)',
  };
}

/** The last lines: the outcome, or what was still wrong at the timeout. */
export function closingLines(
  outcome: WatchOutcome | undefined,
  state: WatchState,
  elapsedMs: number,
  clearCommand: string,
): string[] {
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
  const detected =
    state.detectedAfterMs === undefined
      ? 'not detected'
      : `detected after ${secs(state.detectedAfterMs)}`;
  if (outcome?.kind === 'repaired') {
    return [
      outcome.detectedAfterMs === undefined
        ? `healthy again after ${secs(outcome.afterMs)} (by ${outcome.by})`
        : `repaired after ${secs(outcome.afterMs)} (${detected}; by ${outcome.by})`,
    ];
  }
  if (outcome?.kind === 'needs-person') {
    return [
      `${detected}, on the Node's conditions after ${secs(outcome.afterMs)}; needs a person: nothing in winfleet repairs this fault; run ${clearCommand}`,
    ];
  }
  const node = state.previous.node;
  const bad = Object.entries(node?.conditions ?? {})
    .filter(([type, c]) => (type === 'Ready' ? c.status !== 'True' : c.status === 'True'))
    .map(([type, c]) => `${type} ${c.status}`);
  const ladder = state.previous.remediation?.current?.rung;
  return [
    `not repaired within ${secs(elapsedMs)} (${detected}; still: ${[...bad, ...(ladder ? [`ladder at ${ladder}`] : []), ...(state.previous.remediation?.failed ? ['RemediationFailed'] : [])].join(', ') || 'nothing wrong seen, but the fault was not detected'})`,
  ];
}

/** Reads the --timeout value: whole seconds within the bounds. */
export function parseWatchTimeout(text: string): number {
  const { minSeconds, maxSeconds } = watchTimeout;
  if (!/^\d{1,5}$/.test(text) || Number(text) < minSeconds || Number(text) > maxSeconds) {
    throw new RangeError(
      `--timeout "${clip(text, 20)}" is not whole seconds from ${minSeconds} to ${maxSeconds}; give e.g. --timeout 600`,
    );
  }
  return Number(text);
}

// ---- the loop against the API server ----

/** Reads the host's Node, WindowsHost and Events; a read that fails leaves its part out. */
export function snapshotReader(
  kubeconfigPath: string,
  namespace: string,
  host: string,
): () => Promise<HostSnapshot & { error?: string }> {
  const kc = loadKubeConfig(kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  return async function readSnapshot() {
    const [node, wh, events] = await Promise.allSettled([
      core.readNode({ name: host }),
      custom.getNamespacedCustomObject({
        group: apiGroup,
        version: 'v1alpha1',
        namespace,
        plural: windowsHostResource.plural,
        name: host,
      }),
      core.listEventForAllNamespaces({ fieldSelector: `involvedObject.name=${host}` }),
    ]);
    const failed = [node, wh, events].find((r) => r.status === 'rejected');
    return {
      ...(node.status === 'fulfilled' ? { node: nodeOf(node.value) } : {}),
      ...(wh.status === 'fulfilled' ? { remediation: remediationOf(wh.value) } : {}),
      events: events.status === 'fulfilled' ? eventsOf(events.value.items) : [],
      ...(failed ? { error: errorText(failed.reason) } : {}),
    };
  };
}

function nodeOf(node: k8s.V1Node): NonNullable<HostSnapshot['node']> {
  const conditions: Record<string, SeenCondition> = {};
  for (const c of node.status?.conditions ?? []) {
    conditions[c.type] = {
      status: c.status,
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
    };
  }
  return { conditions, unschedulable: node.spec?.unschedulable === true };
}

/** status.remediation of a WindowsHost as the API returns it (untyped JSON, read defensively). */
export function remediationOf(object: unknown): NonNullable<HostSnapshot['remediation']> {
  const r = (object as { status?: { remediation?: Record<string, unknown> } }).status?.remediation;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const current = r?.current as Record<string, unknown> | undefined;
  const problem = current?.problem as Record<string, unknown> | undefined;
  const held = current?.held as Record<string, unknown> | undefined;
  const failed = r?.failed as Record<string, unknown> | undefined;
  const actions = Array.isArray(r?.lastActions) ? (r.lastActions as Record<string, unknown>[]) : [];
  return {
    ...(current && str(current.rung)
      ? {
          current: {
            rung: str(current.rung)!,
            ...(problem ? { problem: `${str(problem.type)} ${str(problem.status)}` } : {}),
            ...(held && str(held.reason) ? { held: str(held.reason)! } : {}),
          },
        }
      : {}),
    ...(failed ? { failed: str(failed.message) ?? 'RemediationFailed' } : {}),
    lastActions: actions.map((a) => ({
      time: str(a.time) ?? '',
      rung: str(a.rung) ?? '?',
      result: str(a.result) ?? '?',
      ...(str(a.message) ? { message: str(a.message)! } : {}),
    })),
  };
}

function eventsOf(items: k8s.CoreV1Event[]): SeenEvent[] {
  return items.map((e) => ({
    uid: e.metadata?.uid ?? `${e.metadata?.namespace}/${e.metadata?.name}`,
    reason: e.reason ?? '',
    type: e.type ?? '',
    about: `${e.involvedObject.kind ?? '?'} ${e.involvedObject.name ?? '?'}`,
    message: e.message ?? '',
  }));
}

function errorText(error: unknown): string {
  const e = error as { code?: number; message?: string; cause?: { code?: string } };
  return clip(e.cause?.code ?? (e.code ? `HTTP ${e.code}` : e.message), 120);
}

export interface WatchOptions {
  plan: WatchPlan;
  read: () => Promise<HostSnapshot & { error?: string }>;
  /** From startWatch(baseline read before the injection). */
  state: WatchState;
  /** performance.now() at the injection. */
  injectedAt: number;
  timeoutSeconds: number;
  clearCommand: string;
  out: (line: string) => void;
  now?: () => number;
  intervalMs?: number;
}

/** Looks every intervalMs until an outcome or the timeout; resolves to the exit code. */
export async function watchFault(options: WatchOptions): Promise<number> {
  const now = options.now ?? (() => performance.now());
  const interval = options.intervalMs ?? pollIntervalMs;
  const deadline = options.injectedAt + options.timeoutSeconds * 1000;
  let state = options.state;
  let lastError: string | undefined;
  const maxLooks = Math.ceil((options.timeoutSeconds * 1000) / interval) + 1;
  for (let look = 0; look < maxLooks; look++) {
    const snapshot = await options.read();
    const elapsed = now() - options.injectedAt;
    if (snapshot.error !== lastError) {
      options.out(
        snapshot.error
          ? `${formatElapsed(elapsed)}  (API server read failed: ${snapshot.error}; still trying)`
          : `${formatElapsed(elapsed)}  (API server reads work again)`,
      );
      lastError = snapshot.error;
    }
    const step = observe(options.plan, state, snapshot, elapsed);
    state = step.state;
    for (const line of step.lines) options.out(line);
    const outcome = outcomeOf(options.plan, state, elapsed);
    if (outcome) {
      for (const line of closingLines(outcome, state, elapsed, options.clearCommand)) {
        options.out(line);
      }
      return 0;
    }
    if (now() >= deadline) break;
    await sleep(Math.min(interval, Math.max(0, deadline - now())));
  }
  for (const line of closingLines(
    undefined,
    state,
    now() - options.injectedAt,
    options.clearCommand,
  )) {
    options.out(line);
  }
  return 1;
}
