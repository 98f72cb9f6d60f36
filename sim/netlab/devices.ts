/**
 * What a test (or a model rendered into a namespace) can put in a network namespace, one
 * iproute2 command each: veth pairs, bridges, addresses, VXLAN devices, routes through them,
 * permanent neighbours and FDB entries, sysctls. These are the pieces flanneld programs on
 * Linux for a remote VXLAN lease (vxlan_network.go: route `<subnet> via <subnet>.0 onlink`,
 * neighbour `<subnet>.0 → VtepMAC`, FDB `VtepMAC → public IP`), so a "Windows node" namespace
 * can be given the same from an HNS model. Every function names the namespace and the object in
 * its error.
 */
import { bridgeTool, ip, runInNetns } from './command.ts';

async function inNs(netns: string, what: string, args: string[]): Promise<void> {
  try {
    await ip(['-n', netns, ...args]);
  } catch (error) {
    throw new Error(`netns ${netns}: could not ${what}: ${(error as Error).message}`);
  }
}

export interface VethPairOptions {
  /** The namespace the first end is made in, and its name there. */
  netns: string;
  name: string;
  /** The namespace the other end goes to, and its name there. */
  peerNetns: string;
  peerName: string;
  /** Both ends' MTU (default the kernel's, 1500). */
  mtu?: number;
  /** The first end's MAC (default random). */
  mac?: string;
}

/** A veth pair between two namespaces, both ends down. */
export async function addVethPair(o: VethPairOptions): Promise<void> {
  await inNs(o.netns, `add veth ${o.name} with peer ${o.peerName} in ${o.peerNetns}`, [
    'link',
    'add',
    o.name,
    ...(o.mac ? ['address', o.mac] : []),
    ...(o.mtu ? ['mtu', String(o.mtu)] : []),
    'type',
    'veth',
    'peer',
    'name',
    o.peerName,
    ...(o.mtu ? ['mtu', String(o.mtu)] : []),
    'netns',
    o.peerNetns,
  ]);
}

/** A bridge, up, with this MTU. */
export async function addBridge(netns: string, name: string, mtu = 1500): Promise<void> {
  await inNs(netns, `add bridge ${name}`, [
    'link',
    'add',
    name,
    'mtu',
    String(mtu),
    'type',
    'bridge',
  ]);
  await setLinkUp(netns, name);
}

/** Makes `link` a port of bridge `bridge`. */
export async function setMaster(netns: string, link: string, bridge: string): Promise<void> {
  await inNs(netns, `attach ${link} to ${bridge}`, ['link', 'set', link, 'master', bridge]);
}

export async function setLinkUp(netns: string, link: string): Promise<void> {
  await inNs(netns, `set ${link} up`, ['link', 'set', link, 'up']);
}

/** Adds `cidr` (address/prefix, e.g. 192.0.2.11/24) to `link`. */
export async function addAddress(netns: string, link: string, cidr: string): Promise<void> {
  await inNs(netns, `add address ${cidr} to ${link}`, ['addr', 'add', cidr, 'dev', link]);
}

export interface VxlanDeviceOptions {
  /** e.g. "flannel.4096" (Linux flanneld) or "vxlan4096". */
  name: string;
  vni: number;
  /** UDP destination port (4789 for Windows interop, Linux flannel's default is 8472). */
  port: number;
  /** The local VTEP address (the node's LAN address). */
  local: string;
  /** The underlay device. */
  dev: string;
  /** The device's MAC: the VtepMAC peers point their neighbour and FDB entries at. */
  mac: string;
  /** Default: the underlay MTU minus 50 (vxlan_network.go, vxlan_network_windows.go). */
  mtu: number;
  /** An address on the device (flanneld puts <subnet>.0/32 there). */
  address?: string;
}

/**
 * A VXLAN device as flanneld makes one (device.go newVXLANDevice: no learning, the VNI and
 * port given, local address and underlay device set), up.
 */
export async function addVxlanDevice(netns: string, o: VxlanDeviceOptions): Promise<void> {
  await inNs(netns, `add VXLAN device ${o.name} (VNI ${o.vni}, port ${o.port})`, [
    'link',
    'add',
    o.name,
    'address',
    o.mac,
    'mtu',
    String(o.mtu),
    'type',
    'vxlan',
    'id',
    String(o.vni),
    'dstport',
    String(o.port),
    'local',
    o.local,
    'dev',
    o.dev,
    'nolearning',
  ]);
  if (o.address) await addAddress(netns, o.name, o.address);
  await setLinkUp(netns, o.name);
}

/** `ip route replace <dst> via <via> dev <dev> onlink`: what flanneld adds per remote lease. */
export async function addOnlinkRoute(
  netns: string,
  route: { dst: string; via: string; dev: string },
): Promise<void> {
  await inNs(netns, `add route ${route.dst} via ${route.via} dev ${route.dev} onlink`, [
    'route',
    'replace',
    route.dst,
    'via',
    route.via,
    'dev',
    route.dev,
    'onlink',
  ]);
}

/** `ip route replace <dst> [via <via>] dev <dev>`: an ordinary route. */
export async function addRoute(
  netns: string,
  route: { dst: string; via?: string; dev: string },
): Promise<void> {
  await inNs(netns, `add route ${route.dst} dev ${route.dev}`, [
    'route',
    'replace',
    route.dst,
    ...(route.via ? ['via', route.via] : []),
    'dev',
    route.dev,
  ]);
}

