import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { ConditionSoak } from './condition-soak.ts';
import { soakMinutes } from './soak.ts';

const t0 = new Date('2026-11-28T10:00:00Z');
const later = (s: number) => new Date(t0.getTime() + s * 1000);
const valid = "The kubelet's client certificate is valid until 2027-11-28T09:59:00Z";

function node(
  name: string,
  conditions: Partial<k8s.V1NodeCondition>[],
  os = 'windows',
): k8s.V1Node {
  return {
    metadata: { name, labels: { 'kubernetes.io/os': os } },
    status: { conditions: conditions as k8s.V1NodeCondition[] },
  };
}
const proxy = (status: string, since: Date) => ({
  type: 'KubeProxyUnhealthy',
  status,
  reason: status === 'True' ? 'HealthzFailed' : 'ServiceHealthy',
  message: status === 'True' ? 'healthz answers 503' : 'kube-proxy runs',
  lastTransitionTime: since,
});
const cert = (status: string, message = valid) => ({
  type: 'KubeletCertificateExpiring',
  status,
  message,
  lastTransitionTime: t0,
});

test('a quiet soak: nothing found; Linux Nodes are not looked at', () => {
  const soak = new ConditionSoak();
  for (let i = 0; i < 3; i++) {
    soak.observe(
      [node('win-a', [proxy('False', t0), cert('False')]), node('linux', [], 'linux')],
      later(i * 2),
    );
  }
  assert.deepEqual(soak.findings(later(10)), []);
  assert.equal(soak.nodes, 1);
  assert.deepEqual(soak.summary(), [
    `win-a: KubeProxyUnhealthy=False "kube-proxy runs"; KubeletCertificateExpiring=False "${valid}"`,
  ]);
});

test('KubeProxyUnhealthy True, or True and back between two looks, is a finding', () => {
  const soak = new ConditionSoak();
  soak.observe([node('win-a', [proxy('False', t0), cert('False')])], later(0));
  soak.observe([node('win-a', [proxy('True', later(1)), cert('False')])], later(2));
  soak.observe([node('win-a', [proxy('True', later(1)), cert('False')])], later(4));
  // Back to False, then True and False again between two looks: the transition time moved.
  soak.observe([node('win-a', [proxy('False', later(5)), cert('False')])], later(6));
  soak.observe([node('win-a', [proxy('False', later(7)), cert('False')])], later(8));
  const found = soak.findings(later(9)).map((f) => `${f.type}: ${f.what}`);
  assert.deepEqual(found, [
    'KubeProxyUnhealthy: True (HealthzFailed: healthz answers 503)',
    'KubeProxyUnhealthy: went True and back between two looks (kube-proxy runs)',
  ]);
});

test('KubeletCertificateExpiring must end False with the expiry in its message', () => {
  const soak = new ConditionSoak();
  soak.observe(
    [
      node('win-a', [cert('False')]),
      node('win-b', [cert('False', 'something else')]),
      node('win-c', []),
      node('win-d', [cert('True', 'expires in 2h')]),
    ],
    t0,
  );
  assert.deepEqual(
    soak.findings(later(1)).map((f) => `${f.node}: ${f.what}`),
    [
      'win-d: True (undefined: expires in 2h)',
      'win-b: False at the end, message "something else" (want False, "…valid until <time>")',
      'win-c: missing at the end',
      'win-d: True at the end, message "expires in 2h" (want False, "…valid until <time>")',
    ],
  );
});

test('the soak is 10 minutes unless told, and bounded', () => {
  assert.equal(soakMinutes(undefined), 10);
  assert.equal(soakMinutes('3'), 3);
  for (const bad of ['0', '61', '2.5', 'ten'])
    assert.throws(
      () => soakMinutes(bad),
      /WINFLEET_SOAK_MINUTES must be a whole number of minutes from 1 to 60/,
    );
});
