/**
 * A simulated Windows host's HNS model (sim/hosts/hns-networks.ts), rendered into a lab node
 * namespace so that its pods' packets meet real Linux nodes on the lab's LAN (test code, not
 * product). The simulated host itself runs in the test process, not in a namespace: only what
 * its HNS model holds for one Overlay network (flanneld's flannel.<VNI>) is rendered, and it is
 * rendered again whenever the model changes (HnsNetworks.onChange), by comparing what the model
 * wants with what was rendered last (planRender) and applying the difference.
 *
 * What it stands for, one HNS/VFP behaviour each (hcsshim hcn/hcnnetwork.go, hcnpolicy.go;
 * flannel pkg/backend/vxlan/device_windows.go, vxlan_network_windows.go):
 * - the Overlay network's VXLAN encapsulation: a VXLAN device named after the network, VNI = the
 *   network's VSID, UDP 4789, no learning, local = the node's LAN address, its MAC = the
 *   network's DrMacAddress policy (HNS answers and sources the overlay's routed frames with its
 *   distributed router's MAC, which flanneld publishes as the node's VtepMAC), MTU = the LAN's
 *   less VXLAN's 50;
 * - the network's subnet gateway (its first address, as flanneld creates the network) on a
 *   bridge the pods hang off, the node forwarding between it and the VXLAN device;
 * - one pod namespace per HNS endpoint on the network: its address with the subnet's prefix, a
 *   default route via the gateway, and the MTU FLANNEL_MTU of the host's subnet.env (what
 *   flannel leased for pods; on Windows the vNIC's MTU is HNS's to set);
 * - one RemoteSubnetRoute policy (IsolationId = the VSID) as Linux carries a remote lease:
 *   `DestinationPrefix via <its .0> onlink`, the permanent neighbour `.0 →
 *   DistributedRouterMacAddress`, the FDB entry `→ ProviderAddress` (devices.addRemoteSubnet).
 * - the network's load balancers (what kube-proxy winkernel programs per Service port, VFP's
 *   load balancing of pod traffic to a cluster IP): in the node namespace's nat table, packets
 *   from the pods (in on the gateway bridge) to frontend VIP:port of the protocol are DNATed to
 *   one of the endpoints at the internal port (iptables statistic, equal shares), and, when the
 *   load balancer has a SourceVIP, SNATed to it on their way out (conntrack's DNAT state), as a
 *   non-DSR VFP load balancer rewrites the source of what it balances; the replies are undone by
 *   conntrack. The whole table is written again on every change of the network's load balancers.
 * What it does not stand for: VFP's rules themselves (layers, the encap rule per remote
 * subnet, the DR's ARP answers), the Hyper-V vSwitch and vNICs, endpoint policies
 * (OutBoundNAT, SDNRoute, ACLs), the HostRoute policy and host ↔ pod traffic (the host is not in
 * the namespace), DSR, session affinity, NodePorts and external IPs, the source VIP's own
 * HNS endpoint (so a backend on this same node, answering the source VIP, is not carried),
 * how VFP spreads connections over the endpoints and what becomes of a flow when its load
 * balancer changes (conntrack keeps it here), the endpoints' MACs, the network's own
 * ProviderAddress policy (the simulated host's address is a loopback one; the VTEP here uses the
 * node's LAN address, which the node's flanneld is told through public-ip-overwrite), and a
 * RemoteSubnetRoute of another IsolationId (listed as ignored, not rendered). Only real Windows
 * proves that VFP does what this rendering does (docs/fidelity-ledger.md).
 */
