import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { clusterInfoKubeconfig, isWinfleetClusterInfo } from './cluster-info-controller.ts';

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
