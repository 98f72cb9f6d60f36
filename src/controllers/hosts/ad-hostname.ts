/**
 * The hostname a host of an Active Directory pool joins with. Active Directory names a computer
 * account by the host's NetBIOS name, at most 15 characters (Microsoft, "Naming conventions in
 * Active Directory for computers, domains, sites, and OUs": "Minimum name length: 1 character;
 * maximum name length: 15 characters"); a longer DNS hostname is silently cut to 15 for it, so
 * two hosts sharing their first 15 characters would fight over one account. The Anthos seed says
 * the same: "Active Directory 网域加入要求虚拟机主机名的长度不超过 15 个字符". The node name
 * follows the hostname, so it is also an RFC 1123 label.
 *
 * The rule (planAdHostname):
 * - spec.nodeName given: it is the hostname; one that is not a valid 15-character name is
 *   refused before anything changes, quoting the limit;
 * - otherwise the host's hostname when valid;
 * - otherwise a generated name (generatedHostname): the pool's name cut to 6 characters, a
 *   hyphen and 8 base-36 digits of SHA-256 of the WindowsHost's uid. Deterministic (the same
 *   host gets the same name on every pass and after an operator restart), distinct per host.
 */
import { createHash } from 'node:crypto';

/** The NetBIOS computer name limit Active Directory joins need. */
export const netbiosNameMaxLength = 15;

/** Why `name` cannot be an AD host's hostname; undefined when it can. */
export function adHostnameProblem(name: string): string | undefined {
  if (name.length > netbiosNameMaxLength) {
    return `"${name}" has ${name.length} characters; a host joined to Active Directory needs a hostname of at most ${netbiosNameMaxLength} characters (its NetBIOS name)`;
  }
  if (!/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$/.test(name) || /^[0-9]+$/.test(name)) {
    return `"${name}" is not a valid hostname; use 1 to ${netbiosNameMaxLength} letters, digits and hyphens, not starting or ending with a hyphen and not all digits (RFC 1123)`;
  }
  return undefined;
}

/**
 * The generated hostname of the host with WindowsHost uid `uid` in pool `pool`: at most 15
 * characters, lower case.
 *
 * @example generatedHostname('web', '0b5c…') // "web-k3x9q0za"
 * @package
 */
export function generatedHostname(pool: string, uid: string): string {
  // 8 base-36 digits: 41 bits, so even 10,000 hosts of one pool share a name with a chance of
  // about 2 in 100,000 (a clash is refused as NodeNameTaken, never merged).
  const hash = BigInt(`0x${createHash('sha256').update(uid).digest('hex').slice(0, 16)}`)
    .toString(36)
    .padStart(8, '0')
    .slice(-8);
  const prefix = pool
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, netbiosNameMaxLength - hash.length - 1)
    .replace(/^-+|-+$/g, '');
  return `${prefix || 'win'}-${hash}`;
}

/** @package */
export type AdHostnamePlan =
  /** The host keeps its hostname (it may differ in case only). */
  | { action: 'keep'; hostname: string }
  /** The host is renamed to `hostname` (and restarted). */
  | { action: 'rename'; hostname: string; reason: string }
  /** Nothing may change: `message` says why and how to fix it. */
  | { action: 'refuse'; message: string };

/** What the host's hostname must become before it joins the domain (see the header). */
export function planAdHostname(input: {
  /** The WindowsHost's spec.nodeName, if any. */
  nodeName?: string;
  /** The host's current hostname. */
  hostname: string;
  pool: string;
  uid: string;
}): AdHostnamePlan {
  const { nodeName, hostname } = input;
  if (nodeName !== undefined) {
    const problem = adHostnameProblem(nodeName);
    if (problem) {
      return {
        action: 'refuse',
        message: `spec.nodeName ${problem}; in pool ${input.pool} (spec.activeDirectory) the node name is the hostname, so give spec.nodeName of at most ${netbiosNameMaxLength} characters, or leave it out for a generated one`,
      };
    }
    return nodeName.toLowerCase() === hostname.toLowerCase()
      ? { action: 'keep', hostname }
      : {
          action: 'rename',
          hostname: nodeName,
          reason: `spec.nodeName is ${nodeName}`,
        };
  }
  const problem = adHostnameProblem(hostname);
  if (!problem) return { action: 'keep', hostname };
  return {
    action: 'rename',
    hostname: generatedHostname(input.pool, input.uid),
    reason: problem,
  };
}
