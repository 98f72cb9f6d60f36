/**
 * The agent's side of patches and reboots (issue 12): it finds and reports, the operator's
 * rollout engine decides. On each pass of the run loop, with its Node in hand, the agent
 * - searches Windows Update at the start of each boot, then at most every
 *   updateSearchIntervalSeconds, and again right after installing;
 * - installs, while the Node carries winfleet.io/install-updates ("Security" or "All"), the
 *   updates of that policy the last search found (updatesFor, the operator's own filter) —
 *   each one once per search cycle, so a KB that fails is not retried every pass;
 * - writes its report (winfleet.io/windows-updates, WindowsUpdateReport) on its own Node when
 *   it changed, under the Node's current bootID, so the operator believes only reports made in
 *   this boot;
 * - reboots once per token of winfleet.io/reboot-request: the token is recorded in state.json
 *   before the restart is called for, and a recorded token never reboots again.
 *
 * Levels, not commands: reading the same annotations twice (a restart, a re-sent watch event)
 * does nothing twice.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  installUpdatesAnnotation,
  rebootRequestAnnotation,
  windowsUpdatesAnnotation,
} from '../api/node-annotations.ts';
import {
  formatWindowsUpdateReport,
  maxReportBytes,
  maxReportedUpdates,
  type ReportedUpdate,
  rebootTokenPattern,
  type WindowsUpdateReport,
} from '../api/windows-updates.ts';
import { apiTime } from '../kube/api-time.ts';
import { securityCategories, updatesFor } from '../rollout/pending-changes.ts';
import { type AgentConfig, defaultUpdateSearchIntervalSeconds } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { readState, writeState } from './agent-state.ts';
import type { UpdateInstallResult } from './host-os.ts';
import {
  kbPattern,
  mergeWindowsUpdateState,
  printableText,
  type WindowsUpdateState,
} from './windows-update-state.ts';

/** What state.json keeps of Windows Update and reboot requests. */

/**
 * The updates as the report can carry them: one entry per KB (categories merged), titles and
 * categories cleaned of control characters and cut to the report's limits, at most 8
 * categories (the Security policy's first) and at most maxReportedUpdates updates (security
 * and critical ones first when there are more).
 * @package
 */
export function reportableUpdates(
  updates: readonly ReportedUpdate[],
  titleMax = 256,
): ReportedUpdate[] {
  const byKb = new Map<string, ReportedUpdate>();
  for (const u of updates) {
    if (!kbPattern.test(u.kb)) continue;
    const before = byKb.get(u.kb);
    const categories = [...(before?.categories ?? []), ...u.categories]
      .map((c) => printableText(c, 64))
      .filter((c, i, all) => c !== '' && all.indexOf(c) === i);
    const security = categories.filter((c) => securityCategories.includes(c));
    const rebootRequired = (before?.rebootRequired ?? false) || u.rebootRequired === true;
    byKb.set(u.kb, {
      kb: u.kb,
      title: before?.title ?? (printableText(u.title, titleMax) || u.kb),
      categories: [...security, ...categories.filter((c) => !security.includes(c))].slice(0, 8),
      ...(before?.rebootRequired !== undefined || u.rebootRequired !== undefined
        ? { rebootRequired }
        : {}),
    });
  }
  const all = [...byKb.values()];
  if (all.length <= maxReportedUpdates) return all;
  const isSecurity = (u: ReportedUpdate) =>
    u.categories.some((c) => securityCategories.includes(c));
  return [...all.filter(isSecurity), ...all.filter((u) => !isSecurity(u))].slice(
    0,
    maxReportedUpdates,
  );
}

/** What the agent remembers between passes, in this process. */
interface SearchCache {
  bootId: string;
  /** When the last search ran, ms since the epoch. */
  at: number;
  searchedAt: string;
  available: ReportedUpdate[];
  rebootPending: boolean;
  error?: string;
  /** KBs already tried since the last periodic search (not tried again until the next). */
  attempted: Set<string>;
  /** An install ended since this search: search again at the next step. */
  searchAgain?: boolean;
}

const caches = new WeakMap<AgentContext, SearchCache>();
/** The last bad value logged per annotation, per agent, so that each is logged once. */
const loggedBadValues = new WeakMap<AgentContext, Map<string, string>>();
/** A failed search is tried again after this long (or the interval, if shorter). */
const searchRetrySeconds = 300;

