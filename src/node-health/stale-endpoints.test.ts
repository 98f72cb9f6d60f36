import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import type { HnsEndpoint, HnsNetwork } from '../windows/hns-objects.ts';
import {
  decideStaleEndpoints,
  emptyStaleEndpointMemory,
  type StaleEndpointMemory,
  type StaleEndpointReads,
} from './stale-endpoints.ts';

const winfleet: HnsNetwork = {
  id: '11111111-1111-4111-8111-111111111111',
  name: 'winfleet',
  type: 'L2Bridge',
};
const flannel: HnsNetwork = {
  id: '22222222-2222-4222-8222-222222222222',
  name: 'flannel.4096',
  type: 'Overlay',
};
const calico: HnsNetwork = {
  id: '33333333-3333-4333-8333-333333333333',
  name: 'Calico',
  type: 'L2Bridge',
};

let n = 0;
function endpoint(network: HnsNetwork, ip: string, remote = false): HnsEndpoint {
  n++;
  return {
    id: `aaaaaaaa-0000-4000-8000-${String(n).padStart(12, '0')}`,
    name: `sandbox${n}_${network.name}`,
    networkId: network.id.toLowerCase(),
    ipAddress: ip,
    remote,
  };
}

const routed: NodeNetwork = { mode: 'routed' };
const vxlan: NodeNetwork = { mode: 'flannel-vxlan', vni: 4096, netConf: '{}' };
const external: NodeNetwork = {
  mode: 'external',
  cniConfDir: 'C:\\etc\\cni\\net.d',
  cniBinDir: 'C:\\opt\\cni\\bin',
  kubeProxy: false,
  networkName: 'Calico',
};

function reads(over: Partial<StaleEndpointReads>): StaleEndpointReads {
  return {
    network: routed,
    networks: [winfleet, calico],
    endpoints: [],
    podIPs: new Set(),
    podCIDR: '10.244.1.0/24',
    sourceVip: undefined,
    ...over,
  };
}

/** Runs checks at these times (s) with the same reads; returns every decision. */
function checks(r: StaleEndpointReads, times: number[], wait = 60) {
  let memory: StaleEndpointMemory = emptyStaleEndpointMemory();
  return times.map((s) => {
    const d = decideStaleEndpoints(r, memory, s * 1000, wait);
    memory = d.memory;
    return d;
  });
}

test('an endpoint whose address no pod has is stale only on a second check at least the wait later', () => {
  const left = endpoint(winfleet, '10.244.1.3');
  const live = endpoint(winfleet, '10.244.1.2');
  const r = reads({ endpoints: [left, live], podIPs: new Set(['10.244.1.2']) });
  const [first, early, later] = checks(r, [0, 30, 60]);
  assert.deepEqual(first!.observation, {
    network: 'winfleet',
    staleAfterSeconds: 60,
    stale: [],
    duplicates: [],
  });
  assert.deepEqual(early!.removable, [], '30 s is not long enough');
  assert.deepEqual(later!.removable, [{ id: left.id, ip: '10.244.1.3', network: 'winfleet' }]);
  assert.deepEqual(later!.observation!.stale, later!.removable);
  // One check alone, however late, is never enough: the first sighting starts the clock.
  assert.deepEqual(checks(r, [1_000_000])[0]!.removable, []);
});

test('a pod whose address shows up in between (a pod being created) resets the wait', () => {
  const e = endpoint(winfleet, '10.244.1.4');
  let memory = emptyStaleEndpointMemory();
  const at = (s: number, ips: string[]) => {
    const d = decideStaleEndpoints(
      reads({ endpoints: [e], podIPs: new Set(ips) }),
      memory,
      s * 1000,
      60,
    );
    memory = d.memory;
    return d;
  };
  at(0, []);
  assert.deepEqual(at(30, ['10.244.1.4']).removable, [], 'the API now shows the pod’s address');
  at(40, []);
  assert.deepEqual(at(90, []).removable, [], '50 s since it was last seen without a pod');
  assert.equal(at(100, []).removable.length, 1);
});

test('a failed read decides nothing and keeps the memory; the wait goes on across it', () => {
  const e = endpoint(winfleet, '10.244.1.5');
  const first = decideStaleEndpoints(reads({ endpoints: [e] }), emptyStaleEndpointMemory(), 0, 60);
  for (const failed of [
    { podIPs: undefined },
    { endpoints: undefined },
    { networks: undefined },
    { podCIDR: undefined },
  ]) {
    const d = decideStaleEndpoints(reads({ endpoints: [e], ...failed }), first.memory, 90_000, 60);
    assert.equal(d.observation, undefined, JSON.stringify(failed));
    assert.deepEqual(d.removable, []);
    assert.deepEqual(d.memory, first.memory);
  }
  const next = decideStaleEndpoints(reads({ endpoints: [e] }), first.memory, 90_000, 60);
  assert.equal(next.removable.length, 1);
});

