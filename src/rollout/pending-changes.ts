/**
 * What a host still has to go through: the disruptive changes between what its pool wants
 * (the rollout target, the same for every host of the pool) and what the host reports. Every
 * kind rolls through the same engine and the same budget; a host with several pending gets
 * them all in one cordon/drain/reboot.
 */

import type { AvailableUpdate, ChangeKind, RolloutTarget } from '../api/rollout-status.ts';
import type { PatchPolicy } from '../api/windows-node-pool.ts';
import { parseApiTime } from '../kube/api-time.ts';

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
  /** The host was retired (status.rollout.retired): drained and left cordoned. */
  retired?: boolean;
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

/**
 * The reboot request in force for a host: the later of its pool's spec.rebootRequestedAt and
 * its own winfleet.io/reboot-requested annotation. A bad annotation is ignored and reported
 * (the pool's value was checked with the pool spec).
 * @package
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
 * @package
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
 * @package
 */
export function pendingChanges(target: RolloutTarget, facts: HostFacts, now: Date): ChangeKind[] {
  // A pool being replaced only retires its hosts: nothing else is worth a disruption now.
  if (target.retire) return facts.retired ? [] : ['retire'];
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
