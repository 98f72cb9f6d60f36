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

import { WinfleetError } from '../errors/catalog.ts';
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

/**
 * The PowerShell statements that collect the two tables into `$ipAddresses` and
 * `$defaultRoutes` (every IPv4 address with its interface; the default routes with their
 * metrics): the operator's host-facts script and the agent's own (WindowsHostOS.ipv4Network)
 * both use them, so both see the host the same way.
 */
export const hostNetworkScriptLines: readonly string[] = [
  '$ipAddresses = @(Get-NetIPAddress -AddressFamily IPv4 | ForEach-Object {',
  '  [ordered]@{ address = [string]$_.IPAddress; interfaceIndex = [int]$_.InterfaceIndex; interfaceAlias = [string]$_.InterfaceAlias; addressState = [string]$_.AddressState }',
  '})',
  "$defaultRoutes = @(Get-NetRoute -AddressFamily IPv4 -DestinationPrefix '0.0.0.0/0' -PolicyStore ActiveStore -ErrorAction SilentlyContinue | ForEach-Object {",
  '  [ordered]@{ interfaceIndex = [int]$_.InterfaceIndex; routeMetric = [int]$_.RouteMetric; interfaceMetric = [int]$_.InterfaceMetric }',
  '})',
];

/**
 * Reads the two tables as a host printed them, strictly (a host's output is checked before
 * anything is chosen from it). Windows PowerShell 5.1 prints a one-element list as a bare object
 * and an empty one as null; both are accepted. `source` names the report in errors.
 */
export function readHostNetwork(
  report: { ipAddresses?: unknown; defaultRoutes?: unknown },
  source = 'host-facts',
): HostNetwork {
  return {
    ipAddresses: rows(report.ipAddresses, 'ipAddresses', source).map((row, index) =>
      ipAddressRow(row, `${source} ipAddresses[${index}]`),
    ),
    defaultRoutes: rows(report.defaultRoutes, 'defaultRoutes', source).map((row, index) =>
      defaultRouteRow(row, `${source} defaultRoutes[${index}]`),
    ),
  };
}

function rows(value: unknown, field: string, source: string): Record<string, unknown>[] {
  const list = value === null || value === undefined ? [] : Array.isArray(value) ? value : [value];
  return list.map((row, index) => {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw new WinfleetError(
        'WF_REMOTE_COMMAND_FAILED',
        `Cannot read ${source} ${field}[${index}] ${JSON.stringify(row)}: expected an object`,
      );
    }
    return row as Record<string, unknown>;
  });
}

function field<T extends 'string' | 'number'>(
  row: Record<string, unknown>,
  name: string,
  type: T,
  where: string,
): T extends 'string' ? string : number {
  const value = row[name];
  if (typeof value !== type || (type === 'number' && !Number.isInteger(value))) {
    throw new WinfleetError(
      'WF_REMOTE_COMMAND_FAILED',
      `Cannot read ${where}: "${name}" is ${JSON.stringify(value)}, expected ${type === 'number' ? 'an integer' : 'a string'}`,
    );
  }
  return value as T extends 'string' ? string : number;
}

function ipAddressRow(row: Record<string, unknown>, where: string): HostIpAddress {
  return {
    address: field(row, 'address', 'string', where),
    interfaceIndex: field(row, 'interfaceIndex', 'number', where),
    interfaceAlias: field(row, 'interfaceAlias', 'string', where),
    addressState: field(row, 'addressState', 'string', where),
  };
}

function defaultRouteRow(row: Record<string, unknown>, where: string): HostDefaultRoute {
  return {
    interfaceIndex: field(row, 'interfaceIndex', 'number', where),
    routeMetric: field(row, 'routeMetric', 'number', where),
    interfaceMetric: field(row, 'interfaceMetric', 'number', where),
  };
}
