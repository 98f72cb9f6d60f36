/**
 * Packets across flannel's VXLAN overlay between two Linux nodes, each running the real
 * flanneld (VNI 4096, port 4789 — the settings Windows needs), with a pod each wired by the real
 * bridge and host-local CNI plugins: TCP echo and ICMP both ways with the pods' own addresses
 * seen at the far end (no NAT), a full-size packet with don't-fragment set crossing without
 * the underlay fragmenting it, and one byte more refused at the pod's MTU. This proves the
 * harness the Windows side (a flanneld stand-in and a rendered HNS model) will be tested in.
 * Needs root.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../../src/kube/wait-for.ts';
import { vxlanOverhead } from './flannel-config.ts';
import { flannelWorld } from './flannel-world.ts';
import type { LinuxFlannelNode } from './linux-flannel-node.ts';
import { lanMtu } from './net-lab.ts';
import { ping } from './ping.ts';
import { snmpCounter } from './proc-net-snmp.ts';
import { readLink, readRoutes, readSnmp } from './readback.ts';
import { echoRequest, startEchoServer } from './tcp-echo.ts';

const echoPort = 7000;
/** ICMP and IPv4 headers: a ping payload of MTU − 28 fills the packet. */
const icmpIpHeaders = 28;

async function routedTo(from: LinuxFlannelNode, to: LinuxFlannelNode & { podCidr: string }) {
  return waitFor(
    async () =>
      (await readRoutes(from.node.netns, [to.podCidr])).find((r) => r.dev === from.vxlanDevice),
    {
      description: `${from.nodeName}'s flanneld to route ${to.nodeName}'s ${to.podCidr}`,
      timeoutMs: 30_000,
    },
  );
}

test('pods on two Linux nodes with real flanneld reach each other across the VXLAN overlay: TCP and ICMP both ways, a full-size DF packet crosses, one byte more does not', async (t) => {
  const world = await flannelWorld(t);
  const [a, b] = await Promise.all([
    world.addLinuxNode('lnx1', { address: '192.0.2.11' }),
    world.addLinuxNode('lnx2', { address: '192.0.2.12' }),
  ]);
  await Promise.all([routedTo(a, b), routedTo(b, a)]);
  const pa = await a.addPod('lnx1-p1');
  const pb = await b.addPod('lnx2-p1');

  // The overlay MTU: the LAN's minus VXLAN's 50, on flannel.4096, in subnet.env and on the pods.
  const overlayMtu = lanMtu - vxlanOverhead;
  for (const [node, pod] of [
    [a, pa],
    [b, pb],
  ] as const) {
    assert.equal((await readLink(node.node.netns, node.vxlanDevice!)).mtu, overlayMtu);
    assert.equal((await node.subnetEnv()).mtu, overlayMtu);
    assert.equal((await readLink(pod.netns, 'eth0')).mtu, overlayMtu);
  }
  const vxlanBefore = (await readLink(a.node.netns, a.vxlanDevice!)).stats!;
  const snmpBefore = await Promise.all([readSnmp(a.node.netns), readSnmp(b.node.netns)]);

  // TCP both ways; each end sees the other pod's own address.
  await Promise.all([
    startEchoServer(world.lab, pa.netns, echoPort),
    startEchoServer(world.lab, pb.netns, echoPort),
  ]);
  for (const [from, to] of [
    [pa, pb],
    [pb, pa],
  ] as const) {
    const answer = await echoRequest(
      from.netns,
      { host: to.address, port: echoPort },
      `hello from ${from.label}`,
    );
    assert.deepEqual(answer, {
      clientAddress: from.address,
      seenFrom: from.address,
      serverAddress: to.address,
      line: `hello from ${from.label}`,
    });
  }

  // ICMP both ways.
  for (const [from, to] of [
    [pa, pb],
    [pb, pa],
  ] as const) {
    const result = await ping(from.netns, to.address, { count: 3 });
    assert.equal(result.received, 3, `${from.label} → ${to.label}:\n${result.output}`);
  }

  // A full-size packet with DF set crosses: 1450 bytes inside, 1500 on the LAN, unfragmented.
  const full = await ping(pa.netns, pb.address, {
    count: 2,
    size: overlayMtu - icmpIpHeaders,
    dontFragment: true,
  });
  assert.equal(full.received, 2, full.output);
  const back = await ping(pb.netns, pa.address, {
    count: 2,
    size: overlayMtu - icmpIpHeaders,
    dontFragment: true,
  });
  assert.equal(back.received, 2, back.output);
  const snmpAfter = await Promise.all([readSnmp(a.node.netns), readSnmp(b.node.netns)]);
  for (const i of [0, 1]) {
    assert.equal(
      snmpCounter(snmpAfter[i]!, 'Ip', 'FragCreates') -
        snmpCounter(snmpBefore[i]!, 'Ip', 'FragCreates'),
      0,
      'no node fragmented an encapsulated packet',
    );
  }

  // One byte more does not leave the pod: its MTU is the overlay's.
  const over = await ping(pa.netns, pb.address, {
    count: 1,
    size: overlayMtu - icmpIpHeaders + 1,
    dontFragment: true,
    deadlineSeconds: 2,
  });
  assert.equal(over.received, 0, over.output);
  assert.equal(over.localMtu, overlayMtu, over.output);

  // And it went through flannel.4096: lnx1 sent 5 echo requests and answered 5, and received
  // as many, beside the TCP exchanges' packets.
  const vxlanAfter = (await readLink(a.node.netns, a.vxlanDevice!)).stats!;
  assert.ok(vxlanAfter.txPackets - vxlanBefore.txPackets >= 10, 'packets out through flannel.4096');
  assert.ok(vxlanAfter.rxPackets - vxlanBefore.rxPackets >= 10, 'packets in through flannel.4096');
});
