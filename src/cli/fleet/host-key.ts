/**
 * `hosts trust-key`: the fingerprint a user accepts for a host rebuilt on purpose, checked
 * strictly, and the fingerprint the host presented, read from what the operator recorded when
 * the key did not match its pin (a HostKeyChanged condition, whose message carries
 * WF_SSH_HOST_KEY_CHANGED's "Host key of A:P is SHA256:…, but SHA256:… is pinned").
 */
import { createHash } from 'node:crypto';
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
  const pinned = host.spec.hostKey ?? host.status?.hostKeyFingerprint;
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

/** The public key types OpenSSH prints in .pub, known_hosts and ssh-keyscan lines. */
const keyTypes = new Set([
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);

/**
 * The SHA-256 fingerprint of the one host key in `text`: a public key file
 * (`C:\ProgramData\ssh\ssh_host_ed25519_key.pub`: "TYPE BASE64 [comment]"), a known_hosts line
 * ("HOSTS TYPE BASE64") or `ssh-keyscan -t ed25519` output. Read strictly: the base64 must
 * decode to an SSH public key blob of the type the line names; markers (@cert-authority,
 * @revoked), a certificate, no key, or two different keys (ssh-keyscan without -t prints one
 * per type) are refused with the fix. Comment lines (#) and blank lines are skipped.
 */
export function hostKeyFingerprintFromText(
  text: string,
  source: string,
): { fingerprint: string } | { problem: string } {
  const found = new Set<string>();
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${source} line ${index + 1}`;
    if (line.startsWith('@'))
      return {
        problem: `${where} has a ${line.split(/\s/)[0]} marker; give the host's own key, not a CA or a revoked key`,
      };
    const fields = line.split(/\s+/);
    const at = fields.findIndex((f) => keyTypes.has(f));
    if (at < 0 || at > 1)
      return {
        problem: `${where} is not a public key line ("ssh-ed25519 AAAA…", as ${'C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub'} holds, or a known_hosts / ssh-keyscan line)${fields[0]?.includes('-cert-') ? '; a certificate is not a host key' : ''}`,
      };
    const type = fields[at]!;
    const data = fields[at + 1] ?? '';
    const blob = /^[A-Za-z0-9+/]+={0,2}$/.test(data) ? Buffer.from(data, 'base64') : undefined;
    const length = blob && blob.length >= 4 ? blob.readUInt32BE(0) : -1;
    if (!blob || length !== type.length || blob.subarray(4, 4 + length).toString() !== type)
      return { problem: `${where}: the ${type} key's base64 is not an ${type} public key` };
    found.add(`SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`);
  }
  if (found.size === 0)
    return {
      problem: `${source} holds no public key; give the host's key file (C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub) or one ssh-keyscan -t ed25519 line`,
    };
  if (found.size > 1)
    return {
      problem: `${source} holds ${found.size} different keys (${[...found].join(', ')}); keep the one of the key type the host's sshd presents (ssh-keyscan -t ed25519), or pass --host-key with its fingerprint`,
    };
  return { fingerprint: [...found][0]! };
}
