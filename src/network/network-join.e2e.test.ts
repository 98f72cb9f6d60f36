/**
 * Joining the cluster's pod network end to end, with a real control plane and simulated hosts
 * (issue 31): the operator detects Flannel VXLAN from the cluster's objects (network.mode auto)
 * and a host joins with flanneld (the node's own credentials, its lease annotations, the
 * Overlay network flannel.4096 and a remote-subnet route to a Linux node's lease), flannel's
 * CNI with win-overlay, UDP 4789 open, and kube-proxy on flannel.4096 with a reserved source
 * VIP; with Flannel host-gw, the L2Bridge network cbr0 with its bridge endpoint, a host route per
 * remote lease, win-bridge and kube-proxy on cbr0; a mode the cluster does not run, and Flannel's Linux defaults, join nothing, saying why.
 * The packets themselves cross in sim/netlab's tests.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { flannelAnnotations, flanneldStatus } from '../../sim/hosts/flanneld-standin.ts';
import { ipRoutes } from '../../sim/hosts/ip-routes.ts';
import { kubeProxyStatus } from '../../sim/hosts/kube-proxy-standin.ts';
import { kubeConfigFor, readKubeconfig } from '../../sim/hosts/kubelet-kubeconfig.ts';
import { installCalicoObjects, installFlannelObjects } from '../../sim/testkit/cluster-cni.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { createLinuxNode, createWindowsPodOn } from '../../sim/testkit/nodes.ts';
import { testNamespace } from '../../sim/testkit/test-cluster.ts';
import { startTestOperator, writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  readWindowsHost,
  waitForReadyHosts,
} from '../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../kube/wait-for.ts';
import { cidrContains, formatIpv4, parseIpv4, parseIpv4Cidr } from '../net/ipv4-cidr.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';

const hosts = { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 };

/**
 * Flannel's objects (net-conf `netConf`), a Linux node lnx-1 whose flanneld holds a lease of
 * `lease`'s backend at 192.0.2.11 (as kube.go's AcquireLease writes it), the operator on
 * network.mode auto, and one Windows host joined and Ready.
 */