/** What in a Node wakes the run loop for this module: the annotations and the boot id. */
export function windowsUpdateWatchKey(node: k8s.V1Node): string {
  const a = node.metadata?.annotations ?? {};
  return JSON.stringify([
    a[installUpdatesAnnotation] ?? null,
    a[rebootRequestAnnotation] ?? null,
    node.status?.nodeInfo?.bootID ?? null,
  ]);
}

/** @package */
export interface WindowsUpdateSync {
  /** Writes these annotations on the agent's own Node (a merge patch). */
  patchAnnotations(annotations: Record<string, string>): Promise<void>;
  /** Injected for tests. Default Date.now. */
  now?: () => number;
  /** Called when a search or install running in the background ends (the loop looks again). */
  wake?: () => void;
  /** How long a pass waits for a search or install, ms. Default defaultForegroundMs. */
  foregroundMs?: number;
  /** Whether something besides Windows servicing waits for a reboot (the report says so). */
  rebootPendingBesides?: () => boolean;
}

/**
 * One pass: search, install, report, then the reboot request. Errors of Windows Update are
 * reported (the report's `error`) and logged, and never keep a reboot request from being
 * honoured.
 * @package
 */
export async function syncWindowsUpdates(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
  sync: WindowsUpdateSync,
): Promise<void> {
  const bootId = node.status?.nodeInfo?.bootID;
  if (bootId) {
    try {
      await updatesPass(context, config, node, bootId, sync);
    } catch (error) {
      context.stderr(`Windows Update: ${(error as Error).message}\n`);
    }
  }
  await rebootPass(context, config, node);
}

async function search(
  context: AgentContext,
  bootId: string,
  now: number,
  previous: SearchCache | undefined,
  attempted: Set<string>,
): Promise<SearchCache> {
  const host = context.hostOS;
  const searchedAt = apiTime(new Date(now));
  let available = previous?.available ?? [];
  let error: string | undefined;
  try {
    available = reportableUpdates(await host.searchUpdates());
  } catch (e) {
    error = printableText((e as Error).message, 512) || 'the search failed';
    context.stderr(`Windows Update search failed: ${error}\n`);
  }
  let rebootPending = previous?.rebootPending ?? false;
  try {
    rebootPending = await host.rebootPending();
  } catch (e) {
    context.stderr(`Cannot read the reboot-pending registry entries: ${(e as Error).message}\n`);
  }
  return {
    bootId,
    at: now,
    searchedAt,
    available,
    rebootPending,
    ...(error ? { error } : {}),
    attempted,
  };
}

/**
 * The search or install running for an agent. It runs in the background: a pass waits for it at
 * most foregroundMs, then goes on (the loop's health check and service convergence keep
 * running every pass), and a later pass takes its result. Only its host call runs in the
 * background; state.json and the report are written by the passes, in the loop's order.
 */
type Operation =
  | { kind: 'search'; promise: Promise<SearchCache>; outcome?: SearchCache; startedAt: number }
  | {
      kind: 'install';
      kbs: string[];
      promise: Promise<UpdateInstallResult>;
      outcome?: UpdateInstallResult;
      startedAt: number;
    };

const operations = new WeakMap<AgentContext, Operation>();
/** The operation whose "still running" line was logged, per agent (logged once each). */
const loggedRunning = new WeakMap<AgentContext, Operation>();
/** How long a pass waits for a search or install before it leaves it to run on. */
export const defaultForegroundMs = 5_000;

/** Whether `op` ended within `ms`. */
async function endedWithin(op: Operation, ms: number): Promise<boolean> {
  if (op.outcome) return true;
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([op.promise, waited]);
  clearTimeout(timer);
  return op.outcome !== undefined;
}

function startOperation(
  context: AgentContext,
  op: Operation,
  wake: (() => void) | undefined,
): Operation {
  // The promises never reject: search() and install() turn errors into results.
  (op.promise as Promise<SearchCache | UpdateInstallResult>).then((outcome) => {
    op.outcome = outcome as never;
    wake?.();
  });
  operations.set(context, op);
  return op;
}

/** Whether a Windows Update install is running for this agent (a reboot waits for it). */
export function installRunning(context: AgentContext): boolean {
  const op = operations.get(context);
  return op?.kind === 'install' && !op.outcome;
}

