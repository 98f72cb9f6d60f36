import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { Informer } from '../controller-runtime/informer.ts';
import { waitFor } from '../kube/wait-for.ts';

const configMaps = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' };

test('an informer lists, then follows adds, updates and deletes', async (t) => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'informer');
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'before', labels: { test: 'informer' } }, data: { a: '1' } },
  });
  const seen: string[] = [];
  const informer = new Informer<k8s.V1ConfigMap>(kc, {
    resource: configMaps,
    namespace,
    // The controller manager adds kube-root-ca.crt to every namespace; watch only ours.
    labelSelector: 'test=informer',
    transform: (cm) => ({ metadata: cm.metadata, data: cm.data }),
  });
  informer
    .on('add', (cm) => seen.push(`add ${cm.metadata?.name}`))
    .on('update', (cm, old) =>
      seen.push(`update ${cm.metadata?.name} ${old.data?.a}->${cm.data?.a}`),
    )
    .on('delete', (cm) => seen.push(`delete ${cm.metadata?.name}`));
  t.after(() => informer.stop());
  await informer.start();
  assert.ok(informer.get(`${namespace}/before`), 'the first list is cached');
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'after', labels: { test: 'informer' } }, data: { a: '1' } },
  });
  await core.replaceNamespacedConfigMap({
    name: 'after',
    namespace,
    body: { metadata: { name: 'after', labels: { test: 'informer' } }, data: { a: '2' } },
  });
  await core.deleteNamespacedConfigMap({ name: 'before', namespace });
  await waitFor(() => seen.length >= 4, { description: 'four events' });
  assert.deepEqual(seen, ['add before', 'add after', 'update after 1->2', 'delete before']);
  assert.equal(informer.get(`${namespace}/before`), undefined);
  assert.equal(informer.get(`${namespace}/after`)?.data?.a, '2');
});

test('a stalled watch is replaced by a fresh list', async (t) => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'informer-stall');
  const informer = new Informer<k8s.V1ConfigMap>(kc, {
    resource: configMaps,
    namespace,
    stallTimeoutMs: 300,
  });
  t.after(() => informer.stop());
  await informer.start();
  await waitFor(() => informer.listCount >= 3, {
    description: 'two re-lists after stalls',
    timeoutMs: 10_000,
  });
});

test('an informer for a type that does not exist yet retries until it does', async (t) => {
  const { kc } = await sharedCluster();
  const group = `informer-${Date.now()}.winfleet.test`;
  const errors: unknown[] = [];
  const informer = new Informer<k8s.KubernetesObject>(kc, {
    resource: { apiVersion: `${group}/v1`, kind: 'Gadget', plural: 'gadgets' },
    maxBackoffMs: 500,
    onError: (error) => errors.push(error),
  });
  t.after(() => informer.stop());
  const synced = informer.start();
  await waitFor(() => errors.length >= 2, { description: 'the list to fail twice' });
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  await ext.createCustomResourceDefinition({
    body: {
      metadata: { name: `gadgets.${group}` },
      spec: {
        group,
        scope: 'Cluster',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
            },
          },
        ],
      },
    },
  });
  t.after(() => ext.deleteCustomResourceDefinition({ name: `gadgets.${group}` }));
  await synced;
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  await waitFor(
    async () => {
      await objects.create({ apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g1' } });
      return true;
    },
    { description: 'the new type to be served', timeoutMs: 20_000 },
  );
  await waitFor(() => informer.get('g1'), { description: 'the informer to see g1' });
});
