import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  offlineInformer,
  offlineNodeInformer,
  recordEnqueues,
  syntheticFleet,
  syntheticNode,
  unusedKubeConfig,
} from '../../../sim/testkit/synthetic-nodes.ts';
import { EventReason } from '../../api/reasons.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { resources } from '../../controller-runtime/informer-factory.ts';
import { silentLogger } from '../../log/logger.ts';
import {
  createRuntimeClassController,
  desiredRuntimeClass,
  everyClass,
  indexNodesByRuntimeClass,
  managedByLabel,
  managedByValue,
  orphanedSinceAnnotation,
  type RuntimeClassState,
  reconcileRuntimeClass,
  runtimeClassIndex,
  runtimeClassName,
  runtimeClassOf,
} from './runtime-class-controller.ts';

function controllerOver(nodes: ReturnType<typeof offlineNodeInformer>) {
  const runtimeClasses = offlineInformer<k8s.V1RuntimeClass>(resources.runtimeClasses);
  const controller = createRuntimeClassController({
    kc: unusedKubeConfig(),
    nodes,
    runtimeClasses,
    config: () => parseConfig(''),
    events: { record: () => {} },
    log: silentLogger,
  });
  const keys = recordEnqueues(controller);
  return { controller, runtimeClasses, keys };
}

test('names follow the release, with a fallback for unknown builds', () => {
  assert.equal(runtimeClassName({ build: '10.0.17763', arch: 'amd64' }), 'windows-2019');
  assert.equal(runtimeClassName({ build: '10.0.26100', arch: 'amd64' }), 'windows-2025');
  assert.equal(runtimeClassName({ build: '10.0.25398', arch: 'amd64' }), 'windows-10-0-25398');
  assert.equal(runtimeClassName({ build: '10.0.26100', arch: 'arm64' }), 'windows-2025-arm64');
});

test('a node is filed under the RuntimeClass of its flavor; other nodes nowhere', () => {
  assert.deepEqual(runtimeClassOf(syntheticNode('a', { build: '10.0.20348' })), ['windows-2022']);
  assert.deepEqual(runtimeClassOf(syntheticNode('b', { build: '10.0.26100', arch: 'arm64' })), [
    'windows-2025-arm64',
  ]);
  assert.deepEqual(runtimeClassOf(syntheticNode('l', { os: 'linux', build: '10.0.20348' })), []);
  assert.deepEqual(runtimeClassOf(syntheticNode('n', {})), [], 'no build label, no class');
});

test('among 10,000 nodes, one Node event enqueues only the class it affects', () => {
  const nodes = offlineNodeInformer();
  nodes.replace(syntheticFleet(10_000));
  const { keys } = controllerOver(nodes);
  assert.equal(nodes.countByIndex(runtimeClassIndex, 'windows-2019'), 3334);

  nodes.apply('ADDED', syntheticNode('new', { build: '10.0.20348' }));
  assert.deepEqual(keys.splice(0), ['windows-2022']);

  nodes.apply(
    'MODIFIED',
    syntheticNode('new', { build: '10.0.20348', ready: false, resourceVersion: '2' }),
  );
  assert.deepEqual(keys.splice(0), [], 'a status change does not move the node between classes');

  nodes.apply('MODIFIED', syntheticNode('new', { build: '10.0.26100', resourceVersion: '3' }));
  assert.deepEqual(keys.splice(0).sort(), ['windows-2022', 'windows-2025'], 'old and new class');

  nodes.apply('DELETED', syntheticNode('new', { build: '10.0.26100' }));
  assert.deepEqual(keys.splice(0), ['windows-2025']);

  nodes.apply('ADDED', syntheticNode('linux', { os: 'linux' }));
  assert.deepEqual(keys.splice(0), [], 'a Linux node enqueues nothing');
});

test('a RuntimeClass event enqueues that class by name', () => {
  const { runtimeClasses, keys } = controllerOver(offlineNodeInformer());
  runtimeClasses.apply('ADDED', {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: 'windows-2019' },
    handler: 'runhcs-wcow-process',
  });
  assert.deepEqual(keys, ['windows-2019']);
});

// reconcileRuntimeClass over a stated cache: offline informers, a fixed clock, and recorders
// for the pass's writes (RuntimeClassWrites) and Events.

const now = new Date('2026-06-07T01:00:00Z');
const config = parseConfig('');
const graceMs = config.runtimeClasses.gracePeriodSeconds * 1000;

function runtimeClass(
  name: string,
  labels?: Record<string, string>,
  annotations?: Record<string, string>,
) {
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: {
      name,
      resourceVersion: '7',
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
    },
    handler: 'runhcs-wcow-process',
  } as k8s.V1RuntimeClass;
}
const managed = { [managedByLabel]: managedByValue };

