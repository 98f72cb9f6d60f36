/**
 * `hosts trust-key`: the fingerprint a user accepts for a host rebuilt on purpose, checked
 * strictly, and the fingerprint the host presented, read from what the operator recorded when
 * the key did not match its pin (a HostKeyChanged condition, whose message carries
 * WF_SSH_HOST_KEY_CHANGED's "Host key of A:P is SHA256:…, but SHA256:… is pinned").
 */
import { ConditionType, JoinFailureReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';

/** OpenSSH's SHA-256 fingerprint: "SHA256:" and 43 characters of unpadded base64. */
export const fingerprintPattern = /^SHA256:[A-Za-z0-9+/]{43}$/;

/** The fingerprint argument, or why it is not one (undefined when fine). */
export function fingerprintProblem(value: string): string | undefined {
  if (fingerprintPattern.test(value)) return undefined;
  const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  return `FINGERPRINT ${shown} is not an OpenSSH SHA-256 fingerprint: "SHA256:" and 43 base64 characters, as \`ssh-keygen -lf\` prints (e.g. SHA256:${'A'.repeat(43)}); run without FINGERPRINT to see the one the host presented`;
}

const presentedIn = /\bis (SHA256:[A-Za-z0-9+/]{43}), but (SHA256:[A-Za-z0-9+/]{43}) is pinned\b/;

/** What the operator recorded about the host's key: pinned, and presented on a mismatch. */
export function hostKeyState(host: WindowsHost): {
  pinned?: string;
  presented?: string;
  /** The condition that recorded the mismatch, for the user. */
  message?: string;
} {
  const pinned = host.status?.hostKeyFingerprint;
  for (const type of [ConditionType.Degraded, ConditionType.Reachable, ConditionType.Ready]) {
    const c = host.status?.conditions?.find(
      (x) => x.type === type && x.reason === JoinFailureReason.HostKeyChanged,
    );
    const match = c ? presentedIn.exec(c.message) : null;
    if (c && match)
      return { ...(pinned ? { pinned } : {}), presented: match[1], message: c.message };
  }
  return pinned ? { pinned } : {};
}
