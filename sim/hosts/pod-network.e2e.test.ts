/**
 * Pod IPs on joined simulated hosts, end to end: the controller manager gives each Node its pod
 * CIDR, the agent writes the CNI config for it once the Node has one, and the host's kubelet
 * gives each pod an address from that config (sim-cni.ts) — so pods spread over two hosts have
 * unique IPs, each inside its own Node's spec.podCIDR. With the cluster-wide CIDR in every
 * host's config (issue 11, item 3) both hosts hand out 10.244.0.2, .3, … and this fails.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { paths } from '../../src/agent/agent-config.ts';
import { applyManifests } from '../../src/kube/manifests.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { cidrContains, parseIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import { podCidr } from '../cluster/start-cluster.ts';
import { joinWorld } from '../testkit/join-fixture.ts';
import { testNamespace } from '../testkit/test-cluster.ts';
import { createWindowsHosts, hostReady, listWindowsHosts } from '../testkit/windows-hosts.ts';
import { hostLocalDataDir } from './sim-cni.ts';

const replicas = 6;

function deployment(name: string): k8s.V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'kubernetes.io/os': 'windows' },
          tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
          // Spread evenly over the hosts.
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: name } },
            },
          ],
          containers: [{ name: 'iis', image: 'mcr.microsoft.com/windows/servercore/iis' }],
        },
      },
    },
  };
}

/** The addresses host-local holds on a host (files named by address). */
async function heldAddresses(
  host: Awaited<ReturnType<typeof joinWorld>>['fleet']['hosts'][number],
): Promise<string[]> {
  const dir = `${hostLocalDataDir}\\winfleet`;
  if (!(await host.machine.fs.stat(dir))) return [];
  return (await host.machine.fs.list(dir))
    .map((e) => e.name)
    .filter((n) => parseIpv4(n) !== undefined)
    .sort();
}

