/**
 * A Linux node running the real flanneld (built by hack/build-netlab.sh) in its lab namespace,
 * for a kwok Linux Node of the test cluster (the controller manager gives it spec.podCIDR):
 *   flanneld --kube-subnet-mgr --kubeconfig-file=<relay kubeconfig> --iface=eth0
 *            --iptables-forward-rules=false --subnet-file=… --net-config-path=…
 * with NODE_NAME set and no --ip-masq. flanneld acquires the Node's lease (writes its four
 * annotations), creates flannel.<VNI> and programs a route, neighbour and FDB entry per remote
 * lease. Its Linux pods are wired by the real bridge and host-local CNI plugins with the
 * delegate configuration flannel's CNI plugin would render from flanneld's subnet.env
 * (flannel-config.ts: the plugin itself is refused by the module proxy).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { cidrContains, formatIpv4Cidr, parseIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import type { ComponentProcess } from '../cluster/component-process.ts';
import { podCidr } from '../cluster/start-cluster.ts';
import { cniAdd } from './cni.ts';
import { systemPath } from './command.ts';
import {
  type FlannelBackend,
  flannelDelegateConf,
  parseSubnetEnv,
  renderNetConf,
  type SubnetEnv,
} from './flannel-config.ts';
import type { LabNode, LabPod, NetLab } from './net-lab.ts';
import { waitForLogLine } from './netns-process.ts';

export interface LinuxFlannelNodeOptions {
  lab: NetLab;
  node: LabNode;
  /** The Node object's name (NODE_NAME); it must have spec.podCIDR. */
  nodeName: string;
  /** A kubeconfig that works inside the node's namespace (through its API relay). */
  kubeconfig: string;
  backend: FlannelBackend;
  /** Where flanneld and the CNI plugins are (ensureNetlabBinaries()). */
  binDir: string;
  /** The cluster's pod CIDR (default the test cluster's). */
  network?: string;
}

/** The Node's spec.podCIDR, once the controller manager has given it one. */
export async function waitForPodCidr(kc: k8s.KubeConfig, nodeName: string): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return waitFor(async () => (await core.readNode({ name: nodeName })).spec?.podCIDR, {
    description: `Node ${nodeName} to get spec.podCIDR from the controller manager`,
    timeoutMs: 30_000,
  });
}

export class LinuxFlannelNode {
  readonly node: LabNode;
  readonly nodeName: string;
  readonly flanneld: ComponentProcess;
  readonly subnetFile: string;
  /** The VXLAN device flanneld made (flannel.<VNI>), for a vxlan backend. */
  readonly vxlanDevice: string | undefined;
  readonly #lab: NetLab;
  readonly #binDir: string;
  #pods = 0;

  private constructor(o: LinuxFlannelNodeOptions, flanneld: ComponentProcess, subnetFile: string) {
    this.#lab = o.lab;
    this.#binDir = o.binDir;
    this.node = o.node;
    this.nodeName = o.nodeName;
    this.flanneld = flanneld;
    this.subnetFile = subnetFile;
    this.vxlanDevice = o.backend.type === 'vxlan' ? `flannel.${o.backend.vni}` : undefined;
  }

  /** Starts flanneld and resolves once it has written its subnet file (its lease is acquired). */
  static async start(o: LinuxFlannelNodeOptions): Promise<LinuxFlannelNode> {
    const base = join(o.lab.dir, o.node.label);
    const netConf = `${base}-net-conf.json`;
    const subnetFile = `${base}-subnet.env`;
    await writeFile(netConf, renderNetConf({ network: o.network ?? podCidr, backend: o.backend }));
    const flanneld = o.lab.start({
      netns: o.node.netns,
      name: `flanneld ${o.node.label}`,
      file: join(o.binDir, 'flanneld'),
      args: [
        '--kube-subnet-mgr',
        `--kubeconfig-file=${o.kubeconfig}`,
        `--iface=${o.node.uplink}`,
        '--iptables-forward-rules=false',
        `--subnet-file=${subnetFile}`,
        `--net-config-path=${netConf}`,
      ],
      // iptables is looked up on PATH (its traffic manager's clean-up runs it).
      env: { PATH: systemPath(), NODE_NAME: o.nodeName },
    });
    await waitForLogLine(flanneld, /Wrote subnet file to /, {
      description: `subnet file (flanneld acquired ${o.nodeName}'s lease)`,
      timeoutMs: 60_000,
    });
    return new LinuxFlannelNode(o, flanneld, subnetFile);
  }

  /** flanneld's subnet.env, read strictly. */
  async subnetEnv(): Promise<SubnetEnv> {
    return parseSubnetEnv(await readFile(this.subnetFile, 'utf8'), this.subnetFile);
  }

  /**
   * A Linux pod: a namespace wired by the real loopback plugin and by the real bridge plugin
   * (with host-local IPAM) on the node's cni0, configured as flannel's CNI plugin would for
   * kube-flannel.yml's cni-conf.json (delegate hairpinMode, isDefaultGateway), with ipMasq
   * false: flanneld here runs without --ip-masq, and flannel's plugin would then have bridge
   * masquerade pod traffic to other nodes' pods behind the node; kube-flannel.yml runs flanneld
   * with --ip-masq, which keeps bridge from masquerading, and that is the data path kept here.
   */
  async addPod(label: string): Promise<LabPod & { subnet: string; gateway: string }> {
    const netns = await this.#lab.addNamespace(label);
    const containerId = `${this.node.label}-pod-${++this.#pods}`;
    const common = {
      nodeNetns: this.node.netns,
      podNetns: netns,
      binDir: this.#binDir,
      containerId,
    };
    await cniAdd({
      ...common,
      plugin: 'loopback',
      ifName: 'lo',
      config: { cniVersion: '1.0.0', name: 'lo', type: 'loopback' },
    });
    const env = await this.subnetEnv();
    const config = flannelDelegateConf(
      {
        cniVersion: '1.0.0',
        name: 'cbr0',
        delegate: { hairpinMode: true, isDefaultGateway: true, ipMasq: false },
        ipam: { dataDir: join(this.#lab.dir, `${this.node.label}-host-local`) },
      },
      env,
    );
    const result = await cniAdd({ ...common, plugin: 'bridge', ifName: 'eth0', config });
    const what = `bridge ADD for ${label}`;
    const ipEntry = result.ips[0];
    const cidr = ipEntry ? parseIpv4Cidr(ipEntry.address) : undefined;
    const subnet = parseIpv4Cidr(env.subnet)!;
    if (!ipEntry || !cidr || result.ips.length !== 1)
      throw new Error(`${what}: expected one IPv4 address, got ${JSON.stringify(result.ips)}`);
    if (!cidrContains(subnet, cidr.address) || cidr.prefix !== subnet.prefix)
      throw new Error(
        `${what}: address ${ipEntry.address} is not in the node's subnet ${formatIpv4Cidr(subnet)}`,
      );
    const gateway = ipEntry.gateway;
    if (!gateway || parseIpv4(gateway) !== subnet.network + 1)
      throw new Error(`${what}: gateway ${gateway} is not the subnet's first address`);
    const hostVeth = result.interfaces.find(
      (i) => i.name !== 'cni0' && i.sandbox === undefined,
    )?.name;
    if (!hostVeth)
      throw new Error(`${what}: no host-side veth in ${JSON.stringify(result.interfaces)}`);
    return {
      label,
      netns,
      address: ipEntry.address.slice(0, ipEntry.address.indexOf('/')),
      iface: 'eth0',
      hostVeth,
      subnet: formatIpv4Cidr(subnet),
      gateway,
    };
  }
}
