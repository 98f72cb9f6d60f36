/**
 * Which IPs and DNS names a kubelet serving certificate may carry. The kubelet-serving signer
 * signs with the cluster CA, which every pod trusts (its service account ca.crt), so each name
 * in such a certificate is one the node can impersonate: a host admin who adds the Service IP
 * 10.96.0.1 to a NIC must not get a certificate for it.
 *
 * - The allowed set is pinned (status.servingAddresses): what the host reported at its first
 *   join, plus, always, its node name and spec.address (both chosen by the cluster admin or at
 *   join). Later reports do not change it; the admin's allow-serving-addresses annotation does.
 * - Whatever the pin says, refused: the service and pod CIDRs, unspecified, link-local,
 *   multicast and reserved addresses, IPv4-mapped IPv6, names of the cluster's Services,
 *   `localhost`, any name or address another Node holds (its name or status.addresses), and
 *   every name and address of the API server (api-server-names.ts), which no Node holds.
 * - A DNS name passes only when it is the node name or under one of the admin's
 *   hosts.servingDnsSuffixes: a DNS name is what a client dials, and no other rule can know
 *   every name that leads somewhere (a load balancer's, a public endpoint's). An IP is what
 *   the host has.
 * - Loopback is refused unless it is the host's own address (vouchedAddress): its spec.address,
 *   or a Pull-mode host's node IP as pinned at first sight. A WindowsHost at a loopback address
 *   is a simulated one (the lab and tests run hosts at 127.0.0.N), and the admin who wrote
 *   spec.address vouched for that address; no other loopback address passes.
 */
import { BlockList, isIP } from 'node:net';
import { isPullHost, type WindowsHost } from '../api/windows-host.ts';

/** The cluster's address ranges and domain, from the configuration (hosts.*). */
export interface ClusterNetwork {
  serviceCIDR: string;
  podCIDR: string;
  clusterDomain: string;
  /** hosts.servingDnsSuffixes: DNS names under these may be served besides the node name. */
  servingDnsSuffixes?: readonly string[];
}

/** What one host's addresses are checked against. */
export interface AddressContext {
  network: ClusterNetwork;
  /** The host's own address (vouchedAddress): spec.address, or a Pull host's pinned node IP. */
  specAddress: string | undefined;
  /**
   * The name of a Node other than the host's own that holds `address` (canonical) as its name
   * or one of its status.addresses, if any (node-addresses.ts finds it by index).
   */
  nodeHolding: (address: string) => string | undefined;
  /** The node name of the host, the one DNS name allowed outside hosts.servingDnsSuffixes. */
  nodeName?: string;
  /**
   * Where `address` (canonical) is a name or address of the API server, if it is one
   * (api-server-names.ts). Every check that decides a certificate passes it.
   */
  apiServerName?: (address: string) => string | undefined;
}

type Family = 'ipv4' | 'ipv6';

function subnets(...entries: [string, number, Family][]): BlockList {
  const list = new BlockList();
  for (const [address, prefix, family] of entries) list.addSubnet(address, prefix, family);
  return list;
}

/** Refused everywhere, whatever the pin says (loopback is handled on its own). */
const refusedRanges: [string, BlockList][] = [
  ['an unspecified address', subnets(['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6'])],
  ['a link-local address', subnets(['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6'])],
  ['a multicast address', subnets(['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6'])],
  ['a reserved or broadcast address', subnets(['240.0.0.0', 4, 'ipv4'])],
];
// BlockList matches an IPv4 address against this rule too, so it is checked for IPv6 alone.
const ipv4Mapped = subnets(['::ffff:0:0', 96, 'ipv6']);
const loopback = subnets(['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']);

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The form addresses are compared in: an IP in its canonical text (IPv6 compressed, lower
 * case), a DNS name in lower case (certificate names match case-insensitively).
 */
export function canonicalAddress(text: string): string {
  const trimmed = text.trim();
  if (isIP(trimmed) === 6) {
    try {
      return new URL(`http://[${trimmed}]/`).hostname.slice(1, -1);
    } catch {
      // A zone ("fe80::1%eth0") is no URL host; it stays as written, and is link-local anyway.
    }
  }
  return trimmed.toLowerCase();
}

function familyOf(address: string): Family | undefined {
  const version = isIP(address);
  return version === 4 ? 'ipv4' : version === 6 ? 'ipv6' : undefined;
}

/** Whether `ip` is in `cidr`; undefined when `cidr` is not a CIDR. */
function inCidr(ip: string, family: Family, cidr: string): boolean | undefined {
  const [base = '', bits = ''] = cidr.split('/');
  const baseFamily = familyOf(base);
  const prefix = /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
  if (!baseFamily || !(prefix <= (baseFamily === 'ipv4' ? 32 : 128))) return undefined;
  if (baseFamily !== family) return false;
  return subnets([base, prefix, family]).check(ip, family);
}

