/**
 * The host controller's part of remediation (issue 13): the ladder (src/remediation, run by the
 * pool controller) records its requests in WindowsHost status.remediation; here they are read.
 *
 * - Rung Rebootstrap asks for the agent bootstrap over SSH again. It is a level: wanted while
 *   status.bootstrappedAt is before the request and no bootstrap failed after it (a failure is
 *   the ladder's to judge: it fails the rung, and the next one starts), so a restarted operator
 *   neither forgets it nor runs it twice for the same request.
 * - A joined host under remediation (a ladder running or failed) or marked
 *   winfleet.io/skip-remediation is not bootstrapped again by the join's own NotReady timer:
 *   one rung at a time, and "left alone" means left alone. The administrator's
 *   winfleet.io/rejoin still is acted on.
 * - RemediationFailed shows as the host's Degraded condition; so does the rollout setting the
 *   host aside (HostSetAside).
 */
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import { rejoinAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { skipRemediationAnnotation } from '../../api/windows-node-pool.ts';
import type { HostStatus } from '../../fleet/host-status.ts';
import { timeOf } from '../../kube/api-time.ts';

/** The pending re-bootstrap request's time (RFC 3339), if the ladder wants one now. */
export function rebootstrapRequest(host: WindowsHost): string | undefined {
  const current = host.status?.remediation?.current;
  if (current?.rung !== 'Rebootstrap' || current.held || !current.rebootstrap) return undefined;
  if (host.metadata.annotations?.[skipRemediationAnnotation] !== undefined) return undefined;
  const requestedAt = current.rebootstrap.requestedAt;
  const requested = timeOf(requestedAt);
  if (requested === undefined) return undefined;
  const bootstrapped = timeOf(host.status?.bootstrappedAt);
  if (bootstrapped !== undefined && bootstrapped >= requested) return undefined;
  const failed = timeOf(host.status?.lastError?.time);
  if (failed !== undefined && failed >= requested) return undefined;
  return requestedAt;
}

/**
 * A joined host whose NotReady Node is remediation's to repair, not the join timer's. The
 * administrator's winfleet.io/rejoin (a rebuilt host) is an explicit request: the join acts.
 * @package
 */
export function leftToRemediation(host: WindowsHost): boolean {
  if (!host.status?.servicesVersion) return false;
  if (host.metadata.annotations?.[rejoinAnnotation] !== undefined) return false;
  const remediation = host.status.remediation;
  return (
    remediation?.current !== undefined ||
    remediation?.failed !== undefined ||
    host.metadata.annotations?.[skipRemediationAnnotation] !== undefined
  );
}

/** Degraded=True RemediationFailed while the ladder has given up on the host. */
export function reportRemediationFailure(host: WindowsHost, hs: HostStatus): void {
  const failed = host.status?.remediation?.failed;
  if (!failed) return;
  hs.set(ConditionType.Degraded, 'True', ConditionReason.RemediationFailed, failed.message);
}

/**
 * Degraded=True HostSetAside while the pool's rollout has set the host aside (its change
 * stopped, or its pending reboot survived winfleet's reboot: src/rollout/set-aside.ts), unless
 * remediation's failure already says worse.
 * @package
 */
export function reportSetAside(host: WindowsHost, hs: HostStatus): void {
  const aside = host.status?.rollout?.setAside;
  if (host.status?.remediation?.failed) return;
  if (aside) hs.set(ConditionType.Degraded, 'True', ConditionReason.HostSetAside, aside.message);
  else if (hs.condition(ConditionType.Degraded)?.reason === ConditionReason.HostSetAside)
    hs.set(ConditionType.Degraded, 'False', ConditionReason.AsExpected, '');
}

/** What in a host's status update the host controller acts on for remediation. */
export function remediationRequestKey(host: WindowsHost): string {
  const r = host.status?.remediation;
  return JSON.stringify([
    r?.current?.rung,
    r?.current?.rebootstrap,
    r?.current?.held,
    r?.failed?.since,
  ]);
}