async function flannelJoin(
  t: Parameters<typeof joinWorld>[0],
  lease: { backendType: string; backendData: string },
  netConf?: string,
) {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await installFlannelObjects(kc, netConf);
  await createLinuxNode(kc, { name: 'lnx-1' });
  const linuxCidr = await waitFor(
    async () => (await core.readNode({ name: 'lnx-1' })).spec?.podCIDR,
    { description: 'lnx-1’s pod CIDR' },
  );
  await core.patchNodeStatus(
    {
      name: 'lnx-1',
      body: {
        metadata: {
          annotations: {
            [flannelAnnotations.kubeSubnetManager]: 'true',
            [flannelAnnotations.backendType]: lease.backendType,
            [flannelAnnotations.backendData]: lease.backendData,
            [flannelAnnotations.publicIp]: '192.0.2.11',
          },
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  world.operator = await startTestOperator(kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    config: { hosts, network: { mode: 'auto' } },
  });
  t.after(() => world.operator?.stop());
  const sim = world.fleet.hosts[0]!;
  await createWindowsHosts(kc, world.namespace, [sim]);
  const [joined] = await waitForReadyHosts(kc, world.namespace, 1).catch(async (error: Error) => {
    // What the host and its agent say, for the failure's message.
    const logs = await sim.machine.fs.list(hostPaths.agentLogs).catch(() => []);
    let text = '';
    for (const entry of logs)
      text +=
        (await sim.machine.fs.tryReadFile(`${hostPaths.agentLogs}\\${entry.name}`))?.toString() ??
        '';
    const host = await readWindowsHost(kc, world.namespace, sim.name.toLowerCase()).catch(
      () => undefined,
    );
    error.message += `\nhost status: ${JSON.stringify(host?.status?.conditions)}\nagent log (tail):\n${text.slice(-4000)}\nservices: ${JSON.stringify(sim.machine.scm.names().map((n) => [n, sim.machine.scm.query(n)?.state, sim.machine.scm.query(n)?.exitCode]))}`;
    throw error;
  });
  return { world, kc, core, sim, joined: joined!, linuxCidr };
}

test('flannel-vxlan detected: flanneld with the node’s credentials, flannel’s CNI, UDP 4789, kube-proxy on flannel.4096 with a source VIP', async (t) => {
  const { kc, core, sim, joined, linuxCidr } = await flannelJoin(t, {
    backendType: 'vxlan',
    backendData: '{"VNI":4096,"VtepMAC":"7e:1a:2b:3c:4d:5e"}',
  });
  const nodeName = joined!.status!.nodeName!;

  // flanneld's lease: the four annotations, the VtepMAC the Overlay network's DR MAC.
  const overlay = await waitFor(() => sim.machine.hns.find('flannel.4096'), {
    description: 'flanneld’s Overlay network',
    timeoutMs: 60_000,
  });
  assert.equal(overlay.type, 'Overlay');
  assert.equal(sim.machine.hns.vsid(overlay.id), 4096);
  const drMac = sim.machine.hns.policies(overlay.id).find((p) => p.Type === 'DrMacAddress')!
    .Settings as { Address: string };
  const node = await waitFor(
    async () => {
      const n = await core.readNode({ name: nodeName });
      return n.metadata?.annotations?.[flannelAnnotations.backendData]?.includes('VtepMAC":"') &&
        !n.metadata.annotations[flannelAnnotations.backendData]!.includes('VtepMAC":""')
        ? n
        : undefined;
    },
    { description: 'the Windows Node’s flannel lease', timeoutMs: 60_000 },
  );
  const a = node.metadata!.annotations!;
  assert.equal(a[flannelAnnotations.kubeSubnetManager], 'true');
  assert.equal(a[flannelAnnotations.backendType], 'vxlan');
  assert.deepEqual(JSON.parse(a[flannelAnnotations.backendData]!), {
    VNI: 4096,
    VtepMAC: drMac.Address.toLowerCase().replaceAll('-', ':'),
  });
  assert.equal(a[flannelAnnotations.publicIp], sim.address);
  // The Linux node's lease became a remote-subnet route on the Overlay network.
  await waitFor(
    () =>
      sim.machine.hns.policies(overlay.id).some(
        (p) =>
          p.Type === 'RemoteSubnetRoute' &&
          JSON.stringify(p.Settings) ===
            JSON.stringify({
              IsolationId: 4096,
              DistributedRouterMacAddress: '7e:1a:2b:3c:4d:5e',
              ProviderAddress: '192.0.2.11',
              DestinationPrefix: linuxCidr,
            }),
      ) || undefined,
    { description: 'the RemoteSubnetRoute to lnx-1', timeoutMs: 30_000 },
  );
  // flanneld started only once its Node reads were granted: it never met a 403 (its reflector
  // would have backed off for up to 30 s).
  let flanneldLog = '';
  for (const entry of await sim.machine.fs.list('C:\\k\\logs\\flanneld'))
    flanneldLog +=
      (await sim.machine.fs.tryReadFile(`C:\\k\\logs\\flanneld\\${entry.name}`))?.toString() ?? '';
  assert.match(flanneldLog, /kube subnet manager|Wrote subnet file/i);
  assert.doesNotMatch(flanneldLog, /forbidden/i);
  // Attacker side: the node's credentials (flanneld's) read all Nodes because winfleet bound
  // this node's user alone; they still cannot touch another Node's lease, and a Linux node's
  // user gained nothing.
  const asNode = kubeConfigFor(await readKubeconfig(sim.machine.fs, hostPaths.kubeconfig));
  const nodeCore = asNode.makeApiClient(k8s.CoreV1Api);
  assert.ok((await nodeCore.listNode()).items.length >= 2);
  await assert.rejects(
    nodeCore.patchNode(
      {
        name: 'lnx-1',
        body: { metadata: { annotations: { [flannelAnnotations.publicIp]: sim.address } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    ),
    (error: unknown) => (error as { code?: number }).code === 403,
  );
  await assert.rejects(
    nodeCore.patchNodeStatus(
      {
        name: 'lnx-1',
        body: { metadata: { annotations: { [flannelAnnotations.publicIp]: sim.address } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    ),
    (error: unknown) => (error as { code?: number }).code === 403,
  );
  const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
  const mayList = async (user: string) =>
    (
      await authz.createSubjectAccessReview({
        body: {
          spec: {
            user,
            groups: ['system:nodes', 'system:authenticated'],
            resourceAttributes: { verb: 'list', resource: 'nodes' },
          },
        },
      })
    ).status?.allowed;
  assert.equal(await mayList(`system:node:${nodeName}`), true);
  assert.equal(await mayList('system:node:lnx-1'), false);
  // flanneld runs as a service through winfleet-service.exe, as the node.
  const flanneld = sim.machine.scm.query('flanneld');
  assert.equal(flanneld?.state, 'running');
  assert.match(
    flanneld!.commandLine,
    /winfleet-service\.exe.* -- C:\\k\\flanneld\.exe --kube-subnet-mgr/,
  );
  // The node's files: flannel's CNI config, flanneld's net-conf.json, the VXLAN port open.
  const conflist = JSON.parse((await sim.machine.fs.readFile(hostPaths.cniConfig)).toString());
  assert.equal(conflist.name, 'flannel.4096');
  assert.equal(conflist.plugins[0].type, 'flannel');
  assert.equal(conflist.plugins[0].delegate.type, 'win-overlay');
  assert.match(
    (await sim.machine.fs.readFile('C:\\k\\flannel\\net-conf.json')).toString(),
    /"VNI":4096/,
  );
  assert.ok(sim.machine.firewall.rules().some((r) => r.name === 'winfleet-vxlan'));
  // kube-proxy on flannel.4096 with the source VIP reserved in the node's pod subnet.
  const proxy = await waitFor(
    () =>
      kubeProxyStatus(sim.machine)?.phase === 'running'
        ? sim.machine.scm.query('kube-proxy')
        : undefined,
    { description: 'kube-proxy running on flannel.4096', timeoutMs: 60_000 },
  );
  assert.match(proxy.commandLine, /--network-name=flannel\.4096 --source-vip=(\d+\.\d+\.\d+\.\d+)/);
  const sourceVip = /--source-vip=(\d+\.\d+\.\d+\.\d+)/.exec(proxy.commandLine)![1]!;
  const podCidr = parseIpv4Cidr(node.spec!.podCIDR!)!;
  assert.ok(cidrContains(podCidr, parseIpv4(sourceVip)!), `${sourceVip} in ${node.spec!.podCIDR}`);
  await waitFor(
    async () => {
      const n = await core.readNode({ name: nodeName });
      const c = n.status?.conditions?.find((x) => x.type === 'KubeProxyUnhealthy');
      return c?.status === 'False' && c.reason === 'ServiceHealthy';
    },
    {
      description: 'KubeProxyUnhealthy=False ServiceHealthy (kube-proxy’s JSON healthz)',
      timeoutMs: 60_000,
    },
  );
  // A pod gets an address from flannel’s lease, never the source VIP.
  const apps = await testNamespace(kc, 'flannel-pods');
  await createWindowsPodOn(core, apps, nodeName);
  const podIP = await waitFor(
    async () => {
      const pod = await core.readNamespacedPod({ namespace: apps, name: 'web' });
      return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
    },
    { description: 'the pod Running with an IP', timeoutMs: 90_000 },
  );
  assert.ok(cidrContains(podCidr, parseIpv4(podIP)!), `${podIP} in ${node.spec!.podCIDR}`);
  assert.notEqual(podIP, sourceVip);
  assert.ok(sim.machine.hns.endpoints().some((e) => e.ip === podIP && e.networkId === overlay.id));
});

test('flannel-host-gw detected: flanneld’s L2Bridge cbr0 with cbr0_ep at .2, a host route to the Linux lease, flannel’s CNI with win-bridge, kube-proxy on cbr0', async (t) => {
  const { kc, core, sim, joined, linuxCidr } = await flannelJoin(
    t,
    { backendType: 'host-gw', backendData: 'null' },
    '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}',
  );
  const nodeName = joined!.status!.nodeName!;

  // flanneld's lease: host-gw, no backend data, the host's address.
  const node = await waitFor(
    async () => {
      const n = await core.readNode({ name: nodeName });
      return n.metadata?.annotations?.[flannelAnnotations.backendType] === 'host-gw'
        ? n
        : undefined;
    },
    { description: 'the Windows Node’s host-gw lease', timeoutMs: 60_000 },
  );
  const a = node.metadata!.annotations!;
  assert.equal(a[flannelAnnotations.kubeSubnetManager], 'true');
  assert.equal(a[flannelAnnotations.backendData], 'null');
  assert.equal(a[flannelAnnotations.publicIp], sim.address);
  const podCidr = parseIpv4Cidr(node.spec!.podCIDR!)!;
  // The L2Bridge network cbr0 on the lease, gateway .1; the bridge endpoint cbr0_ep at .2,
  // attached to the host.
  const bridge = await waitFor(() => sim.machine.hns.find('cbr0'), {
    description: 'flanneld’s L2Bridge network cbr0',
    timeoutMs: 60_000,
  });
  assert.equal(bridge.type, 'L2Bridge');
  assert.deepEqual(sim.machine.hns.subnets(bridge.id), [
    { addressPrefix: node.spec!.podCIDR!, gateway: formatIpv4(podCidr.network + 1) },
  ]);
  const endpoint = sim.machine.hns.findEndpoint('cbr0_ep')!;
  assert.equal(endpoint.networkId, bridge.id);
  assert.equal(endpoint.ip, formatIpv4(podCidr.network + 2));
  assert.equal(endpoint.hostAttached, true);
  assert.equal(sim.machine.hns.find(`flannel.4096`), undefined);
  // One host route: the Linux lease via its public IP, on the host's vNIC.
  const route = await waitFor(
    () =>
      ipRoutes(sim.machine)
        .list()
        .find((r) => r.destinationPrefix === linuxCidr),
    { description: 'the host route to lnx-1’s lease', timeoutMs: 30_000 },
  );
  assert.equal(route.nextHop, '192.0.2.11');
  assert.equal(route.interfaceIndex, flanneldStatus(sim.machine)!.interfaceIndex);
  assert.equal(ipRoutes(sim.machine).list().length, 1);
  // flanneld runs as a service; flannel's CNI config delegates to win-bridge on cbr0; no VXLAN
  // port is opened.
  assert.equal(sim.machine.scm.query('flanneld')?.state, 'running');
  const conflist = JSON.parse((await sim.machine.fs.readFile(hostPaths.cniConfig)).toString());
  assert.equal(conflist.name, 'cbr0');
  assert.equal(conflist.plugins[0].type, 'flannel');
  assert.equal(conflist.plugins[0].delegate.type, 'win-bridge');
  assert.ok(!sim.machine.firewall.rules().some((r) => r.name === 'winfleet-vxlan'));
  // kube-proxy on cbr0, without a source VIP (winkernel reads one only on an overlay).
  const proxy = await waitFor(
    () =>
      kubeProxyStatus(sim.machine)?.phase === 'running'
        ? sim.machine.scm.query('kube-proxy')
        : undefined,
    { description: 'kube-proxy running on cbr0', timeoutMs: 60_000 },
  );
  assert.match(proxy.commandLine, /--network-name=cbr0(\s|$)/);
  assert.doesNotMatch(proxy.commandLine, /--source-vip/);
  // A pod gets an address from the lease: not the gateway, not the bridge endpoint's .2.
  const apps = await testNamespace(kc, 'hostgw-pods');
  await createWindowsPodOn(core, apps, nodeName);
  const podIP = await waitFor(
    async () => {
      const pod = await core.readNamespacedPod({ namespace: apps, name: 'web' });
      return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
    },
    { description: 'the pod Running with an IP', timeoutMs: 90_000 },
  );
  assert.ok(cidrContains(podCidr, parseIpv4(podIP)!), `${podIP} in ${node.spec!.podCIDR}`);
  assert.notEqual(podIP, formatIpv4(podCidr.network + 1));
  assert.notEqual(podIP, endpoint.ip);
  assert.ok(sim.machine.hns.endpoints().some((e) => e.ip === podIP && e.networkId === bridge.id));
  // A route removed behind flanneld's back is put back within its 10 s check.
  ipRoutes(sim.machine).remove(route);
  await waitFor(
    () =>
      ipRoutes(sim.machine)
        .list()
        .some((r) => r.destinationPrefix === linuxCidr) || undefined,
    { description: 'the host route put back', timeoutMs: 30_000 },
  );
});

test('a mode the cluster does not run, and Flannel’s Linux VXLAN defaults, join nothing and say why', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await installCalicoObjects(kc);
  world.operator = await startTestOperator(kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    config: { hosts, network: { mode: 'flannel-vxlan' } },
  });
  t.after(() => world.operator?.stop());
  const sim = world.fleet.hosts[0]!;
  const [created] = await createWindowsHosts(kc, world.namespace, [sim]);
  const name = created!.metadata.name;
  const refused = await waitFor(
    async () => {
      const h = await readWindowsHost(kc, world.namespace, name);
      const ready = h.status?.conditions?.find((c) => c.type === 'Ready');
      return ready?.reason === 'NetworkModeMismatch' ? ready : undefined;
    },
    { description: 'the host refused: NetworkModeMismatch', timeoutMs: 60_000 },
  );
  assert.match(
    refused.message,
    /network\.mode is flannel-vxlan, but Flannel does not run in the cluster/,
  );
  assert.match(refused.message, /Calico \(DaemonSet calico-system\/calico-node\)/);
  const events = await core.listNamespacedEvent({
    namespace: world.namespace,
    fieldSelector: `involvedObject.name=${name},reason=NetworkModeMismatch`,
  });
  assert.equal(events.items[0]?.type, 'Warning');
  // Nothing was installed on the host: no winfleet directory, no service.
  assert.equal(await sim.machine.fs.stat('C:\\k\\winfleet'), undefined);
  assert.deepEqual(
    sim.machine.scm.names().filter((n) => /kubelet|flanneld|winfleet/i.test(n)),
    [],
  );

  // Flannel with its Linux defaults (VNI 1, port 8472): refused, naming net-conf.json's fields.
  await installFlannelObjects(
    kc,
    '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":1,"Port":8472}}',
  );
  await kc
    .makeApiClient(k8s.AppsV1Api)
    .deleteNamespacedDaemonSet({ namespace: 'calico-system', name: 'calico-node' });
  await writeOperatorConfig(kc, world.namespace, { hosts, network: { mode: 'auto' } });
  const unsupported = await waitFor(
    async () => {
      const h = await readWindowsHost(kc, world.namespace, name);
      const ready = h.status?.conditions?.find((c) => c.type === 'Ready');
      return ready?.reason === 'NetworkUnsupported' ? ready : undefined;
    },
    { description: 'the host refused: NetworkUnsupported', timeoutMs: 60_000 },
  );
  assert.match(unsupported.message, /VNI/);
  assert.match(unsupported.message, /4789/);
  assert.match(unsupported.message, /net-conf\.json of ConfigMap kube-flannel\/kube-flannel-cfg/);
  assert.equal(await sim.machine.fs.stat('C:\\k\\winfleet'), undefined, 'still nothing installed');
});