function ipProblem(ip: string, family: Family, context: AddressContext): string | undefined {
  const specAddress = context.specAddress && canonicalAddress(context.specAddress);
  if (loopback.check(ip, family) && ip !== specAddress) {
    return `${ip} is a loopback address, accepted only as the host's own spec.address`;
  }
  if (family === 'ipv6' && ipv4Mapped.check(ip, family)) {
    return `${ip} is an IPv4-mapped IPv6 address (write the IPv4 address instead)`;
  }
  for (const [what, range] of refusedRanges) {
    if (range.check(ip, family)) return `${ip} is ${what}`;
  }
  const { serviceCIDR, podCIDR } = context.network;
  for (const [field, cidr] of [
    ['service', serviceCIDR],
    ['pod', podCIDR],
  ] as const) {
    const inside = inCidr(ip, family, cidr);
    if (inside === undefined) {
      return `${ip} cannot be checked against hosts.${field}CIDR "${cidr}", which is not a CIDR; fix it in winfleet-config`;
    }
    if (inside) return `${ip} is in the ${field} CIDR ${cidr}`;
  }
  return undefined;
}

function dnsNameProblem(name: string, network: ClusterNetwork): string | undefined {
  const labels = name.split('.');
  if (name.length > 253 || !labels.every((l) => dnsLabel.test(l))) {
    return `"${name}" is not a DNS name (letters, digits, '-' and '.'; no wildcards)`;
  }
  if (/^\d+$/.test(labels.at(-1)!)) return `"${name}" is neither an IP address nor a DNS name`;
  if (name === 'localhost' || name.endsWith('.localhost')) return `${name} is a loopback name`;
  const domain = network.clusterDomain.toLowerCase().replace(/\.$/, '');
  if (
    name === 'kubernetes' ||
    name === 'kubernetes.default' ||
    name.endsWith('.svc') ||
    name.includes('.svc.') ||
    name === domain ||
    name.endsWith(`.${domain}`)
  ) {
    return `${name} names the cluster's Services (cluster domain ${domain})`;
  }
  return undefined;
}

/**
 * Why a serving certificate must not carry `address` (canonical, see canonicalAddress) on this
 * host, whatever its pin says; undefined when nothing refuses it.
 */
export function refusedAddressProblem(
  address: string,
  context: AddressContext,
): string | undefined {
  const family = familyOf(address);
  const problem = family
    ? ipProblem(address, family, context)
    : dnsNameProblem(address, context.network);
  if (problem) return problem;
  // After the classes above (a Service IP is named as such), before anything that could pass
  // it: the host's own vouched address is no excuse.
  const apiServer = context.apiServerName?.(address);
  if (apiServer) return `${address} is the API server's (${apiServer})`;
  const other = context.nodeHolding(address);
  if (other) return `${address} is held by Node ${other}`;
  return family ? undefined : dnsSuffixProblem(address, context);
}

/** Why DNS name `name` is neither the node name nor under hosts.servingDnsSuffixes. */
function dnsSuffixProblem(name: string, context: AddressContext): string | undefined {
  const { nodeName } = context;
  if (name === nodeName) return undefined;
  const suffixes = (context.network.servingDnsSuffixes ?? []).map((s) =>
    s.toLowerCase().replace(/^\./, '').replace(/\.$/, ''),
  );
  if (suffixes.some((suffix) => name.endsWith(`.${suffix}`))) return undefined;
  const allowed =
    suffixes.length > 0
      ? `the node name ${nodeName ?? '(none yet)'} or a name under ${suffixes.join(', ')}`
      : `only the node name ${nodeName ?? '(none yet)'}`;
  return `${name} is a DNS name other than the node name: a serving certificate may name ${allowed} (hosts.servingDnsSuffixes of winfleet-config)`;
}

/** The pin of a first join: the addresses and host name the host reported, canonical. */
export function joinServingAddresses(addresses: readonly string[], hostname?: string): string[] {
  return [...new Set([...addresses, ...(hostname ? [hostname] : [])].map(canonicalAddress))];
}

/**
 * The host's pinned serving addresses. A host that joined before addresses were pinned has
 * none recorded; its last report stands in until its next bootstrap pins it.
 */
export function pinnedServingAddresses(host: WindowsHost): string[] {
  return (
    host.status?.servingAddresses ??
    joinServingAddresses(host.status?.addresses ?? [], host.status?.hostname)
  );
}

/** Everything a serving certificate of `nodeName` may name: the pin, the node name, spec.address. */
export function allowedServingAddresses(host: WindowsHost, nodeName: string): Set<string> {
  return new Set(
    [...pinnedServingAddresses(host), nodeName, host.spec.address]
      .filter((a): a is string => a !== undefined)
      .map(canonicalAddress),
  );
}

/**
 * The one address a serving certificate may name even when it is a loopback address: an SSH
 * host's spec.address, which the administrator wrote; for a Pull-mode host, which has none, the
 * first address of its pin — its node IP as its Node first reported it (pull-mode-host.ts),
 * the trust-on-first-use stand-in for spec.address, or what an admin's
 * allow-serving-addresses put first. A real Windows host that joins by command never takes a
 * loopback node IP (the join picks among the host's usable addresses), so this admits the
 * simulated hosts at 127.0.0.N; a hostile machine with a join token gains at most a
 * certificate for one loopback address, which only connections made on that machine reach.
 */
export function vouchedAddress(host: WindowsHost): string | undefined {
  if (host.spec.address !== undefined) return host.spec.address;
  return isPullHost(host) ? host.status?.servingAddresses?.[0] : undefined;
}

/** The annotation's comma-separated list, canonical and without repeats. */
export function parseServingAddressList(value: string): string[] {
  return [
    ...new Set(
      value
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== '')
        .map(canonicalAddress),
    ),
  ];
}
