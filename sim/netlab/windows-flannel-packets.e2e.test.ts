/**
 * Packets between a Windows node winfleet joined to Flannel VXLAN and a real Linux flanneld
 * node (issue 31), in one private cluster: the Linux node runs the real flanneld v0.28.10 in a
 * lab namespace with a pod wired by the real CNI plugins; the Windows node is a simulated host
 * joined by the real operator (network.mode auto, the cluster's Flannel objects detected), whose
 * flanneld stand-in acquires the lease and keeps the Overlay network flannel.4096 with its
 * RemoteSubnetRoutes, and whose pod gets an HNS endpoint from the simulated CNI.
 *
 * The boundary, said plainly: the simulated host runs in this test process, not in a namespace;
 * only its HNS model — the Overlay network (VSID, DR MAC, subnet gateway), its RemoteSubnetRoute
 * policies and its endpoints — is rendered into a lab node namespace (windows-node.ts), and
 * followed as it changes. So this proves that what winfleet's Windows node publishes (its lease:
 * VtepMAC = the HNS DR MAC, public-ip from public-ip-overwrite, VNI 4096, port 4789) and what its
 * HNS model holds interoperate with real Linux flanneld and the Linux kernel's VXLAN: TCP and
 * ICMP both ways with the pods' own addresses (no NAT), a full-size don't-fragment packet
 * crossing and one byte more refused, a DR MAC other than the published VtepMAC dropping
 * everything, and a deleted pod's endpoint leaving the rendering. It does not prove that Windows' VFP encapsulates as the rendering does: only real
 * Windows can (docs/fidelity-ledger.md). Needs root.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../../src/kube/wait-for.ts';
import { testNamespace } from '../testkit/test-cluster.ts';
import { setLinkAddress } from './devices.ts';
import { readLeaseAnnotations, vxlanOverhead, windowsVxlan } from './flannel-config.ts';
import { nodeAnnotations } from './flannel-world.ts';
import { lanMtu } from './net-lab.ts';
import { ping } from './ping.ts';
import { snmpCounter } from './proc-net-snmp.ts';
import { readFdb, readLink, readNeighbours, readRoutes, readSnmp } from './readback.ts';
import { echoRequest, startEchoServer } from './tcp-echo.ts';
import {
  linuxAddress,
  runWindowsPod,
  windowsAddress,
  windowsFlannelWorld,
} from './windows-flannel-world.ts';
import { linuxMac } from './windows-node.ts';

const echoPort = 7000;
/** ICMP and IPv4 headers: a ping payload of MTU − 28 fills the packet. */
const icmpIpHeaders = 28;
const overlayMtu = lanMtu - vxlanOverhead;

