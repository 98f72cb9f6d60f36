import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeCacheOf } from '../../sim/testkit/synthetic-nodes.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import { apiServerNameSource, apiServerNamesOf } from '../controllers/csr/api-server-names.ts';
import { nodeHoldingAddress } from '../controllers/csr/node-addresses.ts';
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
  servingDnsSuffixes: ['corp.example'],
};
const context = {
  network,
  specAddress: '10.1.2.2',
  nodeHolding: () => undefined,
  nodeName: 'win-a',
};

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

test('attacker: no name or address of the API server passes, whatever the pin or the annotation says (issue 33)', () => {
  // A kubeadm cluster behind a load balancer: the controlPlaneEndpoint in cluster-info, the
  // API servers in the default/kubernetes EndpointSlice, the VIP and a wildcard in its certificate.
  const names = apiServerNamesOf({
    'K8s-API.corp.example': 'the server of kube-public/cluster-info',
    '10.1.0.11': 'an address of the default/kubernetes endpoints',
    '10.1.0.100': 'a name in the certificate the API server presents',
    '2001:DB8::100': 'a name in the certificate the API server presents',
    '*.api.corp.example': 'a name in the certificate the API server presents',
  });
  // The host's own spec.address and node name vouch for nothing here: a Pull host's vouched
  // address is the InternalIP its Node reported, which the attacker chose.
  const attacker = {
    ...context,
    specAddress: '10.1.0.100',
    nodeName: 'k8s-api',
    apiServerName: (address: string) => apiServerNameSource(names, address),
  };
  for (const [address, where] of [
    ['k8s-api.corp.example', 'kube-public/cluster-info'],
    ['10.1.0.11', 'default/kubernetes endpoints'],
    ['10.1.0.100', 'certificate the API server presents'],
    ['2001:db8::100', 'certificate the API server presents'],
    ['east.api.corp.example', 'certificate the API server presents'],
  ] as const) {
    assert.match(
      refusedAddressProblem(canonicalAddress(address), attacker) ?? 'passed',
      new RegExp(`^${address.replaceAll('.', '\\.')} is the API server's \\(.*${where}`),
      address,
    );
  }
  // A wildcard covers one label only, as clients match it; the suffix rule still applies.
  assert.equal(refusedAddressProblem('a.b.api.corp.example', attacker), undefined);
  assert.equal(refusedAddressProblem('10.1.0.12', attacker), undefined);
});

test('attacker: a DNS name is the node name or under hosts.servingDnsSuffixes, nothing else (issue 33)', () => {
  assert.equal(refusedAddressProblem('win-a', context), undefined);
  assert.equal(refusedAddressProblem('win-a.corp.example', context), undefined);
  assert.equal(refusedAddressProblem('x.y.corp.example', context), undefined);
  for (const name of ['win-b', 'corp.example', 'evilcorp.example', 'k8s-api.example.com']) {
    assert.match(
      refusedAddressProblem(name, context)!,
      /is a DNS name other than the node name: a serving certificate may name the node name win-a or a name under corp\.example \(hosts\.servingDnsSuffixes/,
      name,
    );
  }
  const none = { ...context, network: { ...network, servingDnsSuffixes: [] } };
  assert.match(
    refusedAddressProblem('win-a.corp.example', none)!,
    /may name only the node name win-a/,
  );
  // IPs are not DNS names: the suffix rule does not apply to them.
  assert.equal(refusedAddressProblem('10.1.2.3', none), undefined);
});
