/** What a Windows node's HNS model renders to, and the steps from one rendering to the next. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HnsNetworks, hnsProtocol } from '../hosts/hns-networks.ts';
import {
  desiredState,
  emptyState,
  linuxMac,
  natTable,
  planRender,
  type RenderStep,
  type WindowsNodeState,
} from './windows-node.ts';

function overlayModel() {
  const hns = new HnsNetworks();
  const network = hns.ensure(
    'flannel.4096',
    'Overlay',
    [{ addressPrefix: '10.244.3.0/24', gateway: '10.244.3.1' }],
    { vsid: 4096, managementIp: '127.0.10.1' },
  );
  hns.addPolicies(network.id, [{ Type: 'HostRoute', Settings: {} }]);
  return { hns, network };
}

const route = (prefix: string, mac: string, pa: string, isolationId = 4096) => ({
  Type: 'RemoteSubnetRoute' as const,
  Settings: {
    IsolationId: isolationId,
    DistributedRouterMacAddress: mac,
    ProviderAddress: pa,
    DestinationPrefix: prefix,
  },
});

const ops = (steps: RenderStep[]) =>
  steps.map((s) =>
    s.op.endsWith('pod')
      ? `${s.op} ${(s as { endpoint: { ip: string } }).endpoint.ip}`
      : s.op.endsWith('remote')
        ? `${s.op} ${(s as { remote: { subnet: string } }).remote.subnet}`
        : s.op,
  );

test('MACs in HNS notation become Linux notation; anything else is refused', () => {
  assert.equal(linuxMac('0E-2A-0A-F4-03-02'), '0e:2a:0a:f4:03:02');
  assert.equal(linuxMac('7e:1a:2b:3c:4d:5e'), '7e:1a:2b:3c:4d:5e');
  assert.throws(() => linuxMac('0E-2A-0A'), /not a MAC/);
});

test('the Overlay network, its RemoteSubnetRoutes of its VSID and its endpoints are what is rendered', () => {
  const { hns, network } = overlayModel();
  const dr = hns.policies(network.id).find((p) => p.Type === 'DrMacAddress')!.Settings as {
    Address: string;
  };
  hns.addPolicies(network.id, [
    route('10.244.2.0/24', '7e:1a:2b:3c:4d:5e', '192.0.2.11'),
    route('10.244.1.0/24', '7E-1A-2B-3C-4D-01', '192.0.2.12'),
    route('10.244.9.0/24', '7e:1a:2b:3c:4d:09', '192.0.2.19', 4097),
  ]);
  hns.ensureEndpoint(network.id, 'sandbox-b', '10.244.3.3');
  const other = hns.ensure('nat', 'NAT');
  hns.ensureEndpoint(other.id, 'sandbox-n', '172.20.0.2');
  const state = desiredState(hns, 'FLANNEL.4096', 1450);
  assert.deepEqual(state.overlay, {
    networkId: network.id,
    name: 'flannel.4096',
    vni: 4096,
    drMac: dr.Address.toLowerCase().replaceAll('-', ':'),
    subnet: '10.244.3.0/24',
    gateway: '10.244.3.1',
  });
  assert.deepEqual(state.remotes, [
    { subnet: '10.244.1.0/24', vtepMac: '7e:1a:2b:3c:4d:01', publicIp: '192.0.2.12' },
    { subnet: '10.244.2.0/24', vtepMac: '7e:1a:2b:3c:4d:5e', publicIp: '192.0.2.11' },
  ]);
  assert.deepEqual(state.ignored, ['10.244.9.0/24: IsolationId 4097 is not the VSID 4096']);
  assert.deepEqual(
    state.endpoints.map((e) => [e.ip, e.cidr, e.gateway, e.mtu]),
    [['10.244.3.3', '10.244.3.3/24', '10.244.3.1', 1450]],
  );
  // No network of that name, or one that is not an Overlay with a VSID: nothing.
  assert.deepEqual(desiredState(hns, 'flannel.4097', 1450), emptyState);
  assert.deepEqual(desiredState(hns, 'nat', 1450), emptyState);
  const bare = new HnsNetworks();
  bare.ensure('flannel.4096', 'Overlay', [
    { addressPrefix: '10.244.3.0/24', gateway: '10.244.3.1' },
  ]);
  assert.deepEqual(desiredState(bare, 'flannel.4096', 1450), emptyState, 'no VSID');
});

test('from one rendering to the next: removals first, a changed route re-made, a new network re-makes all', () => {
  const { hns, network } = overlayModel();
  assert.deepEqual(ops(planRender(emptyState, desiredState(hns, 'flannel.4096', 1450))), [
    'add-overlay',
  ]);
  hns.addPolicies(network.id, [route('10.244.2.0/24', '7e:1a:2b:3c:4d:5e', '192.0.2.11')]);
  hns.ensureEndpoint(network.id, 'sandbox-a', '10.244.3.2');
  const first: WindowsNodeState = desiredState(hns, 'flannel.4096', 1450);
  assert.deepEqual(ops(planRender(emptyState, first)), [
    'add-overlay',
    'add-remote 10.244.2.0/24',
    'add-pod 10.244.3.2',
  ]);
  assert.deepEqual(planRender(first, desiredState(hns, 'flannel.4096', 1450)), [], 'unchanged');

  // The lease moved (a new VtepMAC), another pod came, the first went.
  hns.removePolicies(network.id, [route('10.244.2.0/24', '7e:1a:2b:3c:4d:5e', '192.0.2.11')]);
  hns.addPolicies(network.id, [route('10.244.2.0/24', '7e:1a:2b:3c:4d:5f', '192.0.2.11')]);
  hns.ensureEndpoint(network.id, 'sandbox-b', '10.244.3.3');
  hns.removeEndpointsOf('sandbox-a');
  const second = desiredState(hns, 'flannel.4096', 1450);
  assert.deepEqual(ops(planRender(first, second)), [
    'remove-pod 10.244.3.2',
    'remove-remote 10.244.2.0/24',
    'add-remote 10.244.2.0/24',
    'add-pod 10.244.3.3',
  ]);

  // flanneld made the network again (a new id, a new DR MAC): everything is re-made; the old
  // network's endpoints went with it.
  hns.remove(network.id);
  const again = hns.ensure(
    'flannel.4096',
    'Overlay',
    [{ addressPrefix: '10.244.3.0/24', gateway: '10.244.3.1' }],
    { vsid: 4096 },
  );
  hns.addPolicies(again.id, [route('10.244.2.0/24', '7e:1a:2b:3c:4d:5f', '192.0.2.11')]);
  const third = desiredState(hns, 'flannel.4096', 1450);
  assert.deepEqual(ops(planRender(second, third)), [
    'remove-pod 10.244.3.3',
    'remove-remote 10.244.2.0/24',
    'remove-overlay',
    'add-overlay',
    'add-remote 10.244.2.0/24',
  ]);
  // And the network gone: all removed, nothing added.
  hns.remove(again.id);
  assert.deepEqual(ops(planRender(third, desiredState(hns, 'flannel.4096', 1450))), [
    'remove-remote 10.244.2.0/24',
    'remove-overlay',
  ]);
});

test('the network’s load balancers render as DNAT from the pods to the endpoints and SNAT to the SourceVIP, re-written whole on a change', () => {
  const { hns, network } = overlayModel();
  const before = desiredState(hns, 'flannel.4096', 1450);
  const other = hns.ensure('nat', 'NAT');
  hns.createLoadBalancer({
    networkId: other.id,
    frontendVips: ['10.96.0.20'],
    protocol: hnsProtocol.TCP,
    externalPort: 80,
    internalPort: 80,
    endpoints: ['172.20.0.2'],
  });
  const dns = {
    networkId: network.id,
    frontendVips: ['10.96.0.10'],
    externalPort: 53,
    internalPort: 5353,
    endpoints: ['10.244.2.9', '10.244.1.4'],
    sourceVip: '10.244.3.250',
  };
  hns.createLoadBalancer({ ...dns, protocol: hnsProtocol.UDP });
  hns.createLoadBalancer({ ...dns, protocol: hnsProtocol.TCP });
  hns.createLoadBalancer({ ...dns, protocol: hnsProtocol.SCTP, frontendVips: ['10.96.0.11'] });
  const after = desiredState(hns, 'flannel.4096', 1450);
  const both = { vip: '10.96.0.10', port: 53, endpoints: ['10.244.1.4', '10.244.2.9'] };
  assert.deepEqual(after.loadBalancers, [
    { ...both, protocol: 'tcp', targetPort: 5353, sourceVip: '10.244.3.250' },
    { ...both, protocol: 'udp', targetPort: 5353, sourceVip: '10.244.3.250' },
  ]);
  assert.deepEqual(after.ignored, ['load balancer 10.96.0.11:53: protocol 132 is not rendered']);
  assert.deepEqual(ops(planRender(before, after)), ['load-balancers']);
  assert.deepEqual(planRender(after, desiredState(hns, 'flannel.4096', 1450)), [], 'unchanged');
  assert.equal(
    natTable(after.loadBalancers.slice(1), 'hnsgw0'),
    [
      '*nat',
      ':PREROUTING ACCEPT [0:0]',
      ':INPUT ACCEPT [0:0]',
      ':OUTPUT ACCEPT [0:0]',
      ':POSTROUTING ACCEPT [0:0]',
      '-A PREROUTING -i hnsgw0 -d 10.96.0.10/32 -p udp -m udp --dport 53 -m statistic --mode random --probability 0.50000 -j DNAT --to-destination 10.244.1.4:5353',
      '-A PREROUTING -i hnsgw0 -d 10.96.0.10/32 -p udp -m udp --dport 53 -j DNAT --to-destination 10.244.2.9:5353',
      '-A POSTROUTING -p udp -m conntrack --ctstate DNAT --ctorigdst 10.96.0.10/32 --ctorigdstport 53 -j SNAT --to-source 10.244.3.250',
      'COMMIT',
      '',
    ].join('\n'),
  );
  // Without a SourceVIP, no SNAT; the network gone, the table is emptied.
  const { sourceVip: _, ...plain } = after.loadBalancers[0]!;
  assert.doesNotMatch(natTable([plain], 'hnsgw0'), /SNAT/);
  hns.remove(network.id);
  assert.deepEqual(planRender(after, desiredState(hns, 'flannel.4096', 1450)).at(-1), {
    op: 'load-balancers',
    loadBalancers: [],
  });
});
