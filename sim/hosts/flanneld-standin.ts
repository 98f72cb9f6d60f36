/**
 * The flanneld stand-in: what flanneld.exe (flannel-io/flannel at cdf7605, main.go with the
 * kube subnet manager pkg/subnet/kube/kube.go and the Windows VXLAN backend
 * pkg/backend/vxlan/{vxlan_windows,device_windows,vxlan_network_windows}.go) does on a
 * simulated host, against the real API server, with the credentials its kubeconfig gives:
 * 1. parses its flags as Go's flag package does (go-flags.ts), each unset one from FLANNELD_<NAME>
 *    (flagutil.SetFlagsFromEnv); a bad flag prints Go's error and the usage, and exits 0
 *    (flannel's usage() ends with os.Exit(0), before flag's ExitOnError);
 * 2. without --kube-subnet-mgr it would use etcd, which no Windows node of winfleet has: it
 *    retries "Couldn't fetch network config" forever, as flanneld does without etcd;
 * 3. with it, reads NODE_NAME (else exits 1: "env variables POD_NAME and POD_NAMESPACE must be
 *    set"), its kubeconfig, then --net-config-path (default /etc/kube-flannel/net-conf.json, on
 *    the current drive): Network, Backend.Type (vxlan, or host-gw below; others exit 1 naming it),
 *    Backend.VNI (default 4096), Backend.Port (default 4789), MacPrefix, DirectRouting, GBP, with
 *    the Windows backend's checks and their messages (VNI ≥ 4096, port 4789 only);
 * 4. finds --iface (an address or an interface name, as Get-NetIPAddress lists them) and takes
 *    its address as the public IP (--public-ip wins);
 * 5. AcquireLease: its Node's spec.podCIDR (none: "node %q pod cidr not assigned", exit 1,
 *    as RegisterNetwork fails), inside net-conf's Network; writes the four annotations
 *    (backend-data {"VNI":n,"VtepMAC":""} first, then with the DR MAC), taking
 *    public-ip-overwrite when the Node carries it, with a strategic merge patch of nodes/status;
 * 6. creates (or keeps, when its type and subnet are right) the Overlay network flannel.<VNI>
 *    with the lease's subnet, gateway .1, the VSID and a HostRoute policy; HNS gives it its DR
 *    MAC (hns-networks.ts), which becomes the VtepMAC;
 * 7. writes the subnet file (--subnet-file, default /run/flannel/subnet.env): FLANNEL_NETWORK,
 *    FLANNEL_SUBNET (the subnet's first address), FLANNEL_MTU (the interface's 1500 less 50),
 *    FLANNEL_IPMASQ;
 * 8. watches Nodes (api-reflector.ts) and, for each other Node with kube-subnet-manager=true, a
 *    vxlan backend-type and a VNI of 4096 or more, keeps one RemoteSubnetRoute policy
 *    {IsolationId, DistributedRouterMacAddress, ProviderAddress: public-ip, DestinationPrefix:
 *    its podCIDR} on the network, replaced when the lease changes and removed with the Node.
 * With Backend.Type host-gw (pkg/backend/hostgw/hostgw_windows.go, pkg/backend/
 * route_network_windows.go): refused behind NAT; the lease with backend-type host-gw and
 * backend-data null; the L2Bridge network (Backend.Name, default cbr0) on the lease with gateway
 * .1; the host's bridge endpoint `<name>_ep` at .2, attached to the host; the subnet file with the
 * interface's MTU; one host route per remote host-gw lease, `podCIDR via public-ip` on the vNIC
 * (ip-routes.ts), put back every 10 s when missing (flanneldRun #runHostGw).
 * Not modelled (docs/fidelity-ledger.md): the udp and other backends, IPv6, the healthz
 * server, etcd, checkHostNetworkReady's wait for the vEthernet adapter, the klog file options,
 * host-gw's DNSServerList and the forwarding setting itself (only logged and in the status).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { cidrCovers, formatIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import { reflect } from './api-reflector.ts';
import { GoFlagError, type GoFlagKind, parseGoFlags } from './go-flags.ts';
import { parseGoBool } from './go-values.ts';
import type { HnsNetworkPolicy } from './hns-networks.ts';
import { ipConfiguration } from './ip-configuration.ts';
import { type IpRoute, ipRoutes, sameRoute } from './ip-routes.ts';
import { callOptions, kubeConfigFor, readKubeconfig } from './kubelet-kubeconfig.ts';
import type { SimMachine } from './machine.ts';
import type { ProgramContext, SimProgram } from './sim-process.ts';

/** The annotations of flannel's kube subnet manager (kube/annotations.go, default prefix). */
export const flannelAnnotations = {
  kubeSubnetManager: 'flannel.alpha.coreos.com/kube-subnet-manager',
  backendType: 'flannel.alpha.coreos.com/backend-type',
  backendData: 'flannel.alpha.coreos.com/backend-data',
  publicIp: 'flannel.alpha.coreos.com/public-ip',
  publicIpOverwrite: 'flannel.alpha.coreos.com/public-ip-overwrite',
} as const;

