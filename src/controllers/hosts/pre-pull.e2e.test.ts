/**
 * Images before pods (issue 35, item 4) end to end: real API server, operator, SSH and agent;
 * simulated hosts whose containerd pulls in time proportional to an image's size
 * (sim/hosts/containerd-images.ts).
 *
 * - A host of a pool with spec.prePull gets the list signed on its Node, its agent pulls the
 *   pool's images and ImagesPrePulled turns True; the Node carries no pre-pull taint.
 * - A pool listing an image the registry does not have: ImagesPrePulled=False PrePullFailed
 *   naming the image and containerd's "not found"; no taint keeps the node from pods.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { listWindowsHosts, windowsHostFor } from '../../../sim/testkit/windows-hosts.ts';
import { prePullConditionType, prePullTaint } from '../../api/pre-pull.ts';
import { PrePullReason } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('pre-pull: a pool’s images are pulled and ImagesPrePulled says so; a missing image is named, and no taint stays', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2022'],
    machine: {
      containerdImages: {
        registry: { 'example.test/app:1': 200e6, 'example.test/base:1': 300e6 },
        pullBytesPerSecond: 1e9,
      },
    },
  });
  const { kc, namespace } = world;
  const [good, bad] = world.fleet.hosts as [
    (typeof world.fleet.hosts)[0],
    (typeof world.fleet.hosts)[0],
  ];
  await createPool(kc, namespace, 'pp', {
    selector: { matchLabels: { 'example.com/pool': 'pp' } },
    prePull: { images: ['example.test/app:1', 'example.test/base:1'], maxParallel: 2 },
  });
  await createPool(kc, namespace, 'missing', {
    selector: { matchLabels: { 'example.com/pool': 'missing' } },
    prePull: { images: ['example.test/app:1', 'example.test/nope:1'] },
  });
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await waitFor(
    async () => {
      const list = (await custom.listNamespacedCustomObject({
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace,
        plural: 'windowsnodepools',
      })) as { items: { status?: { observedGeneration?: number } }[] };
      return list.items.length === 2 && list.items.every((p) => p.status?.observedGeneration);
    },
    { description: 'both pools observed by the operator', timeoutMs: 30_000 },
  );
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const [host, pool] of [
    [good, 'pp'],
    [bad, 'missing'],
  ] as const) {
    const object = windowsHostFor(host, namespace);
    object.metadata.labels = { 'example.com/pool': pool };
    await objects.create(object);
  }
  const core = kc.makeApiClient(k8s.CoreV1Api);
  /** The host's Node once its ImagesPrePulled condition has `reason` and its taint is gone. */
  let last: unknown;
  const settled = (address: string, reason: string) =>
    waitFor(
      async () => {
        const host = (await listWindowsHosts(kc, namespace)).find(
          (h) => h.spec.address === address,
        );
        const name = host?.status?.nodeName;
        if (!name) return undefined;
        const node = await core.readNode({ name }).catch(() => undefined);
        const condition = node?.status?.conditions?.find((c) => c.type === prePullConditionType);
        const tainted = node?.spec?.taints?.some((x) => x.key === prePullTaint.key);
        last = {
          host: host?.status?.conditions?.map((c) => `${c.type}=${c.status}:${c.reason}`),
          conditions: node?.status?.conditions?.map(
            (c) => `${c.type}=${c.status}:${c.reason}:${c.message}`,
          ),
          taints: node?.spec?.taints,
          annotations: Object.keys(node?.metadata?.annotations ?? {}),
        };
        return condition?.reason === reason && !tainted ? { node: node!, condition } : undefined;
      },
      { description: `${address}: ImagesPrePulled ${reason}, taint lifted`, timeoutMs: 120_000 },
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
    });

  const ok = await settled(good.address, PrePullReason.PrePulled);
  assert.equal(ok.condition.status, 'True');
  assert.ok(good.machine.containerdImages.has('example.test/app:1'));
  assert.ok(good.machine.containerdImages.has('example.test/base:1'));

  const failed = await settled(bad.address, PrePullReason.PrePullFailed);
  assert.equal(failed.condition.status, 'False');
  assert.match(
    failed.condition.message ?? '',
    /example\.test\/nope:1: .*failed to resolve reference "example\.test\/nope:1": example\.test\/nope:1: not found/,
  );
  assert.ok(bad.machine.containerdImages.has('example.test/app:1'), 'the other image is pulled');
});
