import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { hostAnnotation, hostIdentity, managedNodeLabel } from '../api/node-annotations.ts';
import { ConditionReason } from '../api/reasons.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import { carriesIdentity, claimedNodeName, mayAdopt, nameRefusal } from './node-claims.ts';

function host(
  name: string,
  created: string,
  spec: Partial<WindowsHost['spec']> = {},
  status: WindowsHost['status'] = {},
): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, creationTimestamp: new Date(created) },
    spec: { address: '10.0.0.1', username: 'a', sshKeySecretRef: { name: 's' }, ...spec },
    status,
  };
}

function node(name: string, annotations: Record<string, string> = {}, labels = {}): k8s.V1Node {
  return { metadata: { name, uid: `node-${name}`, annotations, labels } };
}

test('the claimed name is spec.nodeName, else the recorded name, else the hostname', () => {
  assert.equal(claimedNodeName(host('a', '2025-01-01', { nodeName: 'x' })), 'x');
  assert.equal(claimedNodeName(host('a', '2025-01-01', {}, { nodeName: 'y' })), 'y');
  assert.equal(claimedNodeName(host('a', '2025-01-01', {}, { hostname: 'WIN-Z' })), 'win-z');
  assert.equal(claimedNodeName(host('a', '2025-01-01')), undefined);
});

test('a Node that carries no identity, or another host’s, is refused', () => {
  const attacker = host('evil', '2025-01-01', { nodeName: 'lab-linux-1' });
  const refusal = nameRefusal(attacker, 'lab-linux-1', [attacker], node('lab-linux-1'));
  assert.equal(refusal?.reason, ConditionReason.NodeNotOwned);
  assert.match(refusal!.message, /carries no winfleet\.io\/host/);
  const other = node('simwin-11', { [hostAnnotation]: 'ns/other/uid-other' });
  assert.equal(nameRefusal(attacker, 'simwin-11', [attacker], other)?.reason, 'NodeNotOwned');
});

test('the host whose identity the Node carries keeps the name, even against an older host', () => {
  const older = host('older', '2025-01-01', { nodeName: 'win-1' });
  const holder = host('holder', '2025-06-01', {}, { nodeName: 'win-1' });
  const n = node('win-1', { [hostAnnotation]: hostIdentity(holder) });
  assert.equal(nameRefusal(holder, 'win-1', [older, holder], n), undefined);
  const refusal = nameRefusal(older, 'win-1', [older, holder], n);
  assert.equal(refusal?.reason, ConditionReason.NodeNameTaken);
  assert.match(refusal!.message, /held by WindowsHost ns\/holder/);
});

test('without a Node, the older host wins, then the smaller uid', () => {
  const a = host('a', '2025-01-01', { nodeName: 'win-1' });
  const b = host('b', '2025-01-02', { nodeName: 'win-1' });
  assert.equal(nameRefusal(a, 'win-1', [a, b], undefined), undefined);
  assert.equal(nameRefusal(b, 'win-1', [a, b], undefined)?.reason, 'NodeNameTaken');
  const c = host('c', '2025-01-01', { nodeName: 'win-1' });
  assert.equal(nameRefusal(a, 'win-1', [a, c], undefined), undefined, 'uid-a < uid-c');
  assert.equal(nameRefusal(c, 'win-1', [a, c], undefined)?.reason, 'NodeNameTaken');
});

test('only the Node of the join in flight is adopted without an identity', () => {
  const joining = host('j', '2025-01-01', {}, { nodeName: 'win-1', bootstrapTokenId: 'abcdef' });
  const registered = node('win-1', {}, { [managedNodeLabel]: 'true' });
  assert.ok(mayAdopt(registered, joining));
  assert.equal(mayAdopt(node('win-1'), joining), false, 'not labelled by our kubelet');
  const idle = host('j', '2025-01-01', {}, { nodeName: 'win-1' });
  assert.equal(mayAdopt(registered, idle), false, 'no join in flight');
});

test('an identity without the uid counts only for the Node the host already joined', () => {
  const joined = host('a', '2025-01-01', {}, { nodeName: 'win-1' });
  assert.ok(carriesIdentity(node('win-1', { [hostAnnotation]: 'ns/a' }), joined));
  const recreated = host('a', '2025-01-01');
  assert.equal(carriesIdentity(node('win-1', { [hostAnnotation]: 'ns/a' }), recreated), false);
});
