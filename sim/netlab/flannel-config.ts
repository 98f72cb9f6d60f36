/**
 * Flannel's contract, as data, taken from upstream (flannel-io/flannel v0.28.10 unless noted):
 * - the Node annotations a lease is made of, written as `AcquireLease` writes them
 *   (pkg/subnet/kube/kube.go, annotations.go; backend data as vxlan_network.go marshals
 *   vxlanLeaseAttrs, the MAC as a quoted string);
 * - net-conf.json (pkg/subnet/config.go; backend keys as Documentation/backends.md writes them);
 * - subnet.env as flanneld writes it (pkg/subnet/subnet.go WriteSubnetFile) and as flannel's
 *   CNI plugin reads it (flannel-io/cni-plugin flannel.go loadFlannelSubnetEnv, strictly);
 * - the bridge configuration flannel's CNI plugin hands to its delegate (flannel_linux.go
 *   doCmdAdd, getDelegateIPAM). The module proxy refuses github.com/flannel-io/cni-plugin, so
 *   netlab renders that delegate here and runs the real bridge and host-local plugins with it.
 */
import { formatIpv4Cidr, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';

export const flannelAnnotationPrefix = 'flannel.alpha.coreos.com';

/** The four annotations of an IPv4 lease (annotations.go newAnnotations). */
export const flannelAnnotations = {
  kubeSubnetManager: `${flannelAnnotationPrefix}/kube-subnet-manager`,
  backendType: `${flannelAnnotationPrefix}/backend-type`,
  backendData: `${flannelAnnotationPrefix}/backend-data`,
  publicIp: `${flannelAnnotationPrefix}/public-ip`,
} as const;

/** Flannel's VXLAN settings for Windows interop: VNI 4096 or more and port 4789 (vxlan_windows.go). */
export const windowsVxlan = { vni: 4096, port: 4789 } as const;
/** What VXLAN encapsulation costs: the overlay MTU is the underlay's minus this (vxlan_network.go). */
export const vxlanOverhead = 50;

export type FlannelBackend =
  | { type: 'vxlan'; vni: number; port: number; mtu?: number; directRouting?: boolean }
  | { type: 'host-gw' };

export interface NetConfOptions {
  /** The cluster's pod CIDR (kube-controller-manager --cluster-cidr). */
  network: string;
  backend: FlannelBackend;
}

/** net-conf.json for flanneld --net-config-path. IPv4 only, iptables traffic manager. */
export function renderNetConf(options: NetConfOptions): string {
  if (!parseIpv4Cidr(options.network))
    throw new Error(`network ${options.network} is not an IPv4 CIDR`);
  const b = options.backend;
  const backend =
    b.type === 'vxlan'
      ? {
          Type: 'vxlan',
          VNI: b.vni,
          Port: b.port,
          ...(b.mtu !== undefined ? { MTU: b.mtu } : {}),
          ...(b.directRouting !== undefined ? { DirectRouting: b.directRouting } : {}),
        }
      : { Type: 'host-gw' };
  return `${JSON.stringify({ Network: options.network, EnableNFTables: false, Backend: backend }, null, 2)}\n`;
}

const macPattern = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

export type LeaseBackend = { type: 'vxlan'; vni: number; vtepMac: string } | { type: 'host-gw' };

export interface LeaseAnnotationOptions {
  backend: LeaseBackend;
  /** The node's public IP (its address on the LAN). */
  publicIp: string;
  /** Leave out kube-subnet-manager, as a node flanneld does not manage has it (kube.go:298). */
  withoutKubeSubnetManager?: boolean;
}

/**
 * The annotations AcquireLease writes for an IPv4 lease: backend-type, backend-data (for vxlan
 * `{"VNI":n,"VtepMAC":"…"}`, for host-gw `null`), public-ip and kube-subnet-manager "true".
 */
export function leaseAnnotations(options: LeaseAnnotationOptions): Record<string, string> {
  const b = options.backend;
  let data: string;
  if (b.type === 'vxlan') {
    if (!macPattern.test(b.vtepMac))
      throw new Error(`VtepMAC ${b.vtepMac} is not a lowercase MAC address`);
    if (!Number.isInteger(b.vni) || b.vni <= 0 || b.vni >= 2 ** 24)
      throw new Error(`VNI ${b.vni} is out of range`);
    data = `{"VNI":${b.vni},"VtepMAC":${JSON.stringify(b.vtepMac)}}`;
  } else {
    data = 'null';
  }
  const annotations: Record<string, string> = {
    [flannelAnnotations.backendType]: b.type,
    [flannelAnnotations.backendData]: data,
    [flannelAnnotations.publicIp]: options.publicIp,
  };
  if (!options.withoutKubeSubnetManager) annotations[flannelAnnotations.kubeSubnetManager] = 'true';
  return annotations;
}

/**
 * The strategic merge patch AcquireLease sends to the Node's status subresource: the two-way
 * merge patch of the annotations it changed (strategicpatch.CreateTwoWayMergePatch).
 */
export function leasePatch(annotations: Record<string, string>): {
  metadata: { annotations: Record<string, string> };
} {
  return { metadata: { annotations: { ...annotations } } };
}

/** A lease read back from a Node's annotations, strictly. */
export interface ReadLease {
  backendType: string;
  publicIp: string;
  vni?: number;
  vtepMac?: string;
}

/** Reads the lease flanneld wrote on its own Node; throws naming what is missing or malformed. */
export function readLeaseAnnotations(
  annotations: Record<string, string> | undefined,
  node: string,
): ReadLease {
  const a = annotations ?? {};
  const get = (key: string) => {
    const v = a[key];
    if (v === undefined) throw new Error(`Node ${node} has no annotation ${key}`);
    return v;
  };
  if (get(flannelAnnotations.kubeSubnetManager) !== 'true')
    throw new Error(`Node ${node}: ${flannelAnnotations.kubeSubnetManager} is not "true"`);
  const lease: ReadLease = {
    backendType: get(flannelAnnotations.backendType),
    publicIp: get(flannelAnnotations.publicIp),
  };
  const raw = get(flannelAnnotations.backendData);
  if (lease.backendType === 'vxlan') {
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch {
      throw new Error(`Node ${node}: ${flannelAnnotations.backendData} is not JSON: ${raw}`);
    }
    const d = data as { VNI?: unknown; VtepMAC?: unknown };
    if (
      typeof d.VNI !== 'number' ||
      !Number.isInteger(d.VNI) ||
      typeof d.VtepMAC !== 'string' ||
      !macPattern.test(d.VtepMAC)
    )
      throw new Error(
        `Node ${node}: ${flannelAnnotations.backendData} is not {"VNI":n,"VtepMAC":"mac"}: ${raw}`,
      );
    if (Object.keys(d).length !== 2)
      throw new Error(
        `Node ${node}: ${flannelAnnotations.backendData} has keys other than VNI and VtepMAC: ${raw}`,
      );
    lease.vni = d.VNI;
    lease.vtepMac = d.VtepMAC;
  }
  return lease;
}

/** subnet.env as flannel's CNI plugin reads it. */
export interface SubnetEnv {
  /** FLANNEL_NETWORK, canonical. */
  network: string;
  /** FLANNEL_SUBNET as written: the node's first usable address with the prefix (10.244.1.1/24). */
  subnet: string;
  mtu: number;
  ipMasq: boolean;
}

/**
 * Parses subnet.env as loadFlannelSubnetEnv does (KEY=VALUE lines; the four IPv4 keys
 * required), and more strictly: an unparseable value, an unknown or repeated key is an error.
 */
export function parseSubnetEnv(text: string, file = 'subnet.env'): SubnetEnv {
  const seen = new Map<string, string>();
  const known = [
    'FLANNEL_NETWORK',
    'FLANNEL_SUBNET',
    'FLANNEL_MTU',
    'FLANNEL_IPMASQ',
    'FLANNEL_IPV6_NETWORK',
    'FLANNEL_IPV6_SUBNET',
  ];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const eq = line.indexOf('=');
    const key = eq < 0 ? line : line.slice(0, eq);
    if (eq < 0 || !known.includes(key))
      throw new Error(`${file}: unexpected line ${JSON.stringify(line)}`);
    if (seen.has(key)) throw new Error(`${file}: ${key} given twice`);
    seen.set(key, line.slice(eq + 1));
  }
  const missing = ['FLANNEL_NETWORK', 'FLANNEL_SUBNET', 'FLANNEL_MTU', 'FLANNEL_IPMASQ'].filter(
    (k) => !seen.has(k),
  );
  if (missing.length > 0) throw new Error(`${file} is missing ${missing.join(', ')}`);
  const network = parseIpv4Cidr(seen.get('FLANNEL_NETWORK')!);
  const subnet = parseIpv4Cidr(seen.get('FLANNEL_SUBNET')!);
  const mtuText = seen.get('FLANNEL_MTU')!;
  const masq = seen.get('FLANNEL_IPMASQ')!;
  if (!network)
    throw new Error(`${file}: FLANNEL_NETWORK ${seen.get('FLANNEL_NETWORK')} is not an IPv4 CIDR`);
  if (!subnet)
    throw new Error(`${file}: FLANNEL_SUBNET ${seen.get('FLANNEL_SUBNET')} is not an IPv4 CIDR`);
  if (!/^[1-9][0-9]*$/.test(mtuText))
    throw new Error(`${file}: FLANNEL_MTU ${mtuText} is not a number`);
  if (masq !== 'true' && masq !== 'false')
    throw new Error(`${file}: FLANNEL_IPMASQ ${masq} is not true or false`);
  return {
    network: formatIpv4Cidr(network),
    subnet: seen.get('FLANNEL_SUBNET')!,
    mtu: Number(mtuText),
    ipMasq: masq === 'true',
  };
}

