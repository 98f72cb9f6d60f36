/**
 * The lab's pod network (issue 31). By default the lab runs `network.mode: flannel-vxlan`: the
 * cluster holds Flannel's objects (kube-flannel-cfg with VNI 4096 and port 4789, the
 * kube-flannel-ds DaemonSet, which runs no pod: sim/testkit/cluster-cni.ts), every Windows host
 * joins with flanneld (the stand-in), flannel's CNI on win-overlay and kube-proxy with a source
 * VIP, and the Linux worker lab-linux-1 holds a flannel lease, so each Windows node gets a
 * RemoteSubnetRoute to it. WINFLEET_LAB_NETWORK=routed runs the lab as before issue 31 instead
 * (every node on its own spec.podCIDR, no Flannel).
 *
 * Who writes lab-linux-1's lease depends on what the machine allows:
 * - as root, with the netlab binaries (WINFLEET_NETLAB_BIN, from hack/build-netlab.sh): the real
 *   Linux flanneld, in a netlab node namespace on the lab's LAN (192.0.2.11), with a Linux pod
 *   wired by the real CNI plugins; one Windows host's HNS model is rendered into the same LAN
 *   (192.0.2.21, sim/netlab/windows-node.ts), and a Windows pod on it reaches the Linux pod by
 *   TCP and ICMP through the VXLAN devices — the lab prints what crossed;
 * - otherwise: the lab writes the lease's annotations itself, as a Linux flanneld's
 *   AcquireLease would (public-ip 192.0.2.11, a VtepMAC of its own), and says that packets are
 *   not shown, why, and how to see them.
 * The netlab's namespaces and programs go when the lab stops (NetLab.teardown; netns.ts's exit
 * hook and the next lab's sweep if the lab was killed).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import type { Cluster } from '../cluster/start-cluster.ts';
import { flannelAnnotations as standInAnnotations } from '../hosts/flanneld-standin.ts';
import type { SimulatedHost } from '../hosts/fleet.ts';
import { createFlannelAccount } from '../netlab/flannel-account.ts';
import { leaseAnnotations, readLeaseAnnotations, windowsVxlan } from '../netlab/flannel-config.ts';
import { writeLeaseAnnotations } from '../netlab/flannel-world.ts';
import { LinuxFlannelNode, waitForPodCidr } from '../netlab/linux-flannel-node.ts';
import { type LabPod, NetLab } from '../netlab/net-lab.ts';
import { netlabBinaries, netlabBinEnv } from '../netlab/netlab-binaries.ts';
import { ping } from '../netlab/ping.ts';
import { readFdb } from '../netlab/readback.ts';
import { echoRequest, startEchoServer } from '../netlab/tcp-echo.ts';
import { linuxMac, WindowsLabNode } from '../netlab/windows-node.ts';
import { installFlannelObjects } from '../testkit/cluster-cni.ts';
import { createWindowsPodOn } from '../testkit/nodes.ts';

/** The environment variable choosing the lab's network mode. */
export const labNetworkEnv = 'WINFLEET_LAB_NETWORK';
export const labNetworkModes = ['flannel-vxlan', 'routed'] as const;
export type LabNetworkMode = (typeof labNetworkModes)[number];

/** The Linux worker whose lease the Windows nodes route to. */
export const labLinuxNode = 'lab-linux-1';
/** The lab LAN's addresses (TEST-NET-1): the Linux node's, and the rendered Windows node's. */
export const labLinuxAddress = '192.0.2.11';
export const labWindowsAddress = '192.0.2.21';
/** The VtepMAC of the lease the lab writes when no real flanneld runs (locally administered). */
export const writtenLeaseVtepMac = '0e:1a:b0:00:00:11';
/** The namespace of the Windows pod the lab's packet check runs from. */
export const labNetworkNamespace = 'lab-network';
const echoPort = 7000;

/** The network mode WINFLEET_LAB_NETWORK names (default flannel-vxlan); throws on another. */
export function labNetworkMode(value: string | undefined): LabNetworkMode {
  if (value === undefined || value === '') return 'flannel-vxlan';
  if ((labNetworkModes as readonly string[]).includes(value)) return value as LabNetworkMode;
  throw new Error(`${labNetworkEnv}=${value}: the lab runs ${labNetworkModes.join(' or ')}`);
}

/** Whether the lab shows real packets, and if not, why not. */
export type PacketsDecision = { show: true; binDir: string } | { show: false; why: string };

/**
 * Packets need flannel-vxlan, root (namespaces, veths, VXLAN devices) and the netlab binaries
 * already built (WINFLEET_NETLAB_BIN): the lab does not build them itself, which takes minutes.
 */
