/**
 * The lab itself, without flanneld: two node namespaces given by hand what flanneld would
 * program (a VXLAN device, an onlink route, a permanent neighbour and an FDB entry per remote
 * subnet) — as a "Windows node" will be rendered from an HNS model — carry TCP and ICMP between
 * pods across the LAN; the read-back helpers return exactly what was written; teardown leaves
 * no namespace or program; a dead test process's namespaces are swept; and a program inside a
 * namespace reaches the test cluster's API server only through the relay, with TLS checked for
 * 127.0.0.1. Needs root.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { sharedCluster } from '../testkit/test-cluster.ts';
import { writeInNetnsKubeconfig } from './api-relay.ts';
import { ip, runInNetns, toolPath } from './command.ts';
import {
  addAddress,
  addBridge,
  addFdbEntry,
  addPermanentNeighbour,
  addRemoteSubnet,
  addVxlanDevice,
  setSysctl,
} from './devices.ts';
import { vxlanOverhead, windowsVxlan } from './flannel-config.ts';
import { type LabNode, lanMtu, NetLab } from './net-lab.ts';
import { listNetns } from './netns.ts';
import { netnsName } from './netns-names.ts';
import { ping } from './ping.ts';
import { readFdb, readLink, readNeighbours, readRoutes } from './readback.ts';
import { requireRoot } from './require-root.ts';
import { echoRequest, startEchoServer } from './tcp-echo.ts';

const overlayMtu = lanMtu - vxlanOverhead;

interface Rendered {
  node: LabNode;
  subnet: string;
  mac: string;
}

/** What flanneld programs on a node for its own subnet: cni0 at .1, flannel.4096 at .0/32. */
async function renderNode(node: LabNode, third: number, mac: string): Promise<Rendered> {
  await setSysctl(node.netns, 'net.ipv4.ip_forward', '1');
  await addBridge(node.netns, 'cni0', overlayMtu);
  await addAddress(node.netns, 'cni0', `10.244.${third}.1/24`);
  await addVxlanDevice(node.netns, {
    name: 'flannel.4096',
    vni: windowsVxlan.vni,
    port: windowsVxlan.port,
    local: node.address,
    dev: node.uplink,
    mac,
    mtu: overlayMtu,
    address: `10.244.${third}.0/32`,
  });
  return { node, subnet: `10.244.${third}.0/24`, mac };
}

/** What flanneld programs on `on` for the remote lease of `remote` (vxlan_network.go). */
async function renderRemote(on: Rendered, remote: Rendered): Promise<void> {
  await addRemoteSubnet(on.node.netns, {
    subnet: remote.subnet,
    vtepMac: remote.mac,
    publicIp: remote.node.address,
    dev: 'flannel.4096',
  });
}

test('two nodes rendered by hand carry TCP and ICMP between pods over VXLAN, and read back what was written', async (t) => {
  requireRoot(`the network test "${t.name}"`);
  const lab = await NetLab.create(t);
  const [a, b] = await Promise.all([
    lab.addNode('a', { address: '192.0.2.21' }),
    lab.addNode('b', { address: '192.0.2.22' }),
  ]);
  const ra = await renderNode(a, 1, '0e:2a:00:00:00:21');
  const rb = await renderNode(b, 2, '0e:2a:00:00:00:22');
  await renderRemote(ra, rb);
  await renderRemote(rb, ra);

  assert.deepEqual(
    (await readRoutes(a.netns)).filter((r) => r.dev === 'flannel.4096'),
    [{ dst: '10.244.2.0/24', gateway: '10.244.2.0', dev: 'flannel.4096', flags: ['onlink'] }],
  );
  assert.deepEqual(await readNeighbours(a.netns, 'flannel.4096'), [
    { dst: '10.244.2.0', dev: 'flannel.4096', lladdr: '0e:2a:00:00:00:22', state: ['PERMANENT'] },
  ]);
  assert.deepEqual(await readFdb(a.netns, 'flannel.4096'), [
    {
      mac: '0e:2a:00:00:00:22',
      ifname: 'flannel.4096',
      dst: '192.0.2.22',
      flags: ['self'],
      state: 'permanent',
    },
  ]);
  const vx = await readLink(a.netns, 'flannel.4096');
  assert.deepEqual(
    [vx.address, vx.mtu, vx.kind, vx.vxlan],
    [
      '0e:2a:00:00:00:21',
      overlayMtu,
      'vxlan',
      { id: 4096, port: 4789, local: '192.0.2.21', link: 'eth0', learning: false },
    ],
  );

  const pa = await lab.addPodNamespace(a, {
    label: 'a-p1',
    bridge: 'cni0',
    address: '10.244.1.10/24',
    gateway: '10.244.1.1',
    mtu: overlayMtu,
  });
  const pb = await lab.addPodNamespace(b, {
    label: 'b-p1',
    bridge: 'cni0',
    address: '10.244.2.10/24',
    gateway: '10.244.2.1',
    mtu: overlayMtu,
  });
  await startEchoServer(lab, pb.netns, 7000);
  await startEchoServer(lab, pa.netns, 7000);
  assert.deepEqual(await echoRequest(pa.netns, { host: pb.address, port: 7000 }, 'a to b'), {
    clientAddress: '10.244.1.10',
    seenFrom: '10.244.1.10',
    serverAddress: '10.244.2.10',
    line: 'a to b',
  });
  assert.equal(
    (await echoRequest(pb.netns, { host: pa.address, port: 7000 }, 'b to a')).seenFrom,
    '10.244.2.10',
  );
  for (const [from, to] of [
    [pa, pb],
    [pb, pa],
  ] as const) {
    const result = await ping(from.netns, to.address, { count: 2 });
    assert.equal(result.received, 2, result.output);
  }
  // A wrong VtepMAC in the neighbour entry: the remote VTEP drops the frame (not its MAC).
  await addPermanentNeighbour(a.netns, {
    ip: '10.244.2.0',
    mac: '0e:2a:00:00:00:99',
    dev: 'flannel.4096',
  });
  await addFdbEntry(a.netns, { mac: '0e:2a:00:00:00:99', dev: 'flannel.4096', dst: '192.0.2.22' });
  const lost = await ping(pa.netns, pb.address, { count: 1, deadlineSeconds: 2 });
  assert.equal(lost.received, 0, lost.output);
});

