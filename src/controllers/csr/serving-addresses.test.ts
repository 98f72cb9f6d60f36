import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeCacheOf } from '../../../sim/testkit/synthetic-nodes.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { nodeHoldingAddress } from './node-addresses.ts';
import {
  allowedServingAddresses,
  canonicalAddress,
  joinServingAddresses,
  parseServingAddressList,
  pinnedServingAddresses,
  refusedAddressProblem,
} from './serving-addresses.ts';

const network = {
  serviceCIDR: '10.96.0.0/12',
  podCIDR: '10.244.0.0/16',
  clusterDomain: 'cluster.local',
};
const context = { network, specAddress: '10.1.2.2', nodeHolding: () => undefined };

test('addresses compare in one form: IPv6 compressed, names in lower case', () => {
  assert.equal(canonicalAddress('2001:DB8:0:0::1'), '2001:db8::1');
  assert.equal(canonicalAddress(' WIN-A.Example.COM '), 'win-a.example.com');
  assert.equal(canonicalAddress('10.1.2.3'), '10.1.2.3');
  assert.deepEqual(parseServingAddressList('10.1.2.3, WIN-A,,win-a , 2001:db8::0:1'), [
    '10.1.2.3',
    'win-a',
    '2001:db8::1',
  ]);
});

test('the first join pins what the host reported; the node name and spec.address are always allowed', () => {
  assert.deepEqual(joinServingAddresses(['10.1.2.2', '10.1.2.2'], 'WIN-A'), ['10.1.2.2', 'win-a']);
  const host = {
    spec: { address: 'Win-A.corp.example' },
    status: { addresses: ['10.9.9.9'], hostname: 'WIN-A', servingAddresses: ['10.1.2.2'] },
  } as WindowsHost;
  assert.deepEqual(pinnedServingAddresses(host), ['10.1.2.2']);
  assert.deepEqual(
    [...allowedServingAddresses(host, 'win-a')],
    ['10.1.2.2', 'win-a', 'win-a.corp.example'],
  );
  // Joined before pins existed: the last report stands in.
  const legacy = { ...host, status: { ...host.status, servingAddresses: undefined } };
  assert.deepEqual(pinnedServingAddresses(legacy as WindowsHost), ['10.9.9.9', 'win-a']);
});

test('acceptable addresses and names pass', () => {
  for (const address of ['10.1.2.3', '192.168.1.5', '2001:db8::1', 'win-a', 'win-a.corp.example']) {
    assert.equal(refusedAddressProblem(address, context), undefined, address);
  }
});

test('loopback passes only as the host’s own spec.address (simulated hosts)', () => {
  const simulated = { ...context, specAddress: '127.0.0.11' };
  assert.equal(refusedAddressProblem('127.0.0.11', simulated), undefined);
  assert.match(refusedAddressProblem('127.0.0.12', simulated)!, /is a loopback address/);
  assert.match(refusedAddressProblem('127.0.0.1', context)!, /is a loopback address/);
});

test('an address another Node holds is refused, by address, name or hostname', () => {
  const holding = nodeHoldingAddress(
    nodeCacheOf([
      {
        metadata: { name: 'linux-1' },
        status: {
          addresses: [
            { type: 'InternalIP', address: '10.1.9.9' },
            { type: 'Hostname', address: 'Linux-1.corp.example' },
          ],
        },
      },
    ]),
  );
  for (const address of ['10.1.9.9', 'linux-1', 'linux-1.corp.example']) {
    assert.equal(
      refusedAddressProblem(address, {
        ...context,
        nodeHolding: (a) => holding(a, 'win-a'),
      }),
      `${address} is held by Node linux-1`,
    );
  }
});

test('a bad CIDR in the configuration refuses instead of passing', () => {
  const bad = { ...context, network: { ...network, podCIDR: '10.244.0.0/99' } };
  assert.match(
    refusedAddressProblem('10.1.2.3', bad)!,
    /cannot be checked against hosts\.podCIDR "10\.244\.0\.0\/99", which is not a CIDR/,
  );
});

test('what is neither an IP address nor a DNS name is refused', () => {
  for (const address of ['*.example.com', '010.0.0.1', 'a_b', `${'a'.repeat(64)}.example`]) {
    assert.ok(refusedAddressProblem(address, context), address);
  }
});