export function packetsDecision(o: {
  mode: LabNetworkMode;
  uid: number | undefined;
  netlabBin: string | undefined;
  /** The binaries missing from netlabBin. */
  missing: readonly string[];
}): PacketsDecision {
  if (o.mode !== 'flannel-vxlan') return { show: false, why: `${labNetworkEnv}=${o.mode}` };
  if (o.uid !== 0)
    return {
      show: false,
      why: `the lab runs as uid ${o.uid ?? 'unknown'}, and network namespaces, veth pairs and VXLAN devices need root`,
    };
  if (!o.netlabBin)
    return { show: false, why: `${netlabBinEnv} is not set (hack/build-netlab.sh builds them)` };
  if (o.missing.length > 0)
    return { show: false, why: `${netlabBinEnv}=${o.netlabBin} lacks ${o.missing.join(', ')}` };
  return { show: true, binDir: o.netlabBin };
}

/** The decision for this process. */
export function packetsDecisionHere(mode: LabNetworkMode): PacketsDecision {
  const netlabBin = process.env[netlabBinEnv] || undefined;
  return packetsDecision({
    mode,
    uid: process.getuid?.(),
    netlabBin,
    missing: netlabBin ? netlabBinaries.filter((b) => !existsSync(join(netlabBin, b))) : [],
  });
}

/** How to see the packets when the lab does not show them. */
export const howToSeePackets =
  'to see them, run the lab as root with the netlab binaries (sudo make lab builds them with hack/build-netlab.sh), or run sim/netlab/windows-flannel-packets.e2e.test.ts as root';

/** The lab's network, once its Linux side is up. */
export interface LabNetwork {
  mode: LabNetworkMode;
  packets: PacketsDecision;
  /** lab-linux-1's pod CIDR (flannel-vxlan). */
  linuxPodCidr?: string;
  /** The real Linux flanneld node and its pod (when packets are shown). */
  netlab?: { lab: NetLab; linux: LinuxFlannelNode; linuxPod: LabPod };
}

interface Step {
  say: (line: string) => void;
  since: () => string;
  stops: (() => Promise<void>)[];
}

/**
 * Flannel's objects in the cluster and lab-linux-1's lease: written by the real flanneld in a
 * netlab namespace when packets are shown, else by the lab. Nothing for routed.
 */
export async function startLabNetwork(
  { say, since, stops }: Step,
  cluster: Cluster,
  kc: k8s.KubeConfig,
  mode: LabNetworkMode,
  packets: PacketsDecision,
): Promise<LabNetwork> {
  if (mode === 'routed') {
    say(
      `pod network: routed (${labNetworkEnv}=routed): every node on its own spec.podCIDR, no Flannel`,
    );
    return { mode, packets };
  }
  const linuxPodCidr = await waitForPodCidr(kc, labLinuxNode);
  if (packets.show) {
    try {
      return await startRealFlanneld({ say, since, stops }, cluster, kc, packets, linuxPodCidr);
    } catch (error) {
      // A machine that refuses namespaces or VXLAN devices still gets a flannel lab.
      packets = {
        show: false,
        why: `the netlab world did not start (${(error as Error).message.split('\n')[0]})`,
      };
    }
  }
  await installFlannelObjects(kc);
  await writeLeaseAnnotations(
    kc,
    labLinuxNode,
    leaseAnnotations({
      backend: { type: 'vxlan', vni: windowsVxlan.vni, vtepMac: writtenLeaseVtepMac },
      publicIp: labLinuxAddress,
    }),
  );
  say(
    `pod network: flannel-vxlan (Flannel's kube-flannel-cfg and kube-flannel-ds installed); ${labLinuxNode} (${linuxPodCidr}) holds a flannel lease the lab wrote as a Linux flanneld would (public-ip ${labLinuxAddress}, VtepMAC ${writtenLeaseVtepMac}); no flanneld runs for it (${since()})`,
  );
  say(`packets: not shown: ${packets.why}; ${howToSeePackets}`);
  return { mode, packets, linuxPodCidr };
}

/** The real Linux flanneld for lab-linux-1 in a netlab namespace, and a Linux pod beside it. */
async function startRealFlanneld(
  { say, since, stops }: Step,
  cluster: Cluster,
  kc: k8s.KubeConfig,
  packets: Extract<PacketsDecision, { show: true }>,
  linuxPodCidr: string,
): Promise<LabNetwork> {
  // The lab of namespaces first: its teardown (flanneld stopped, namespaces deleted) then runs
  // before the cluster stops.
  const lab = await NetLab.create();
  stops.push(() => lab.teardown());
  try {
    return await startLinuxSide({ say, since, stops }, lab, cluster, kc, packets, linuxPodCidr);
  } catch (error) {
    await lab.teardown().catch(() => {});
    throw error;
  }
}

