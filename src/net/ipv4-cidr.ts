/**
 * IPv4 addresses and CIDR blocks, parsed strictly: four decimal octets 0–255 without leading
 * zeros (as Go's net.ParseIP since 1.17, which the kubelet, kube-proxy and the CNI plugins use)
 * and a prefix length 0–32. Addresses are unsigned 32-bit numbers, so ranges compare and step
 * as numbers.
 */

/** A parsed CIDR: its address as written, the network address and the prefix length. */
export interface Ipv4Cidr {
  /** The address before the slash, as a number (host bits may be set). */
  address: number;
  /** The network address: `address` with the host bits cleared. */
  network: number;
  prefix: number;
}

const octet = /^(0|[1-9][0-9]{0,2})$/;

/** The address as a number, or undefined when `text` is not exactly a dotted-quad IPv4 address. */
export function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!octet.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    value = value * 256 + n;
  }
  return value;
}

/** The dotted-quad text of an address number. */
export function formatIpv4(address: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(address / 2 ** shift) % 256).join('.');
}

/** The CIDR, or undefined when `text` is not exactly "<IPv4 address>/<0-32>". */
export function parseIpv4Cidr(text: string): Ipv4Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const address = parseIpv4(text.slice(0, slash));
  const bits = text.slice(slash + 1);
  if (address === undefined || !/^(0|[1-9][0-9]?)$/.test(bits) || Number(bits) > 32) {
    return undefined;
  }
  const prefix = Number(bits);
  // Bitwise operators are signed 32-bit in JavaScript; unsigned arithmetic keeps the numbers exact.
  const network = address - (address % 2 ** (32 - prefix));
  return { address, network, prefix };
}

/** The CIDR in canonical form: the network address and the prefix. */
export function formatIpv4Cidr(cidr: Pick<Ipv4Cidr, 'network' | 'prefix'>): string {
  return `${formatIpv4(cidr.network)}/${cidr.prefix}`;
}

/** The last address of the block (the broadcast address for prefixes below 31). */
export function lastAddress(cidr: Pick<Ipv4Cidr, 'network' | 'prefix'>): number {
  return cidr.network + 2 ** (32 - cidr.prefix) - 1;
}

/** Whether `address` lies in `cidr`. */
export function cidrContains(cidr: Pick<Ipv4Cidr, 'network' | 'prefix'>, address: number): boolean {
  return address >= cidr.network && address <= lastAddress(cidr);
}

/** Whether every address of `inner` lies in `outer`. */
export function cidrCovers(
  outer: Pick<Ipv4Cidr, 'network' | 'prefix'>,
  inner: Pick<Ipv4Cidr, 'network' | 'prefix'>,
): boolean {
  return inner.prefix >= outer.prefix && cidrContains(outer, inner.network);
}