/** flanneld's flags (main.go init: flannelFlags, and the klog flags it copies). */
export const flanneldFlags: ReadonlyMap<string, GoFlagKind> = new Map<string, GoFlagKind>([
  ['etcd-endpoints', 'string'],
  ['etcd-prefix', 'string'],
  ['etcd-keyfile', 'string'],
  ['etcd-certfile', 'string'],
  ['etcd-cafile', 'string'],
  ['etcd-username', 'string'],
  ['etcd-password', 'string'],
  ['iface', 'strings'],
  ['iface-regex', 'strings'],
  ['iface-can-reach', 'string'],
  ['subnet-file', 'string'],
  ['public-ip', 'string'],
  ['public-ipv6', 'string'],
  ['subnet-lease-renew-margin', 'int'],
  ['ip-masq', 'bool'],
  ['ip-masq-fully-random-disable', 'bool'],
  ['kube-subnet-mgr', 'bool'],
  ['kube-api-url', 'string'],
  ['kube-annotation-prefix', 'string'],
  ['kubeconfig-file', 'string'],
  ['version', 'bool'],
  ['healthz-ip', 'string'],
  ['healthz-port', 'int'],
  ['iptables-resync', 'int'],
  ['iptables-forward-rules', 'bool'],
  ['ip-blackhole-route', 'bool'],
  ['net-config-path', 'string'],
  ['set-node-network-unavailable', 'bool'],
  ['v', 'int'],
  ['vmodule', 'string'],
  ['log_backtrace_at', 'string'],
]);

/** The VXLAN device's overhead flannel takes off the interface's MTU (encapOverhead). */
export const vxlanOverhead = 50;
/** The MTU the simulated hosts' adapters have (Ethernet). */
const adapterMtu = 1500;
/** Windows' defaults in the VXLAN backend (defaultVNI, vxlanPort). */
const windowsVni = 4096;
const windowsVxlanPort = 4789;

export interface FlanneldStandInOptions {
  apiTimeoutMs?: number;
  watchTimeoutSeconds?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  /** How often it looks again for etcd (without --kube-subnet-mgr). Default 1 s. */
  etcdRetryMs?: number;
}

/** What the stand-in on a machine is doing, for tests: read with flanneldStatus(machine). */
export interface FlanneldStatus {
  pid: number;
  phase: 'starting' | 'waiting-for-etcd' | 'running' | 'exited';
  /** The network it made or kept, and its lease. */
  network?: string;
  subnet?: string;
  vtepMac?: string;
  publicIp?: string;
  /** Remote leases it has a route for: podCIDR → public IP. */
  routes: Record<string, string>;
  /** host-gw: the host's bridge endpoint, the interfaces it enabled forwarding on, the vNIC's index. */
  bridgeEndpoint?: { name: string; ip: string };
  forwarding?: string[];
  interfaceIndex?: number;
}

const statusKey = 'flanneld-status';

export function flanneldStatus(machine: SimMachine): FlanneldStatus | undefined {
  const holder = machine.state<{ status?: FlanneldStatus }>(statusKey, () => ({}));
  return holder.status && structuredClone(holder.status);
}

/** A Go-style fatal: the message is logged and the process exits with `code`. */
class Fatal extends Error {
  readonly code: number;
  constructor(message: string, code = 1) {
    super(message);
    this.code = code;
  }
}

/** net-conf.json as the Windows VXLAN and host-gw backends read it. */
export interface FlannelNetConf {
  network: string;
  backendType: 'vxlan' | 'host-gw';
  /** vxlan only (0 for host-gw). */
  vni: number;
  port: number;
  /** host-gw only: the L2Bridge network's name (Backend.Name, default cbr0). */
  name?: string;
}

/** host-gw's network name when Backend.Name gives none (hostgw_windows.go RegisterNetwork). */
export const hostGwDefaultName = 'cbr0';

/**
 * Reads net-conf.json (subnet.ParseConfig, then the Windows VXLAN backend's RegisterNetwork
 * checks, or host-gw's Backend.Name); throws with flannel's message.
 */