async function startLinuxSide(
  { say, since }: Step,
  lab: NetLab,
  cluster: Cluster,
  kc: k8s.KubeConfig,
  packets: Extract<PacketsDecision, { show: true }>,
  linuxPodCidr: string,
): Promise<LabNetwork> {
  const relay = await lab.apiRelay(cluster.ports.apiserver);
  // kube-flannel's namespace comes with flanneld's account; the ConfigMap and DaemonSet join it.
  const account = await createFlannelAccount(kc, join(lab.dir, 'flannel.kubeconfig'));
  await installFlannelObjects(kc);
  const node = await lab.addNode('lnx1', { address: labLinuxAddress });
  await relay.enter(node.netns);
  const linux = await LinuxFlannelNode.start({
    lab,
    node,
    nodeName: labLinuxNode,
    kubeconfig: account.inNetnsKubeconfig,
    backend: { type: 'vxlan', ...windowsVxlan },
    binDir: packets.binDir,
  });
  const linuxPod = await linux.addPod('lnx1-p1');
  say(
    `pod network: flannel-vxlan (Flannel's kube-flannel-cfg and kube-flannel-ds installed); the real flanneld runs for ${labLinuxNode} (${linuxPodCidr}) in netns ${node.netns} at ${labLinuxAddress} as ${account.username}, its Linux pod ${linuxPod.address} in netns ${linuxPod.netns} (${since()})`,
  );
  return { mode: 'flannel-vxlan', packets, linuxPodCidr, netlab: { lab, linux, linuxPod } };
}

/** The Overlay network's RemoteSubnetRoute to `subnet` on a host, if it has one. */
function remoteRouteTo(host: SimulatedHost, subnet: string) {
  const network = host.machine.hns.find(`flannel.${windowsVxlan.vni}`);
  if (!network) return undefined;
  for (const p of host.machine.hns.policies(network.id))
    if (p.Type === 'RemoteSubnetRoute' && p.Settings.DestinationPrefix === subnet)
      return p.Settings;
  return undefined;
}

/**
 * What the lab shows of its pod network once the hosts joined: for flannel-vxlan, each SSH
 * host's RemoteSubnetRoute to lab-linux-1's lease; with packets, a Windows pod on one of them
 * reaching the Linux pod by TCP and ICMP. Report lines; a failed check is reported, not thrown.
 */
export async function showLabNetwork(
  step: Step,
  kc: k8s.KubeConfig,
  network: LabNetwork,
  hosts: readonly SimulatedHost[],
): Promise<string[]> {
  if (network.mode === 'routed')
    return [
      `Pod network: routed (${labNetworkEnv}=routed): every node on its own spec.podCIDR; no Flannel, no packets shown (unset ${labNetworkEnv} for flannel-vxlan).`,
    ];
  const subnet = network.linuxPodCidr!;
  const lines = [
    `Pod network: flannel-vxlan (VNI ${windowsVxlan.vni}, UDP ${windowsVxlan.port}); ${labLinuxNode}'s lease ${subnet} via ${labLinuxAddress} is ${network.netlab ? 'the real Linux flanneld’s' : 'written by the lab (no Linux flanneld runs)'}:`,
  ];
  const routes = await waitFor(
    () => {
      const found = hosts.map((h) => [h, remoteRouteTo(h, subnet)] as const);
      return found.every(([, r]) => r) ? found : undefined;
    },
    {
      description: `a RemoteSubnetRoute to ${subnet} on every Windows host`,
      timeoutMs: 60_000,
    },
  ).catch(() => hosts.map((h) => [h, remoteRouteTo(h, subnet)] as const));
  for (const [host, route] of routes)
    lines.push(
      route
        ? `  ${host.name.toLowerCase()}: HNS network flannel.${windowsVxlan.vni} RemoteSubnetRoute ${route.DestinationPrefix} → ${route.ProviderAddress} (${labLinuxNode}'s VtepMAC ${route.DistributedRouterMacAddress})`
        : `  ${host.name.toLowerCase()}: no RemoteSubnetRoute to ${subnet} on flannel.${windowsVxlan.vni}`,
    );
  if (!network.netlab) {
    const why = network.packets.show ? 'no netlab world' : network.packets.why;
    lines.push(`Packets: not shown: ${why};`);
    lines.push(`  ${howToSeePackets}.`);
  } else {
    const host = hosts.find((h) => h.release !== '2019') ?? hosts[0]!;
    try {
      lines.push(...(await windowsToLinux(step, kc, network.netlab, host)));
    } catch (error) {
      lines.push(`Packets: the check failed: ${(error as Error).message}`);
    }
  }
  lines.push(
    'Service by name: not shown yet — it needs a DNS server in the netlab world (CoreDNS, being built); the lab shows it once that is in.',
  );
  return lines;
}