import { formatIpv4Cidr, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import {
  type HnsEndpoint,
  type HnsNetworkPolicy,
  type HnsNetworks,
  hnsProtocol,
} from '../hosts/hns-networks.ts';
import type { SimMachine } from '../hosts/machine.ts';
import { flannelSubnetFile, parseFlannelSubnetEnv } from '../hosts/sim-cni.ts';
import { runInNetns, toolPath } from './command.ts';
import {
  addAddress,
  addBridge,
  addRemoteSubnet,
  addVxlanDevice,
  deleteLink,
  removeRemoteSubnet,
  setSysctl,
} from './devices.ts';
import { vxlanOverhead, windowsVxlan } from './flannel-config.ts';
import type { LabNode, LabPod, NetLab } from './net-lab.ts';

/** The bridge holding the network's subnet gateway in the node namespace. */
export const gatewayBridge = 'hnsgw0';

/** The Overlay network as rendered: a change to any field re-makes everything. */
export interface OverlayState {
  networkId: string;
  /** The network's name, which the VXLAN device is named after (flannel.4096). */
  name: string;
  /** The network's VSID: the VXLAN VNI. */
  vni: number;
  /** The DrMacAddress policy's MAC, in Linux notation (lower case, colons). */
  drMac: string;
  /** The network's subnet (10.244.3.0/24) and gateway (10.244.3.1). */
  subnet: string;
  gateway: string;
}

/** One RemoteSubnetRoute policy as rendered. */
export interface RemoteRouteState {
  subnet: string;
  vtepMac: string;
  publicIp: string;
}

/** One HNS endpoint on the network as rendered: a pod namespace. */
export interface EndpointState {
  id: string;
  ip: string;
  /** The address with the subnet's prefix (10.244.3.2/24). */
  cidr: string;
  gateway: string;
  mtu: number;
}

/** One frontend of one HNS load balancer on the network, as rendered: nat rules. */
export interface LoadBalancerState {
  /** The frontend VIP (a Service's cluster IP) and port. */
  vip: string;
  port: number;
  protocol: 'tcp' | 'udp';
  /** The endpoints' addresses (sorted) and port. */
  endpoints: string[];
  targetPort: number;
  /** The SourceVIP packets leave with, if the load balancer has one. */
  sourceVip?: string;
}

export interface WindowsNodeState {
  overlay?: OverlayState;
  remotes: RemoteRouteState[];
  endpoints: EndpointState[];
  loadBalancers: LoadBalancerState[];
  /** Policies the rendering cannot carry, and why (for a test's message). */
  ignored: string[];
}

/** What rendering reads of the HNS model. */
export type HnsView = Pick<
  HnsNetworks,
  'find' | 'subnets' | 'policies' | 'vsid' | 'endpoints' | 'loadBalancers'
>;

/** A MAC in HNS's notation (0E-2A-…) or Linux's, in Linux's (0e:2a:…); throws otherwise. */
export function linuxMac(mac: string): string {
  const normal = mac.toLowerCase().replaceAll('-', ':');
  if (!/^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/.test(normal)) throw new Error(`${mac} is not a MAC`);
  return normal;
}

export const emptyState: WindowsNodeState = {
  remotes: [],
  endpoints: [],
  loadBalancers: [],
  ignored: [],
};

const ipv4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const renderedProtocols: Record<number, LoadBalancerState['protocol']> = {
  [hnsProtocol.TCP]: 'tcp',
  [hnsProtocol.UDP]: 'udp',
};

/**
 * What the model wants rendered for network `networkName`: nothing without the network (or
 * without a VSID, a DrMacAddress or a subnet: not an Overlay network flanneld made), else the
 * network, its RemoteSubnetRoutes of its own VSID and its endpoints with pod MTU `podMtu`.
 */
export function desiredState(hns: HnsView, networkName: string, podMtu: number): WindowsNodeState {
  const network = hns.find(networkName);
  if (network?.type.toLowerCase() !== 'overlay') return emptyState;
  const vni = hns.vsid(network.id);
  const policies = hns.policies(network.id);
  const dr = policies.find(
    (p): p is Extract<HnsNetworkPolicy, { Type: 'DrMacAddress' }> => p.Type === 'DrMacAddress',
  );
  const hnsSubnet = hns.subnets(network.id)[0];
  const subnet = hnsSubnet && parseIpv4Cidr(hnsSubnet.addressPrefix);
  if (vni === undefined || !dr || !hnsSubnet || !subnet) return emptyState;
  const overlay: OverlayState = {
    networkId: network.id,
    name: network.name,
    vni,
    drMac: linuxMac(dr.Settings.Address),
    subnet: formatIpv4Cidr(subnet),
    gateway: hnsSubnet.gateway,
  };
  const remotes: RemoteRouteState[] = [];
  const ignored: string[] = [];
  for (const policy of policies) {
    if (policy.Type !== 'RemoteSubnetRoute') continue;
    const s = policy.Settings;
    const remote = parseIpv4Cidr(s.DestinationPrefix);
    if (s.IsolationId !== vni) {
      ignored.push(`${s.DestinationPrefix}: IsolationId ${s.IsolationId} is not the VSID ${vni}`);
      continue;
    }
    if (!remote || remote.address !== remote.network) {
      ignored.push(`${s.DestinationPrefix}: not a network prefix`);
      continue;
    }
    remotes.push({
      subnet: formatIpv4Cidr(remote),
      vtepMac: linuxMac(s.DistributedRouterMacAddress),
      publicIp: s.ProviderAddress,
    });
  }
  const endpoints = hns
    .endpoints()
    .filter((e: HnsEndpoint) => e.networkId === network.id)
    .map((e) => ({
      id: e.id,
      ip: e.ip,
      cidr: `${e.ip}/${subnet.prefix}`,
      gateway: hnsSubnet.gateway,
      mtu: podMtu,
    }));
  const loadBalancers: LoadBalancerState[] = [];
  for (const lb of hns.loadBalancers()) {
    if (lb.networkId !== network.id) continue;
    const protocol = renderedProtocols[lb.protocol];
    const what = `load balancer ${lb.frontendVips.join(',')}:${lb.externalPort}`;
    if (!protocol) {
      ignored.push(`${what}: protocol ${lb.protocol} is not rendered`);
      continue;
    }
    const endpoints = [...new Set(lb.endpoints)].sort();
    if (!endpoints.every((e) => ipv4.test(e)) || (lb.sourceVip && !ipv4.test(lb.sourceVip))) {
      ignored.push(`${what}: not IPv4`);
      continue;
    }
    for (const vip of lb.frontendVips.filter((v) => ipv4.test(v)))
      loadBalancers.push({
        vip,
        port: lb.externalPort,
        protocol,
        endpoints,
        targetPort: lb.internalPort,
        ...(lb.sourceVip ? { sourceVip: lb.sourceVip } : {}),
      });
  }
  const bySubnet = (a: RemoteRouteState, b: RemoteRouteState) => a.subnet.localeCompare(b.subnet);
  const byId = (a: EndpointState, b: EndpointState) => a.id.localeCompare(b.id);
  const lbKey = (l: LoadBalancerState) => `${l.protocol} ${l.vip}:${l.port}`;
  return {
    overlay,
    remotes: remotes.sort(bySubnet),
    endpoints: endpoints.sort(byId),
    loadBalancers: loadBalancers.sort((a, b) => lbKey(a).localeCompare(lbKey(b))),
    ignored,
  };
}

/**
 * The node namespace's nat table for these load balancers, as iptables-restore reads it (the
 * table is replaced whole): DNAT of the pods' packets (in on `podBridge`) to each frontend,
 * one endpoint each by equal chance, and SNAT to the SourceVIP of what was DNATed for it.
 */
export function natTable(loadBalancers: LoadBalancerState[], podBridge: string): string {
  const lines = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':INPUT ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
  ];
  for (const lb of loadBalancers) {
    const match = `-i ${podBridge} -d ${lb.vip}/32 -p ${lb.protocol} -m ${lb.protocol} --dport ${lb.port}`;
    lb.endpoints.forEach((endpoint, i) => {
      const left = lb.endpoints.length - i;
      const chance =
        left > 1 ? ` -m statistic --mode random --probability ${(1 / left).toFixed(5)}` : '';
      lines.push(
        `-A PREROUTING ${match}${chance} -j DNAT --to-destination ${endpoint}:${lb.targetPort}`,
      );
    });
    if (lb.sourceVip)
      lines.push(
        `-A POSTROUTING -p ${lb.protocol} -m conntrack --ctstate DNAT --ctorigdst ${lb.vip}/32 --ctorigdstport ${lb.port} -j SNAT --to-source ${lb.sourceVip}`,
      );
  }
  lines.push('COMMIT', '');
  return lines.join('\n');
}

