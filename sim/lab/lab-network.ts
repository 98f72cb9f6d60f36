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
 *   TCP and ICMP through the VXLAN devices — the lab prints what crossed. lab-linux-1's pods are
 *   then the lab's to run (sim/netlab/lab-kubelet.ts: each wired by the real CNI plugins in a
 *   namespace of its own): among them the Linux pod lab-network/echo behind the Service echo,
 *   and CoreDNS, the pod of the Deployment kube-system/coredns behind the Service kube-dns at
 *   the cluster DNS address the lab's kubelets are configured with (winfleet-config
 *   hosts.clusterDNS; sim/netlab/cluster-dns.ts). The Windows pod resolves Service names
 *   through kube-dns, and reaches echo by its name, through the HNS load balancers kube-proxy
 *   programmed on its host, rendered as DNAT and SNAT to the source VIP;
 * - otherwise: lab-linux-1 is kwok's, the lab writes the lease's annotations itself, as a Linux
 *   flanneld's AcquireLease would (public-ip 192.0.2.11, a VtepMAC of its own), and says that
 *   packets and Services by name are not shown, why, and how to see them.
 * The netlab's namespaces and programs go when the lab stops (NetLab.teardown; netns.ts's exit
 * hook and the next lab's sweep if the lab was killed).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { defaultConfig } from '../../src/config/winfleet-config.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import type { Cluster } from '../cluster/start-cluster.ts';
import { flannelAnnotations as standInAnnotations } from '../hosts/flanneld-standin.ts';
import type { SimulatedHost } from '../hosts/fleet.ts';
import { type ClusterDns, startClusterDns } from '../netlab/cluster-dns.ts';
import { queryA } from '../netlab/dns-query.ts';
import { createFlannelAccount } from '../netlab/flannel-account.ts';
import { leaseAnnotations, readLeaseAnnotations, windowsVxlan } from '../netlab/flannel-config.ts';
import { writeLeaseAnnotations } from '../netlab/flannel-world.ts';
import { createLabPodsNode, LabKubelet } from '../netlab/lab-kubelet.ts';
import { LinuxFlannelNode, waitForPodCidr } from '../netlab/linux-flannel-node.ts';
import { type LabPod, NetLab } from '../netlab/net-lab.ts';
import { netlabBinaries, netlabBinEnv } from '../netlab/netlab-binaries.ts';
import { ping } from '../netlab/ping.ts';
import { readFdb } from '../netlab/readback.ts';
import { echoRequest, startEchoServer } from '../netlab/tcp-echo.ts';
import { linuxMac, WindowsLabNode } from '../netlab/windows-node.ts';
import { installFlannelObjects } from '../testkit/cluster-cni.ts';
import { createLinuxNode, createWindowsPodOn } from '../testkit/nodes.ts';

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
/** The Service in front of the Linux pod lab-network/echo. */
const echoService = 'echo';
/**
 * The cluster DNS address the lab's kubelets are configured with: the lab's chart values leave
 * winfleet-config hosts.clusterDNS at its default.
 */
export const labClusterDns = defaultConfig().hosts.clusterDNS;

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
/** How to see a Service reached by name when the lab does not show it. */
export const howToSeeServiceByName =
  'to see it, run the lab as root with the netlab binaries (sudo make lab builds them, CoreDNS among them, with hack/build-netlab.sh), or run sim/netlab/windows-flannel-dns.e2e.test.ts as root';

/** The lab's network, once its Linux side is up. */
export interface LabNetwork {
  mode: LabNetworkMode;
  packets: PacketsDecision;
  /** lab-linux-1's pod CIDR (flannel-vxlan). */
  linuxPodCidr?: string;
  /**
   * The real Linux flanneld node, its pod lab-network/echo (an echo server on echoPort, behind
   * the Service echo) and the cluster DNS, or why it did not start (when packets are shown).
   */
  netlab?: {
    lab: NetLab;
    linux: LinuxFlannelNode;
    linuxPod: LabPod;
    echoClusterIP: string;
    dns: ClusterDns | { error: string };
  };
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
  if (packets.show) {
    try {
      return await startRealFlanneld({ say, since, stops }, cluster, kc, packets);
    } catch (error) {
      // A machine that refuses namespaces or VXLAN devices still gets a flannel lab.
      packets = {
        show: false,
        why: `the netlab world did not start (${(error as Error).message.split('\n')[0]})`,
      };
    }
  }
  // lab-linux-1 is registered by startLinuxSide when the lab may show packets (its pods the
  // lab's to run); if the netlab world failed before that, it is kwok's, as otherwise. (Had it
  // failed after, the Node stays the lab's and its pods, with no LabKubelet, stay Pending.)
  const registered = await kc
    .makeApiClient(k8s.CoreV1Api)
    .readNode({ name: labLinuxNode })
    .then(
      () => true,
      () => false,
    );
  if (!registered) {
    await createLinuxNode(kc, { name: labLinuxNode });
    say(`Linux worker ${labLinuxNode} is Ready (${since()})`);
  }
  const linuxPodCidr = await waitForPodCidr(kc, labLinuxNode);
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
): Promise<LabNetwork> {
  // The lab of namespaces first: its teardown (flanneld stopped, namespaces deleted) then runs
  // before the cluster stops.
  const lab = await NetLab.create();
  stops.push(() => lab.teardown());
  try {
    return await startLinuxSide({ say, since, stops }, lab, cluster, kc, packets);
  } catch (error) {
    await lab.teardown().catch(() => {});
    throw error;
  }
}

