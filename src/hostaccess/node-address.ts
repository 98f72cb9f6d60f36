/**
 * Which IPv4 address a host's node uses (the kubelet's --node-ip, the Node's InternalIP, the
 * address the API server dials for logs and exec):
 * 1. spec.address, when it is an IPv4 address the host holds: the address the operator reaches
 *    it at (WMCO does the same for BYOH instances on a platform without a cloud provider). One
 *    the host does not hold (a NAT in between) would make the kubelet refuse to start;
 * 2. else the address of the interface holding the default route with the lowest metric (route
 *    metric plus interface metric, as Windows chooses), as WMCO's kubelet pre-script does
 *    (`Get-NetRoute -DestinationPrefix '0.0.0.0/0' | Get-NetIPAddress -AddressFamily IPv4`);
 * 3. else (no default route) the first usable address, an adapter's before a vEthernet one.
 * Never the loopback or a link-local (169.254/16, APIPA) address, and never merely the first row
 * Get-NetIPAddress lists: after a re-bootstrap that is often an HNS adapter (vEthernet (nat), a
 * network's host endpoint), whose address moves or disappears with the network.
 *
 * @example nodeAddress('win-a.example.com', facts) // '10.1.2.3', the default route's address
 */
import { cidrContains, parseIpv4, parseIpv4Cidr } from '../net/ipv4-cidr.ts';

/** One row of `Get-NetIPAddress -AddressFamily IPv4`. */
export interface HostIpAddress {
  address: string;
  interfaceIndex: number;
  interfaceAlias: string;
  /** Preferred, Deprecated, Tentative, Duplicate or Invalid. */
  addressState: string;
}

/** One row of `Get-NetRoute -AddressFamily IPv4 -DestinationPrefix 0.0.0.0/0`. */
export interface HostDefaultRoute {
  interfaceIndex: number;
  routeMetric: number;
  interfaceMetric: number;
}

/** The host's network, as the host-facts script reports it. */
export interface HostNetwork {
  ipAddresses: HostIpAddress[];
  defaultRoutes: HostDefaultRoute[];
}

/** "This network" (0.0.0.0/8) and link-local (169.254.0.0/16, APIPA): no node address. */
const unusableBlocks = ['0.0.0.0/8', '169.254.0.0/16'].map((text) => parseIpv4Cidr(text)!);

/**
 * An address a node can be reached at: IPv4, assigned (Preferred), not link-local, not the
 * loopback pseudo-interface's. (Windows puts 127.0.0.1 there and on no adapter; the simulated
 * hosts use other 127/8 addresses as their network addresses, so loopback is told by the
 * interface, not by the whole range.)
 */
export function isUsableAddress(row: HostIpAddress): boolean {
  const address = parseIpv4(row.address);
  if (address === undefined || row.addressState.toLowerCase() !== 'preferred') return false;
  if (row.address === '127.0.0.1' || /^Loopback Pseudo-Interface/i.test(row.interfaceAlias)) {
    return false;
  }
  return !unusableBlocks.some((block) => cidrContains(block, address));
}

// Hyper-V and HNS name their host adapters "vEthernet (<switch or network>)".
function isVirtualAdapter(row: HostIpAddress): boolean {
  return /^vEthernet \(/i.test(row.interfaceAlias);
}

/** The address of the default route's interface with the lowest metric, if there is one. */
export function defaultRouteAddress(network: HostNetwork): string | undefined {
  const routes = [...network.defaultRoutes].sort(
    (a, b) => a.routeMetric + a.interfaceMetric - (b.routeMetric + b.interfaceMetric),
  );
  for (const route of routes) {
    const row = network.ipAddresses.find(
      (a) => a.interfaceIndex === route.interfaceIndex && isUsableAddress(a),
    );
    if (row) return row.address;
  }
  return undefined;
}

/**
 * The host's usable addresses, each once: the default route's first, then adapters' before
 * vEthernet ones, otherwise in the order the host listed them.
 */
export function usableAddresses(network: HostNetwork): string[] {
  const usable = network.ipAddresses.filter(isUsableAddress);
  const ordered = [
    defaultRouteAddress(network),
    ...usable.filter((a) => !isVirtualAdapter(a)).map((a) => a.address),
    ...usable.filter(isVirtualAdapter).map((a) => a.address),
  ].filter((a): a is string => a !== undefined);
  return [...new Set(ordered)];
}

/**
 * The node's address (see the file's header), or undefined when the host reported no usable
 * address and spec.address is a name: then only the host's own name resolution can tell.
 */
export function nodeAddress(specAddress: string, network: HostNetwork): string | undefined {
  const usable = usableAddresses(network);
  if (parseIpv4(specAddress) !== undefined && usable.includes(specAddress)) return specAddress;
  return usable[0];
}
