import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeCacheOf } from '../../../sim/testkit/synthetic-nodes.ts';
import { indexedAddressesOf, nodeHoldingAddress } from './node-addresses.ts';

const node = (name: string, addresses: [string, string][]) => ({
  metadata: { name },
  status: { addresses: addresses.map(([type, address]) => ({ type, address })) },
});

test('a Node is filed under its addresses, canonical, but not under its own name', () => {
  assert.deepEqual(
    indexedAddressesOf(
      node('win-a', [
        ['InternalIP', '10.1.2.2'],
        ['InternalIP', 'FD00:0:0::1'],
        ['Hostname', 'win-a'],
        ['ExternalDNS', 'WIN-A.corp.example'],
        ['InternalIP', '10.1.2.2'],
      ]),
    ),
    ['10.1.2.2', 'fd00::1', 'win-a.corp.example'],
  );
  assert.deepEqual(indexedAddressesOf({ metadata: { name: 'bare' } }), []);
});

test('the Node holding an address is found by name or address, never the one excepted', () => {
  const holding = nodeHoldingAddress(
    nodeCacheOf([
      node('win-a', [['InternalIP', '10.1.2.2']]),
      node('kwok-1', [['InternalIP', '127.0.0.1']]),
      node('kwok-2', [['InternalIP', '127.0.0.1']]),
    ]),
  );
  assert.equal(holding('win-a', 'win-b'), 'win-a');
  assert.equal(holding('win-a', 'win-a'), undefined, "a node's own name is its own");
  assert.equal(holding('10.1.2.2', 'win-a'), undefined);
  assert.equal(holding('10.1.2.2', 'other'), 'win-a');
  assert.equal(holding('127.0.0.1', 'kwok-1'), 'kwok-2', 'another Node sharing the address');
  assert.equal(holding('10.9.9.9', undefined), undefined);
});