export type RenderStep =
  | { op: 'remove-pod'; endpoint: EndpointState }
  | { op: 'remove-remote'; remote: RemoteRouteState }
  | { op: 'remove-overlay'; overlay: OverlayState }
  | { op: 'add-overlay'; overlay: OverlayState }
  | { op: 'add-remote'; remote: RemoteRouteState }
  | { op: 'add-pod'; endpoint: EndpointState }
  | { op: 'load-balancers'; loadBalancers: LoadBalancerState[] };

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The steps from what was rendered (`from`) to what the model wants (`to`): removals first
 * (pods, remote routes, the network), then additions (the network, remote routes, pods). A
 * changed network (another id, VNI, DR MAC or subnet) removes and re-adds everything on it; a
 * changed remote route or endpoint is removed and added again.
 */
export function planRender(from: WindowsNodeState, to: WindowsNodeState): RenderStep[] {
  const overlayChanged = !same(from.overlay, to.overlay);
  const keep = <T>(list: T[], other: T[]) =>
    overlayChanged ? [] : list.filter((x) => other.some((y) => same(x, y)));
  const keptRemotes = keep(from.remotes, to.remotes);
  const keptPods = keep(from.endpoints, to.endpoints);
  const steps: RenderStep[] = [];
  for (const endpoint of from.endpoints)
    if (!keptPods.includes(endpoint)) steps.push({ op: 'remove-pod', endpoint });
  for (const remote of from.remotes)
    if (!keptRemotes.includes(remote)) steps.push({ op: 'remove-remote', remote });
  if (overlayChanged && from.overlay) steps.push({ op: 'remove-overlay', overlay: from.overlay });
  if (overlayChanged && to.overlay) steps.push({ op: 'add-overlay', overlay: to.overlay });
  const loadBalancers = to.overlay ? to.loadBalancers : [];
  if (!same(from.loadBalancers, loadBalancers)) steps.push({ op: 'load-balancers', loadBalancers });
  if (!to.overlay) return steps;
  for (const remote of to.remotes)
    if (!keptRemotes.some((r) => same(r, remote))) steps.push({ op: 'add-remote', remote });
  for (const endpoint of to.endpoints)
    if (!keptPods.some((e) => same(e, endpoint))) steps.push({ op: 'add-pod', endpoint });
  return steps;
}