/** The CNI network configuration netlab gives flannel's delegate logic (as in kube-flannel.yml's cni-conf.json). */
export interface FlannelCniConf {
  cniVersion: string;
  name: string;
  /** Keys passed to the delegate; kube-flannel.yml sets hairpinMode and isDefaultGateway. */
  delegate: Record<string, unknown>;
  /** The top-level ipam (host-local's dataDir goes here). */
  ipam?: Record<string, unknown>;
}

/**
 * The delegate configuration flannel's CNI plugin passes to bridge (doCmdAdd): name, type
 * bridge, ipMasq = !FLANNEL_IPMASQ, mtu = FLANNEL_MTU, isGateway true, unless the delegate
 * sets them; ipam = the given ipam with type host-local, ranges [[{subnet: FLANNEL_SUBNET's
 * network}]] and routes [{dst: FLANNEL_NETWORK}] after any given.
 */
export function flannelDelegateConf(conf: FlannelCniConf, env: SubnetEnv): Record<string, unknown> {
  for (const key of ['name', 'ipam'])
    if (key in conf.delegate)
      throw new Error(
        `'delegate' dictionary must not have '${key}' field, it'll be set by flannel`,
      );
  const delegate: Record<string, unknown> = { ...conf.delegate, name: conf.name };
  if (!('type' in delegate)) delegate.type = 'bridge';
  if (typeof delegate.type !== 'string')
    throw new Error("'delegate' dictionary, if present, must have (string) 'type' field");
  if (!('ipMasq' in delegate)) delegate.ipMasq = !env.ipMasq;
  if (!('mtu' in delegate)) delegate.mtu = env.mtu;
  if (delegate.type === 'bridge' && !('isGateway' in delegate)) delegate.isGateway = true;
  delegate.cniVersion = conf.cniVersion;
  const ipam: Record<string, unknown> = { ...(conf.ipam ?? {}) };
  if (!('type' in ipam)) ipam.type = 'host-local';
  const subnet = parseIpv4Cidr(env.subnet)!;
  ipam.ranges = [[{ subnet: formatIpv4Cidr(subnet) }]];
  const given = Array.isArray(ipam.routes) ? (ipam.routes as unknown[]) : [];
  ipam.routes = [...given, { dst: env.network }];
  delegate.ipam = ipam;
  return delegate;
}
