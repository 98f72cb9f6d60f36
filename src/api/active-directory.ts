/**
 * The checks on a pool's spec.activeDirectory (issue 16, section 4): the domain's DNS name, the
 * OU's distinguished name and the credentials Secret's name. Each problem names the field and
 * the fix. The values later enter a PowerShell script only as quoted literals
 * (src/hostaccess/domain-scripts.ts); these checks are stricter still, so that a value the
 * script would pass to Add-Computer is one Add-Computer can take.
 */

import { WinfleetError } from '../errors/catalog.ts';
import type { ActiveDirectorySpec } from './windows-node-pool.ts';

/** The longest domain DNS name Active Directory takes (DNS: 255 octets less the root). */
export const domainNameMaxLength = 253;
/** The longest OU distinguished name the CRD takes. */
export const organizationalUnitMaxLength = 1024;

/** One DNS label: letters, digits and hyphens, 1-63, not starting or ending with a hyphen. */
const dnsLabel = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** An RFC 1123 DNS subdomain, as Kubernetes object names (a Secret's) are. */
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const example =
  'e.g. {domain: corp.example.com, organizationalUnit: "OU=Kubernetes,DC=corp,DC=example,DC=com", credentialsSecretRef: {name: ad-join}}';

/** Problems with a domain DNS name ("corp.example.com"); [] when it is one. */
export function domainNameProblems(domain: unknown, field: string): string[] {
  if (typeof domain !== 'string' || domain === '') {
    return [`${field}: missing; give the domain's DNS name, e.g. corp.example.com`];
  }
  const labels = domain.split('.');
  if (
    domain.length > domainNameMaxLength ||
    labels.length < 2 ||
    !labels.every((l) => dnsLabel.test(l)) ||
    /^[0-9]+$/.test(labels.at(-1)!)
  ) {
    return [
      `${field}: ${JSON.stringify(domain)} is not a domain DNS name; give at least two dot-separated labels of letters, digits and hyphens (at most ${domainNameMaxLength} characters), e.g. corp.example.com`,
    ];
  }
  return [];
}

/**
 * Problems with an OU's distinguished name: comma-separated OU=… relative names (any number,
 * at least one), then the domain's DC=… components, in order. Characters that need escaping
 * in a DN (RFC 4514: , + " \ < > ; = and leading # or space) are refused rather than escaped,
 * as are control characters; the DC components must be the domain's, or Add-Computer fails on
 * the host with "The specified domain either does not exist or could not be contacted".
 * @package
 */
export function organizationalUnitProblems(ou: unknown, domain: string, field: string): string[] {
  if (ou === undefined) return [];
  if (typeof ou !== 'string' || ou === '') {
    return [
      `${field}: must be a distinguished name such as OU=Kubernetes,DC=corp,DC=example,DC=com, or absent`,
    ];
  }
  if (ou.length > organizationalUnitMaxLength) {
    return [
      `${field}: is longer than ${organizationalUnitMaxLength} characters; use a shorter OU path`,
    ];
  }
  if (/\p{Cc}/u.test(ou)) {
    return [`${field}: contains a control character (a newline, a tab); write the OU on one line`];
  }
  const parts = ou.split(',').map((p) => p.trim());
  const ous: string[] = [];
  const dcs: string[] = [];
  for (const part of parts) {
    const match = /^(OU|DC)=(.+)$/i.exec(part);
    const value = match?.[2];
    if (
      !match ||
      value === undefined ||
      /[=+"\\<>;#\p{Cc}]/u.test(value) ||
      value !== value.trim()
    ) {
      return [
        `${field}: ${JSON.stringify(part)} is not an OU=<name> or DC=<label> part; write the OU as comma-separated OU=<name> parts then the domain's DC=<label> parts, without the characters = + " \\ < > ; # or control characters, e.g. OU=Kubernetes,DC=corp,DC=example,DC=com`,
      ];
    }
    if (match[1]!.toUpperCase() === 'OU') {
      if (dcs.length > 0) {
        return [
          `${field}: OU=${value} comes after a DC= part; put every OU= part first, then the DC= parts`,
        ];
      }
      ous.push(value);
    } else dcs.push(value);
  }
  if (ous.length === 0) {
    return [
      `${field}: names no OU= part; give the OU, e.g. OU=Kubernetes,${dcsOf(domain)}, or leave organizationalUnit out for the default Computers container`,
    ];
  }
  if (dcs.join('.').toLowerCase() !== domain.toLowerCase()) {
    return [
      `${field}: its DC= parts (${dcs.join('.') || 'none'}) are not the domain ${domain}; end it with ${dcsOf(domain)}`,
    ];
  }
  return [];
}

function dcsOf(domain: string): string {
  return domain
    .split('.')
    .map((l) => `DC=${l}`)
    .join(',');
}

/**
 * Every problem with spec.activeDirectory (absent is fine: no domain join), each naming its
 * field ("spec.activeDirectory.domain: …") and the fix.
 */
export function activeDirectoryProblems(value: unknown, field = 'spec.activeDirectory'): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [`${field}: must be an object, ${example}`];
  }
  const spec = value as Partial<ActiveDirectorySpec> & Record<string, unknown>;
  const problems: string[] = [];
  const known = ['domain', 'organizationalUnit', 'credentialsSecretRef'];
  for (const key of Object.keys(spec)) {
    if (!known.includes(key)) {
      problems.push(`${field}.${key}: unknown field; use ${known.join(', ')}`);
    }
  }
  const domainIssues = domainNameProblems(spec.domain, `${field}.domain`);
  problems.push(...domainIssues);
  if (domainIssues.length === 0) {
    problems.push(
      ...organizationalUnitProblems(
        spec.organizationalUnit,
        spec.domain as string,
        `${field}.organizationalUnit`,
      ),
    );
  }
  const ref = spec.credentialsSecretRef as unknown;
  const name = (ref as { name?: unknown } | undefined)?.name;
  if (typeof ref !== 'object' || ref === null || typeof name !== 'string' || name === '') {
    problems.push(
      `${field}.credentialsSecretRef: missing; name a Secret in the pool's namespace with the keys username and password, e.g. {name: ad-join}`,
    );
  } else if (name.length > 253 || !dnsSubdomain.test(name)) {
    problems.push(
      `${field}.credentialsSecretRef.name: ${JSON.stringify(name)} is not a Secret name; use lower-case letters, digits, '-' and '.' (RFC 1123), e.g. ad-join`,
    );
  }
  return problems;
}

