/**
 * A network test world in namespaces (a "lab"): a LAN (a bridge in its own namespace, MTU 1500)
 * with node namespaces attached by veth at addresses from a documentation range (192.0.2.0/24),
 * pod namespaces on a bridge in their node, programs running inside them, and an API relay for
 * those that talk to the test cluster. Everything the lab makes is in namespaces named for this
 * process (netns-names.ts) and in a temporary directory it owns; teardown stops its programs and
 * deletes both, and is registered on the test so that it runs when the test fails too.
 *
 *   netns <lan>:  bridge br0 ── lan1 ═ eth0  netns <node lnx1>  192.0.2.11/24
 *                           └─ lan2 ═ eth0  netns <node lnx2>  192.0.2.12/24
 *   netns <node>: bridge cni0 ── vpN ═ eth0  netns <pod>  10.244.x.y/24, default via .1
 */
import { join } from 'node:path';
import { formatIpv4, parseIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import type { ComponentProcess } from '../cluster/component-process.ts';
import { createOwnedTempDir, removeOwnedTempDir } from '../cluster/owned-temp-dir.ts';
import { ApiRelay } from './api-relay.ts';
import { addAddress, addBridge, addRoute, addVethPair, setLinkUp, setMaster } from './devices.ts';
import { createNetns, deleteNetns, sweepStaleNetns } from './netns.ts';
import { checkLabel, netnsName } from './netns-names.ts';
import { type NetnsProcessSpec, startInNetns } from './netns-process.ts';

/** The LAN's range: TEST-NET-1 (RFC 5737), never routed anywhere. */
export const defaultLanCidr = '192.0.2.0/24';
/** The LAN's MTU, an Ethernet underlay's. */
export const lanMtu = 1500;
/** The name of a node's interface on the LAN, and of a pod's interface. */
export const nodeUplink = 'eth0';
export const podInterface = 'eth0';

export interface LabNode {
  label: string;
  netns: string;
  /** The node's LAN interface (eth0) and its address on the LAN. */
  uplink: string;
  address: string;
  prefixLength: number;
  mtu: number;
}

export interface LabPod {
  label: string;
  netns: string;
  /** The pod's address (without the prefix) and its interface. */
  address: string;
  iface: string;
  /** The node-side end of its veth. */
  hostVeth: string;
}

export interface PodNamespaceOptions {
  label: string;
  /** A bridge in the node's namespace (made with addBridge, or by a CNI plugin). */
  bridge: string;
  /** The pod's address with the subnet's prefix, e.g. 10.244.5.10/24. */
  address: string;
  /** The default gateway (the bridge's address, e.g. 10.244.5.1). */
  gateway: string;
  mtu: number;
}

let nextLab = 0;
const live = new Set<NetLab>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Namespaces are deleted by netns.ts's own exit hook; the programs are killed here.
  process.on('exit', () => {
    for (const lab of live) lab.killNow();
  });
}

export class NetLab {
  readonly id: number;
  /** The lab's own directory: logs, sockets, config files. */
  readonly dir: string;
  /** The LAN namespace, holding bridge br0. */
  readonly lan: string;
  readonly lanCidr: string;
  readonly #namespaces: string[] = [];
  readonly #processes: ComponentProcess[] = [];
  readonly #nodes = new Map<string, LabNode>();
  #lanPorts = 0;
  #podVeths = 0;
  #relay: ApiRelay | undefined;
  #tornDown = false;

  private constructor(id: number, dir: string, lanCidr: string) {
    this.id = id;
    this.dir = dir;
    this.lanCidr = lanCidr;
    this.lan = netnsName({ ownerPid: process.pid, lab: id, label: 'lan' });
  }

  /**
   * Makes the LAN. With `t`, teardown runs after the test whatever its outcome. Sweeps the
   * namespaces of test processes that died without cleaning up first.
   */
  static async create(
    t?: { after(fn: () => Promise<void>): void },
    options: { lanCidr?: string } = {},
  ): Promise<NetLab> {
    const lanCidr = options.lanCidr ?? defaultLanCidr;
    if (!parseIpv4Cidr(lanCidr)) throw new Error(`LAN range ${lanCidr} is not an IPv4 CIDR`);
    await sweepStaleNetns();
    const dir = await createOwnedTempDir('winfleet-netlab-');
    const lab = new NetLab(nextLab++, dir, lanCidr);
    live.add(lab);
    installExitHook();
    t?.after(() => lab.teardown());
    try {
      await lab.#createNetns(lab.lan);
      await addBridge(lab.lan, 'br0', lanMtu);
    } catch (error) {
      await lab.teardown();
      throw error;
    }
    return lab;
  }

  /** The namespace name for `label` in this lab. */
  netnsName(label: string): string {
    return netnsName({ ownerPid: process.pid, lab: this.id, label });
  }

  async #createNetns(name: string): Promise<void> {
    if (this.#tornDown) throw new Error(`lab ${this.id} is torn down`);
    this.#namespaces.push(name);
    await createNetns(name);
  }

