/**
 * What a host still has to go through: the disruptive changes between what its pool wants
 * (the rollout target, the same for every host of the pool) and what the host reports. Every
 * kind rolls through the same engine and the same budget; a host with several pending gets
 * them all in one cordon/drain/reboot.
 */
import type { PatchPolicy } from '../api/windows-node-pool.ts';
import { WinfleetError } from '../errors/catalog.ts';

export type ChangeKind =
  /** The services version (payload, kubelet included) differs from the target. */
  | 'services'
  /** Windows updates of the pool's patch policy are available. */
  | 'patches'
  /** A reboot was asked for (pool spec.rebootRequestedAt or the host's annotation). */
  | 'reboot-requested'
  /** Windows itself wants a reboot (a patch, a rename). */
  | 'reboot-pending'
  /** Remediation's reboot rung (src/remediation) asks for a repair reboot. */
  | 'repair';

/** What a pool wants on each of its hosts. */
export interface RolloutTarget {
  /** The services version to run; undefined leaves the services as they are (a refused payload). */
  servicesVersion?: string;
  patchPolicy: PatchPolicy;
  /** The reboot request in force (the later of the pool's and the host's), RFC 3339. */
  rebootRequestedAt?: string;
  /** Remediation's repair reboot request for this host, RFC 3339 (served like a reboot request). */
  repairRequestedAt?: string;
}

/** A Windows update the agent found, as the Windows Update Agent categorises it. */
export interface AvailableUpdate {
  /** "KB5040437". */
  kb: string;
  /** WUA category names, e.g. "Security Updates", "Critical Updates", "Updates". */
  categories: readonly string[];
}

/** What the host reports, as far as its pending changes go. */
export interface HostFacts {
  /** The services version its agent applied (the Node's winfleet.io/services-version). */
  servicesVersion?: string;
  /** Windows updates the agent found and has not installed. */
  availableUpdates: readonly AvailableUpdate[];
  /**
   * The agent has reported Windows Update in the Node's current boot (false: no report yet since
   * the last boot, so availableUpdates says nothing). Undefined counts as reported.
   */
  updatesReported?: boolean;
  /**
   * Windows reports a reboot pending (any of the three registry keys) — in the current boot:
   * the caller believes an agent report only when it was made under the Node's current bootID,
   * so a report from before a reboot never asks for another.
   */
  rebootPending: boolean;
  /** When winfleet last rebooted the host for a change (status.rollout.lastRebootAt). */
  lastRebootAt?: string;
  /** The WindowsHost's creationTimestamp: requests older than the host do not reboot it. */
  createdAt?: string;
}

/** The WUA categories the Security policy installs. */
export const securityCategories: readonly string[] = ['Security Updates', 'Critical Updates'];

/** The updates `policy` installs: none, the Security and Critical ones, or all. */
export function updatesFor(
  policy: PatchPolicy,
  updates: readonly AvailableUpdate[],
): AvailableUpdate[] {
  if (policy === 'None') return [];
  if (policy === 'All') return [...updates];
  return updates.filter((u) => u.categories.some((c) => securityCategories.includes(c)));
}

const rfc3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses an RFC 3339 time as Kubernetes writes and reads them ("2025-06-07T01:00:00Z",
 * "2025-06-07T03:00:00+02:00"), refusing impossible dates (Feb 30), leap seconds, lowercase
 * separators and anything else. Returns milliseconds since the epoch; throws a WinfleetError
 * naming `field`.
 */
export function parseApiTime(value: unknown, field: string): number {
  const match = typeof value === 'string' ? rfc3339.exec(value) : null;
  const refuse = () =>
    new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: ${JSON.stringify(value) ?? String(value)} is not an RFC 3339 time; write e.g. "2025-06-07T01:00:00Z"`,
    );
  if (!match) throw refuse();
  const [, y, mo, d, h, mi, s, fraction, zone, sign, oh, om] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const offsetH = Number(oh ?? 0);
  const offsetM = Number(om ?? 0);
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    offsetH > 23 ||
    offsetM > 59
  ) {
    throw refuse();
  }
  const ms = Math.floor(Number(`0${fraction ?? ''}`) * 1000);
  const offset = zone === 'Z' ? 0 : (sign === '-' ? -1 : 1) * (offsetH * 60 + offsetM) * 60_000;
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, ms);
  return utc.getTime() - offset;
}

/**
 * The reboot request in force for a host: the later of its pool's spec.rebootRequestedAt and
 * its own winfleet.io/reboot-requested annotation. A bad annotation is ignored and reported
 * (the pool's value was checked with the pool spec).
 */
export function rebootRequestFor(
  poolRequestedAt: string | null | undefined,
  hostAnnotation: string | undefined,
  annotationField: string,
): { requestedAt?: string; problems: string[] } {
  const candidates: { text: string; ms: number }[] = [];
  const problems: string[] = [];
  if (poolRequestedAt) {
    candidates.push({
      text: poolRequestedAt,
      ms: parseApiTime(poolRequestedAt, 'spec.rebootRequestedAt'),
    });
  }
  if (hostAnnotation !== undefined) {
    try {
      candidates.push({ text: hostAnnotation, ms: parseApiTime(hostAnnotation, annotationField) });
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  const latest = candidates.sort((a, b) => b.ms - a.ms)[0];
  return latest ? { requestedAt: latest.text, problems } : { problems };
}

/**
 * True when a reboot request at `requestedAt` still has to reboot the host: the time has come
 * (a time in the future schedules the reboot) and winfleet has not rebooted the host since,
 * nor was the host created after it. A request that was served stays served, however often it
 * is read: the reboot is recorded as lastRebootAt, which is never before the request.
 */
export function rebootRequestPending(
  requestedAt: string | undefined,
  facts: Pick<HostFacts, 'lastRebootAt' | 'createdAt'>,
  now: Date,
): boolean {
  if (!requestedAt) return false;
  const requested = parseApiTime(requestedAt, 'reboot request');
  if (requested > now.getTime()) return false;
  const served = [facts.lastRebootAt, facts.createdAt]
    .filter((t): t is string => t !== undefined)
    .map((t) => parseApiTime(t, 'host time'));
  return served.every((t) => t < requested);
}

/**
 * The changes a host has pending against `target`, in a fixed order. Empty: the host is
 * up to date.
 */
export function pendingChanges(target: RolloutTarget, facts: HostFacts, now: Date): ChangeKind[] {
  const changes: ChangeKind[] = [];
  if (target.servicesVersion !== undefined && facts.servicesVersion !== target.servicesVersion) {
    changes.push('services');
  }
  if (updatesFor(target.patchPolicy, facts.availableUpdates).length > 0) changes.push('patches');
  if (rebootRequestPending(target.rebootRequestedAt, facts, now)) changes.push('reboot-requested');
  if (facts.rebootPending) changes.push('reboot-pending');
  if (rebootRequestPending(target.repairRequestedAt, facts, now)) changes.push('repair');
  return changes;
}

/** Whether any of `changes` needs a reboot by itself (patches may add one once installed). */
export function changesNeedReboot(changes: readonly ChangeKind[]): boolean {
  return (
    changes.includes('reboot-requested') ||
    changes.includes('reboot-pending') ||
    changes.includes('repair')
  );
}
