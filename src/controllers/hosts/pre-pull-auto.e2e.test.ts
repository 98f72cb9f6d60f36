/**
 * spec.prePull.auto end to end: real API server and scheduler, kwok, the operator, the mirror
 * registry standing in for mcr.microsoft.com, a simulated Server 2022 host.
 *
 * A Windows workload runs on a kwok Windows node: a pod of two images, web:1 (a 2022 variant)
 * and old:1 (a 2019 variant only). A host then joins a pool with `prePull: {auto: true}`: its
 * signed list names web:1 with its 2022 size and not old:1 (no variant its build runs), its
 * agent pulls it, ImagesPrePulled turns True and the taint goes. A pool with neither images nor
 * auto is refused by the API server (the CRD's CEL rule).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { osVersions } from '../../../sim/registry/catalog.ts';
import { startMirrorRegistry } from '../../../sim/registry/mirror-registry.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createWindowsNode } from '../../../sim/testkit/nodes.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { listWindowsHosts, windowsHostFor } from '../../../sim/testkit/windows-hosts.ts';
import {
  parsePrePullCommand,
  prePullAnnotation,
  prePullConditionType,
  prePullTaint,
} from '../../api/pre-pull.ts';
import { PrePullReason } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';

const web = 'mcr.microsoft.com/example/web:1';
const old = 'mcr.microsoft.com/example/old:1';
const windows = (osVersion: string, declaredLayerBytes: number) => ({
  image: {
    kind: 'manifest' as const,
    format: 'oci' as const,
    platform: { os: 'windows', architecture: 'amd64', osVersion },
    declaredLayerBytes,
  },
});

test('pre-pull auto: a joining host’s signed list names the Windows workloads’ images its build runs, and it pulls them', async (t) => {
  const registry = await startMirrorRegistry([
    {
      repository: 'example/web',
      tag: '1',
      upstream: 'mcr.microsoft.com',
      image: { kind: 'index', format: 'oci', entries: [windows(osVersions.ltsc2022, 5e6)] },
    },
    {
      repository: 'example/old',
      tag: '1',
      upstream: 'mcr.microsoft.com',
      image: { kind: 'index', format: 'oci', entries: [windows(osVersions.ltsc2019, 5e6)] },
    },
  ]);
  t.after(() => registry.stop());
  const world = await joinWorld(t, {
    releases: ['2022'],
    config: { images: { mirrors: registry.mirrors } },
    machine: { containerdImages: { registry: { [web]: 5e6, [old]: 5e6 } } },
  });
  const { kc, namespace } = world;
  const [host] = world.fleet.hosts as [(typeof world.fleet.hosts)[0]];
  const core = kc.makeApiClient(k8s.CoreV1Api);

  // The cluster's Windows workload: Running on a kwok Windows node.
  await createWindowsNode(kc, { name: 'win-kwok-1', release: '2022' });
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'workload' },
      spec: {
        nodeName: 'win-kwok-1',
        tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
        containers: [
          { name: 'web', image: web },
          { name: 'old', image: old },
        ],
      },
    },
  });
  await waitFor(
    async () =>
      (await core.readNamespacedPod({ name: 'workload', namespace })).status?.phase === 'Running',
    { description: 'the Windows workload Running', timeoutMs: 30_000 },
  );

  await createPool(kc, namespace, 'auto', {
    selector: { matchLabels: { 'example.com/pool': 'auto' } },
    prePull: { auto: true },
  });
  // Neither images nor auto: the API server's CEL rule refuses it.
  await assert.rejects(
    createPool(kc, namespace, 'nothing', {
      selector: { matchLabels: { 'example.com/pool': 'nothing' } },
      prePull: { timeoutSeconds: 60 },
    }),
    /spec\.prePull: list images, or set spec\.prePull\.auto: true/,
  );
  const object = windowsHostFor(host, namespace);
  object.metadata.labels = { 'example.com/pool': 'auto' };
  await k8s.KubernetesObjectApi.makeApiClient(kc).create(object);

  let last: unknown;
  const node = await waitFor(
    async () => {
      const name = (await listWindowsHosts(kc, namespace)).find(
        (h) => h.spec.address === host.address,
      )?.status?.nodeName;
      const node = name ? await core.readNode({ name }).catch(() => undefined) : undefined;
      const condition = node?.status?.conditions?.find((c) => c.type === prePullConditionType);
      const tainted = node?.spec?.taints?.some((x) => x.key === prePullTaint.key);
      last = { condition, taints: node?.spec?.taints };
      return condition?.reason === PrePullReason.PrePulled && !tainted ? node : undefined;
    },
    { description: 'ImagesPrePulled PrePulled, the taint lifted', timeoutMs: 120_000 },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
  });
  const command = parsePrePullCommand(node.metadata?.annotations?.[prePullAnnotation] ?? '');
  assert.deepEqual(command.images, [{ reference: web, bytes: 5e6 }]);
  assert.ok(host.machine.containerdImages.has(web), 'pulled');
  assert.equal(host.machine.containerdImages.has(old), false, 'no variant 2022 runs: not pulled');
});