/** The spec when it has no problem; throws a WinfleetError listing them otherwise. */
export function checkedActiveDirectory(value: unknown, field?: string): ActiveDirectorySpec {
  const problems = activeDirectoryProblems(value, field);
  if (problems.length > 0) throw new WinfleetError('WF_SCHEMA_INVALID', problems.join('; '));
  return value as ActiveDirectorySpec;
}

/**
 * The annotation by which an Active Directory credentials Secret opts in to the pools that may
 * use it: their names, comma-separated (`corp,corp-gpu`). A pool's credentialsSecretRef alone
 * is not enough: whoever may create a pool must not get any Secret with `username` and
 * `password` keys (every kubernetes.io/basic-auth Secret) sent to a host of theirs.
 */
export const domainJoinPoolsAnnotation = 'winfleet.io/domain-join-pools';

/**
 * The pool names a Secret's winfleet.io/domain-join-pools value lists, read strictly: names of
 * Kubernetes objects (RFC 1123 subdomains) separated by single commas, no spaces, no empty
 * entries, no wildcard. A value that is not exactly that opts in to nothing, and `problem` says
 * why.
 */
export function domainJoinPools(value: string | undefined): { pools: string[]; problem?: string } {
  const fix = `list the pools' names, comma-separated without spaces, e.g. ${domainJoinPoolsAnnotation}=corp,corp-gpu`;
  if (value === undefined) return { pools: [], problem: `it has no ${domainJoinPoolsAnnotation}` };
  const names = value.split(',');
  const bad = names.find((n) => n.length > 253 || !dnsSubdomain.test(n));
  if (bad !== undefined) {
    return {
      pools: [],
      problem: `its ${domainJoinPoolsAnnotation} ${JSON.stringify(value)} is not a list of pool names (${JSON.stringify(bad)} is not one; "*" is no wildcard); ${fix}`,
    };
  }
  return { pools: names };
}