test('external mode: a CNI’s network is never looked at, whatever it holds', () => {
  const e = endpoint(calico, '10.244.1.6');
  const d = checks(reads({ network: external, endpoints: [e] }), [0, 100, 200]);
  for (const x of d) {
    assert.equal(x.observation, undefined);
    assert.deepEqual(x.removable, []);
  }
});

test('only winfleet’s own network: endpoints on another network in routed mode are left alone', () => {
  const foreign = endpoint(calico, '10.244.1.7');
  const d = checks(reads({ endpoints: [foreign] }), [0, 100]);
  assert.deepEqual(d[1]!.removable, []);
  assert.deepEqual(d[1]!.observation!.stale, []);
});

test('not pods’ endpoints: the source VIP, the gateway, the subnet’s ends, remote endpoints, addresses outside the pod CIDR', () => {
  const sourceVip = endpoint(flannel, '10.244.1.250');
  const gateway = endpoint(flannel, '10.244.1.1');
  const networkAddress = endpoint(flannel, '10.244.1.0');
  const broadcast = endpoint(flannel, '10.244.1.255');
  const remote = endpoint(flannel, '10.244.2.8', true);
  const remoteInside = endpoint(flannel, '10.244.1.9', true);
  const outside = endpoint(flannel, '10.244.2.9');
  const ipv6Only = endpoint(flannel, '');
  const left = endpoint(flannel, '10.244.1.10');
  const r = reads({
    network: vxlan,
    networks: [flannel],
    endpoints: [
      sourceVip,
      gateway,
      networkAddress,
      broadcast,
      remote,
      remoteInside,
      outside,
      ipv6Only,
      left,
    ],
    sourceVip: '10.244.1.250',
  });
  const [, later] = checks(r, [0, 60]);
  assert.deepEqual(later!.removable, [{ id: left.id, ip: '10.244.1.10', network: 'flannel.4096' }]);
  // An overlay whose source VIP is not known this pass decides nothing: its endpoint would
  // look like a pod's.
  const unknown = checks({ ...r, sourceVip: undefined }, [0, 60]);
  assert.equal(unknown[1]!.observation, undefined);
  assert.deepEqual(unknown[1]!.removable, []);
});

test('two endpoints holding a pod’s address: reported once seen so over the wait, never removed', () => {
  const a = endpoint(winfleet, '10.244.1.20');
  const b = endpoint(winfleet, '10.244.1.20');
  const r = reads({ endpoints: [b, a], podIPs: new Set(['10.244.1.20']) });
  const [first, later] = checks(r, [0, 60]);
  assert.deepEqual(first!.observation!.duplicates, [], 'one sighting is not enough');
  assert.deepEqual(later!.observation!.duplicates, [
    { ip: '10.244.1.20', ids: [a.id, b.id].sort() },
  ]);
  assert.deepEqual(later!.removable, [], 'neither is removed: the pod may use either');
});

test('two endpoints holding an address no pod has: both are stale and removable', () => {
  const a = endpoint(winfleet, '10.244.1.21');
  const b = endpoint(winfleet, '10.244.1.21');
  const [, later] = checks(reads({ endpoints: [a, b] }), [0, 60]);
  assert.deepEqual(later!.observation!.duplicates, []);
  assert.deepEqual(later!.removable.map((e) => e.id).sort(), [a.id, b.id].sort());
});

test('the owned network missing: nothing is stale; an endpoint readdressed starts over', () => {
  const none = checks(reads({ networks: [calico], endpoints: [] }), [0]);
  assert.deepEqual(none[0]!.observation!.stale, []);
  const e = endpoint(winfleet, '10.244.1.30');
  const first = decideStaleEndpoints(reads({ endpoints: [e] }), emptyStaleEndpointMemory(), 0, 60);
  const moved = { ...e, ipAddress: '10.244.1.31' };
  const later = decideStaleEndpoints(reads({ endpoints: [moved] }), first.memory, 60_000, 60);
  assert.deepEqual(later.removable, []);
});

test('flannel-host-gw: the host’s bridge endpoint cbr0_ep (.2) is never a pod’s; a left pod endpoint on cbr0 is', () => {
  const cbr0: HnsNetwork = {
    id: '44444444-4444-4444-8444-444444444444',
    name: 'cbr0',
    type: 'L2Bridge',
  };
  const hostGw: NodeNetwork = { mode: 'flannel-host-gw', networkName: 'cbr0', netConf: '{}' };
  const bridge = { ...endpoint(cbr0, '10.244.1.2'), name: 'cbr0_ep' };
  const left = endpoint(cbr0, '10.244.1.3');
  const r = reads({ network: hostGw, networks: [cbr0], endpoints: [bridge, left] });
  const [, later] = checks(r, [0, 60]);
  assert.deepEqual(later!.removable, [{ id: left.id, ip: '10.244.1.3', network: 'cbr0' }]);
  assert.equal(later!.observation?.network, 'cbr0');
  // No source VIP is needed for a decision on an L2Bridge network.
  assert.notEqual(later!.observation, undefined);
});
