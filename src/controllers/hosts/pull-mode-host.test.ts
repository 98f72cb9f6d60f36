import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { hostAnnotation, hostIdentity, managedNodeLabel } from '../../api/node-annotations.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { isJoiningPullNode, pullNameRefusal } from './pull-mode-host.ts';

const pull = (over: Partial<WindowsHost['metadata']> = {}, status = {}): WindowsHost => ({
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: {
    name: 'web-1',
    namespace: 'winfleet-system',
    uid: 'uid-web-1',
    creationTimestamp: new Date('2025-06-07T10:00:00Z'),
    ...over,
  },
  spec: { mode: 'Pull', pool: 'web', nodeName: 'web-1' },
  status,
});

const node = (
  over: {
    name?: string;
    created?: string;
    annotations?: Record<string, string>;
    managed?: boolean;
  } = {},
): k8s.V1Node => ({
  metadata: {
    name: over.name ?? 'web-1',
    creationTimestamp: new Date(over.created ?? '2025-06-07T10:00:00Z'),
    labels: over.managed === false ? {} : { [managedNodeLabel]: 'true' },
    annotations: over.annotations ?? {},
  },
});

test('the Node a Pull host’s kubelet registered is adopted: its name, managed, no identity, not older than the host', () => {
  const host = pull();
  assert.equal(isJoiningPullNode(node(), host), true, 'same second as the host');
  assert.equal(isJoiningPullNode(node({ created: '2025-06-07T10:00:05Z' }), host), true);
  assert.equal(isJoiningPullNode(node({ created: '2025-06-07T09:59:59Z' }), host), false, 'older');
  assert.equal(isJoiningPullNode(node({ managed: false }), host), false, 'not winfleet’s labels');
  assert.equal(isJoiningPullNode(node({ name: 'web-2' }), host), false, 'another name');
  assert.equal(
    isJoiningPullNode(node({ annotations: { [hostAnnotation]: 'x/y/z' } }), host),
    false,
    'someone else’s identity',
  );
  // Once Ready on a Node, a Node without the identity was stripped of it: not adopted again.
  assert.equal(isJoiningPullNode(node(), pull({}, { servicesVersion: '1.0.0' })), false);
});

test('a Pull host refuses a name another host holds and a Node that is not its own', () => {
  const host = pull();
  assert.equal(pullNameRefusal(host, 'web-1', [host], node()), undefined, 'its joining Node');
  const own = node({ annotations: { [hostAnnotation]: hostIdentity(host) } });
  assert.equal(pullNameRefusal(host, 'web-1', [host], own), undefined, 'its own Node');
  const older = pull({
    name: 'ssh-web-1',
    uid: 'uid-old',
    creationTimestamp: new Date('2025-06-01T00:00:00Z'),
  });
  older.spec = {
    address: '10.0.0.5',
    username: 'a',
    sshKeySecretRef: { name: 'k' },
    nodeName: 'web-1',
  };
  assert.equal(pullNameRefusal(host, 'web-1', [host, older], node())?.reason, 'NodeNameTaken');
  const before = node({ created: '2025-06-07T09:00:00Z' });
  const refusal = pullNameRefusal(host, 'web-1', [host], before);
  assert.equal(refusal?.reason, 'NodeNotOwned');
  assert.match(refusal!.message, /winfleet will not join, annotate, drain or delete it/);
  // A Node carrying another Pull host's identity (a node forging it on itself) is not this one’s.
  const other = pull({ name: 'web-2', uid: 'uid-web-2' });
  other.spec = { ...other.spec, nodeName: 'web-2' };
  const forged = node({ annotations: { [hostAnnotation]: hostIdentity(other) } });
  assert.equal(pullNameRefusal(host, 'web-1', [host, other], forged)?.reason, 'NodeNotOwned');
});
