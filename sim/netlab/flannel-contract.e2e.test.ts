/**
 * The control-plane contract between a Node and real Linux flanneld (v0.28.10, --kube-subnet-mgr,
 * VXLAN VNI 4096 port 4789), on a private control plane: for a Node whose four
 * flannel.alpha.coreos.com annotations are written as AcquireLease writes them, flanneld programs
 * the route `<podCIDR> via <podCIDR>.0 dev flannel.4096 onlink`, the permanent neighbour
 * `<podCIDR>.0 lladdr VtepMAC` and the FDB entry `VtepMAC dst <public-ip>`
 * (vxlan_network.go); for a Node without kube-subnet-manager=true (kube.go:298), or with a
 * host-gw lease, nothing. This is what a Windows node's flanneld (or a stand-in for it) must
 * write for Linux nodes to route to its pods. Needs root.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { waitFor } from '../../src/kube/wait-for.ts';
import { formatIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import {
  leaseAnnotations,
  readLeaseAnnotations,
  vxlanOverhead,
  windowsVxlan,
} from './flannel-config.ts';
import { flannelWorld, nodeAnnotations, writeLeaseAnnotations } from './flannel-world.ts';
import { lanMtu } from './net-lab.ts';
import { readFdb, readLink, readNeighbours, readRoutes } from './readback.ts';

const winMac = '0e:2a:00:00:00:21';

/** `<podCIDR>.0`: the address flannel routes a remote subnet through and resolves to its VTEP. */
function subnetZero(cidr: string): string {
  return formatIpv4(parseIpv4Cidr(cidr)!.network);
}

test('real Linux flanneld programs route, neighbour and FDB entry for a Node with lease annotations as AcquireLease writes them, and nothing for a Node without kube-subnet-manager', async (t) => {
  const world = await flannelWorld(t);
  const lnx = await world.addLinuxNode('lnx1', { address: '192.0.2.11' });
  const netns = lnx.node.netns;
  const dev = lnx.vxlanDevice!;
  assert.equal(dev, 'flannel.4096');

  // flanneld's own lease is what a Windows node's must look like: its VtepMAC is its device's.
  const device = await readLink(netns, dev);
  assert.deepEqual(device.vxlan, {
    id: windowsVxlan.vni,
    port: windowsVxlan.port,
    local: '192.0.2.11',
    link: 'eth0',
    learning: false,
  });
  assert.equal(device.mtu, lanMtu - vxlanOverhead);
  assert.deepEqual(readLeaseAnnotations(await nodeAnnotations(world.kc, 'lnx1'), 'lnx1'), {
    backendType: 'vxlan',
    publicIp: '192.0.2.11',
    vni: windowsVxlan.vni,
    vtepMac: device.address,
  });
  assert.deepEqual(await lnx.subnetEnv(), {
    network: '10.244.0.0/16',
    subnet: `${formatIpv4(parseIpv4Cidr(lnx.podCidr)!.network + 1)}/24`,
    mtu: lanMtu - vxlanOverhead,
    ipMasq: false,
  });

  // In this order, so that flanneld (one watch, events handled in order) has seen the first two
  // by the time the third is programmed: no kube-subnet-manager; a host-gw lease; a VXLAN lease.
  const [unmanaged, hostGw, win] = await Promise.all(
    ['nosm', 'hostgw', 'win1'].map((name) => world.addNodeObject(name)),
  );
  await writeLeaseAnnotations(
    world.kc,
    'nosm',
    leaseAnnotations({
      backend: { type: 'vxlan', vni: windowsVxlan.vni, vtepMac: '0e:2a:00:00:00:31' },
      publicIp: '192.0.2.31',
      withoutKubeSubnetManager: true,
    }),
  );
  await writeLeaseAnnotations(
    world.kc,
    'hostgw',
    leaseAnnotations({ backend: { type: 'host-gw' }, publicIp: '192.0.2.32' }),
  );
  await writeLeaseAnnotations(
    world.kc,
    'win1',
    leaseAnnotations({
      backend: { type: 'vxlan', vni: windowsVxlan.vni, vtepMac: winMac },
      publicIp: '192.0.2.21',
    }),
  );

  const route = await waitFor(
    async () => (await readRoutes(netns, [win!])).find((r) => r.dev === dev),
    { description: `flanneld's route to win1's ${win} in ${netns}`, timeoutMs: 30_000 },
  );
  assert.deepEqual(route, { dst: win, gateway: subnetZero(win!), dev, flags: ['onlink'] });

  // Everything flanneld put on flannel.4096 is win1's: one route, one neighbour, one FDB entry.
  assert.deepEqual(
    (await readRoutes(netns)).filter((r) => r.dev === dev),
    [route],
  );
  assert.deepEqual(await readNeighbours(netns, dev), [
    { dst: subnetZero(win!), dev, lladdr: winMac, state: ['PERMANENT'] },
  ]);
  assert.deepEqual(await readFdb(netns, dev), [
    { mac: winMac, ifname: dev, dst: '192.0.2.21', flags: ['self'], state: 'permanent' },
  ]);
  for (const cidr of [unmanaged!, hostGw!]) {
    assert.deepEqual(await readRoutes(netns, [cidr]), [], `no route to ${cidr}`);
  }

  // flanneld's log agrees: the host-gw lease reached the VXLAN backend and was ignored for its
  // type; the unmanaged Node never became a lease event at all.
  const log = readFileSync(lnx.flanneld.logFile, 'utf8');
  assert.match(
    log,
    /Received Subnet Event with VxLan: BackendType: vxlan, PublicIP: 192\.0\.2\.21,/,
  );
  assert.match(log, /ignoring non-vxlan v4Subnet\(\S+\) .*type=host-gw/);
  assert.doesNotMatch(log, /PublicIP: 192\.0\.2\.31/);
});