async function install(context: AgentContext, wanted: string[]): Promise<UpdateInstallResult> {
  try {
    return await context.hostOS.installUpdates(wanted);
  } catch (error) {
    const text = printableText((error as Error).message, 400) || 'the install failed';
    return {
      installed: [],
      failed: wanted.map((kb) => ({ kb, error: text })),
      rebootRequired: false,
    };
  }
}

/** Records an install's result in state.json and logs it; returns the new record. */
async function recordInstall(
  context: AgentContext,
  result: UpdateInstallResult,
): Promise<WindowsUpdateState | undefined> {
  for (const f of result.failed) {
    context.stderr(`Windows update ${f.kb} was not installed: ${f.error}\n`);
  }
  if (result.installed.length > 0) {
    context.stderr(
      `installed Windows updates ${result.installed.join(', ')}${result.rebootRequired ? '; a reboot is needed to finish' : ''}\n`,
    );
  }
  const mine: WindowsUpdateState = {
    rebootTokens: [],
    installed: result.installed,
    failed: result.failed.map((f) => ({ kb: f.kb, error: printableText(f.error, 512) })),
  };
  const full = await readState(context.hostOS);
  full.windowsUpdates = mergeWindowsUpdateState(full.windowsUpdates, mine);
  await writeState(context.hostOS, full);
  return full.windowsUpdates;
}

/** What one updates pass reads and carries between its steps. */
interface UpdatesPass {
  context: AgentContext;
  sync: WindowsUpdateSync;
  bootId: string;
  now: number;
  foregroundMs: number;
  intervalMs: number;
  /** The Node's install policy annotation, as written. */
  policy: string | undefined;
  /** What state.json records of installs (updated when an install ends in this pass). */
  state: WindowsUpdateState | undefined;
}

/**
 * Searches and installs as the Node's policy asks (each waited for at most foregroundMs), then
 * the report on the Node when it changed.
 */
async function updatesPass(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
  bootId: string,
  sync: WindowsUpdateSync,
): Promise<void> {
  const policy = node.metadata?.annotations?.[installUpdatesAnnotation];
  const pass: UpdatesPass = {
    context,
    sync,
    bootId,
    now: (sync.now ?? Date.now)(),
    foregroundMs: sync.foregroundMs ?? defaultForegroundMs,
    intervalMs: (config.updateSearchIntervalSeconds ?? defaultUpdateSearchIntervalSeconds) * 1000,
    policy,
    state: (await readState(context.hostOS)).windowsUpdates,
  };
  if (policy !== undefined && policy !== 'Security' && policy !== 'All') {
    logOnce(
      context,
      installUpdatesAnnotation,
      policy,
      `${installUpdatesAnnotation} on Node ${config.nodeName} is ${JSON.stringify(policy.slice(0, 64))}; expected "Security" or "All" (the operator's rollout engine writes it): installing nothing`,
    );
  }
  await runOperations(pass);
  await publishReport(pass, node);
}

/**
 * At most a search, an install and the search after it per pass; each is started once and
 * waited for at most foregroundMs.
 */
async function runOperations(pass: UpdatesPass): Promise<void> {
  const { context, bootId } = pass;
  for (let step = 0; step < 3; step++) {
    const op = operations.get(context) ?? nextOperation(pass);
    if (!op) break;
    if (!(await endedWithin(op, pass.foregroundMs))) {
      logStillRunning(context, op);
      break;
    }
    operations.delete(context);
    if (op.kind === 'search') {
      // A search of an earlier boot says nothing of this one: searched again.
      if (op.outcome!.bootId === bootId) caches.set(context, op.outcome!);
    } else {
      pass.state = await recordInstall(context, op.outcome!);
      // Right after installing: what is left, and whether Windows now waits for a reboot.
      const cache = caches.get(context);
      if (cache) cache.searchAgain = true;
    }
  }
}

/** Starts a search when one is due, else an install the policy wants; undefined: nothing to do. */
function nextOperation(pass: UpdatesPass): Operation | undefined {
  const { context, bootId, now, intervalMs, policy, sync } = pass;
  const previous = caches.get(context);
  const due =
    !previous ||
    previous.bootId !== bootId ||
    previous.searchAgain === true ||
    now - previous.at >=
      (previous.error ? Math.min(intervalMs, searchRetrySeconds * 1000) : intervalMs);
  if (due) {
    // A new boot or a periodic search: every update may be tried again; right after an
    // install, what was tried stays tried.
    const attempted =
      previous?.searchAgain && previous.bootId === bootId ? previous.attempted : new Set<string>();
    return startOperation(
      context,
      {
        kind: 'search',
        promise: search(context, bootId, now, previous, attempted),
        startedAt: now,
      },
      sync.wake,
    );
  }
  if (policy !== 'Security' && policy !== 'All') return undefined;
  const attempted = previous.attempted;
  const wanted = updatesFor(policy, previous.available)
    .map((u) => u.kb)
    .filter((kb) => !attempted.has(kb));
  if (wanted.length === 0) return undefined;
  context.stderr(`installing Windows updates (${policy}): ${wanted.join(', ')}\n`);
  for (const kb of wanted) attempted.add(kb);
  return startOperation(
    context,
    { kind: 'install', kbs: wanted, promise: install(context, wanted), startedAt: now },
    sync.wake,
  );
}