test('a Windows node winfleet joined to Flannel VXLAN and a real Linux flanneld node carry TCP and ICMP between their pods both ways, no NAT; a full-size DF packet crosses, one byte more does not; a DR MAC other than the VtepMAC drops everything', async (t) => {
  const w = await windowsFlannelWorld(t);
  const { kc, core, sim, windows, linux, nodeName, windowsPodCidr } = w;
  const { lab } = w.world;
  assert.deepEqual(
    w.renderedBeforeFlanneld.overlay,
    undefined,
    'no Overlay network before flanneld',
  );

  // The Windows node's lease: the HNS DR MAC as VtepMAC, the LAN address as public-ip.
  const overlay = await waitFor(() => sim.machine.hns.find('flannel.4096'), {
    description: 'flanneld’s Overlay network on the Windows host',
    timeoutMs: 60_000,
  });
  const drMac = linuxMac(
    (
      sim.machine.hns.policies(overlay.id).find((p) => p.Type === 'DrMacAddress')!.Settings as {
        Address: string;
      }
    ).Address,
  );
  const lease = await waitFor(
    async () => {
      try {
        return readLeaseAnnotations(await nodeAnnotations(kc, nodeName), nodeName);
      } catch {
        return undefined;
      }
    },
    { description: `${nodeName}'s flannel lease with a VtepMAC`, timeoutMs: 60_000 },
  );
  assert.deepEqual(lease, {
    backendType: 'vxlan',
    publicIp: windowsAddress,
    vni: windowsVxlan.vni,
    vtepMac: drMac,
  });

  // The real Linux flanneld programmed the Windows lease: route, neighbour, FDB entry.
  const zero = windowsPodCidr.slice(0, windowsPodCidr.indexOf('/'));
  await waitFor(
    async () =>
      (await readFdb(linux.node.netns, linux.vxlanDevice)).some(
        (e) => e.mac === drMac && e.dst === windowsAddress,
      ) || undefined,
    { description: `lnx1's flanneld to program ${nodeName}'s lease`, timeoutMs: 30_000 },
  );
  assert.deepEqual(
    (await readRoutes(linux.node.netns, [windowsPodCidr])).map((r) => [
      r.dst,
      r.gateway,
      r.dev,
      r.flags,
    ]),
    [[windowsPodCidr, zero, linux.vxlanDevice, ['onlink']]],
  );
  assert.deepEqual(
    (await readNeighbours(linux.node.netns, linux.vxlanDevice)).filter((n) => n.dst === zero),
    [{ dst: zero, dev: linux.vxlanDevice, lladdr: drMac, state: ['PERMANENT'] }],
  );

  // The Windows host's flanneld stand-in made a RemoteSubnetRoute of the Linux lease, and the
  // rendering carries it.
  const linuxMacAddress = (await readLink(linux.node.netns, linux.vxlanDevice!)).address!;
  await waitFor(
    () =>
      windows.state.remotes.some(
        (r) =>
          r.subnet === linux.podCidr &&
          r.vtepMac === linuxMacAddress &&
          r.publicIp === linuxAddress,
      ) || undefined,
    { description: 'the RemoteSubnetRoute to lnx1 rendered', timeoutMs: 30_000 },
  );
  await windows.settled();
  const vx = await readLink(windows.node.netns, 'flannel.4096');
  assert.deepEqual(
    [vx.address, vx.mtu, vx.kind, vx.vxlan],
    [
      drMac,
      overlayMtu,
      'vxlan',
      { id: 4096, port: 4789, local: windowsAddress, link: 'eth0', learning: false },
    ],
  );

  // A Windows pod, Running with an address from the lease, and its endpoint rendered.
  const apps = await testNamespace(kc, 'win-packets');
  const { podIP, pod: pw } = await runWindowsPod(w, apps);
  assert.equal((await readLink(pw.netns, 'eth0')).mtu, overlayMtu);
  const pl = await linux.addPod('lnx1-p1');

  const snmpBefore = await Promise.all([readSnmp(linux.node.netns), readSnmp(windows.node.netns)]);
  const vxlanBefore = (await readLink(windows.node.netns, 'flannel.4096')).stats!;

  // TCP both ways; each end sees the other pod's own address.
  await Promise.all([
    startEchoServer(lab, pw.netns, echoPort),
    startEchoServer(lab, pl.netns, echoPort),
  ]);
  for (const [from, to] of [
    [pl, pw],
    [pw, pl],
  ] as const) {
    assert.deepEqual(
      await echoRequest(
        from.netns,
        { host: to.address, port: echoPort },
        `hello from ${from.label}`,
      ),
      {
        clientAddress: from.address,
        seenFrom: from.address,
        serverAddress: to.address,
        line: `hello from ${from.label}`,
      },
    );
  }

  // ICMP both ways, and a full-size packet with DF set both ways, unfragmented.
  for (const [from, to] of [
    [pl, pw],
    [pw, pl],
  ] as const) {
    const result = await ping(from.netns, to.address, { count: 3 });
    assert.equal(result.received, 3, `${from.label} → ${to.label}:\n${result.output}`);
    const full = await ping(from.netns, to.address, {
      count: 2,
      size: overlayMtu - icmpIpHeaders,
      dontFragment: true,
    });
    assert.equal(full.received, 2, `full size ${from.label} → ${to.label}:\n${full.output}`);
  }
  const snmpAfter = await Promise.all([readSnmp(linux.node.netns), readSnmp(windows.node.netns)]);
  for (const i of [0, 1])
    assert.equal(
      snmpCounter(snmpAfter[i]!, 'Ip', 'FragCreates') -
        snmpCounter(snmpBefore[i]!, 'Ip', 'FragCreates'),
      0,
      'no node fragmented an encapsulated packet',
    );
  // One byte more does not leave either pod: their MTU is the overlay's.
  for (const [from, to] of [
    [pl, pw],
    [pw, pl],
  ] as const) {
    const over = await ping(from.netns, to.address, {
      count: 1,
      size: overlayMtu - icmpIpHeaders + 1,
      dontFragment: true,
      deadlineSeconds: 2,
    });
    assert.equal(over.received, 0, over.output);
    assert.equal(over.localMtu, overlayMtu, over.output);
  }
  // It all went through the rendered flannel.4096: 10 echo requests out and 10 in, and their
  // replies, beside the TCP exchanges'.
  const vxlanAfter = (await readLink(windows.node.netns, 'flannel.4096')).stats!;
  assert.ok(vxlanAfter.txPackets - vxlanBefore.txPackets >= 20, 'packets out of flannel.4096');
  assert.ok(vxlanAfter.rxPackets - vxlanBefore.rxPackets >= 20, 'packets into flannel.4096');

  // The negative: the Windows VTEP answering to a MAC other than the VtepMAC it published drops
  // what Linux sends (frames addressed to the DR MAC are not its own); rendered again from the
  // model (a MAC change flushes the device's neighbours), packets cross again.
  await setLinkAddress(windows.node.netns, 'flannel.4096', '0e:2a:00:00:00:99');
  const lost = await ping(pl.netns, pw.address, { count: 2, deadlineSeconds: 3 });
  assert.equal(lost.received, 0, lost.output);
  assert.equal(lost.transmitted > 0, true, lost.output);
  await windows.rerender();
  assert.equal((await readLink(windows.node.netns, 'flannel.4096')).address, drMac);
  const again = windows.pod(podIP)!;
  const back = await ping(pl.netns, again.address, { count: 2 });
  assert.equal(back.received, 2, back.output);
  const out = await ping(again.netns, pl.address, { count: 2 });
  assert.equal(out.received, 2, out.output);

  // The rendering follows the model: the pod deleted, the CNI's DEL removes its endpoint and
  // its namespace goes; the Linux pod's packets to its address find nothing.
  await core.deleteNamespacedPod({ namespace: apps, name: 'web', gracePeriodSeconds: 0 });
  await waitFor(() => (windows.pod(podIP) ? undefined : true), {
    description: `the Windows pod's endpoint ${podIP} gone from the rendering`,
    timeoutMs: 30_000,
  });
  assert.equal(
    sim.machine.hns.endpoints().some((e) => e.ip === podIP),
    false,
    'the endpoint left the HNS model',
  );
  const gone = await ping(pl.netns, podIP, { count: 1, deadlineSeconds: 2 });
  assert.equal(gone.received, 0, gone.output);
});
