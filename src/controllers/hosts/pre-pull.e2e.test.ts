/**
 * Images before pods (issue 35, item 4) end to end: real API server, scheduler, operator, SSH
 * and agent; simulated hosts whose containerd pulls in time proportional to an image's size
 * (sim/hosts/containerd-images.ts) through the payload's ctr.exe.
 *
 * - A host of a pool with spec.prePull registers its Node with winfleet.io/pre-pulling (the
 *   kubelet's --register-with-taints): a pod meant for it stays Pending on that taint while the
 *   agent pulls; ImagesPrePulled turns True, the operator lifts the taint, the pod is bound.
 * - A pool listing an image the registry does not have: ImagesPrePulled=False PrePullFailed
 *   naming the image and containerd's "not found"; the taint goes all the same.
 * - A pool listing a registry the image address policy refuses: the pool says so
 *   (InvalidSpec, the field named), the list never reaches a node and no taint holds it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { createPool, readPool } from '../../../sim/testkit/pools.ts';
import { listWindowsHosts, windowsHostFor } from '../../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import {
  prePullAnnotation,
  prePullConditionType,
  prePullState,
  prePullTaint,
} from '../../api/pre-pull.ts';
import { ConditionReason, PrePullReason } from '../../api/reasons.ts';
import { nodeIsReady } from '../../controller-runtime/informer-factory.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('pre-pull: a pool’s Node registers tainted and takes its first pod once the images are there; a missing image or a refused registry never keeps a node from pods', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2022', '2022'],
    machine: {
      // app:1 takes 8 s and base:1 12 s (download at 100 MB/s, unpack at 200 MB/s), in parallel.
      containerdImages: {
        registry: { 'example.test/app:1': 540e6, 'example.test/base:1': 800e6 },
        pullBytesPerSecond: 100e6,
        unpackBytesPerSecond: 200e6,
      },
    },
  });
  const { kc, namespace } = world;
  const [good, bad, refused] = world.fleet.hosts as [
    (typeof world.fleet.hosts)[0],
    (typeof world.fleet.hosts)[0],
    (typeof world.fleet.hosts)[0],
  ];
  const pools = {
    pp: ['example.test/app:1', 'example.test/base:1'],
    missing: ['example.test/app:1', 'example.test/nope:1'],
    refused: ['169.254.169.254/steal:1'],
  };
  for (const [name, images] of Object.entries(pools)) {
    await createPool(kc, namespace, name, {
      selector: { matchLabels: { 'example.com/pool': name } },
      prePull: { images, maxParallel: 2 },
    });
  }
  await waitFor(
    async () => {
      const seen = await Promise.all(
        Object.keys(pools).map((name) => readPool(kc, namespace, name)),
      );
      return seen.every((p) => p.status?.observedGeneration) ? seen : undefined;
    },
    { description: 'the pools observed by the operator', timeoutMs: 30_000 },
  );
  // The refused registry is the pool's problem, named; the spec never reaches a node.
  const invalid = (await readPool(kc, namespace, 'refused')).status?.conditions?.find(
    (c) => c.type === 'Degraded' && c.reason === ConditionReason.InvalidSpec,
  );
  assert.match(invalid?.message ?? '', /spec\.prePull\.images\[0\]: .*address policy refuses/);

  const core = kc.makeApiClient(k8s.CoreV1Api);
  const nodeNameOf = (address: string) =>
    waitFor(
      async () =>
        (await listWindowsHosts(kc, namespace)).find((h) => h.spec.address === address)?.status
          ?.nodeName,
      { description: `${address}: a node name`, timeoutMs: 60_000 },
    );

  // A pod meant for the good host's Node (named for the host), created before the host joins
  // and tolerating the Windows taint, waits on the pre-pull taint: the kubelet registered the
  // Node with it.
  const goodNode = good.name;
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'first' },
      spec: {
        containers: [{ name: 'app', image: 'example.test/app:1' }],
        tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: [goodNode] }] },
              ],
            },
          },
        },
      },
    },
  });
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const [host, pool] of [
    [good, 'pp'],
    [bad, 'missing'],
    [refused, 'refused'],
  ] as const) {
    const object = windowsHostFor(host, namespace);
    object.metadata.labels = { 'example.com/pool': pool };
    await objects.create(object);
  }
  // Pending on a taint while its Node is Ready and carries no untolerated taint but ours (the
  // scheduler's message says "untolerated taint(s)" without naming them).
  let podSeen: unknown;
  const held = await waitFor(
    async () => {
      const pod = await core.readNamespacedPod({ name: 'first', namespace });
      const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
      const node = await core.readNode({ name: goodNode }).catch(() => undefined);
      const untolerated = node?.spec?.taints?.filter((x) => x.key !== 'os').map((x) => x.key);
      podSeen = { nodeName: pod.spec?.nodeName, scheduled, untolerated };
      return !pod.spec?.nodeName &&
        /untolerated taint/.test(scheduled?.message ?? '') &&
        node &&
        nodeIsReady(node) &&
        untolerated?.join() === prePullTaint.key
        ? scheduled
        : undefined;
    },
    { description: 'the pod Pending on the pre-pull taint', timeoutMs: 60_000 },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(podSeen)}`);
  });
  assert.equal(held.reason, 'Unschedulable');
  const kubeletConfig = (
    await good.machine.fs.tryReadFile('C:\\k\\kubelet-config.yaml')
  )?.toString();
  assert.match(kubeletConfig ?? '', /winfleet\.io\/pre-pulling/, 'registered with the taint');

  /** The host's Node once its ImagesPrePulled condition has `reason` and its taint is gone. */
  let last: unknown;
  const settled = (address: string, reason: string) =>
    waitFor(
      async () => {
        const name = await nodeNameOf(address);
        const node = await core.readNode({ name }).catch(() => undefined);
        const condition = node?.status?.conditions?.find((c) => c.type === prePullConditionType);
        const tainted = node?.spec?.taints?.some((x) => x.key === prePullTaint.key);
        last = {
          conditions: node?.status?.conditions?.map(
            (c) => `${c.type}=${c.status}:${c.reason}:${c.message}`,
          ),
          taints: node?.spec?.taints,
        };
        return condition?.reason === reason && !tainted ? { node: node!, condition } : undefined;
      },
      { description: `${address}: ImagesPrePulled ${reason}, taint lifted`, timeoutMs: 90_000 },
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
    });

  assert.equal(await nodeNameOf(good.address), goodNode);
  const ok = await settled(good.address, PrePullReason.PrePulled);
  assert.equal(ok.condition.status, 'True');
  assert.ok(good.machine.containerdImages.has('example.test/app:1'));
  assert.ok(good.machine.containerdImages.has('example.test/base:1'));
  // The WindowsHost shows it (status.prePull), with the count.
  const hostPrePull = await waitFor(
    async () => {
      const p = (await listWindowsHosts(kc, namespace)).find((h) => h.spec.address === good.address)
        ?.status?.prePull;
      return p?.reason === PrePullReason.PrePulled ? p : undefined;
    },
    { description: 'status.prePull PrePulled on the good host', timeoutMs: 30_000 },
  );
  assert.deepEqual([hostPrePull.imagesDone, hostPrePull.imagesTotal], [2, 2]);
  // Only now is the pod bound to the Node.
  await waitFor(
    async () =>
      (await core.readNamespacedPod({ name: 'first', namespace })).spec?.nodeName === goodNode,
    { description: 'the pod bound once the taint went', timeoutMs: 30_000 },
  );

  const failed = await settled(bad.address, PrePullReason.PrePullFailed);
  assert.equal(failed.condition.status, 'False');
  assert.match(
    failed.condition.message ?? '',
    /example\.test\/nope:1: .*failed to resolve reference "example\.test\/nope:1": example\.test\/nope:1: not found/,
  );
  assert.ok(bad.machine.containerdImages.has('example.test/app:1'), 'the other image is pulled');

  // The refused pool's host: Ready, no list, no taint, nothing pulled.
  const refusedName = await nodeNameOf(refused.address);
  const plain = await waitFor(
    async () => {
      const node = await core.readNode({ name: refusedName }).catch(() => undefined);
      return node && nodeIsReady(node) ? node : undefined;
    },
    { description: 'the refused pool’s Node Ready', timeoutMs: 60_000 },
  );
  assert.equal(plain.metadata?.annotations?.[prePullAnnotation], undefined);
  assert.equal(plain.spec?.taints?.some((x) => x.key === prePullTaint.key) ?? false, false);

  // An upgrade: the images gone from the good host (as on a new build), its rollout uncordons the
  // Node only once the agent's pulls for the new version ended; the bad host's failed pull
  // uncordons it all the same. The refused pool starts no change (InvalidSpec).
  await core.deleteNamespacedPod({ name: 'first', namespace, gracePeriodSeconds: 0 });
  good.machine.containerdImages.remove('example.test/app:1');
  good.machine.containerdImages.remove('example.test/base:1');
  const next = await writeStandInPayload(world.payloadDir, { version: '1.36.5-wf.2' });
  /** A Node as the rollout sees it: on the new version, its pulls for this boot and version. */
  const view = (name: string, node: k8s.V1Node) => ({
    name,
    node,
    onNext: node.metadata?.annotations?.[servicesVersionAnnotation] === next.version,
    state: prePullState(node),
  });
  let early: unknown;
  let seenWaiting = false;
  /** Nodes seen with their pulls for the new version ended (a later run is not an early one). */
  const endedOnNext = new Set<string>();
  await waitFor(
    async () => {
      const views = await Promise.all(
        [goodNode, await nodeNameOf(bad.address)].map(async (name) =>
          view(name, await core.readNode({ name })),
        ),
      );
      for (const v of views) {
        // Uncordoned on the new version before its pulls for it ended: the wait did not hold.
        if (v.onNext && v.state === 'ended') endedOnNext.add(v.name);
        if (
          v.onNext &&
          !v.node.spec?.unschedulable &&
          v.state !== 'ended' &&
          !endedOnNext.has(v.name) &&
          !early
        ) {
          early = {
            node: v.name,
            state: v.state,
            taints: v.node.spec?.taints,
            condition: v.node.status?.conditions?.find((c) => c.type === 'ImagesPrePulled'),
            at: new Date().toISOString(),
          };
        }
        if (v.name === goodNode && v.onNext && v.node.spec?.unschedulable && v.state === 'pulling')
          seenWaiting = true;
      }
      return views.every((v) => v.onNext && !v.node.spec?.unschedulable && v.state === 'ended');
    },
    {
      description: 'both nodes on the new version, pulled (or failed) and uncordoned',
      timeoutMs: 90_000,
    },
  );
  assert.equal(early, undefined, 'no node uncordoned before its pulls ended');
  assert.ok(seenWaiting, 'the good node was seen cordoned, on the new version, pulling');
  assert.ok(good.machine.containerdImages.has('example.test/base:1'), 'pulled again');
  const refusedPool = await readPool(kc, namespace, 'refused');
  assert.equal(refusedPool.status?.updatedHosts ?? 0, 0, 'the refused pool starts no change');
});