export function parseFlannelNetConf(text: string): FlannelNetConf {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new Fatal(`failed to read net conf: ${(error as Error).message}`);
  }
  if (typeof json !== 'object' || json === null) throw new Fatal('failed to read net conf');
  const network = typeof json.Network === 'string' ? json.Network : '';
  if (!parseIpv4Cidr(network))
    throw new Fatal('please define a correct Network parameter in the flannel config');
  const backend = (
    typeof json.Backend === 'object' && json.Backend !== null ? json.Backend : {}
  ) as Record<string, unknown>;
  const backendType = typeof backend.Type === 'string' ? backend.Type : 'udp';
  if (backendType.toLowerCase() === 'host-gw') {
    // hostgw_windows.go RegisterNetwork: Backend's Name and DNSServerList, Name cbr0 unless set.
    if (backend.Name !== undefined && typeof backend.Name !== 'string')
      throw new Fatal(
        'Error registering network: error decoding windows host-gw backend config: json: cannot unmarshal into Go struct field .Name of type string',
      );
    const name = typeof backend.Name === 'string' && backend.Name !== '' ? backend.Name : '';
    return { network, backendType: 'host-gw', vni: 0, port: 0, name: name || hostGwDefaultName };
  }
  if (backendType.toLowerCase() !== 'vxlan')
    throw new Fatal(`Failed to create backend: unknown backend type: ${backendType}`);
  const vni = backend.VNI === undefined ? windowsVni : Number(backend.VNI);
  const port = backend.Port === undefined ? windowsVxlanPort : Number(backend.Port);
  if (!(vni >= windowsVni))
    throw new Fatal(
      `Error registering network: invalid VXLAN backend config. VNI [${vni}] must be greater than or equal to ${windowsVni} on Windows`,
    );
  if (port !== windowsVxlanPort)
    throw new Fatal(
      `Error registering network: invalid VXLAN backend config. Port [${port}] is not supported on Windows. Omit the setting to default to port ${windowsVxlanPort}`,
    );
  if (backend.DirectRouting === true)
    throw new Fatal(
      'Error registering network: invalid VXLAN backend config. DirectRouting is not supported on Windows',
    );
  if (backend.GBP === true)
    throw new Fatal(
      'Error registering network: invalid VXLAN backend config. GBP is not supported on Windows',
    );
  return { network, backendType: 'vxlan', vni, port };
}

/** The vxlan backend's lease data (vxlan_windows.go: VNI and VtepMAC). */
function vxlanData(vni: number, vtepMac: string): string {
  return JSON.stringify({ VNI: vni, VtepMAC: vtepMac });
}

/**
 * The host-gw backend's lease data: none. Its LeaseAttrs carry no BackendData, which the kube
 * subnet manager writes as JSON null (json.RawMessage(nil).MarshalJSON, kube.go AcquireLease).
 */
export const hostGwBackendData = 'null';

/** How often the host-gw backend puts back a route that went missing (routeCheckRetries, s). */
export const hostGwRouteCheckMs = 10_000;

/**
 * The host-gw lease a remote Node holds, as nodeToLease and handleSubnetEvents read it: its
 * podCIDR via its public IP; undefined when it holds none or another backend's.
 */
export function remoteHostGwLease(
  node: k8s.V1Node,
): { subnet: string; publicIp: string } | undefined {
  const a = node.metadata?.annotations ?? {};
  if (a[flannelAnnotations.kubeSubnetManager] !== 'true') return undefined;
  if ((a[flannelAnnotations.backendType] ?? '').toLowerCase() !== 'host-gw') return undefined;
  const subnet = node.spec?.podCIDR;
  const publicIp = a[flannelAnnotations.publicIp];
  if (!subnet || !parseIpv4Cidr(subnet) || !publicIp || !/^\d+\.\d+\.\d+\.\d+$/.test(publicIp))
    return undefined;
  return { subnet, publicIp };
}

/** A flanneld program with the given options. */
export function createFlanneldStandIn(options: FlanneldStandInOptions = {}): SimProgram {
  const settings: Required<FlanneldStandInOptions> = {
    apiTimeoutMs: options.apiTimeoutMs ?? 10_000,
    watchTimeoutSeconds: options.watchTimeoutSeconds ?? 25,
    retryMinMs: options.retryMinMs ?? 800,
    retryMaxMs: options.retryMaxMs ?? 30_000,
    etcdRetryMs: options.etcdRetryMs ?? 1000,
  };
  return async function flanneld(context: ProgramContext): Promise<number> {
    return new FlanneldRun(context, settings).main();
  };
}

/** A Go path literal ("/etc/…") as a Windows program resolves it: on the current drive, C:. */
function onCurrentDrive(path: string): string {
  return /^[A-Za-z]:[\\/]/.test(path) ? path : `C:${path.replaceAll('/', '\\')}`;
}

/** The lease a remote Node holds, as nodeToLease reads it; undefined when it holds none. */
export function remoteLease(
  node: k8s.V1Node,
): { subnet: string; publicIp: string; vni: number; vtepMac: string } | undefined {
  const a = node.metadata?.annotations ?? {};
  if (a[flannelAnnotations.kubeSubnetManager] !== 'true') return undefined;
  if ((a[flannelAnnotations.backendType] ?? '').toLowerCase() !== 'vxlan') return undefined;
  const subnet = node.spec?.podCIDR;
  const publicIp = a[flannelAnnotations.publicIp];
  if (!subnet || !publicIp || !/^\d+\.\d+\.\d+\.\d+$/.test(publicIp)) return undefined;
  let data: { VNI?: unknown; VtepMAC?: unknown };
  try {
    data = JSON.parse(a[flannelAnnotations.backendData] ?? '') as typeof data;
  } catch {
    return undefined;
  }
  const vni = Number(data?.VNI);
  const mac = typeof data?.VtepMAC === 'string' ? data.VtepMAC : '';
  if (!Number.isInteger(vni) || vni < windowsVni) return undefined;
  return { subnet, publicIp, vni, vtepMac: mac };
}

