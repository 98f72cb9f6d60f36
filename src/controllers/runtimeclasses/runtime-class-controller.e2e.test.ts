import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { createWindowsNode } from '../../../sim/testkit/nodes.ts';
import { freshCluster } from '../../../sim/testkit/test-cluster.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { everythingKey } from '../../controller-runtime/controller.ts';
import { createEventRecorder } from '../../controller-runtime/events.ts';
import { InformerFactory, resources } from '../../controller-runtime/informer-factory.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { silentLogger } from '../../log/logger.ts';
import { windowsBuildLabel } from '../../windows/builds.ts';
import {
  createRuntimeClassController,
  orphanedSinceAnnotation,
} from './runtime-class-controller.ts';

test('RuntimeClasses follow the Windows builds among the nodes, and leave user classes alone', async (t) => {
  const { kc } = await freshCluster(t);
  const node = kc.makeApiClient(k8s.NodeV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const config = parseConfig('runtimeClasses: { gracePeriodSeconds: 2 }');
  const factory = new InformerFactory(kc, silentLogger);
  const controller = createRuntimeClassController({
    kc,
    nodes: factory.get<k8s.V1Node>(resources.nodes),
    runtimeClasses: factory.get<k8s.V1RuntimeClass>(resources.runtimeClasses),
    config: () => config,
    events: createEventRecorder(kc, 'winfleet-test', silentLogger),
    log: silentLogger,
  });
  t.after(() => {
    controller.stop();
    factory.stop();
  });
  // A user wrote their own windows-2025 before any 2025 node exists.
  await node.createRuntimeClass({
    body: { metadata: { name: 'windows-2025' }, handler: 'users-own-handler' },
  });
  await factory.start();
  controller.enqueue(everythingKey);

  await createWindowsNode(kc, { name: 'w2019', release: '2019' });
  await createWindowsNode(kc, { name: 'w2022', release: '2022' });
  await createWindowsNode(kc, { name: 'w2025', release: '2025' });
  const rc2019 = await waitFor(() => node.readRuntimeClass({ name: 'windows-2019' }), {
    description: 'windows-2019',
  });
  assert.equal(rc2019.handler, 'runhcs-wcow-process');
  assert.deepEqual(rc2019.scheduling?.nodeSelector, {
    'kubernetes.io/os': 'windows',
    'kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/windows-build': '10.0.17763',
  });
  assert.deepEqual(JSON.parse(JSON.stringify(rc2019.scheduling?.tolerations)), [
    { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' },
  ]);
  assert.equal(rc2019.metadata?.labels?.['app.kubernetes.io/managed-by'], 'winfleet');
  await waitFor(() => node.readRuntimeClass({ name: 'windows-2022' }), {
    description: 'windows-2022',
  });
  await controller.queue.whenIdle();
  const user = await node.readRuntimeClass({ name: 'windows-2025' });
  assert.equal(user.handler, 'users-own-handler', 'the user-created class is untouched');
  assert.equal(user.metadata?.labels, undefined);

  // The last 2019 node goes: the class is marked, then removed after the grace period.
  await core.deleteNode({ name: 'w2019' });
  const marked = await waitFor(
    async () =>
      (await node.readRuntimeClass({ name: 'windows-2019' })).metadata?.annotations?.[
        orphanedSinceAnnotation
      ],
    { description: 'the orphaned-since mark' },
  );
  assert.ok(!Number.isNaN(Date.parse(marked)));
  await waitFor(
    async () => {
      try {
        await node.readRuntimeClass({ name: 'windows-2019' });
        return false;
      } catch {
        return true;
      }
    },
    { description: 'windows-2019 to be removed after its grace period', timeoutMs: 15_000 },
  );

  // A 2022 node that leaves and comes back within the grace period keeps its class.
  await core.deleteNode({ name: 'w2022' });
  await waitFor(
    async () =>
      (await node.readRuntimeClass({ name: 'windows-2022' })).metadata?.annotations?.[
        orphanedSinceAnnotation
      ],
    { description: 'windows-2022 marked' },
  );
  await createWindowsNode(kc, { name: 'w2022b', release: '2022' });
  await waitFor(
    async () =>
      !(await node.readRuntimeClass({ name: 'windows-2022' })).metadata?.annotations?.[
        orphanedSinceAnnotation
      ],
    { description: 'the mark to be cleared' },
  );
  // Proof that the controller has looked again after windows-2022's grace period would have
  // ended: a class orphaned later than windows-2022 was marked is removed. Only then is the
  // absence of a removal meaningful.
  await createWindowsNode(kc, {
    name: 'w-later',
    release: '2022',
    labels: { [windowsBuildLabel]: '10.0.25398' },
  });
  await waitFor(() => node.readRuntimeClass({ name: 'windows-10-0-25398' }), {
    description: 'windows-10-0-25398',
  });
  await core.deleteNode({ name: 'w-later' });
  await waitFor(
    () =>
      node.readRuntimeClass({ name: 'windows-10-0-25398' }).then(
        () => false,
        () => true,
      ),
    { description: 'windows-10-0-25398 to be removed after its grace period', timeoutMs: 15_000 },
  );
  assert.ok(
    await node.readRuntimeClass({ name: 'windows-2022' }),
    'still there after the grace period',
  );
});
