/**
 * The world of the Windows packet tests (issue 31), shared by them: one private cluster with
 * the Flannel objects, a lab, a real Linux flanneld node, and a simulated Windows host joined by
 * the real operator (network.mode auto: flannel-vxlan detected) whose HNS model is rendered into
 * a lab node namespace (windows-node.ts). flanneld on the Windows host is held until its Node
 * carries public-ip-overwrite with the rendered node's LAN address (kube.go AcquireLease reads
 * it when it acquires the lease), then released; the world is returned once the Windows Node has
 * its podCIDR. Checks of what the join produced are the tests' own.
 */
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import { flannelAnnotations as standInAnnotations } from '../hosts/flanneld-standin.ts';
import { installFlannelObjects } from '../testkit/cluster-cni.ts';
import { type JoinWorld, joinWorld } from '../testkit/join-fixture.ts';
import { createWindowsPodOn } from '../testkit/nodes.ts';
import { startTestOperator } from '../testkit/test-operator.ts';
import {
  createWindowsHosts,
  firstHostWithNode,
  readWindowsHost,
} from '../testkit/windows-hosts.ts';
import { type FlannelWorld, flannelWorld } from './flannel-world.ts';
import type { LinuxFlannelNode } from './linux-flannel-node.ts';
import { waitForPodCidr } from './linux-flannel-node.ts';
import type { LabPod } from './net-lab.ts';
import { WindowsLabNode, type WindowsNodeState } from './windows-node.ts';

export const linuxAddress = '192.0.2.11';
export const windowsAddress = '192.0.2.21';
const hosts = { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 };

export interface WindowsFlannelWorld {
  world: FlannelWorld;
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  join: JoinWorld;
  /** The simulated Windows host. */
  sim: JoinWorld['fleet']['hosts'][number];
  /** Its HNS model rendered into the lab node win1 at windowsAddress. */
  windows: WindowsLabNode;
  /** What was rendered before flanneld ran on the Windows host. */
  renderedBeforeFlanneld: WindowsNodeState;
  /** The Linux flanneld node lnx1 at linuxAddress. */
  linux: LinuxFlannelNode & { podCidr: string };
  /** The Windows host's Node and its podCIDR. */
  nodeName: string;
  windowsPodCidr: string;
}

/**
 * Sets the world up for test `t` (torn down when it ends). `linuxLabPods`: the Linux node's
 * pods are the lab's to run (flannel-world.ts addLinuxNode labPods).
 */
export async function windowsFlannelWorld(
  t: Parameters<typeof flannelWorld>[0] & Parameters<typeof joinWorld>[0],
  options: { linuxLabPods?: boolean } = {},
): Promise<WindowsFlannelWorld> {
  const world = await flannelWorld(t);
  const { kc, lab } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await installFlannelObjects(kc);
  const join = await joinWorld(t, {
    releases: ['2022'],
    startOperator: false,
    existingCluster: world.cluster,
  });
  const sim = join.fleet.hosts[0]!;
  const releaseFlanneld = sim.machine.holdService('flanneld');
  t.after(async () => releaseFlanneld());
  const windows = await WindowsLabNode.start({
    lab,
    machine: sim.machine,
    label: 'win1',
    address: windowsAddress,
  });
  t.after(async () => windows.stop());
  const renderedBeforeFlanneld = windows.state;

  const linux = await world.addLinuxNode('lnx1', {
    address: linuxAddress,
    labPods: options.linuxLabPods ?? false,
  });
  join.operator = await startTestOperator(kc, {
    namespace: join.namespace,
    payloadDir: join.payloadDir,
    config: { hosts, network: { mode: 'auto' } },
  });
  t.after(async () => join.operator?.stop());
  await createWindowsHosts(kc, join.namespace, [sim]);
  const host = await firstHostWithNode(kc, join.namespace).catch(async (error: Error) => {
    const h = await readWindowsHost(kc, join.namespace, sim.name.toLowerCase()).catch(() => {});
    error.message += `\nhost status: ${JSON.stringify(h?.status?.conditions)}`;
    throw error;
  });
  const nodeName = host.status!.nodeName!;
  await core.patchNode(
    {
      name: nodeName,
      body: {
        metadata: { annotations: { [standInAnnotations.publicIpOverwrite]: windowsAddress } },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  releaseFlanneld();
  const windowsPodCidr = await waitForPodCidr(kc, nodeName);
  return {
    world,
    kc,
    core,
    join,
    sim,
    windows,
    renderedBeforeFlanneld,
    linux,
    nodeName,
    windowsPodCidr,
  };
}

/**
 * A Windows pod `name` in `namespace` on the world's Windows node: Running with an address
 * from the lease, and its HNS endpoint rendered as a pod namespace.
 */
export async function runWindowsPod(
  w: WindowsFlannelWorld,
  namespace: string,
  name = 'web',
): Promise<{ podIP: string; pod: LabPod }> {
  await createWindowsPodOn(w.core, namespace, w.nodeName, name);
  const podIP = await waitFor(
    async () => {
      const pod = await w.core.readNamespacedPod({ namespace, name });
      return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
    },
    { description: `the Windows pod ${name} Running with an IP`, timeoutMs: 90_000 },
  ).catch(async (error: Error) => {
    const logs = await w.sim.machine.fs.list(hostPaths.agentLogs).catch(() => []);
    error.message += `\nHNS endpoints: ${JSON.stringify(w.sim.machine.hns.endpoints())}; agent logs: ${logs.map((l) => l.name).join(', ')}`;
    throw error;
  });
  const pod = await waitFor(() => w.windows.pod(podIP), {
    description: `the Windows pod's endpoint ${podIP} rendered`,
    timeoutMs: 15_000,
  });
  await w.windows.settled();
  return { podIP, pod };
}
