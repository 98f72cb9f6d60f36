import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { clusterAccess } from './cluster-access.ts';

const kubeconfig = (cluster: Partial<k8s.Cluster> | undefined) => {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: cluster ? [{ name: 'c', server: 'https://10.0.0.1:6443', ...cluster }] : [],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
};

test('the cluster hosts join is the kubeconfig’s server and its CA', () => {
  const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  assert.deepEqual(clusterAccess(kubeconfig({ caData: Buffer.from(ca).toString('base64') })), {
    apiServer: 'https://10.0.0.1:6443',
    caCertificate: ca,
  });
});

test('a kubeconfig without a current cluster or without a CA is WF_KUBECONFIG_INVALID, saying what to fix', () => {
  assert.throws(() => clusterAccess(kubeconfig(undefined)), {
    code: 'WF_KUBECONFIG_INVALID',
    message: /no current cluster; set current-context/,
  });
  assert.throws(() => clusterAccess(kubeconfig({})), {
    code: 'WF_KUBECONFIG_INVALID',
    message: /gives no CA for https:\/\/10\.0\.0\.1:6443; hosts need it/,
  });
});