async function startLinuxSide(
  { say, since, stops }: Step,
  lab: NetLab,
  cluster: Cluster,
  kc: k8s.KubeConfig,
  packets: Extract<PacketsDecision, { show: true }>,
): Promise<LabNetwork> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const relay = await lab.apiRelay(cluster.ports.apiserver);
  // kube-flannel's namespace comes with flanneld's account; the ConfigMap and DaemonSet join it.
  const account = await createFlannelAccount(kc, join(lab.dir, 'flannel.kubeconfig'));
  await installFlannelObjects(kc);
  const node = await lab.addNode('lnx1', { address: labLinuxAddress });
  await relay.enter(node.netns);
  // The Node, its pods the lab's to run, once its namespace is on the LAN; its Lease renewed
  // until the lab stops.
  const leases = new AbortController();
  stops.push(async () => leases.abort());
  const linuxPodCidr = await createLabPodsNode(kc, labLinuxNode, leases.signal);
  const linux = await LinuxFlannelNode.start({
    lab,
    node,
    nodeName: labLinuxNode,
    kubeconfig: account.inNetnsKubeconfig,
    backend: { type: 'vxlan', ...windowsVxlan },
    binDir: packets.binDir,
  });
  // Pushed after the lab's teardown, so it stops before the namespaces go.
  const kubelet = new LabKubelet(kc, linux, 'lnx1-p');
  stops.push(() => kubelet.stop());
  say(
    `Linux worker ${labLinuxNode} (${linuxPodCidr}) registered; the real flanneld runs for it in netns ${node.netns} at ${labLinuxAddress} as ${account.username}, and the lab runs its pods, each in a namespace wired by the real CNI plugins (${since()})`,
  );
  // The Linux pod lab-network/echo, an echo server, behind the Service echo.
  await core.createNamespace({ body: { metadata: { name: labNetworkNamespace } } }).catch(() => {});
  const echoLabels = { app: echoService };
  await core.createNamespacedPod({
    namespace: labNetworkNamespace,
    body: {
      metadata: { name: echoService, labels: echoLabels },
      spec: {
        nodeName: labLinuxNode,
        containers: [
          {
            name: 'echo',
            // No container runs (kwok plays it); the lab's echo server runs in its namespace.
            image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
            ports: [{ containerPort: echoPort }],
          },
        ],
      },
    },
  });
  const service = await core.createNamespacedService({
    namespace: labNetworkNamespace,
    body: {
      metadata: { name: echoService },
      spec: { selector: echoLabels, ports: [{ port: echoPort, targetPort: echoPort }] },
    },
  });
  const linuxPod = await kubelet.pod(labNetworkNamespace, { name: echoService });
  await startEchoServer(lab, linuxPod.netns, echoPort);
  say(
    `Linux pod ${labNetworkNamespace}/${echoService} ${linuxPod.address} on ${labLinuxNode} (netns ${linuxPod.netns}) answers TCP ${echoPort}, behind the Service ${echoService} ${service.spec!.clusterIP} (${since()})`,
  );
  // CoreDNS, behind kube-dns at the cluster DNS address; a failure leaves the rest standing.
  let dns: ClusterDns | { error: string };
  try {
    dns = await startClusterDns({
      kc,
      lab,
      relay,
      binDir: packets.binDir,
      linux,
      clusterIP: labClusterDns,
      runPod: (p) => kubelet.pod(p.namespace, { labelSelector: p.labelSelector }),
    });
    say(
      `cluster DNS: CoreDNS (the pod ${dns.pod.name} of Deployment kube-system/coredns) runs on ${labLinuxNode} at ${dns.pod.address}, behind the Service kube-dns ${dns.clusterIP} (${since()})`,
    );
  } catch (error) {
    dns = { error: (error as Error).message.split('\n')[0]! };
    say(`cluster DNS: did not start: ${dns.error}`);
  }
  return {
    mode: 'flannel-vxlan',
    packets,
    linuxPodCidr,
    netlab: { lab, linux, linuxPod, echoClusterIP: service.spec!.clusterIP!, dns },
  };
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
    lines.push(`Service by name: not shown: ${why}, and no DNS server runs in the lab without it;`);
    lines.push(`  ${howToSeeServiceByName}.`);
  } else {
    const host = hosts.find((h) => h.release !== '2019') ?? hosts[0]!;
    let client: WindowsClient | undefined;
    try {
      client = await windowsToLinux(step, kc, network.netlab, host);
      lines.push(...client.lines);
    } catch (error) {
      lines.push(`Packets: the check failed: ${(error as Error).message}`);
    }
    const { dns } = network.netlab;
    if ('error' in dns)
      lines.push(`Service by name: not shown: CoreDNS did not start (${dns.error})`);
    else if (!client)
      lines.push(
        'Service by name: not shown: no Windows pod to ask from (the packet check failed)',
      );
    else
      try {
        lines.push(...(await serviceByName(step, kc, network.netlab, dns, client)));
      } catch (error) {
        lines.push(`Service by name: the check failed: ${(error as Error).message}`);
      }
  }
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
): Promise<WindowsClient> {
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
  return {
    lines,
    windows,
    pod: windowsPod,
    podName: `${labNetworkNamespace}/${podName}`,
    nodeName,
  };
}