export interface WindowsLabNodeOptions {
  lab: NetLab;
  /** The simulated host whose HNS model is rendered. */
  machine: SimMachine;
  /** The node namespace's label, and its address on the LAN. */
  label: string;
  address: string;
  /** The HNS network rendered (default flanneld's flannel.4096). */
  networkName?: string;
}

/** A simulated Windows host's HNS model, rendered into a lab node and kept so. */
export class WindowsLabNode {
  readonly node: LabNode;
  readonly networkName: string;
  readonly #lab: NetLab;
  readonly #machine: SimMachine;
  #rendered: WindowsNodeState = emptyState;
  readonly #pods = new Map<string, LabPod>();
  #podCount = 0;
  #queue: Promise<void> = Promise.resolve();
  #pending = false;
  #error: Error | undefined;
  #unsubscribe: () => void = () => {};

  private constructor(o: WindowsLabNodeOptions, node: LabNode) {
    this.#lab = o.lab;
    this.#machine = o.machine;
    this.node = node;
    this.networkName = o.networkName ?? `flannel.${windowsVxlan.vni}`;
  }

  /** Makes the node namespace on the LAN, renders the model as it is, and follows it. */
  static async start(o: WindowsLabNodeOptions): Promise<WindowsLabNode> {
    const node = await o.lab.addNode(o.label, { address: o.address });
    await setSysctl(node.netns, 'net.ipv4.ip_forward', '1');
    const rendered = new WindowsLabNode(o, node);
    rendered.#unsubscribe = o.machine.hns.onChange(() => rendered.#schedule());
    rendered.#schedule();
    await rendered.settled();
    return rendered;
  }