test('teardown stops the lab’s programs and deletes its namespaces; a dead process’s namespaces are swept', async (t) => {
  requireRoot(`the network test "${t.name}"`);
  const lab = await NetLab.create();
  const node = await lab.addNode('n1', { address: '192.0.2.11' });
  const sleeper = lab.start({
    netns: node.netns,
    name: 'sleep',
    file: '/bin/sleep',
    args: ['600'],
  });
  const names = [lab.lan, node.netns];
  assert.ok(names.every((n) => listNetns().includes(n)));
  await lab.teardown();
  assert.equal(sleeper.exited, true);
  assert.deepEqual(
    listNetns().filter((n) => names.includes(n)),
    [],
  );

  // A namespace named for a process that is gone, as a SIGKILLed test leaves it.
  const dead = spawnSync(process.execPath, ['-e', ''], { stdio: 'ignore' }).pid;
  assert.ok(dead);
  const stale = netnsName({ ownerPid: dead, lab: 0, label: 'lan' });
  await ip(['netns', 'add', stale]);
  try {
    await NetLab.create(t);
    assert.equal(listNetns().includes(stale), false, `${stale} swept`);
  } finally {
    await ip(['netns', 'delete', stale]).catch(() => {});
  }
});

test('a program in a namespace reaches the API server only through the relay, TLS checked for 127.0.0.1', async (t) => {
  requireRoot(`the network test "${t.name}"`);
  const cluster = await sharedCluster();
  const server = new URL(cluster.kc.getCurrentCluster()!.server);
  const user = cluster.kc.getCurrentUser()!;
  const caFile = cluster.kc.getCurrentCluster()!.caFile!;
  const lab = await NetLab.create(t);
  const netns = await lab.addNamespace('api');
  const kubectl = toolPath('kubectl');
  const kubeconfig = await writeInNetnsKubeconfig({
    path: `${lab.dir}/in-netns.kubeconfig`,
    caFile,
    user: 'winfleet-admin',
    clientCertFile: user.certFile!,
    clientKeyFile: user.keyFile!,
  });
  // Before the relay, nothing listens on the namespace's own loopback.
  await assert.rejects(
    runInNetns(netns, kubectl, [
      '--kubeconfig',
      kubeconfig,
      '--request-timeout=5s',
      'get',
      '--raw',
      '/version',
    ]),
    /refused/,
  );
  // Nor does the machine's API server port exist in there: the namespace is not the machine's.
  await assert.rejects(
    runInNetns(netns, kubectl, [
      '--kubeconfig',
      kubeconfig,
      '--server',
      `https://127.0.0.1:${server.port}`,
      '--request-timeout=5s',
      'get',
      '--raw',
      '/version',
    ]),
    /refused/,
  );
  const relay = await lab.apiRelay(Number(server.port));
  await relay.enter(netns);
  const { stdout } = await runInNetns(
    netns,
    kubectl,
    ['--kubeconfig', kubeconfig, 'get', '--raw', '/version'],
    {
      timeoutMs: 20_000,
    },
  );
  const version = JSON.parse(stdout) as { gitVersion?: unknown };
  assert.match(String(version.gitVersion), /^v1\.\d+\.\d+/);
});
