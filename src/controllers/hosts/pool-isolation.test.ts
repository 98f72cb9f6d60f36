import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  desiredServicesVersionAnnotation,
  hostAnnotation,
  hostIdentity,
  servicesVersionAnnotation,
} from '../../api/node-annotations.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import { isUpToDate } from './host-join.ts';
import { hyperVLabelPatch, poolAllowsHyperV, withPoolIsolation } from './pool-isolation.ts';

const ns = 'hyperv';
const host: WindowsHost = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'a', namespace: ns, uid: 'uid-a', labels: { pool: 'p2022' } },
  spec: { address: '127.0.0.200', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
};
function pool(name: string, hyperV: unknown, namespace = ns): WindowsNodePool {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsNodePool',
    metadata: { name, namespace },
    spec: {
      selector: { matchLabels: { pool: 'p2022' } },
      ...(hyperV === undefined ? {} : { isolation: { hyperV } as { hyperV: boolean } }),
    },
  };
}

test("the host's governing pool decides the Hyper-V label", () => {
  assert.equal(poolAllowsHyperV([pool('p2022', true)], host), true);
  assert.equal(poolAllowsHyperV([pool('p2022', false)], host), false);
  assert.equal(poolAllowsHyperV([pool('p2022', undefined)], host), false);
  assert.equal(poolAllowsHyperV([pool('p2022', 'true')], host), false, 'only the boolean true');
  assert.equal(poolAllowsHyperV([], host), false, 'the default pool never');
  assert.equal(poolAllowsHyperV([pool('p2022', true, 'other')], host), false, 'another namespace');
  assert.deepEqual(withPoolIsolation({ team: 'a' }, [pool('p2022', true)], host), {
    team: 'a',
    'winfleet.io/hyperv-isolation': 'true',
  });
});

// Attacker: whoever may edit a WindowsHost, not its pool, writes the label into spec.labels to
// have containerd's Hyper-V handler configured and Hyper-V pods sent to the node (or to keep a
// node in after its pool opted out). Before the fix spec.labels reached the Node as written.
test("a host's spec.labels cannot claim or keep the Hyper-V label", () => {
  const claimed = { team: 'a', 'winfleet.io/hyperv-isolation': 'true' };
  assert.deepEqual(withPoolIsolation(claimed, [pool('p2022', false)], host), { team: 'a' });
  assert.deepEqual(withPoolIsolation(claimed, [], host), { team: 'a' });
  assert.deepEqual(
    withPoolIsolation({ 'winfleet.io/hyperv-isolation': 'false' }, [pool('p2022', true)], host),
    { 'winfleet.io/hyperv-isolation': 'true' },
  );
});

test('after the join: the Node label follows the pool, whatever the kubelet set', () => {
  const on = [pool('p2022', true)];
  const off = [pool('p2022', false)];
  assert.deepEqual(hyperVLabelPatch(on, host, {}), { 'winfleet.io/hyperv-isolation': 'true' });
  assert.equal(hyperVLabelPatch(on, host, { 'winfleet.io/hyperv-isolation': 'true' }), undefined);
  assert.deepEqual(hyperVLabelPatch(off, host, { 'winfleet.io/hyperv-isolation': 'true' }), {
    'winfleet.io/hyperv-isolation': null,
  });
  assert.equal(hyperVLabelPatch(off, host, {}), undefined);
});

// Attacker: a kubelet (or a `patch nodes` principal) sets the Hyper-V label on a joined node
// whose pool never opted in, to draw Hyper-V pods to it; or a pool opts in after its hosts
// joined. Before the fix a joined, up-to-date SSH host's pass stopped at keepJoined and never
// reached the label patch, so the Node kept whatever label it had.
test('a joined, up-to-date SSH host is not up to date while its Hyper-V label differs from its pool', () => {
  const joined: WindowsHost = { ...host, status: { hostKeyFingerprint: 'SHA256:x' } };
  const hs = new HostStatus(joined);
  const node = (labels: Record<string, string>): k8s.V1Node => ({
    metadata: {
      name: 'a',
      labels,
      annotations: {
        [servicesVersionAnnotation]: 'v1',
        [desiredServicesVersionAnnotation]: 'v1',
        [hostAnnotation]: hostIdentity(joined),
      },
    },
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  });
  const pools = (list: WindowsNodePool[]) => ({ pools: { list: () => list } }) as never;
  const label = { 'winfleet.io/hyperv-isolation': 'true' };
  assert.equal(isUpToDate(pools([pool('p2022', false)]), joined, hs, node({}), 'v1'), true);
  assert.equal(isUpToDate(pools([pool('p2022', true)]), joined, hs, node(label), 'v1'), true);
  assert.equal(
    isUpToDate(pools([pool('p2022', false)]), joined, hs, node(label), 'v1'),
    false,
    'a label the pool did not give',
  );
  assert.equal(
    isUpToDate(pools([pool('p2022', true)]), joined, hs, node({}), 'v1'),
    false,
    'a pool that opted in after the join',
  );
});