  /** What is rendered now (the model as of the last render). */
  get state(): WindowsNodeState {
    return structuredClone(this.#rendered);
  }

  /** The pod namespace rendered for the endpoint with address `ip`, if there is one. */
  pod(ip: string): LabPod | undefined {
    const endpoint = this.#rendered.endpoints.find((e) => e.ip === ip);
    return endpoint && this.#pods.get(endpoint.id);
  }

  /** Resolves once every change heard so far is rendered; rejects with a render's failure. */
  async settled(): Promise<void> {
    for (let i = 0; i < 100 && this.#pending; i++) await this.#queue;
    await this.#queue;
    if (this.#error) throw this.#error;
  }

  /**
   * Throws away what is rendered (the pod namespaces, the VXLAN device with its routes,
   * neighbours and FDB entries, the gateway bridge) and renders the model again: for a test
   * that disturbed the namespace by hand (a changed device MAC flushes its neighbours).
   */
  async rerender(): Promise<void> {
    await this.settled();
    this.#queue = this.#queue.then(() =>
      this.#guarded(async () => {
        const from = this.#rendered;
        const devices = { from: from.overlay?.name };
        for (const step of planRender(from, emptyState))
          if (step.op !== 'remove-remote') await this.#apply(step, devices);
        this.#rendered = emptyState;
        await this.#renderOnce();
      }),
    );
    await this.settled();
  }

  /** Stops following the model (the lab's teardown removes the namespaces). */
  stop(): void {
    this.#unsubscribe();
  }

  #schedule(): void {
    if (this.#pending) return;
    this.#pending = true;
    this.#queue = this.#queue.then(() => {
      this.#pending = false;
      return this.#guarded(() => this.#renderOnce());
    });
  }

  /** Runs a render unless one failed; a failure is kept for settled() and stops rendering. */
  async #guarded(render: () => Promise<void>): Promise<void> {
    if (this.#error) return;
    try {
      await render();
    } catch (error) {
      this.#error = new Error(
        `rendering the HNS network ${this.networkName} of ${this.#machine.address} into ${this.node.netns}: ${(error as Error).message}`,
      );
    }
  }

  async #podMtu(): Promise<number> {
    const text = await this.#machine.fs.tryReadFile(flannelSubnetFile);
    return text ? parseFlannelSubnetEnv(text.toString('utf8')).mtu : this.node.mtu - vxlanOverhead;
  }

  async #renderOnce(): Promise<void> {
    const want = desiredState(this.#machine.hns, this.networkName, await this.#podMtu());
    const devices = { from: this.#rendered.overlay?.name, to: want.overlay?.name };
    for (const step of planRender(this.#rendered, want)) await this.#apply(step, devices);
    this.#rendered = structuredClone(want);
  }

  async #apply(step: RenderStep, devices: { from?: string; to?: string }): Promise<void> {
    const netns = this.node.netns;
    switch (step.op) {
      case 'remove-pod': {
        const pod = this.#pods.get(step.endpoint.id);
        if (pod) await this.#lab.removeNamespace(pod.netns);
        this.#pods.delete(step.endpoint.id);
        return;
      }
      case 'remove-remote':
        await removeRemoteSubnet(netns, { ...step.remote, dev: devices.from! });
        return;
      case 'remove-overlay':
        await deleteLink(netns, step.overlay.name);
        await deleteLink(netns, gatewayBridge);
        return;
      case 'add-overlay': {
        const o = step.overlay;
        const prefix = parseIpv4Cidr(o.subnet)!.prefix;
        const mtu = this.node.mtu - vxlanOverhead;
        await addBridge(netns, gatewayBridge, mtu);
        await addAddress(netns, gatewayBridge, `${o.gateway}/${prefix}`);
        await addVxlanDevice(netns, {
          name: o.name,
          vni: o.vni,
          port: windowsVxlan.port,
          local: this.node.address,
          dev: this.node.uplink,
          mac: o.drMac,
          mtu,
        });
        return;
      }
      case 'add-remote':
        await addRemoteSubnet(netns, { ...step.remote, dev: devices.to! });
        return;
      case 'load-balancers':
        // Only the tables named are replaced; the nat table is the rendering's alone.
        await runInNetns(netns, toolPath('iptables-restore'), ['--wait', '10'], {
          input: natTable(step.loadBalancers, gatewayBridge),
          timeoutMs: 20_000,
        });
        return;
      case 'add-pod': {
        const e = step.endpoint;
        const pod = await this.#lab.addPodNamespace(this.node, {
          label: `${this.node.label}-p${++this.#podCount}`,
          bridge: gatewayBridge,
          address: e.cidr,
          gateway: e.gateway,
          mtu: e.mtu,
        });
        this.#pods.set(e.id, pod);
        return;
      }
    }
  }
}