/** The Windows pod the lab's checks run from, and what its packet check printed. */
interface WindowsClient {
  lines: string[];
  windows: WindowsLabNode;
  pod: LabPod;
  /** namespace/name */
  podName: string;
  nodeName: string;
}

/**
 * The Windows pod resolves kubernetes.default through kube-dns (CoreDNS on lab-linux-1 seen to
 * answer it, in its log), and reaches the Service echo by its name: the name resolved to its
 * cluster IP, TCP to that, DNATed to the Linux pod and SNATed to the source VIP by the rendered
 * HNS load balancers kube-proxy programmed.
 */
async function serviceByName(
  { say }: Step,
  kc: k8s.KubeConfig,
  netlab: NonNullable<LabNetwork['netlab']>,
  dns: ClusterDns,
  client: WindowsClient,
): Promise<string[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const { windows } = client;
  const balanced = (vip: string, protocol: 'tcp' | 'udp') =>
    windows.state.loadBalancers.find((lb) => lb.vip === vip && lb.protocol === protocol);
  await waitFor(
    () =>
      (balanced(dns.clusterIP, 'udp')?.endpoints.includes(dns.pod.address) &&
        balanced(netlab.echoClusterIP, 'tcp')?.endpoints.includes(netlab.linuxPod.address)) ||
      undefined,
    {
      description: `the load balancers kube-proxy programmed on ${client.nodeName} for kube-dns and ${echoService}, rendered`,
      timeoutMs: 30_000,
    },
  );
  await windows.settled();
  const kubernetes = await core.readNamespacedService({ namespace: 'default', name: 'kubernetes' });
  const name = 'kubernetes.default.svc.cluster.local';
  const answer = await queryA(client.pod.netns, { server: dns.clusterIP, name });
  const expected = kubernetes.spec!.clusterIP!;
  if (answer.join() !== expected)
    throw new Error(`${name} resolved to ${answer.join(', ') || 'nothing'}, not ${expected}`);
  const sourceVip = balanced(dns.clusterIP, 'udp')?.sourceVip;
  const logged = dns.coredns.logTail(50).includes(`"A IN ${name}. udp `);
  const echoName = `${echoService}.${labNetworkNamespace}.svc.cluster.local`;
  const echoIP = await queryA(client.pod.netns, { server: dns.clusterIP, name: echoName });
  if (echoIP.join() !== netlab.echoClusterIP)
    throw new Error(
      `${echoName} resolved to ${echoIP.join(', ') || 'nothing'}, not ${netlab.echoClusterIP}`,
    );
  const echoVip = balanced(netlab.echoClusterIP, 'tcp')?.sourceVip;
  const echo = await echoRequest(
    client.pod.netns,
    { host: echoIP[0]!, port: echoPort },
    `hello ${echoService} from ${client.podName}`,
  );
  const lines = [
    `Service by name: Windows pod ${client.podName} on ${client.nodeName} resolved ${name} → ${answer[0]} through kube-dns ${dns.clusterIP} (CoreDNS on ${labLinuxNode} answered${logged ? `, its log shows the query from ${sourceVip ?? 'the pod'}` : ''})`,
    `  TCP  Windows pod ${client.podName} → ${echoName} → ${echoIP[0]}:${echoPort} (Service ${echoService}): answered "${echo.line}"; the Linux pod ${labNetworkNamespace}/${echoService} ${netlab.linuxPod.address} saw ${echo.seenFrom}${echo.seenFrom === echoVip ? ' (the source VIP: the load balancer’s SNAT)' : ''}`,
  ];
  for (const line of lines) say(line.trim());
  return lines;
}
