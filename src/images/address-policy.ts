/**
 * Which addresses image lookups may connect to. Any pod creator names the registry of an image,
 * so without a policy the operator would fetch from (and follow redirects and token realms to)
 * cloud metadata at 169.254.169.254, cluster Services and the node's loopback. Loopback,
 * link-local, private, CGNAT, unspecified, multicast and reserved ranges are refused, as are
 * the cluster's service and pod CIDRs, whatever form the address is written in (IPv4-mapped
 * and other IPv6 forms that embed an IPv4 address are checked as that IPv4 address).
 *
 * Registries and mirrors the configuration names are trusted: their endpoints (exact origin),
 * and the token realms and redirects they answer with when those stay on a configured host.
 * The check runs on the address actually connected to (a DNS lookup hook), so a name that
 * resolves, or later re-resolves, to a private address is refused too.
 *
 * @example
 * const policy = createAddressPolicy({ blockedCidrs: ['10.96.0.0/12'] });
 * policy.forbiddenAddress('169.254.169.254'); // "a link-local address"
 */
import { BlockList, isIP, isIPv4 } from 'node:net';
import { WinfleetError } from '../errors/catalog.ts';

/** Says whether a URL may be fetched and whether an address may be connected to. */
export interface AddressPolicy {
  /** Why connecting to `address` (an IP literal) is refused, or undefined when it is allowed. */
  forbiddenAddress(address: string): string | undefined;
  /**
   * True when `url` needs no address check: a configured endpoint, or (for a realm or redirect
   * reached from a trusted URL, `fromTrusted`) a URL on a configured host.
   */
  isTrusted(url: URL, fromTrusted: boolean): boolean;
}

export interface AddressPolicyOptions {
  /** Origins of configured registries and mirrors, e.g. "http://127.0.0.1:5000". */
  trustedOrigins?: Iterable<string>;
  /** Further CIDRs to refuse, e.g. the cluster's service and pod CIDRs. */
  blockedCidrs?: Iterable<string>;
}

const ipv4Ranges: [string, number, string][] = [
  ['0.0.0.0', 8, 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a reserved address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a reserved (benchmarking) address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

const ipv6Ranges: [string, number, string][] = [
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['fc00::', 7, 'a private (unique local) address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
];

/** The 16 bytes of an IPv6 address (as `isIP` accepts it). */
function ipv6Bytes(address: string): number[] {
  let text = address.split('%')[0]!;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (isIPv4(last)) {
    tail.push(...last.split('.').map(Number));
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const left = groups(head);
  const right = groups(rest);
  const missing = 8 - left.length - right.length;
  const all = [...left, ...Array<string>(rest === undefined ? 0 : missing).fill('0'), ...right];
  const bytes = all.flatMap((g) => {
    const n = Number.parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** The IPv4 address an IPv6 address stands for (mapped, compatible, NAT64, 6to4), if any. */
function embeddedIpv4(address: string): string | undefined {
  const b = ipv6Bytes(address);
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number) => b.slice(at, at + 4).join('.');
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4(12); // ::ffff:a.b.c.d
  if (zeros(0, 12) && !zeros(12, 16) && !(zeros(12, 15) && b[15] === 1)) return v4(12); // ::a.b.c.d
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12))
    return v4(12); // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2); // 2002::/16
  return undefined;
}

/** Strips the brackets of an IPv6 URL host. */
export function hostAddress(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/** Builds the policy; throws a WinfleetError naming a CIDR that cannot be parsed. */
export function createAddressPolicy(options: AddressPolicyOptions = {}): AddressPolicy {
  const ranges: { list: BlockList; why: string }[] = [];
  const add = (address: string, prefix: number, family: 'ipv4' | 'ipv6', why: string) => {
    const list = new BlockList();
    list.addSubnet(address, prefix, family);
    ranges.push({ list, why });
  };
  for (const [a, p, why] of ipv4Ranges) add(a, p, 'ipv4', why);
  for (const [a, p, why] of ipv6Ranges) add(a, p, 'ipv6', why);
  for (const cidr of options.blockedCidrs ?? []) {
    const [address = '', prefix = ''] = cidr.split('/');
    const family = isIP(address);
    const bits = Number(prefix);
    if (family === 0 || !/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128)) {
      throw new WinfleetError(
        'WF_CONFIG_INVALID',
        `Cannot parse CIDR "${cidr}"; write e.g. "10.96.0.0/12"`,
      );
    }
    add(address, bits, family === 4 ? 'ipv4' : 'ipv6', `in the cluster range ${cidr}`);
  }
  const trustedOrigins = new Set(options.trustedOrigins ?? []);
  const trustedHosts = new Set([...trustedOrigins].map((o) => new URL(o).hostname));

  function forbiddenAddress(address: string): string | undefined {
    const family = isIP(address);
    if (family === 0) return 'not an IP address';
    const v4 = family === 4 ? address : embeddedIpv4(address);
    for (const { list, why } of ranges) {
      if (v4 !== undefined && list.check(v4, 'ipv4')) return why;
      if (family === 6 && list.check(address.split('%')[0]!, 'ipv6')) return why;
    }
    return undefined;
  }

  return {
    forbiddenAddress,
    isTrusted: (url, fromTrusted) =>
      trustedOrigins.has(url.origin) || (fromTrusted && trustedHosts.has(url.hostname)),
  };
}