/** `ip neigh replace <ip> lladdr <mac> dev <dev> nud permanent`. */
export async function addPermanentNeighbour(
  netns: string,
  entry: { ip: string; mac: string; dev: string },
): Promise<void> {
  await inNs(netns, `add neighbour ${entry.ip} → ${entry.mac} on ${entry.dev}`, [
    'neigh',
    'replace',
    entry.ip,
    'lladdr',
    entry.mac,
    'dev',
    entry.dev,
    'nud',
    'permanent',
  ]);
}

/** `bridge fdb append <mac> dev <dev> dst <remote> self permanent`: a VTEP's remote. */
export async function addFdbEntry(
  netns: string,
  entry: { mac: string; dev: string; dst: string },
): Promise<void> {
  try {
    await bridgeTool([
      '-n',
      netns,
      'fdb',
      'append',
      entry.mac,
      'dev',
      entry.dev,
      'dst',
      entry.dst,
      'self',
      'permanent',
    ]);
  } catch (error) {
    throw new Error(
      `netns ${netns}: could not add FDB entry ${entry.mac} → ${entry.dst} on ${entry.dev}: ${(error as Error).message}`,
    );
  }
}

const sysctlKey = /^net\.[a-z0-9_.-]+$/;

/** Sets a per-namespace sysctl under net. (e.g. net.ipv4.ip_forward) in `netns`. */
export async function setSysctl(netns: string, key: string, value: string): Promise<void> {
  if (!sysctlKey.test(key)) throw new Error(`sysctl ${key} is not a net.* key`);
  if (!/^[0-9a-z]+$/.test(value))
    throw new Error(`sysctl value ${JSON.stringify(value)} is not a plain word`);
  const path = `/proc/sys/${key.replaceAll('.', '/')}`;
  try {
    await runInNetns(netns, '/bin/sh', ['-c', 'printf %s "$1" > "$2"', 'sh', value, path]);
  } catch (error) {
    throw new Error(`netns ${netns}: could not set ${key}=${value}: ${(error as Error).message}`);
  }
}

export interface RemoteSubnet {
  /** The remote node's pod subnet (HNS RemoteSubnetRoute DestinationPrefix), e.g. 10.244.2.0/24. */
  subnet: string;
  /** The remote VTEP's MAC (VtepMAC; HNS DistributedRouterMacAddress). */
  vtepMac: string;
  /** The remote node's LAN address (public-ip; HNS ProviderAddress). */
  publicIp: string;
  /** The local VXLAN device. */
  dev: string;
}

/**
 * What flanneld programs on Linux for one remote VXLAN lease (vxlan_network.go
 * handleSubnetEvents): the route `<subnet> via <subnet>.0 dev <dev> onlink`, the permanent
 * neighbour `<subnet>.0 → vtepMac` and the FDB entry `vtepMac → publicIp`. The same three
 * carry one HNS RemoteSubnetRoute policy when a Windows node is rendered into a namespace.
 */
export async function addRemoteSubnet(netns: string, remote: RemoteSubnet): Promise<void> {
  const slash = remote.subnet.indexOf('/');
  const zero = remote.subnet.slice(0, slash);
  if (slash < 0 || !/^\d+\.\d+\.\d+\.\d+$/.test(zero))
    throw new Error(`remote subnet ${remote.subnet} is not an IPv4 CIDR`);
  await addOnlinkRoute(netns, { dst: remote.subnet, via: zero, dev: remote.dev });
  await addPermanentNeighbour(netns, { ip: zero, mac: remote.vtepMac, dev: remote.dev });
  await addFdbEntry(netns, { mac: remote.vtepMac, dev: remote.dev, dst: remote.publicIp });
}

/** `ip link del <link>`: a VXLAN device, a bridge, or a veth (both ends go). */
export async function deleteLink(netns: string, link: string): Promise<void> {
  await inNs(netns, `delete ${link}`, ['link', 'del', link]);
}

/** `ip link set <link> address <mac>`. */
export async function setLinkAddress(netns: string, link: string, mac: string): Promise<void> {
  await inNs(netns, `set ${link}'s MAC to ${mac}`, ['link', 'set', link, 'address', mac]);
}

/** Undoes addRemoteSubnet: the route, the neighbour and the FDB entry of one remote lease. */
export async function removeRemoteSubnet(netns: string, remote: RemoteSubnet): Promise<void> {
  const zero = remote.subnet.slice(0, remote.subnet.indexOf('/'));
  await inNs(netns, `delete route ${remote.subnet} on ${remote.dev}`, [
    'route',
    'del',
    remote.subnet,
    'dev',
    remote.dev,
  ]);
  await inNs(netns, `delete neighbour ${zero} on ${remote.dev}`, [
    'neigh',
    'del',
    zero,
    'dev',
    remote.dev,
  ]);
  try {
    await bridgeTool([
      '-n',
      netns,
      'fdb',
      'del',
      remote.vtepMac,
      'dev',
      remote.dev,
      'dst',
      remote.publicIp,
      'self',
    ]);
  } catch (error) {
    throw new Error(
      `netns ${netns}: could not delete FDB entry ${remote.vtepMac} → ${remote.publicIp} on ${remote.dev}: ${(error as Error).message}`,
    );
  }
}
