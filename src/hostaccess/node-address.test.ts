import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ipConfiguration } from '../../sim/hosts/ip-configuration.ts';
import { createTestMachine } from '../../sim/hosts/test-machine.ts';
import {
  defaultRouteAddress,
  type HostIpAddress,
  type HostNetwork,
  nodeAddress,
  usableAddresses,
} from './node-address.ts';
import { readHostFacts } from './remote-scripts.ts';

function row(
  address: string,
  interfaceIndex: number,
  interfaceAlias: string,
  addressState = 'Preferred',
): HostIpAddress {
  return { address, interfaceIndex, interfaceAlias, addressState };
}

/** A host after a re-bootstrap: HNS adapters and an APIPA address listed before its own. */
const rebootstrapped: HostNetwork = {
  ipAddresses: [
    row('172.29.112.1', 24, 'vEthernet (nat)'),
    row('10.244.3.2', 31, 'vEthernet (cbr0_ep)'),
    row('169.254.10.20', 7, 'Ethernet 2'),
    row('10.1.2.3', 18, 'vEthernet (Ethernet)'),
    row('127.0.0.1', 1, 'Loopback Pseudo-Interface 1'),
  ],
  defaultRoutes: [{ interfaceIndex: 18, routeMetric: 0, interfaceMetric: 15 }],
};

test('the node address is the default route interface’s, not the first Get-NetIPAddress row', () => {
  assert.equal(rebootstrapped.ipAddresses[0]!.address, '172.29.112.1');
  assert.equal(defaultRouteAddress(rebootstrapped), '10.1.2.3');
  assert.equal(nodeAddress('win-a.example.com', rebootstrapped), '10.1.2.3');
  assert.deepEqual(usableAddresses(rebootstrapped), ['10.1.2.3', '172.29.112.1', '10.244.3.2']);
});

test('spec.address wins when it is an IPv4 address the host holds', () => {
  assert.equal(nodeAddress('10.244.3.2', rebootstrapped), '10.244.3.2');
  // Behind a NAT the host does not hold the address it is reached at: the kubelet would refuse
  // it as --node-ip, so the default route's address is used.
  assert.equal(nodeAddress('203.0.113.9', rebootstrapped), '10.1.2.3');
  // Link-local and loopback are never the node's, even when named.
  assert.equal(nodeAddress('169.254.10.20', rebootstrapped), '10.1.2.3');
  assert.equal(nodeAddress('127.0.0.1', rebootstrapped), '10.1.2.3');
});

test('the lowest route metric plus interface metric picks among default routes', () => {
  const twoGateways: HostNetwork = {
    ipAddresses: [row('192.168.50.7', 9, 'Ethernet 3'), row('10.1.2.3', 4, 'Ethernet')],
    defaultRoutes: [
      { interfaceIndex: 9, routeMetric: 0, interfaceMetric: 25 },
      { interfaceIndex: 4, routeMetric: 5, interfaceMetric: 15 },
    ],
  };
  assert.equal(defaultRouteAddress(twoGateways), '10.1.2.3');
  // A default route whose interface has no usable address is skipped.
  const apipaGateway: HostNetwork = {
    ipAddresses: [row('169.254.1.1', 9, 'Ethernet 3'), row('10.1.2.3', 4, 'Ethernet')],
    defaultRoutes: [
      { interfaceIndex: 9, routeMetric: 0, interfaceMetric: 5 },
      { interfaceIndex: 4, routeMetric: 0, interfaceMetric: 15 },
    ],
  };
  assert.equal(defaultRouteAddress(apipaGateway), '10.1.2.3');
});

test('without a default route an adapter’s address comes before a vEthernet one', () => {
  const isolated: HostNetwork = {
    ipAddresses: [
      row('172.29.112.1', 24, 'vEthernet (nat)'),
      row('10.9.8.7', 6, 'Ethernet', 'Tentative'),
      row('10.1.2.3', 4, 'Ethernet'),
    ],
    defaultRoutes: [],
  };
  assert.equal(defaultRouteAddress(isolated), undefined);
  assert.equal(nodeAddress('win-a', isolated), '10.1.2.3');
  assert.equal(nodeAddress('win-a', { ipAddresses: [], defaultRoutes: [] }), undefined);
});

test('a simulated host lists HNS and APIPA addresses first; its own address is the node’s', async (t) => {
  const machine = await createTestMachine(t);
  const network = ipConfiguration(machine);
  const firstNonLoopback = network.ipAddresses.find((a) => a.address !== '127.0.0.1')!;
  // What the host-facts script took before: the first address other than 127.0.0.1.
  assert.notEqual(firstNonLoopback.address, machine.address);
  assert.equal(nodeAddress('win-sim.example.com', network), machine.address);
  assert.equal(nodeAddress(machine.address, network), machine.address);
});

test('host facts are read strictly: rows must have the fields and types the script prints', () => {
  const base = { hostname: 'WIN', defaultRoutes: null };
  assert.deepEqual(
    readHostFacts({ ...base, ipAddresses: row('10.1.2.3', 4, 'Ethernet') }).addresses,
    ['10.1.2.3'],
    'one row comes as a bare object from Windows PowerShell 5.1',
  );
  assert.throws(
    () =>
      readHostFacts({
        ...base,
        ipAddresses: [{ ...row('10.1.2.3', 4, 'E'), interfaceIndex: '4' }],
      }),
    /host-facts ipAddresses\[0\]: "interfaceIndex" is "4", expected an integer/,
  );
  assert.throws(
    () => readHostFacts({ ...base, ipAddresses: [], defaultRoutes: ['0.0.0.0/0'] }),
    /host-facts defaultRoutes\[0\] "0\.0\.0\.0\/0": expected an object/,
  );
  assert.throws(
    () => readHostFacts([]),
    /Cannot read host-facts from \[\]: expected a JSON object/,
  );
});
