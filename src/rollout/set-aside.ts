/**
 * Setting a host aside (security review 3, item 5): one host must not freeze or monopolise its
 * pool. A host is set aside — the rollout goes round it and starts no change on it — when
 * - its change stopped at a step (a drain, apply, reboot or Ready past its timeout): the change
 *   ends there and its node is uncordoned, instead of the whole pool stopping behind it. At most
 *   the pool's maxUnavailable hosts are set aside this way at once; a failure beyond that stops
 *   the pool as before (a change that fails on that many hosts is a bad change, not one bad
 *   host), so a bad change reaches at most 2 × maxUnavailable hosts;
 * - Windows still says a reboot is pending (the agent's report, which the node writes itself)
 *   right after the change winfleet made for that pending reboot rebooted it: a claim that
 *   survives the reboot made for it is not served again. Not bounded: such a host stays in
 *   service (Ready, uncordoned), it only gets no further change.
 * A set-aside host keeps counting against maxUnavailable by what it is (NotReady or not), like
 * any host not in a change. A host set aside after a failure whose Node is then Ready in another
 * boot (it came back from a reboot that took too long, or was rebooted by hand) is cleared by
 * itself, as a stopped change went on by itself once its host was back; it then waits for its
 * turn behind every other host (it changed last). An administrator clears it with a new value of
 * winfleet.io/retry-rollout on the WindowsHost (the message prints the command); it then starts
 * again in turn, the least recently changed first, and a claim that survives the next reboot
 * sets it aside again.
 */

import type { ChangeKind, HostRolloutStatus, HostSetAside } from '../api/rollout-status.ts';
import { retryRolloutAnnotation } from '../api/windows-node-pool.ts';
import type { ObservedNode } from './observed-node.ts';

/** The pending reboot the host claims survived the reboot winfleet made for it. */
export function rebootPendingPersists(
  status: HostRolloutStatus,
  pending: readonly ChangeKind[],
): boolean {
  return (
    status.current === undefined &&
    pending.includes('reboot-pending') &&
    status.lastChange?.servedRebootPending === true
  );
}

/** A host set aside after a failure whose Node is Ready in another boot: it came back. */
export function backInAnotherBoot(aside: HostSetAside, node: ObservedNode | undefined): boolean {
  return (
    aside.cause === 'ChangeFailed' &&
    node?.ready === true &&
    node.bootId !== undefined &&
    node.bootId !== aside.bootId
  );
}

/**
 * Whether the host is set aside now, as the planner sees it: set aside before (and not back in
 * another boot), or its pending reboot persists; a winfleet.io/retry-rollout value not acted on
 * yet clears both.
 * @package
 */
export function isSetAside(
  status: HostRolloutStatus,
  retryAnnotation: string | undefined,
  pending: readonly ChangeKind[],
  node?: ObservedNode,
): boolean {
  if (retryAnnotation !== undefined && retryAnnotation !== status.retryHandled) return false;
  if (status.setAside) return !backInAnotherBoot(status.setAside, node);
  return rebootPendingPersists(status, pending);
}

/** The command that clears a host's set-aside. */
export function clearCommand(host: string): string {
  const [namespace, name] = host.split('/');
  return `kubectl annotate --overwrite windowshost -n ${namespace} ${name} ${retryRolloutAnnotation}=$(date +%s)`;
}

/** The set-aside message of a change that stopped: the failure's, and what follows. */
export function changeFailedMessage(host: string, failure: string): string {
  return `${failure}. ${host} is set aside: its change ended, its node is uncordoned, and the pool's rollout goes on without it; once fixed, clear it with: ${clearCommand(host)}`;
}

/** The set-aside message of a reboot-pending claim that survived winfleet's reboot. */
export function rebootPendingMessage(host: string, node: string | undefined): string {
  return `${host}: Windows on Node ${node ?? '(none)'} still reports a reboot pending after the reboot winfleet made for it, so it is set aside: no further change starts on it and the pool's rollout goes on without it. Check the host's pending reboot (CBS RebootPending, WU RebootRequired) and its agent's report; to let winfleet reboot it again, clear it with: ${clearCommand(host)}`;
}
