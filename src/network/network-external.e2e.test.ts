/**
 * `external` mode end to end (issue 31): the cluster runs Calico with its Windows data plane
 * (calico-node-windows, which installs Calico's CNI into C:\etc\cni\net.d and C:\opt\cni\bin)
 * and kube-proxy-windows. The operator detects it (network.mode auto) and the host joins with
 * no CNI config and no HNS network of winfleet's, containerd pointed at the DaemonSet's
 * directories and no kube-proxy of winfleet's; the node is NotReady until the CNI's config
 * appears, as containerd's CRI reports, then Ready. The test plays calico-node-windows on the
 * host (kwok runs no DaemonSet pod on a simulated host).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { installCalicoWindowsObjects } from '../../sim/testkit/cluster-cni.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import { createWindowsHosts, waitForReadyHosts } from '../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../kube/wait-for.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';

const hosts = { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 };

/** A Calico config list as calico-node-windows writes it (projectcalico/calico cni-plugin). */
const calicoConflist = JSON.stringify({
  name: 'Calico',
  cniVersion: '0.3.1',
  plugins: [
    {
      type: 'calico',
      mode: 'vxlan',
      vxlan_mac_prefix: '0E-2A',
      vxlan_vni: 4096,
      policy: { type: 'k8s' },
      ipam: { type: 'calico-ipam' },
    },
  ],
});

test('external (Calico detected): no CNI config, network or kube-proxy of winfleet’s; containerd uses the DaemonSet’s directories; Ready once the CNI’s config is there', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { kc } = world;
  await installCalicoWindowsObjects(kc, { kubeProxyWindows: true });
  world.operator = await startTestOperator(kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    config: { hosts, network: { mode: 'auto' } },
  });
  t.after(() => world.operator?.stop());
  const sim = world.fleet.hosts[0]!;
  await createWindowsHosts(kc, world.namespace, [sim]);

  // The agent configured containerd for the DaemonSet's directories and started the kubelet.
  const config = await waitFor(
    async () => {
      const running = sim.machine.scm.query('kubelet')?.state === 'running';
      const text = (await sim.machine.fs.tryReadFile(hostPaths.containerdConfig))?.toString();
      return running ? text : undefined;
    },
    { description: 'containerd configured and the kubelet running', timeoutMs: 120_000 },
  );
  assert.match(config, /bin_dir = "C:\\\\opt\\\\cni\\\\bin"/);
  assert.match(config, /conf_dir = "C:\\\\etc\\\\cni\\\\net\.d"/);
  // Nothing of winfleet's own network: no CNI config, no HNS network, no kube-proxy (the
  // cluster's kube-proxy-windows runs there), no VXLAN rule of winfleet's.
  assert.equal(await sim.machine.fs.stat(hostPaths.cniConfig), undefined);
  assert.deepEqual(
    sim.machine.hns.list().map((n) => n.name),
    [],
  );
  assert.equal(sim.machine.scm.query('kube-proxy'), undefined);
  assert.equal(sim.machine.scm.query('flanneld'), undefined);
  assert.ok(!sim.machine.firewall.rules().some((r) => r.name === 'winfleet-vxlan'));

  // The kubelet's Node is NotReady: containerd finds no network config yet.
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const nodeName = await waitFor(
    async () =>
      (await core.listNode()).items.find((n) => n.status?.nodeInfo?.operatingSystem === 'windows')
        ?.metadata?.name,
    { description: 'the Windows Node registered', timeoutMs: 60_000 },
  );
  const notReady = await waitFor(
    async () => {
      const ready = (await core.readNode({ name: nodeName })).status?.conditions?.find(
        (c) => c.type === 'Ready',
      );
      return ready?.status === 'False' ? ready : undefined;
    },
    { description: 'the Node NotReady', timeoutMs: 60_000 },
  );
  assert.match(notReady.message ?? '', /cni plugin not initialized/);

  // calico-node-windows installs its config and makes its network: the node goes Ready.
  await sim.machine.fs.mkdir('C:\\etc\\cni\\net.d', { recursive: true });
  await sim.machine.fs.writeFile('C:\\etc\\cni\\net.d\\10-calico.conflist', calicoConflist);
  const [ready] = await waitForReadyHosts(kc, world.namespace, 1);
  assert.equal(ready?.status?.nodeName, nodeName);
  // Still nothing of winfleet's: its CNI config, network and kube-proxy stay away.
  assert.equal(await sim.machine.fs.stat(hostPaths.cniConfig), undefined);
  assert.equal(sim.machine.scm.query('kube-proxy'), undefined);
  const kubeProxyCondition = (await core.readNode({ name: nodeName })).status?.conditions?.find(
    (c) => c.type === 'KubeProxyUnhealthy',
  );
  assert.notEqual(
    kubeProxyCondition?.status,
    'True',
    'no kube-proxy of winfleet’s to be unhealthy',
  );
});
