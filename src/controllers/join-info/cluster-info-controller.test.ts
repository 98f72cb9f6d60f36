import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { parse } from 'yaml';
import { offlineInformer } from '../../../sim/testkit/synthetic-nodes.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { resources } from '../../controller-runtime/informer-factory.ts';
import {
  clusterInfoKubeconfigKey,
  clusterInfoName,
  clusterInfoNamespace,
} from '../../join/cluster-info.ts';
import { silentLogger } from '../../log/logger.ts';
import {
  type ClusterInfoState,
  clusterInfoKubeconfig,
  isWinfleetClusterInfo,
  reconcileClusterInfo,
} from './cluster-info-controller.ts';

test('cluster-info’s kubeconfig is kubeadm’s shape: one unnamed cluster, its server and CA inline', () => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const text = clusterInfoKubeconfig('https://10.0.0.1:6443', pem);
  assert.deepEqual(parse(text), {
    apiVersion: 'v1',
    clusters: [
      {
        cluster: {
          'certificate-authority-data': Buffer.from(pem).toString('base64'),
          server: 'https://10.0.0.1:6443',
        },
        name: '',
      },
    ],
    contexts: null,
    'current-context': '',
    kind: 'Config',
    preferences: {},
    users: null,
  });
  assert.equal(
    text,
    clusterInfoKubeconfig('https://10.0.0.1:6443', pem),
    'the same text each time',
  );
});

test('only a cluster-info labelled as winfleet’s is winfleet’s', () => {
  assert.equal(
    isWinfleetClusterInfo({ metadata: { labels: { 'app.kubernetes.io/managed-by': 'winfleet' } } }),
    true,
  );
  assert.equal(isWinfleetClusterInfo({ metadata: {} }), false);
  assert.equal(
    isWinfleetClusterInfo({ metadata: { labels: { 'app.kubernetes.io/managed-by': 'kubeadm' } } }),
    false,
  );
});

// reconcileClusterInfo over a stated cache: an offline informer, recorders for the writes.

function clusterInfoWorld(existing?: k8s.V1ConfigMap, clusterBindings = true) {
  const cache = offlineInformer<k8s.V1ConfigMap>(resources.configMaps);
  cache.replace(existing ? [existing] : []);
  const calls: [string, unknown][] = [];
  const state: ClusterInfoState = {
    clusterInfo: cache,
    config: () => parseConfig(''),
    cluster: { apiServer: 'https://10.0.0.1:6443', caCertificate: 'CA' },
    clusterBindings,
    log: silentLogger,
    memory: { readerApplied: false, leftAloneLogged: false },
    writes: {
      applyReaderRbac: async () => {
        calls.push(['applyReaderRbac', undefined]);
      },
      create: async (body) => calls.push(['create', body]) > 0,
      replace: async (body) => calls.push(['replace', body]) > 0,
    },
  };
  return { state, calls };
}

const clusterInfo = (labels: Record<string, string>, kubeconfig: string): k8s.V1ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: clusterInfoName,
    namespace: clusterInfoNamespace,
    labels,
    resourceVersion: '3',
  },
  data: { [clusterInfoKubeconfigKey]: kubeconfig, signature: 'kept' },
});

test('no cluster-info: the reader Role once, then winfleet’s cluster-info is created', async () => {
  const { state, calls } = clusterInfoWorld();
  await reconcileClusterInfo(state);
  assert.deepEqual(
    calls.map(([w]) => w),
    ['applyReaderRbac', 'create'],
  );
  const body = calls[1]![1] as k8s.V1ConfigMap;
  assert.equal(
    body.data?.[clusterInfoKubeconfigKey],
    clusterInfoKubeconfig('https://10.0.0.1:6443', 'CA'),
  );
  assert.equal(isWinfleetClusterInfo(body), true);
  calls.length = 0;
  await reconcileClusterInfo(state);
  assert.deepEqual(
    calls.map(([w]) => w),
    ['create'],
    'the Role is applied once per replica',
  );
});

test('another’s cluster-info is left alone; winfleet’s is replaced keeping its other keys', async () => {
  const kubeadm = clusterInfoWorld(clusterInfo({}, 'old'));
  await reconcileClusterInfo(kubeadm.state);
  assert.deepEqual(kubeadm.calls, []);
  const ours = clusterInfoWorld(
    clusterInfo({ 'app.kubernetes.io/managed-by': 'winfleet' }, 'old'),
    false,
  );
  await reconcileClusterInfo(ours.state);
  assert.deepEqual(
    ours.calls.map(([w]) => w),
    ['replace'],
    'no reader Role when the chart renders it',
  );
  const body = ours.calls[0]![1] as k8s.V1ConfigMap;
  assert.equal(body.data?.signature, 'kept');
  assert.equal(body.metadata?.resourceVersion, '3', 'guarded by the version read');
});
