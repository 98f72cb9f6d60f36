/**
 * Reaching a host for the controller: opens the session through hostaccess and reports the
 * outcome on the host — the Reachable condition, a host key pinned on first contact (with an
 * Event), and a failure with its own reason and a Warning Event (join-failure.ts). Joining,
 * upgrading and removal all connect through here, so they report the same way.
 */
import { ConditionReason, ConditionType, EventReason, JoinStep } from '../../api/reasons.ts';
import { trustHostKeyAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { type HostStatus, removeHostAnnotation, writeHostStatus } from '../../fleet/host-status.ts';
import { openRemoteHost } from '../../hostaccess/host-session.ts';
import type { RemoteHost } from '../../hostaccess/remote-host.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { reportFailure } from './join-failure.ts';

export interface ConnectOptions {
  /** The step a failure is recorded under (default: connect). */
  step?: JoinStep;
  /** Added to the failure message: what the user can do in this situation. */
  hint?: string;
}

/**
 * Connects, pinning the host key on first contact (or when the user trusts a new one). The
 * trust annotation is removed only here, after a connection made with the key it names, and
 * only once that key is on record as pinned.
 * @package
 */
export async function connectHost(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  options: ConnectOptions = {},
): Promise<RemoteHost> {
  let remote: RemoteHost;
  try {
    remote = await openRemoteHost(deps.kc, deps.config(), host);
  } catch (error) {
    const message = `${(error as Error).message}${options.hint ? `; ${options.hint}` : ''}`;
    reportFailure(deps.events, host, hs, error, { ready: false, message });
    hs.error(options.step ?? JoinStep.Connect, message);
    throw error;
  }
  const fingerprint = remote.session.fingerprint;
  if (hs.status.hostKeyFingerprint !== fingerprint) {
    deps.events.record(
      host,
      'Normal',
      EventReason.HostKeyPinned,
      `Pinned SSH host key ${fingerprint} of ${host.spec.address}`,
    );
    hs.status.hostKeyFingerprint = fingerprint;
  }
  hs.set(
    ConditionType.Reachable,
    'True',
    ConditionReason.Connected,
    `SSH to ${host.spec.username}@${host.spec.address}:${host.spec.port ?? 22}`,
  );
  const trusted = host.metadata.annotations?.[trustHostKeyAnnotation];
  if (trusted === fingerprint) {
    try {
      await writeHostStatus(deps.kc, host, hs.status);
      await removeHostAnnotation(deps.kc, host, trustHostKeyAnnotation, trusted);
    } catch (error) {
      remote.close();
      throw error;
    }
  }
  return remote;
}

/** Connects as connectHost does, runs `work` with the host, and always closes the session. */
export async function withHost<T>(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  work: (remote: RemoteHost) => Promise<T>,
  options: ConnectOptions = {},
): Promise<T> {
  const remote = await connectHost(deps, host, hs, options);
  try {
    return await work(remote);
  } finally {
    remote.close();
  }
}