function world(nodes: k8s.V1Node[], classes: k8s.V1RuntimeClass[]) {
  const nodeCache = offlineNodeInformer();
  indexNodesByRuntimeClass(nodeCache);
  nodeCache.replace(nodes);
  const classCache = offlineInformer<k8s.V1RuntimeClass>(resources.runtimeClasses);
  classCache.replace(classes);
  const calls: [string, string, unknown][] = [];
  const events: string[] = [];
  const state: RuntimeClassState = {
    nodes: nodeCache,
    runtimeClasses: classCache,
    config: () => config,
    events: { record: (_o, _t, reason) => events.push(reason) },
    log: silentLogger,
    now: () => now,
    warnedUserOwned: new Set(),
    writes: {
      apply: async (desired) => calls.push(['apply', desired.metadata!.name!, desired]),
      orphanPatch: async (name, since) => calls.push(['orphanPatch', name, since]),
      delete: async (name, rv) => {
        calls.push(['delete', name, rv]);
        return true;
      },
    },
  };
  return { state, calls, events };
}

test('a class a node needs is applied as winfleet wants it', async () => {
  const { state, calls } = world([syntheticNode('w', { build: '10.0.20348' })], []);
  assert.equal(await reconcileRuntimeClass(state, 'windows-2022'), undefined);
  assert.deepEqual(calls, [
    ['apply', 'windows-2022', desiredRuntimeClass({ build: '10.0.20348', arch: 'amd64' }, config)],
  ]);
});

test('a managed class that matches is left alone; an orphan mark is cleared once a node is back', async () => {
  const desired = desiredRuntimeClass({ build: '10.0.20348', arch: 'amd64' }, config);
  const orphan = {
    ...desired,
    metadata: {
      ...desired.metadata,
      annotations: { [orphanedSinceAnnotation]: now.toISOString() },
    },
  };
  const { state, calls } = world([syntheticNode('w', { build: '10.0.20348' })], [orphan]);
  await reconcileRuntimeClass(state, 'windows-2022');
  assert.deepEqual(calls, [['orphanPatch', 'windows-2022', null]]);
});

test("a user's class of the same name is never written, and told once", async () => {
  const { state, calls, events } = world(
    [syntheticNode('w', { build: '10.0.20348' })],
    [runtimeClass('windows-2022')],
  );
  await reconcileRuntimeClass(state, 'windows-2022');
  await reconcileRuntimeClass(state, 'windows-2022');
  assert.deepEqual(calls, []);
  assert.deepEqual(events, [EventReason.UserOwned]);
});

test('a managed class no node needs is marked, then deleted after the grace period', async () => {
  const fresh = world([], [runtimeClass('windows-2019', managed)]);
  assert.deepEqual(await reconcileRuntimeClass(fresh.state, 'windows-2019'), {
    requeueAfterMs: graceMs + 50,
  });
  assert.deepEqual(fresh.calls, [['orphanPatch', 'windows-2019', now.toISOString()]]);

  const since = new Date(now.getTime() - graceMs + 1000).toISOString();
  const waiting = world(
    [],
    [runtimeClass('windows-2019', managed, { [orphanedSinceAnnotation]: since })],
  );
  assert.deepEqual(await reconcileRuntimeClass(waiting.state, 'windows-2019'), {
    requeueAfterMs: 1050,
  });
  assert.deepEqual(waiting.calls, []);

  const over = new Date(now.getTime() - graceMs).toISOString();
  const due = world(
    [],
    [runtimeClass('windows-2019', managed, { [orphanedSinceAnnotation]: over })],
  );
  assert.equal(await reconcileRuntimeClass(due.state, 'windows-2019'), undefined);
  assert.deepEqual(
    due.calls,
    [['delete', 'windows-2019', '7']],
    'guarded by the resourceVersion read',
  );
});

test("a user's class no node needs is not retired; disabled, nothing is done", async () => {
  const user = world([], [runtimeClass('windows-2019')]);
  assert.equal(await reconcileRuntimeClass(user.state, 'windows-2019'), undefined);
  assert.deepEqual(user.calls, []);
  const off = world([syntheticNode('w', { build: '10.0.20348' })], []);
  const disabled = parseConfig('runtimeClasses:\n  enabled: false\n');
  assert.equal(await reconcileRuntimeClass(off.state, 'windows-2022', disabled), undefined);
  assert.deepEqual(off.calls, []);
});

test('a full pass looks at every class a node needs and every managed class', () => {
  const { state } = world(
    [
      syntheticNode('a', { build: '10.0.20348' }),
      syntheticNode('b', { build: '10.0.26100', arch: 'arm64' }),
    ],
    [runtimeClass('windows-2019', managed), runtimeClass('mine')],
  );
  assert.deepEqual(everyClass(state).sort(), [
    'windows-2019',
    'windows-2022',
    'windows-2025-arm64',
  ]);
});