/** Logs once per operation that it outlasted the pass and goes on in the background. */
function logStillRunning(context: AgentContext, op: Operation): void {
  if (loggedRunning.get(context) === op) return;
  loggedRunning.set(context, op);
  context.stderr(
    op.kind === 'install'
      ? `Windows updates ${op.kbs.join(', ')} are still installing; the agent goes on meanwhile and records the result when it ends\n`
      : 'the Windows Update search is still running; the agent goes on meanwhile and reports what it finds when it ends\n',
  );
}

/** Writes this boot's report on the Node when it differs from the annotation's. */
async function publishReport(pass: UpdatesPass, node: k8s.V1Node): Promise<void> {
  const { context, bootId, sync, state } = pass;
  const cache = caches.get(context);
  if (!cache || cache.bootId !== bootId) return;
  const report: WindowsUpdateReport = {
    bootId,
    searchedAt: cache.searchedAt,
    available: cache.available,
    installed: state?.installed ?? [],
    failed: state?.failed ?? [],
    rebootPending: cache.rebootPending || (sync.rebootPendingBesides?.() ?? false),
    ...(cache.error ? { error: cache.error } : {}),
  };
  const text = formatWindowsUpdateReport(fitted(report));
  if (node.metadata?.annotations?.[windowsUpdatesAnnotation] !== text) {
    await sync.patchAnnotations({ [windowsUpdatesAnnotation]: text });
  }
}

/** The report within maxReportBytes: titles shortened, then updates dropped from the end. */
function fitted(report: WindowsUpdateReport): WindowsUpdateReport {
  const size = (r: WindowsUpdateReport) => Buffer.byteLength(JSON.stringify(r));
  if (size(report) <= maxReportBytes) return report;
  let r = { ...report, available: reportableUpdates(report.available, 64) };
  while (size(r) > maxReportBytes && r.available.length > 0) {
    r = { ...r, available: r.available.slice(0, -1) };
  }
  return r;
}

function logOnce(context: AgentContext, annotation: string, value: string, message: string): void {
  const logged = loggedBadValues.get(context) ?? new Map<string, string>();
  loggedBadValues.set(context, logged);
  if (logged.get(annotation) === value) return;
  logged.set(annotation, value);
  context.stderr(`${message}\n`);
}

async function rebootPass(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
): Promise<void> {
  const token = node.metadata?.annotations?.[rebootRequestAnnotation];
  if (token === undefined) return;
  if (!rebootTokenPattern.test(token)) {
    logOnce(
      context,
      rebootRequestAnnotation,
      token,
      `Ignoring ${rebootRequestAnnotation} on Node ${config.nodeName}: ${JSON.stringify(token.slice(0, 80))} is not a reboot token (1 to 63 of a-z, 0-9 and "-", starting and ending with a letter or digit); the operator's rollout engine writes it: remove the annotation or set a valid token`,
    );
    return;
  }
  const state = await readState(context.hostOS);
  if (state.windowsUpdates?.rebootTokens.includes(token)) return;
  // A reboot in the middle of an install would stop it half-way: the request waits for it.
  if (installRunning(context)) {
    logOnce(
      context,
      'reboot-waits-for-install',
      token,
      `reboot request ${token} waits for the Windows update install under way\n`.trimEnd(),
    );
    return;
  }
  // Recorded first: if the reboot comes before anything else is written, it is still the
  // only one for this token.
  state.windowsUpdates = mergeWindowsUpdateState(state.windowsUpdates, {
    rebootTokens: [token],
  });
  await writeState(context.hostOS, state);
  context.stderr(`rebooting for reboot request ${token}\n`);
  await context.hostOS.reboot(`winfleet: rollout reboot ${token}`);
}