/**
 * One Windows host rendered into the netlab LAN, its flanneld's lease moved to the LAN address
 * (public-ip-overwrite, then flanneld restarted, as an administrator does), a Windows pod on it,
 * and that pod's TCP echo and ping to the Linux pod.
 */
async function windowsToLinux(
  { say, since, stops }: Step,
  kc: k8s.KubeConfig,
  { lab, linux, linuxPod }: NonNullable<LabNetwork['netlab']>,
  host: SimulatedHost,
): Promise<string[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const nodeName = host.name.toLowerCase();
  const windows = await WindowsLabNode.start({
    lab,
    machine: host.machine,
    label: 'win1',
    address: labWindowsAddress,
  });
  stops.push(async () => windows.stop());
  await core.patchNode(
    {
      name: nodeName,
      body: {
        metadata: { annotations: { [standInAnnotations.publicIpOverwrite]: labWindowsAddress } },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  // flanneld reads public-ip-overwrite when it acquires its lease: restarted, it re-acquires.
  await host.machine.scm.stop('flanneld').catch(() => {});
  await host.machine.scm.start('flanneld').catch(() => {});
  const overlay = await waitFor(() => host.machine.hns.find(`flannel.${windowsVxlan.vni}`), {
    description: `flannel.${windowsVxlan.vni} on ${nodeName}`,
    timeoutMs: 30_000,
  });
  const drMac = linuxMac(
    (
      host.machine.hns.policies(overlay.id).find((p) => p.Type === 'DrMacAddress')!.Settings as {
        Address: string;
      }
    ).Address,
  );
  await waitFor(
    async () => {
      try {
        const node = await core.readNode({ name: nodeName });
        const lease = readLeaseAnnotations(node.metadata?.annotations, nodeName);
        return lease.publicIp === labWindowsAddress && lease.vtepMac === drMac ? lease : undefined;
      } catch {
        return undefined;
      }
    },
    { description: `${nodeName}'s lease at ${labWindowsAddress}`, timeoutMs: 60_000 },
  );
  await waitFor(
    async () =>
      (await readFdb(linux.node.netns, linux.vxlanDevice)).some(
        (e) => e.mac === drMac && e.dst === labWindowsAddress,
      ) || undefined,
    { description: `the Linux flanneld to program ${nodeName}'s lease`, timeoutMs: 30_000 },
  );
  say(
    `${nodeName}'s HNS network flannel.${windowsVxlan.vni} rendered into netns ${windows.node.netns} at ${labWindowsAddress}; its lease (VtepMAC ${drMac}) programmed by the Linux flanneld (${since()})`,
  );
  await core.createNamespace({ body: { metadata: { name: labNetworkNamespace } } }).catch(() => {});
  await waitFor(
    () => core.readNamespacedServiceAccount({ name: 'default', namespace: labNetworkNamespace }),
    { description: `the ${labNetworkNamespace} namespace`, timeoutMs: 30_000 },
  );
  const podName = 'win-client';
  await createWindowsPodOn(core, labNetworkNamespace, nodeName, podName);
  const podIP = await waitFor(
    async () => {
      const pod = await core.readNamespacedPod({ namespace: labNetworkNamespace, name: podName });
      return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
    },
    { description: `pod ${podName} Running on ${nodeName}`, timeoutMs: 90_000 },
  );
  const windowsPod = await waitFor(() => windows.pod(podIP), {
    description: `the endpoint of ${podName} (${podIP}) rendered`,
    timeoutMs: 15_000,
  });
  await windows.settled();
  await startEchoServer(lab, linuxPod.netns, echoPort);
  const echo = await echoRequest(
    windowsPod.netns,
    { host: linuxPod.address, port: echoPort },
    `hello from ${labNetworkNamespace}/${podName}`,
  );
  const icmp = await ping(windowsPod.netns, linuxPod.address, { count: 3 });
  const what = `Windows pod ${labNetworkNamespace}/${podName} ${podIP} on ${nodeName} → Linux pod ${linuxPod.address} on ${labLinuxNode}`;
  const lines = [
    `Packets (real VXLAN between netns ${windows.node.netns} and ${linux.node.netns}; the Windows side is ${nodeName}'s HNS model rendered, not VFP):`,
    `  TCP  ${what}:${echoPort}: answered "${echo.line}"; the Linux pod saw ${echo.seenFrom}${echo.seenFrom === podIP ? ' (no NAT)' : ` (NAT: not the pod's ${podIP})`}`,
    `  ICMP ${what}: ${icmp.received}/${icmp.transmitted} echo replies`,
  ];
  for (const line of lines.slice(1)) say(line.trim());
  return lines;
}