  /** A bare namespace of this lab (loopback up), removed at teardown. */
  async addNamespace(label: string): Promise<string> {
    checkLabel(label);
    const name = this.netnsName(label);
    await this.#createNetns(name);
    return name;
  }

  /** Deletes one of this lab's namespaces before teardown (a pod that went away). */
  async removeNamespace(name: string): Promise<void> {
    const index = this.#namespaces.indexOf(name);
    if (index < 0) throw new Error(`netns ${name} is not one of lab ${this.id}'s`);
    await deleteNetns(name);
    this.#namespaces.splice(index, 1);
  }

  /** A node namespace attached to the LAN at `address` (inside the LAN's range). */
  async addNode(label: string, options: { address: string }): Promise<LabNode> {
    if (this.#nodes.has(label)) throw new Error(`lab ${this.id} already has node ${label}`);
    const lan = parseIpv4Cidr(this.lanCidr)!;
    const address = parseIpv4(options.address);
    if (
      address === undefined ||
      parseIpv4Cidr(`${options.address}/${lan.prefix}`)!.network !== lan.network
    )
      throw new Error(`node address ${options.address} is not in the LAN's range ${this.lanCidr}`);
    const netns = await this.addNamespace(label);
    const lanPort = `lan${++this.#lanPorts}`;
    await addVethPair({
      netns: this.lan,
      name: lanPort,
      peerNetns: netns,
      peerName: nodeUplink,
      mtu: lanMtu,
    });
    await setMaster(this.lan, lanPort, 'br0');
    await setLinkUp(this.lan, lanPort);
    await addAddress(netns, nodeUplink, `${formatIpv4(address)}/${lan.prefix}`);
    await setLinkUp(netns, nodeUplink);
    const node: LabNode = {
      label,
      netns,
      uplink: nodeUplink,
      address: formatIpv4(address),
      prefixLength: lan.prefix,
      mtu: lanMtu,
    };
    this.#nodes.set(label, node);
    return node;
  }

  /**
   * A pod namespace wired by hand: a veth from `node`'s bridge to the pod's eth0, the pod's
   * address, and a default route via the gateway. (Linux pods of a flannel node are wired by
   * the real CNI plugins instead: linux-flannel-node.ts.)
   */
  async addPodNamespace(node: { netns: string }, options: PodNamespaceOptions): Promise<LabPod> {
    const cidr = parseIpv4Cidr(options.address);
    if (!cidr) throw new Error(`pod address ${options.address} is not address/prefix`);
    const netns = await this.addNamespace(options.label);
    const hostVeth = `vp${++this.#podVeths}`;
    await addVethPair({
      netns: node.netns,
      name: hostVeth,
      peerNetns: netns,
      peerName: podInterface,
      mtu: options.mtu,
    });
    await setMaster(node.netns, hostVeth, options.bridge);
    await setLinkUp(node.netns, hostVeth);
    await addAddress(netns, podInterface, options.address);
    await setLinkUp(netns, podInterface);
    await addRoute(netns, { dst: 'default', via: options.gateway, dev: podInterface });
    return {
      label: options.label,
      netns,
      address: formatIpv4(cidr.address),
      iface: podInterface,
      hostVeth,
    };
  }

  /** Starts a program in one of the lab's namespaces; it is stopped at teardown. */
  start(spec: Omit<NetnsProcessSpec, 'logFile'> & { logFile?: string }): ComponentProcess {
    if (this.#tornDown) throw new Error(`lab ${this.id} is torn down`);
    const logFile = spec.logFile ?? join(this.dir, `${spec.name.replace(/[^\w.-]+/g, '_')}.log`);
    const proc = startInNetns({ ...spec, logFile });
    this.#processes.push(proc);
    return proc;
  }

  /**
   * The lab's API relay to the API server on 127.0.0.1:`apiServerPort` (started on first use);
   * `relay.enter(netns)` gives a namespace https://127.0.0.1:6443.
   */
  async apiRelay(apiServerPort: number): Promise<ApiRelay> {
    this.#relay ??= await ApiRelay.start({
      apiServerPort,
      socketPath: join(this.dir, 'api.sock'),
      logDir: this.dir,
    });
    return this.#relay;
  }

  /** Stops every program, deletes every namespace (pods and nodes before the LAN), removes the directory. */
  async teardown(): Promise<void> {
    if (this.#tornDown) return;
    this.#tornDown = true;
    const errors: string[] = [];
    await Promise.all(this.#processes.map((p) => p.stop(3000)));
    if (this.#relay) await this.#relay.stop();
    for (const name of [...this.#namespaces].reverse()) {
      try {
        await deleteNetns(name);
      } catch (error) {
        errors.push((error as Error).message);
      }
    }
    await removeOwnedTempDir(this.dir);
    live.delete(this);
    if (errors.length > 0) throw new Error(`lab ${this.id} teardown: ${errors.join('; ')}`);
  }

  /** Kills the lab's programs at once (from an exit hook). */
  killNow(): void {
    for (const p of this.#processes) p.killNow();
    this.#relay?.killNow();
  }
}
