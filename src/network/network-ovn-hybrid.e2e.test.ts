/**
 * ovn-hybrid end to end (issue 31): a cluster that allocates no spec.podCIDR (as OpenShift), with OVN-Kubernetes and hybrid networking
 * (OpenShift's objects; the hybrid overlay master played by sim/testkit/ovn-hybrid.ts) and a
 * payload an administrator gave hybrid-overlay-node.exe. The operator detects the mode (auto),
 * the host joins with hybrid-overlay-node as a service on the node's credentials; it makes
 * OVNKubernetesHybridOverlayNetwork (VNI 4097) on the subnet OVN's master annotated — not
 * spec.podCIDR — writes the DR MAC back and routes to the Linux node's OVN subnet; win-overlay's
 * CNI config is on that subnet, UDP 4789 is open, kube-proxy runs on the hybrid overlay with a
 * source VIP of that subnet, and the node goes Ready.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { hybridOverlayStatus } from '../../sim/hosts/hybrid-overlay-standin.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { createLinuxNode } from '../../sim/testkit/nodes.ts';
import {
  installOvnHybridObjects,
  ipToHardwareAddress,
  startOvnHybridMaster,
} from '../../sim/testkit/ovn-hybrid.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  readWindowsHost,
  waitForReadyHosts,
} from '../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../kube/wait-for.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';

const hybridNetwork = { cidr: '10.132.0.0/14', hostPrefix: 23 };

test('ovn-hybrid detected: hybrid-overlay-node makes the hybrid overlay on OVN’s subnet, win-overlay’s CNI, kube-proxy with a source VIP, Ready', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022'],
    startOperator: false,
    payloadExtraFiles: ['hybrid-overlay-node.exe'],
    // OpenShift with OVN-Kubernetes allocates no spec.podCIDR.
    cluster: { allocateNodeCidrs: false },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await installOvnHybridObjects(kc, hybridNetwork);
  t.after(startOvnHybridMaster(kc, hybridNetwork));
  // A Linux node with the OVN subnet OVN's cluster manager gave it and its InternalIP.
  await createLinuxNode(kc, { name: 'ovn-lnx-1', waitReady: false });
  await core.patchNode(
    {
      name: 'ovn-lnx-1',
      body: {
        metadata: { annotations: { 'k8s.ovn.org/node-subnets': '{"default":["10.128.2.0/23"]}' } },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  const linuxIp = '192.0.2.21';
  await core.patchNodeStatus(
    {
      name: 'ovn-lnx-1',
      body: { status: { addresses: [{ type: 'InternalIP', address: linuxIp }] } },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  world.operator = await startTestOperator(kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    config: {
      hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 },
      network: { mode: 'auto' },
    },
  });
  t.after(() => world.operator?.stop());
  const sim = world.fleet.hosts[0]!;
  await createWindowsHosts(kc, world.namespace, [sim]);
  const [joined] = await waitForReadyHosts(kc, world.namespace, 1).catch(async (error: Error) => {
    const logs = await sim.machine.fs.list(hostPaths.agentLogs).catch(() => []);
    let text = '';
    for (const entry of logs)
      text +=
        (await sim.machine.fs.tryReadFile(`${hostPaths.agentLogs}\\${entry.name}`))?.toString() ??
        '';
    const host = await readWindowsHost(kc, world.namespace, sim.name.toLowerCase()).catch(
      () => undefined,
    );
    const hybridLog = (
      await sim.machine.fs.tryReadFile('C:\\k\\logs\\hybrid-overlay-node.log')
    )?.toString();
    error.message += `\nhost status: ${JSON.stringify(host?.status?.conditions)}\nagent log (tail):\n${text.slice(-4000)}\nhybrid-overlay-node: ${JSON.stringify(hybridOverlayStatus(sim.machine))} ${hybridLog?.slice(-2000)}\nservices: ${JSON.stringify(sim.machine.scm.names().map((n) => [n, sim.machine.scm.query(n)?.state, sim.machine.scm.query(n)?.exitCode]))}`;
    throw error;
  });
  const nodeName = joined!.status!.nodeName!;

  // OVN's master gave the Windows node a hybrid subnet; hybrid-overlay-node made the network on
  // it (VNI 4097, gateway .1, HostRoute) and annotated the network's DR MAC.
  const node = await core.readNode({ name: nodeName });
  assert.equal(node.spec?.podCIDR, undefined, 'Ready without spec.podCIDR');
  const subnet = node.metadata?.annotations?.['k8s.ovn.org/hybrid-overlay-node-subnet'];
  assert.equal(subnet, '10.132.0.0/23');
  const overlay = sim.machine.hns.find('OVNKubernetesHybridOverlayNetwork')!;
  assert.equal(overlay.type, 'Overlay');
  assert.equal(sim.machine.hns.vsid(overlay.id), 4097);
  assert.deepEqual(sim.machine.hns.subnets(overlay.id), [
    { addressPrefix: '10.132.0.0/23', gateway: '10.132.0.1' },
  ]);
  assert.ok(sim.machine.hns.find('BaseOVNKubernetesHybridOverlayNetwork'));
  const drMac = (
    sim.machine.hns.policies(overlay.id).find((p) => p.Type === 'DrMacAddress')!.Settings as {
      Address: string;
    }
  ).Address;
  const annotated = await waitFor(
    async () =>
      (await core.readNode({ name: nodeName })).metadata?.annotations?.[
        'k8s.ovn.org/hybrid-overlay-distributed-router-gateway-mac'
      ],
    { description: 'the DR MAC annotation' },
  );
  assert.equal(annotated, drMac.toLowerCase().replaceAll('-', ':'));
  // The route toward the Linux node's OVN subnet, through its DR MAC.
  const route = await waitFor(
    () =>
      sim.machine.hns
        .policies(overlay.id)
        .find(
          (p) => p.Type === 'RemoteSubnetRoute' && p.Settings.DestinationPrefix === '10.128.2.0/23',
        ),
    { description: 'the remote subnet route to the Linux node' },
  );
  assert.deepEqual(route.Settings, {
    IsolationId: 4097,
    DistributedRouterMacAddress: ipToHardwareAddress('10.128.2.3'),
    ProviderAddress: linuxIp,
    DestinationPrefix: '10.128.2.0/23',
  });
  assert.equal(hybridOverlayStatus(sim.machine)?.phase, 'running');

  // hybrid-overlay-node runs as its own service with the node's credentials; no flanneld.
  const service = sim.machine.scm.query('hybrid-overlay-node');
  assert.equal(service?.state, 'running');
  assert.equal(sim.machine.scm.query('flanneld'), undefined);
  // win-overlay's CNI config on that subnet; UDP 4789 open.
  const cni = JSON.parse((await sim.machine.fs.readFile(hostPaths.cniConfig)).toString()) as {
    name: string;
    plugins: { type: string; ipam: { subnet: string } }[];
  };
  assert.equal(cni.name, 'OVNKubernetesHybridOverlayNetwork');
  assert.deepEqual(
    [cni.plugins[0]!.type, cni.plugins[0]!.ipam.subnet],
    ['win-overlay', '10.132.0.0/23'],
  );
  assert.ok(
    sim.machine.firewall
      .rules()
      .some(
        (r) => r.protocol === 'UDP' && Array.isArray(r.localPorts) && r.localPorts.includes(4789),
      ),
    JSON.stringify(sim.machine.firewall.rules()),
  );
  // kube-proxy on the hybrid overlay with a source VIP of the hybrid subnet.
  const proxy = await waitFor(
    () => {
      const q = sim.machine.scm.query('kube-proxy');
      return q?.state === 'running' ? q : undefined;
    },
    { description: 'kube-proxy running', timeoutMs: 60_000 },
  );
  const args = JSON.stringify(proxy);
  assert.match(args, /--network-name=OVNKubernetesHybridOverlayNetwork/);
  assert.match(args, /--source-vip=10\.132\.[01]\.\d+/);
});
