/**
 * What a failed pass on a WindowsHost tells the user: each catalog error a join (or the
 * connect of a removal) can raise has its own reason, set on the Ready condition — and on
 * Reachable and Degraded where it belongs there — with the error's message, which names the
 * field and the fix, and a Warning Event with the same reason and message, so the recorder
 * aggregates a failure that repeats into one Event whose count goes up.
 */
import { ConditionType, JoinFailureReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { type ErrorCode, errorCode } from '../../errors/catalog.ts';
import type { HostStatus } from '../../fleet/host-status.ts';

interface Failure {
  reason: JoinFailureReason;
  /** Failed connecting: Reachable goes False with the reason. */
  reachable?: false;
  /** Only the user can fix it: Degraded goes True with the reason. */
  degraded?: true;
}

/** The catalog errors a join or a removal can raise. Any other code is InternalError. */
const failures: Partial<Record<ErrorCode, Failure>> = {
  WF_SSH_SECRET_MISSING: { reason: JoinFailureReason.SecretNotFound, reachable: false },
  WF_SSH_KEY_MISSING: { reason: JoinFailureReason.SecretKeyMissing, reachable: false },
  WF_SSH_KEY_INVALID: { reason: JoinFailureReason.KeyInvalid, reachable: false },
  WF_SSH_AUTH_REFUSED: { reason: JoinFailureReason.AuthRefused, reachable: false, degraded: true },
  WF_SSH_HOST_KEY_CHANGED: {
    reason: JoinFailureReason.HostKeyChanged,
    reachable: false,
    degraded: true,
  },
  WF_SSH_UNREACHABLE: { reason: JoinFailureReason.Unreachable, reachable: false },
  WF_SSH_DROPPED: { reason: JoinFailureReason.ConnectionDropped },
  WF_SSH_TIMEOUT: { reason: JoinFailureReason.CommandTimedOut },
  WF_SSH_FILE_COPY: { reason: JoinFailureReason.FileCopyFailed },
  WF_REMOTE_COMMAND_FAILED: { reason: JoinFailureReason.StepFailed },
  WF_HOST_UNSUPPORTED: { reason: JoinFailureReason.UnsupportedWindows, degraded: true },
  WF_HOST_DISK_FULL: { reason: JoinFailureReason.DiskFull, degraded: true },
  WF_HOST_CONTAINERS_MISSING: {
    reason: JoinFailureReason.ContainersFeatureMissing,
    degraded: true,
  },
  WF_HOST_AD_REFUSED: { reason: JoinFailureReason.ActiveDirectoryRefused, degraded: true },
  WF_HOST_DOMAIN_JOIN_FAILED: { reason: JoinFailureReason.DomainJoinFailed, degraded: true },
  WF_HOST_AD_SECRET_NOT_OPTED_IN: {
    reason: JoinFailureReason.DomainCredentialsNotOptedIn,
    degraded: true,
  },
  WF_HOST_KEY_NOT_PINNED: { reason: JoinFailureReason.HostKeyNotPinned, degraded: true },
  WF_HOST_NODE_NAME_CHANGED: { reason: JoinFailureReason.NodeNameChanged, degraded: true },
  WF_HOST_NODE_NAME_TAKEN: { reason: JoinFailureReason.NodeNameTaken, degraded: true },
  WF_HOST_NODE_NOT_OWNED: { reason: JoinFailureReason.NodeNotOwned, degraded: true },
  WF_HOST_REBUILT: { reason: JoinFailureReason.NodeExistsRebuilt },
  WF_PAYLOAD_INVALID: { reason: JoinFailureReason.PayloadInvalid },
  WF_MANIFEST_INVALID: { reason: JoinFailureReason.PayloadInvalid },
  WF_PAYLOAD_DOWNLOAD: { reason: JoinFailureReason.PayloadUnavailable },
  WF_PAYLOAD_REGISTRY_UNAVAILABLE: { reason: JoinFailureReason.PayloadRegistryUnavailable },
  WF_MANIFEST_VERSION_REUSED: { reason: JoinFailureReason.ManifestVersionReused },
  WF_TIMEOUT: { reason: JoinFailureReason.TimedOut },
};

/** The failure an error stands for; errors that are not winfleet's come from the API server. */
export function joinFailure(error: unknown): Failure {
  const code = errorCode(error);
  if (code === undefined) return { reason: JoinFailureReason.ApiError };
  return failures[code] ?? { reason: JoinFailureReason.InternalError };
}

/** Errors already reported in the pass that raised them (connect reports, then the join). */
const reported = new WeakSet<object>();

/**
 * Sets the conditions for `error` on `hs` and records the Warning Event, once per error
 * object however many layers report it. The Ready condition is set by the join only
 * (`ready`): a removal says Draining/deconfiguring there itself.
 * @package
 */
export function reportFailure(
  events: EventRecorder,
  host: WindowsHost,
  hs: HostStatus,
  error: unknown,
  options: { ready: boolean; message?: string },
): void {
  const { reason, reachable, degraded } = joinFailure(error);
  const message = options.message ?? messageOf(error);
  if (reachable === false) hs.set(ConditionType.Reachable, 'False', reason, message);
  if (degraded) hs.set(ConditionType.Degraded, 'True', reason, message);
  if (options.ready) hs.set(ConditionType.Ready, 'False', reason, message);
  if (typeof error !== 'object' || error === null || reported.has(error)) return;
  reported.add(error);
  events.record(host, 'Warning', reason, message);
}

function messageOf(error: unknown): string {
  if (errorCode(error) === undefined) {
    return `A request to the API server failed: ${(error as Error)?.message ?? String(error)}; winfleet retries`;
  }
  return (error as Error).message;
}
