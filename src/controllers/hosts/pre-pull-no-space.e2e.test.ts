/**
 * Images before pods, an image that does not fit the disk (issue 35 item 4's "does not fit the
 * disk"): real API server and scheduler, the operator, a simulated Server 2022 host (100 GiB
 * free, the simulated default) and the mirror registry standing in for mcr.microsoft.com with
 * an image whose 2022 variant declares 40 GB of layers (its 2019 variant 1 kB).
 *
 * The operator looks the image up for the Node's build, writes the 2022 variant's size into the
 * signed list, and the agent refuses the pull before it starts: ImagesPrePulled=False
 * PrePullNoSpace naming the image and its size, nothing pulled, the pre-pull taint lifted; the
 * WindowsHost's status.prePull says the same.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { osVersions } from '../../../sim/registry/catalog.ts';
import { startMirrorRegistry } from '../../../sim/registry/mirror-registry.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
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

const image = 'mcr.microsoft.com/example/big:1';
const variant = (osVersion: string, declaredLayerBytes: number) => ({
  image: {
    kind: 'manifest' as const,
    format: 'oci' as const,
    platform: { os: 'windows', architecture: 'amd64', osVersion },
    declaredLayerBytes,
  },
});

test('pre-pull: an image larger than the host’s free disk is PrePullNoSpace, named with its size; nothing pulled, the node takes pods', async (t) => {
  const registry = await startMirrorRegistry([
    {
      repository: 'example/big',
      tag: '1',
      upstream: 'mcr.microsoft.com',
      image: {
        kind: 'index',
        format: 'oci',
        entries: [variant(osVersions.ltsc2019, 1_000), variant(osVersions.ltsc2022, 40e9)],
      },
    },
  ]);
  t.after(() => registry.stop());
  const world = await joinWorld(t, {
    releases: ['2022'],
    config: { images: { mirrors: registry.mirrors } },
    // The simulated containerd could pull it (in 10 minutes): only the disk check stops it.
    machine: { containerdImages: { registry: { [image]: 40e9 } } },
  });
  const { kc, namespace } = world;
  const [host] = world.fleet.hosts as [(typeof world.fleet.hosts)[0]];
  await createPool(kc, namespace, 'big', {
    selector: { matchLabels: { 'example.com/pool': 'big' } },
    prePull: { images: [image] },
  });
  const object = windowsHostFor(host, namespace);
  object.metadata.labels = { 'example.com/pool': 'big' };
  await k8s.KubernetesObjectApi.makeApiClient(kc).create(object);

  const core = kc.makeApiClient(k8s.CoreV1Api);
  let last: unknown;
  const { node, condition } = await waitFor(
    async () => {
      const name = (await listWindowsHosts(kc, namespace)).find(
        (h) => h.spec.address === host.address,
      )?.status?.nodeName;
      const node = name ? await core.readNode({ name }).catch(() => undefined) : undefined;
      const condition = node?.status?.conditions?.find((c) => c.type === prePullConditionType);
      const tainted = node?.spec?.taints?.some((x) => x.key === prePullTaint.key);
      last = { condition, taints: node?.spec?.taints };
      return condition?.reason === PrePullReason.PrePullNoSpace && !tainted
        ? { node: node!, condition }
        : undefined;
    },
    { description: 'ImagesPrePulled PrePullNoSpace, the taint lifted', timeoutMs: 120_000 },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
  });
  assert.equal(condition.status, 'False');
  // 40e9 bytes are 37.3 GiB; three times that (blob and unpacked layer) exceed 100 GiB.
  assert.match(
    condition.message ?? '',
    /^mcr\.microsoft\.com\/example\/big:1 \(37\.3 GiB\) need about 111\.8 GiB .* 100\.0 GiB free; nothing was pulled/,
  );
  // The list carries the 2022 variant's size (not the 2019 one's), as the operator signed it.
  const command = parsePrePullCommand(node.metadata?.annotations?.[prePullAnnotation] ?? '');
  assert.deepEqual(command.images, [{ reference: image, bytes: 40e9 }]);
  assert.equal(host.machine.containerdImages.has(image), false, 'nothing pulled');
  // The WindowsHost says it too (status.prePull, copied by the operator's pass).
  const onHost = await waitFor(
    async () =>
      (await listWindowsHosts(kc, namespace)).find((h) => h.spec.address === host.address)?.status
        ?.prePull,
    { description: 'status.prePull on the WindowsHost', timeoutMs: 30_000 },
  );
  assert.equal(onHost.reason, PrePullReason.PrePullNoSpace);
  assert.equal(onHost.status, 'False');
  assert.equal(onHost.message, condition.message);
});