class FlanneldRun {
  readonly #context: ProgramContext;
  readonly #options: Required<FlanneldStandInOptions>;
  readonly #machine: SimMachine;
  readonly #status: FlanneldStatus;
  #kc!: k8s.KubeConfig;
  #nodeName = '';

  constructor(context: ProgramContext, options: Required<FlanneldStandInOptions>) {
    this.#context = context;
    this.#options = options;
    this.#machine = context.machine;
    this.#status = { pid: context.pid, phase: 'starting', routes: {} };
    this.#machine.state<{ status?: FlanneldStatus }>(statusKey, () => ({})).status = this.#status;
  }

  get #signal(): AbortSignal {
    return this.#context.signal;
  }

  #log(severity: 'I' | 'W' | 'E', source: string, message: string): void {
    const now = new Date();
    const stamp = `${String(now.getMonth() + 1).padStart(2, '0')}${String(now.getDate()).padStart(2, '0')} ${now.toISOString().slice(11, 23)}`;
    // klog to standard error (logtostderr is forced on).
    this.#context.stderr(
      `${severity}${stamp} ${String(this.#context.pid).padStart(7)} ${source}] ${message}\n`,
    );
  }

  #call(patch: boolean | 'strategic' = false): k8s.ConfigurationOptions {
    return callOptions(this.#signal, this.#options.apiTimeoutMs, patch);
  }

  async main(): Promise<number> {
    try {
      return await this.#run();
    } catch (error) {
      if (this.#signal.aborted) return 0;
      if (error instanceof Fatal) {
        this.#log('E', 'main.go', error.message);
        return error.code;
      }
      this.#log('E', 'main.go', `Unexpected error: ${(error as Error).message}`);
      return 1;
    } finally {
      this.#status.phase = 'exited';
    }
  }

  /** The flags: the command line, then FLANNELD_<NAME> for each flag it did not set. */
  #flags(): Map<string, string[]> | number {
    let parsed: ReturnType<typeof parseGoFlags>;
    try {
      parsed = parseGoFlags(flanneldFlags, this.#context.argv);
    } catch (error) {
      if (!(error instanceof GoFlagError)) throw error;
      this.#context.stderr(`${error.message}\nUsage: ${this.#context.binaryPath} [OPTION]...\n`);
      return 0;
    }
    const flags = new Map(parsed.all);
    for (const name of flanneldFlags.keys()) {
      if (flags.has(name)) continue;
      const fromEnv = this.#context.env.get(`FLANNELD_${name.toUpperCase().replaceAll('-', '_')}`);
      if (fromEnv !== undefined && fromEnv !== '') flags.set(name, [fromEnv]);
    }
    return flags;
  }

  async #run(): Promise<number> {
    const flags = this.#flags();
    if (typeof flags === 'number') return flags;
    const one = (name: string) => flags.get(name)?.at(-1);
    const bool = (name: string) => parseGoBool(one(name) ?? 'false') === true;
    if (bool('version')) {
      this.#context.stderr('v0.28.10\n');
      return 0;
    }
    if (!bool('kube-subnet-mgr')) return this.#withoutEtcd();
    this.#nodeName = this.#context.env.get('NODE_NAME') ?? '';
    if (!this.#nodeName)
      throw new Fatal(
        'Failed to create SubnetManager: env variables POD_NAME and POD_NAMESPACE must be set',
      );
    const kubeconfig = one('kubeconfig-file');
    if (!kubeconfig)
      throw new Fatal(
        'Failed to create SubnetManager: fail to create kubernetes config: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
      );
    if (!(await this.#machine.fs.stat(kubeconfig)))
      throw new Fatal(
        `Failed to create SubnetManager: fail to create kubernetes config: CreateFile ${kubeconfig}: The system cannot find the file specified.`,
      );
    this.#kc = kubeConfigFor(await readKubeconfig(this.#machine.fs, kubeconfig));
    const netConfPath = onCurrentDrive(one('net-config-path') ?? '/etc/kube-flannel/net-conf.json');
    const netConfText = await this.#machine.fs.tryReadFile(netConfPath);
    if (!netConfText)
      throw new Fatal(
        `Failed to create SubnetManager: failed to read net conf: open ${netConfPath}: The system cannot find the file specified.`,
      );
    const netConf = parseFlannelNetConf(netConfText.toString('utf8'));
    const iface = this.#externalInterface(flags.get('iface') ?? []);
    const publicIp = one('public-ip') || iface.address;
    this.#log(
      'I',
      'main.go',
      `Using interface with name ${iface.name} and address ${iface.address}`,
    );
    const subnetFile = onCurrentDrive(one('subnet-file') ?? '/run/flannel/subnet.env');
    if (netConf.backendType === 'host-gw')
      return this.#runHostGw(netConf, iface, publicIp, subnetFile, bool('ip-masq'));
    // RegisterNetwork: the first lease (no VtepMAC yet), the network, then the lease again.
    const node = await this.#readNode();
    const subnet = this.#leaseSubnet(node, netConf);
    const networkName = `flannel.${netConf.vni}`;
    await this.#acquireLease(node, publicIp, 'vxlan', vxlanData(netConf.vni, ''));
    const network = this.#ensureNetwork(networkName, subnet, netConf.vni);
    const drMac = this.#machine.hns
      .policies(network.id)
      .find(
        (p): p is Extract<HnsNetworkPolicy, { Type: 'DrMacAddress' }> => p.Type === 'DrMacAddress',
      )?.Settings.Address;
    if (!drMac)
      throw new Fatal(`Error registering network: cannot parse DR MAC : invalid MAC address`);
    const leaseIp = await this.#acquireLease(
      await this.#readNode(),
      publicIp,
      'vxlan',
      vxlanData(netConf.vni, drMac.toLowerCase().replaceAll('-', ':')),
    );
    Object.assign(this.#status, {
      network: networkName,
      subnet,
      vtepMac: drMac,
      publicIp: leaseIp,
    });
    await this.#writeSubnetFile(
      subnetFile,
      netConf.network,
      subnet,
      bool('ip-masq'),
      adapterMtu - vxlanOverhead,
    );
    this.#status.phase = 'running';
    this.#log('I', 'main.go', 'Running backend.');
    await this.#watchLeases(networkName, netConf.vni);
    return 0;
  }

  /**
   * The host-gw backend (hostgw_windows.go New and RegisterNetwork, route_network_windows.go):
   * refused behind NAT (a public IP other than the interface's); the lease (backend-type
   * host-gw, no backend data); the L2Bridge network on the lease with gateway .1, kept when one
   * of that name has the subnet and gateway, else deleted and made again; the bridge endpoint
   * `<name>_ep` at .2, kept when it exists (on this network, with that address), attached to the
   * host; forwarding on the host's vNIC and the endpoint's; the subnet file with the interface's
   * MTU; then one host route per remote host-gw lease, put back every 10 s when missing.
   */
  async #runHostGw(
    netConf: FlannelNetConf,
    iface: { name: string; address: string },
    publicIp: string,
    subnetFile: string,
    ipMasq: boolean,
  ): Promise<number> {
    if (publicIp !== iface.address)
      throw new Fatal(
        "Error fetching backend: your PublicIP differs from interface IP, meaning that probably you're on a NAT, which is not supported by host-gw backend",
      );
    const name = netConf.name ?? hostGwDefaultName;
    this.#log('I', 'hostgw_windows.go', `HOST-GW config: {Name:${name} DNSServerList:}`);
    const node = await this.#readNode();
    const subnet = this.#leaseSubnet(node, netConf);
    const leaseIp = await this.#acquireLease(node, publicIp, 'host-gw', hostGwBackendData);
    const cidr = parseIpv4Cidr(subnet)!;
    const gateway = formatIpv4(cidr.network + 1);
    const bridgeAddress = formatIpv4(cidr.network + 2);
    const hns = this.#machine.hns;
    let network = hns.find(name);
    const keep =
      network !== undefined &&
      hns.subnets(network.id).some((s) => s.addressPrefix === subnet && s.gateway === gateway);
    if (network && keep) this.#log('I', 'hostgw_windows.go', `Found existing HNSNetwork ${name}`);
    else {
      if (network) {
        hns.remove(network.id);
        this.#log('I', 'hostgw_windows.go', `Deleted stale HNSNetwork ${name}`);
      }
      network = hns.ensure(name, 'L2Bridge', [{ addressPrefix: subnet, gateway }], {
        managementIp: this.#machine.address,
      });
      this.#log('I', 'hostgw_windows.go', `Created HNSNetwork ${name}`);
    }
    const endpointName = `${name}_ep`;
    let endpoint = hns.findEndpoint(endpointName);
    if (endpoint && !(endpoint.networkId === network.id && endpoint.ip === bridgeAddress)) {
      hns.removeEndpoint(endpoint.id);
      this.#log('I', 'hostgw_windows.go', `Deleted stale bridge HNSEndpoint ${endpointName}`);
      endpoint = undefined;
    }
    if (!endpoint) {
      endpoint = hns.createHostEndpoint(network.id, endpointName, bridgeAddress);
      this.#log('I', 'hostgw_windows.go', `Created bridge HNSEndpoint ${endpointName}`);
    }
    hns.attachToHost(endpoint.id);
    this.#log(
      'I',
      'hostgw_windows.go',
      `Attached bridge endpoint ${endpointName} to host successfully`,
    );
    // The host's vNIC (the management IP's interface) carries the routes; both forward.
    const vnic = ipConfiguration(this.#machine).ipAddresses.find(
      (r) => r.address === this.#machine.address,
    )!;
    const forwarding = [vnic.interfaceAlias, `vEthernet (${endpointName})`];
    for (const alias of forwarding)
      this.#log('I', 'hostgw_windows.go', `Enabled forwarding on ${alias}`);
    Object.assign(this.#status, {
      network: name,
      subnet,
      publicIp: leaseIp,
      bridgeEndpoint: { name: endpointName, ip: bridgeAddress },
      forwarding,
      interfaceIndex: vnic.interfaceIndex,
    });
    await this.#writeSubnetFile(subnetFile, netConf.network, subnet, ipMasq, adapterMtu);
    this.#status.phase = 'running';
    this.#log('I', 'main.go', 'Running backend.');
    await this.#watchHostGwLeases(vnic.interfaceIndex);
    return 0;
  }

  /**
   * route_network_windows.go Run: for each remote host-gw lease a route `podCIDR via public IP`
   * on the vNIC, replacing one to that prefix via another gateway; a lease gone removes its
   * route (when it is the expected one); every 10 s a route of the list that went missing is
   * made again (checkSubnetExistInRoutes). Leases of other backends are ignored.
   */
  async #watchHostGwLeases(interfaceIndex: number): Promise<void> {
    const nodes = new Map<string, k8s.V1Node>();
    const table = ipRoutes(this.#machine);
    // The routes it made (n.routes), by destination.
    const held = new Map<string, IpRoute>();
    const apply = () => {
      const want = new Map<string, IpRoute>();
      for (const node of nodes.values()) {
        if (node.metadata?.name === this.#nodeName) continue;
        const lease = remoteHostGwLease(node);
        if (!lease) continue;
        want.set(lease.subnet, {
          destinationPrefix: lease.subnet,
          nextHop: lease.publicIp,
          interfaceIndex,
        });
      }
      for (const [prefix, route] of held) {
        if (want.has(prefix) && sameRoute(want.get(prefix)!, route)) continue;
        if (!want.has(prefix)) {
          this.#log('I', 'route_network_windows.go', `Subnet removed: ${prefix}`);
          if (table.remove(route))
            this.#log(
              'I',
              'route_network_windows.go',
              `Removing existing route ${prefix} via ${route.nextHop}`,
            );
        }
        held.delete(prefix);
      }
      for (const [prefix, route] of want) {
        if (held.has(prefix)) continue;
        const existing = table.to(interfaceIndex, prefix)[0];
        if (existing && !sameRoute(existing, route)) {
          this.#log(
            'W',
            'route_network_windows.go',
            `Replacing existing route ${prefix} via ${existing.nextHop} with ${prefix} via ${route.nextHop}`,
          );
          table.remove(existing);
        }
        if (!existing || !sameRoute(existing, route)) {
          this.#log(
            'I',
            'route_network_windows.go',
            `Subnet added: ${prefix} via ${route.nextHop}`,
          );
          table.add(route);
        }
        held.set(prefix, route);
      }
      this.#status.routes = Object.fromEntries(
        [...held.values()].map((r) => [r.destinationPrefix, r.nextHop]),
      );
    };
    const check = async () => {
      while (!this.#signal.aborted) {
        await sleep(hostGwRouteCheckMs, undefined, { signal: this.#signal }).catch(() => {});
        if (this.#signal.aborted) return;
        const present = table.list();
        for (const route of held.values()) {
          if (present.some((r) => sameRoute(r, route))) continue;
          table.add(route);
          this.#log(
            'I',
            'route_network_windows.go',
            `Recovered route to ${route.destinationPrefix} via ${route.nextHop} on ${route.interfaceIndex}.`,
          );
        }
      }
    };
    const checking = check();
    await this.#watchNodes(nodes, apply);
    await checking;
  }

  async #withoutEtcd(): Promise<number> {
    this.#status.phase = 'waiting-for-etcd';
    while (!this.#signal.aborted) {
      this.#log(
        'E',
        'main.go',
        "Couldn't fetch network config: client: etcd cluster is unavailable or misconfigured; error #0: dial tcp 127.0.0.1:2379: connectex: No connection could be made because the target machine actively refused it.",
      );
      await sleep(this.#options.etcdRetryMs, undefined, { signal: this.#signal }).catch(() => {});
    }
    return 0;
  }

  /** --iface, as LookupExtIface: an address or a name of one of the host's interfaces. */
  #externalInterface(wanted: string[]): { name: string; address: string } {
    const rows = ipConfiguration(this.#machine).ipAddresses;
    if (wanted.length === 0) {
      const byDefault = ipConfiguration(this.#machine).defaultRoutes[0];
      const row =
        rows.find((r) => r.interfaceIndex === byDefault?.interfaceIndex) ??
        rows.find((r) => r.address === this.#machine.address);
      return { name: row!.interfaceAlias, address: row!.address };
    }
    for (const candidate of wanted) {
      const row = rows.find((r) => r.address === candidate || r.interfaceAlias === candidate);
      if (row) return { name: row.interfaceAlias, address: row.address };
    }
    throw new Fatal(
      `Failed to find any valid interface to use: failed to find interface: ${wanted.at(-1)}`,
    );
  }

  async #readNode(): Promise<k8s.V1Node> {
    const core = this.#kc.makeApiClient(k8s.CoreV1Api);
    try {
      return await core.readNode({ name: this.#nodeName }, this.#call());
    } catch (error) {
      throw new Fatal(
        `Error registering network: failed to acquire lease: node "${this.#nodeName}" not found: ${(error as Error).message}`,
      );
    }
  }

  /** The lease's subnet: the Node's podCIDR, inside net-conf's Network. */
  #leaseSubnet(node: k8s.V1Node, netConf: FlannelNetConf): string {
    const podCidr = node.spec?.podCIDR;
    if (!podCidr)
      throw new Fatal(
        `Error registering network: failed to acquire lease: node "${this.#nodeName}" pod cidr not assigned`,
      );
    const network = parseIpv4Cidr(netConf.network)!;
    const own = parseIpv4Cidr(podCidr);
    if (!own || !cidrCovers(network, own))
      throw new Fatal(
        `Error registering network: failed to acquire lease: subnet "${netConf.network}" specified in the flannel net config doesn't contain "${podCidr}" PodCIDR of the "${this.#nodeName}" node`,
      );
    return podCidr;
  }

  /** AcquireLease: the four annotations, patched only when one differs; returns the public IP. */
  async #acquireLease(
    node: k8s.V1Node,
    publicIp: string,
    backendType: 'vxlan' | 'host-gw',
    data: string,
  ): Promise<string> {
    const a = node.metadata?.annotations ?? {};
    const overwrite = a[flannelAnnotations.publicIpOverwrite];
    const ip = overwrite || publicIp;
    if (overwrite && a[flannelAnnotations.publicIp] !== overwrite)
      this.#log(
        'I',
        'kube.go',
        `Overriding public ip with '${overwrite}' from node annotation '${flannelAnnotations.publicIpOverwrite}'`,
      );
    const wanted = {
      [flannelAnnotations.backendType]: backendType,
      [flannelAnnotations.backendData]: data,
      [flannelAnnotations.publicIp]: ip,
      [flannelAnnotations.kubeSubnetManager]: 'true',
    };
    if (Object.entries(wanted).every(([k, v]) => a[k] === v)) return ip;
    const core = this.#kc.makeApiClient(k8s.CoreV1Api);
    // Retried every 3 s for 30 s, as kube.go's PollUntilContextTimeout.
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await core.patchNodeStatus(
          { name: this.#nodeName, body: { metadata: { annotations: wanted } } },
          this.#call('strategic'),
        );
        return ip;
      } catch (error) {
        if (Date.now() >= deadline)
          throw new Fatal(
            `Error registering network: failed to acquire lease: timeout contacting kube-api, failed to patch node "${this.#nodeName}". Error: ${(error as Error).message}`,
          );
        await sleep(3000, undefined, { signal: this.#signal });
      }
    }
  }

  /** newVXLANDevice and ensureNetwork: the Overlay network, re-made if its type or subnet differ. */
  #ensureNetwork(name: string, subnet: string, vni: number) {
    const hns = this.#machine.hns;
    const existing = hns.find(name);
    if (existing) {
      const prefix = hns.subnets(existing.id)[0]?.addressPrefix;
      if (existing.type === 'Overlay' && prefix === subnet) {
        this.#log('I', 'device_windows.go', `Found existing HostComputeNetwork ${name}`);
        return this.#withHostRoute(existing);
      }
      hns.remove(existing.id);
      this.#log('I', 'device_windows.go', `Deleted stale HostComputeNetwork ${name}`);
    }
    const cidr = parseIpv4Cidr(subnet)!;
    const created = hns.ensure(
      name,
      'Overlay',
      [{ addressPrefix: subnet, gateway: formatIpv4(cidr.network + 1) }],
      { vsid: vni, managementIp: this.#machine.address },
    );
    this.#log('I', 'device_windows.go', `Created HostComputeNetwork ${name}`);
    return this.#withHostRoute(created);
  }

  #withHostRoute<T extends { id: string }>(network: T): T {
    const hns = this.#machine.hns;
    if (!hns.policies(network.id).some((p) => p.Type === 'HostRoute'))
      hns.addPolicies(network.id, [{ Type: 'HostRoute', Settings: {} }]);
    return network;
  }

  async #writeSubnetFile(
    path: string,
    network: string,
    subnet: string,
    ipMasq: boolean,
    mtu: number,
  ) {
    const cidr = parseIpv4Cidr(subnet)!;
    const text = `FLANNEL_NETWORK=${network}\nFLANNEL_SUBNET=${formatIpv4(cidr.network + 1)}/${cidr.prefix}\nFLANNEL_MTU=${mtu}\nFLANNEL_IPMASQ=${ipMasq}\n`;
    const directory = path.slice(0, path.lastIndexOf('\\'));
    await this.#machine.fs.mkdir(directory, { recursive: true });
    await this.#machine.fs.writeFile(path, text);
    this.#log('I', 'main.go', `Wrote subnet file to ${path}`);
  }

  /** WatchLeases and handleSubnetEvents: one RemoteSubnetRoute per remote vxlan lease. */
  /**
   * Lists and watches every Node into `nodes` (the kube subnet manager's informer, with the
   * node's own credentials), calling `onChange` after the list and each event.
   */
  #watchNodes(nodes: Map<string, k8s.V1Node>, onChange: () => void): Promise<void> {
    const core = this.#kc.makeApiClient(k8s.CoreV1Api);
    return reflect<k8s.V1Node>({
      kc: this.#kc,
      path: '/api/v1/nodes',
      list: () => core.listNode({}, this.#call()),
      store: nodes,
      signal: this.#signal,
      watchTimeoutSeconds: this.#options.watchTimeoutSeconds,
      retryMinMs: this.#options.retryMinMs,
      retryMaxMs: this.#options.retryMaxMs,
      onChange,
      onFailure: (error) =>
        this.#log(
          'E',
          'reflector.go',
          `"Failed to watch" err="failed to list *v1.Node: ${(error as Error).message}"`,
        ),
    });
  }

  async #watchLeases(networkName: string, vni: number): Promise<void> {
    const nodes = new Map<string, k8s.V1Node>();
    // Node updates that change no lease (status heartbeats) change nothing, as kube.go's
    // handleUpdateLeaseEvent ignores them: only a change of some node's lease fields is applied.
    let leases: string | undefined;
    const apply = () => {
      let seen = '';
      for (const node of nodes.values()) {
        const a = node.metadata?.annotations ?? {};
        seen += `${node.metadata?.name}|${node.spec?.podCIDR}|${a[flannelAnnotations.kubeSubnetManager]}|${a[flannelAnnotations.backendType]}|${a[flannelAnnotations.backendData]}|${a[flannelAnnotations.publicIp]}\n`;
      }
      const network = this.#machine.hns.find(networkName);
      seen += network?.id ?? '';
      if (seen === leases) return;
      leases = seen;
      if (!network) {
        this.#log(
          'E',
          'vxlan_network_windows.go',
          `Unable to find network ${networkName}, error: Network name not found`,
        );
        return;
      }
      const want = new Map<string, HnsNetworkPolicy>();
      for (const node of nodes.values()) {
        if (node.metadata?.name === this.#nodeName) continue;
        const lease = remoteLease(node);
        if (!lease || lease.vtepMac === '') continue;
        if (lease.vni !== vni) continue;
        want.set(lease.subnet, {
          Type: 'RemoteSubnetRoute',
          Settings: {
            IsolationId: lease.vni,
            DistributedRouterMacAddress: lease.vtepMac.toLowerCase().replaceAll('-', ':'),
            ProviderAddress: lease.publicIp,
            DestinationPrefix: lease.subnet,
          },
        });
      }
      const held = this.#machine.hns
        .policies(network.id)
        .filter(
          (p): p is Extract<HnsNetworkPolicy, { Type: 'RemoteSubnetRoute' }> =>
            p.Type === 'RemoteSubnetRoute',
        );
      const stale = held.filter(
        (p) => JSON.stringify(want.get(p.Settings.DestinationPrefix)) !== JSON.stringify(p),
      );
      if (stale.length > 0) this.#machine.hns.removePolicies(network.id, stale);
      const missing = [...want.values()].filter(
        (p) => !held.some((h) => JSON.stringify(h) === JSON.stringify(p)),
      );
      if (missing.length > 0) this.#machine.hns.addPolicies(network.id, missing);
      this.#status.routes = Object.fromEntries(
        [...want.values()].map((p) => {
          const s = (p as Extract<HnsNetworkPolicy, { Type: 'RemoteSubnetRoute' }>).Settings;
          return [s.DestinationPrefix, s.ProviderAddress];
        }),
      );
    };
    await this.#watchNodes(nodes, apply);
  }
}
