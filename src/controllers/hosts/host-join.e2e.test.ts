/**
 * Joining simulated Windows hosts end to end: SSH, SFTP, the real agent code, a real kubelet
 * TLS bootstrap against the real API server, winfleet's CSR approval, kwok for heartbeats.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { loadFixture } from '../../../sim/testkit/fixtures.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createLinuxNode } from '../../../sim/testkit/nodes.ts';
import { testNamespace } from '../../../sim/testkit/test-cluster.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import {
  desiredServicesVersionAnnotation,
  gmsaReadinessAnnotation,
  gmsaReadyLabel,
  hostAnnotation,
  hostIdentity,
  servicesVersionAnnotation,
} from '../../api/node-annotations.ts';
import { applyManifests } from '../../kube/manifests.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('three hosts (2019, 2022, 2022) join as Ready nodes and run the seed IIS Deployment', async (t) => {
  const world = await joinWorld(t, { releases: ['2019', '2022', '2022'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await createLinuxNode(kc, { name: 'linux-1' });
  // The 2019 host is in a (fake) Active Directory domain; the others are in a workgroup.
  world.fleet.hosts[0]!.machine.domain = 'corp.winfleet.test';
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const hosts = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, world.namespace);
      return list.length === 3 && list.every(hostReady) ? list : undefined;
    },
    { description: 'three Ready WindowsHosts', timeoutMs: 120_000, intervalMs: 500 },
  );
  for (const host of hosts) {
    const sim = world.fleet.hosts.find((h) => h.address === host.spec.address)!;
    // The node lifecycle controller lifts its not-ready taint a moment after the Node turns
    // Ready (it works from its own informer), so wait for the taints to settle before comparing.
    const node = await waitFor(
      async () => {
        const n = await core.readNode({ name: host.status!.nodeName! });
        const lifecycle = (n.spec?.taints ?? []).filter((x) =>
          x.key.startsWith('node.kubernetes.io/'),
        );
        return lifecycle.length === 0 ? n : undefined;
      },
      {
        description: `${host.status!.nodeName} without the node lifecycle's taints`,
        timeoutMs: 60_000,
      },
    );
    const labels = node.metadata?.labels ?? {};
    assert.equal(labels['kubernetes.io/os'], 'windows');
    assert.equal(labels['node.kubernetes.io/windows-build'], sim.build);
    assert.equal(labels['winfleet.io/managed'], 'true');
    assert.deepEqual(JSON.parse(JSON.stringify(node.spec?.taints)), [
      { key: 'os', value: 'windows', effect: 'NoSchedule' },
    ]);
    assert.equal(node.status?.nodeInfo?.operatingSystem, 'windows');
    assert.match(
      node.status?.nodeInfo?.kernelVersion ?? '',
      new RegExp(`^${sim.build.replaceAll('.', '\\.')}\\.\\d+$`),
    );
    const annotations = node.metadata?.annotations ?? {};
    assert.equal(annotations[servicesVersionAnnotation], world.payload.version);
    assert.equal(annotations[desiredServicesVersionAnnotation], world.payload.version);
    assert.equal(annotations[hostAnnotation], hostIdentity(host));
    assert.equal(host.status?.servicesVersion, world.payload.version);
    assert.equal(host.status?.windowsBuild, sim.build);
    assert.match(host.status?.hostKeyFingerprint ?? '', /^SHA256:/);
    // system-reserved (cpu 500m, memory 2Gi) lowers allocatable, as the kubelet config says.
    assert.notEqual(node.status?.allocatable?.memory, node.status?.capacity?.memory);
    // The agent labels its own Node with the host's gMSA readiness, with its node credentials.
    const joined = sim === world.fleet.hosts[0];
    const gmsa = await waitFor(
      async () => {
        const n = await core.readNode({ name: host.status!.nodeName! });
        const reason = n.metadata?.annotations?.[gmsaReadinessAnnotation];
        return reason ? { ready: n.metadata?.labels?.[gmsaReadyLabel], reason } : undefined;
      },
      { description: `${host.status!.nodeName}'s gMSA readiness`, timeoutMs: 30_000 },
    );
    assert.equal(gmsa.ready, joined ? 'true' : 'false');
    assert.match(gmsa.reason, joined ? /^DomainJoined: / : /^NotDomainJoined: /);
  }
  const tokens = await core.listNamespacedSecret({
    namespace: 'kube-system',
    fieldSelector: 'type=bootstrap.kubernetes.io/token',
  });
  assert.equal(tokens.items.length, 0, 'bootstrap tokens are deleted once the nodes joined');
  const runtimeClasses = await waitFor(
    async () => {
      const list = (await kc.makeApiClient(k8s.NodeV1Api).listRuntimeClass()).items
        .map((r) => r.metadata?.name)
        .sort();
      return list.includes('windows-2019') && list.includes('windows-2022') ? list : undefined;
    },
    { description: 'RuntimeClasses for both builds' },
  );
  assert.deepEqual(runtimeClasses, ['windows-2019', 'windows-2022']);

  // The dashboard shows them.
  const base = `http://127.0.0.1:${world.operator!.dashboard!.port}`;
  assert.match(await (await fetch(`${base}/`)).text(), /<title>winfleet<\/title>/);
  const overview = (await (await fetch(`${base}/api/overview`)).json()) as {
    hosts: { state: string; node: string }[];
  };
  assert.deepEqual(
    overview.hosts.map((h) => h.state),
    ['Ready', 'Ready', 'Ready'],
  );

  const namespace = await testNamespace(kc, 'iis');
  const [deployment] = loadFixture('seed-000-iis.yaml');
  await applyManifests(kc, [deployment!], { namespace, fieldManager: 'kubectl' });
  const pod = await waitFor(
    async () =>
      (await core.listNamespacedPod({ namespace, labelSelector: 'app=iis' })).items.find(
        (p) => p.status?.phase === 'Running',
      ),
    { description: 'the IIS pod Running', timeoutMs: 60_000 },
  );
  assert.ok(
    hosts.some((h) => h.status?.nodeName === pod.spec?.nodeName),
    `IIS runs on a joined host (${pod.spec?.nodeName})`,
  );
});