test('pods spread over two joined hosts get unique IPs inside their own Node’s pod CIDR', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2022'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const hosts = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, world.namespace);
      return list.length === 2 && list.every(hostReady) ? list : undefined;
    },
    { description: 'two Ready WindowsHosts', timeoutMs: 120_000, intervalMs: 500 },
  );

  // Each Node has its own pod CIDR inside the cluster's, and its host's CNI config uses it.
  const cluster = parseIpv4Cidr(podCidr)!;
  const nodeCidrs = new Map<string, string>();
  for (const host of hosts) {
    const nodeName = host.status!.nodeName!;
    const node = await core.readNode({ name: nodeName });
    const podCIDR = node.spec?.podCIDR;
    assert.ok(podCIDR, `Node ${nodeName} has a spec.podCIDR`);
    const parsed = parseIpv4Cidr(podCIDR)!;
    assert.ok(cidrContains(cluster, parsed.network), `${podCIDR} is inside ${podCidr}`);
    nodeCidrs.set(nodeName, podCIDR);
    const sim = world.fleet.hosts.find((h) => h.address === host.spec.address)!;
    const conflist = JSON.parse((await sim.machine.fs.readFile(paths.cniConfig)).toString()) as {
      plugins: { ipam: { subnet: string } }[];
    };
    assert.equal(conflist.plugins[0]!.ipam.subnet, podCIDR, `${nodeName}'s CNI config`);
  }
  assert.equal(new Set(nodeCidrs.values()).size, 2, 'the two Nodes have different pod CIDRs');

  const namespace = await testNamespace(kc, 'podnet');
  await applyManifests(kc, [deployment('web')], { namespace, fieldManager: 'kubectl' });
  const pods = await waitFor(
    async () => {
      const list = (await core.listNamespacedPod({ namespace, labelSelector: 'app=web' })).items;
      return list.length === replicas &&
        list.every((p) => p.status?.phase === 'Running' && p.status.podIP)
        ? list
        : undefined;
    },
    { description: `${replicas} web pods Running with IPs`, timeoutMs: 90_000, intervalMs: 500 },
  );

  const ips = pods.map((p) => p.status!.podIP!);
  assert.equal(new Set(ips).size, ips.length, `pod IPs are unique: ${ips.join(', ')}`);
  const perNode = new Map<string, string[]>();
  for (const pod of pods) {
    const nodeName = pod.spec!.nodeName!;
    const podCIDR = nodeCidrs.get(nodeName);
    assert.ok(podCIDR, `${pod.metadata?.name} runs on a joined host (${nodeName})`);
    const ip = pod.status!.podIP!;
    assert.ok(
      cidrContains(parseIpv4Cidr(podCIDR)!, parseIpv4(ip)!),
      `${pod.metadata?.name} on ${nodeName}: ${ip} is inside ${podCIDR}`,
    );
    assert.deepEqual(
      pod.status?.podIPs?.map((p) => p.ip),
      [ip],
    );
    perNode.set(nodeName, [...(perNode.get(nodeName) ?? []), ip]);
  }
  assert.equal(perNode.size, 2, 'the pods run on both hosts');

  // host-local on each host holds exactly the addresses of the pods there.
  for (const host of hosts) {
    const sim = world.fleet.hosts.find((h) => h.address === host.spec.address)!;
    assert.deepEqual(
      await heldAddresses(sim),
      [...(perNode.get(host.status!.nodeName!) ?? [])].sort(),
    );
  }

  // Scaled down, the sandboxes go and their addresses are released.
  await kc
    .makeApiClient(k8s.AppsV1Api)
    .patchNamespacedDeploymentScale(
      { name: 'web', namespace, body: { spec: { replicas: 2 } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  await waitFor(
    async () => {
      let held = 0;
      for (const sim of world.fleet.hosts) held += (await heldAddresses(sim)).length;
      return held === 2;
    },
    { description: 'the addresses of the removed pods released', timeoutMs: 60_000 },
  );

  // Without the plugin its conflist names, a pod's sandbox fails: Pending, with the kubelet's
  // event; once the plugin is back, the kubelet's retry gives it an address.
  const [first] = world.fleet.hosts;
  const firstNode = hosts.find((h) => h.spec.address === first!.address)!.status!.nodeName!;
  const plugin = `${paths.cniBin}\\sdnbridge.exe`;
  const pluginData = await first!.machine.fs.readFile(plugin);
  await first!.machine.fs.remove(plugin);
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'no-plugin' },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': firstNode },
        tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
        containers: [{ name: 'app', image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' }],
      },
    },
  });
  const failed = await waitFor(
    async () =>
      (
        await core.listNamespacedEvent({
          namespace,
          fieldSelector: 'involvedObject.name=no-plugin,reason=FailedCreatePodSandBox',
        })
      ).items[0],
    { description: 'a FailedCreatePodSandBox event', timeoutMs: 60_000 },
  );
  assert.equal(failed.type, 'Warning');
  assert.equal(failed.source?.component, 'kubelet');
  assert.match(
    failed.message ?? '',
    /^Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "[0-9a-f]{64}": plugin type="sdnbridge" name="winfleet" failed \(add\): failed to find plugin "sdnbridge" in path \[C:\\k\\cni\\bin\]$/,
  );
  const pending = await core.readNamespacedPod({ name: 'no-plugin', namespace });
  assert.equal(pending.status?.phase, 'Pending');
  assert.equal(pending.status?.podIP, undefined);
  await first!.machine.fs.writeFileAtomic(plugin, pluginData);
  const healed = await waitFor(
    async () => {
      const pod = await core.readNamespacedPod({ name: 'no-plugin', namespace });
      return pod.status?.phase === 'Running' ? pod : undefined;
    },
    { description: 'the pod Running once the plugin is back', timeoutMs: 60_000 },
  );
  assert.ok(
    cidrContains(parseIpv4Cidr(nodeCidrs.get(firstNode)!)!, parseIpv4(healed.status!.podIP!)!),
  );
});
