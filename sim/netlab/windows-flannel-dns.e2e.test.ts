/**
 * A Windows pod resolves Service names through the cluster DNS Service, answered on the Linux
 * side (issue 31): in the world of windows-flannel-packets.e2e.test.ts (a Windows node winfleet
 * joined to Flannel VXLAN, a real Linux flanneld node; windows-flannel-world.ts), the real
 * CoreDNS v1.15.0 runs as the pod of a Deployment kube-system/coredns on the Linux node, behind
 * the Service kube-dns at 10.96.0.10 (cluster-dns.ts). On the Windows host the kube-proxy
 * stand-in, with the flags winfleet gives kube-proxy (--network-name=flannel.4096 --source-vip),
 * programs HNS load balancers from the EndpointSlice the controller manager made of the CoreDNS
 * pod; windows-node.ts renders them as DNAT from the pods to the endpoint and SNAT to the
 * SourceVIP in the Windows node namespace.
 *
 * So the Windows pod's query to 10.96.0.10:53 crosses the VXLAN overlay to CoreDNS on Linux,
 * which answers with what the API server holds: kubernetes.default and a test Service resolve to
 * their spec.clusterIP over UDP, and kube-dns itself over TCP. CoreDNS's log shows the queries
 * arriving from the source VIP (winkernel's SourceVIP for an endpoint in a remote subnet), and a
 * query to CoreDNS's own pod address from the pod's own address (no load balancer, no NAT). With
 * the Deployment scaled to zero the EndpointSlice empties, kube-proxy removes its load balancers,
 * the rendering drops its rules, and the cluster IP answers nothing while CoreDNS, still running,
 * answers at its pod address: the answers went through the rendered load balancer.
 *
 * The boundary is the packet test's, and VFP's load balancing is rendered, not run: this proves
 * that winfleet's kube-proxy flags and credentials yield load balancers that carry cluster DNS to
 * a real CoreDNS across real Linux flannel, not that VFP balances as the rendering does
 * (docs/fidelity-ledger.md). Needs root.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { hnsProtocol } from '../hosts/hns-networks.ts';
import { kubeProxyStatus } from '../hosts/kube-proxy-standin.ts';
import { testNamespace } from '../testkit/test-cluster.ts';
import { clusterDnsIp, dnsNamespace, startClusterDns } from './cluster-dns.ts';
import { queryA } from './dns-query.ts';
import { runWindowsPod, windowsFlannelWorld } from './windows-flannel-world.ts';

/** A line of CoreDNS's log plugin for an A query of `name` over `proto` from `client`. */
const queryLogLine = (client: string, name: string, proto: 'udp' | 'tcp') =>
  new RegExp(
    `\\] ${client.replaceAll('.', '\\.')}:\\d+ - \\d+ "A IN ${name.replaceAll('.', '\\.')}\\. ${proto} `,
  );

test('a Windows pod resolves Service names through the kube-dns cluster IP, answered by the real CoreDNS on a Linux flanneld node across VXLAN, through the HNS load balancers kube-proxy programs (SNAT to the source VIP); without endpoints the cluster IP answers nothing', async (t) => {
  const w = await windowsFlannelWorld(t, { linuxLabPods: true });
  const { kc, core, sim, windows, linux } = w;
  const { lab, relay, binDir } = w.world;

  // CoreDNS on the Linux node: its Deployment's pod, wired by the lab, Ready with its address,
  // in kube-dns's EndpointSlice.
  const { pod: dnsPod, coredns } = await startClusterDns({ kc, lab, relay, binDir, linux });

  // A test Service, and the Windows pod.
  const apps = await testNamespace(kc, 'win-dns');
  const web = await core.createNamespacedService({
    namespace: apps,
    body: { metadata: { name: 'web' }, spec: { ports: [{ port: 80, protocol: 'TCP' }] } },
  });
  const { podIP, pod } = await runWindowsPod(w, apps);

  // kube-proxy's load balancers for kube-dns, with winkernel's SourceVIP: --source-vip, since the
  // endpoint lies in the Linux node's RemoteSubnetRoute.
  const kubeProxy = sim.machine.processes().find((p) => /kube-proxy/i.test(p.imageName));
  const sourceVip = /--source-vip[= ](\S+)/.exec(kubeProxy?.commandLine ?? '')?.[1];
  assert.ok(sourceVip, `kube-proxy's --source-vip in ${kubeProxy?.commandLine}`);
  assert.match(kubeProxy!.commandLine, /--network-name[= ]flannel\.4096\b/);
  const dnsBalancers = () =>
    sim.machine.hns
      .loadBalancers()
      .filter((lb) => lb.frontendVips.includes(clusterDnsIp))
      .map(({ protocol, externalPort, internalPort, endpoints, sourceVip }) => ({
        protocol,
        externalPort,
        internalPort,
        endpoints,
        sourceVip,
      }))
      .sort((a, b) => a.protocol - b.protocol);
  const programmed = [hnsProtocol.TCP, hnsProtocol.UDP].map((protocol) => ({
    protocol,
    externalPort: 53,
    internalPort: 53,
    endpoints: [dnsPod.address],
    sourceVip,
  }));
  await waitFor(() => JSON.stringify(dnsBalancers()) === JSON.stringify(programmed), {
    description: 'kube-proxy’s load balancers for kube-dns',
    timeoutMs: 30_000,
  }).catch((error: Error) => {
    error.message += `\nprogrammed: ${JSON.stringify(sim.machine.hns.loadBalancers())}; kube-proxy: ${JSON.stringify(kubeProxyStatus(sim.machine))}`;
    throw error;
  });
  await windows.settled();
  assert.deepEqual(
    windows.state.loadBalancers.filter((lb) => lb.vip === clusterDnsIp),
    ['tcp', 'udp'].map((protocol) => ({
      vip: clusterDnsIp,
      port: 53,
      protocol,
      endpoints: [dnsPod.address],
      targetPort: 53,
      sourceVip,
    })),
  );

  // Names resolved from the Windows pod through the cluster IP: what the API server holds.
  const ask = (name: string, tcp = false) =>
    queryA(pod.netns, { server: clusterDnsIp, name, tcp }).catch((error: Error) => {
      error.message += `\nCoreDNS log:\n${coredns.logTail(20)}`;
      throw error;
    });
  const kubernetes = await core.readNamespacedService({ namespace: 'default', name: 'kubernetes' });
  assert.deepEqual(await ask('kubernetes.default.svc.cluster.local'), [
    kubernetes.spec!.clusterIP!,
  ]);
  const webName = `web.${apps}.svc.cluster.local`;
  assert.deepEqual(await ask(webName), [web.spec!.clusterIP!]);
  assert.deepEqual(await ask('kube-dns.kube-system.svc.cluster.local', true), [clusterDnsIp]);
  // CoreDNS saw them from the source VIP, never from the pod's own address.
  const log = () => coredns.logTail(200);
  assert.match(log(), queryLogLine(sourceVip, 'kubernetes.default.svc.cluster.local', 'udp'));
  assert.match(log(), queryLogLine(sourceVip, webName, 'udp'));
  assert.match(log(), queryLogLine(sourceVip, 'kube-dns.kube-system.svc.cluster.local', 'tcp'));
  assert.doesNotMatch(log(), new RegExp(`\\] ${podIP.replaceAll('.', '\\.')}:`));
  // Straight to CoreDNS's pod address: no load balancer, the pod's own address.
  assert.deepEqual(await queryA(pod.netns, { server: dnsPod.address, name: webName }), [
    web.spec!.clusterIP!,
  ]);
  assert.match(log(), queryLogLine(podIP, webName, 'udp'));

  // No endpoints, no load balancer: the cluster IP answers nothing; CoreDNS, still running,
  // answers at its pod address.
  await kc
    .makeApiClient(k8s.AppsV1Api)
    .patchNamespacedDeploymentScale(
      { namespace: dnsNamespace, name: 'coredns', body: { spec: { replicas: 0 } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  await waitFor(() => windows.state.loadBalancers.every((lb) => lb.vip !== clusterDnsIp), {
    description: 'kube-dns’s load balancers gone from the rendering',
    timeoutMs: 30_000,
  }).catch((error: Error) => {
    error.message += `\nprogrammed: ${JSON.stringify(sim.machine.hns.loadBalancers())}`;
    throw error;
  });
  await windows.settled();
  await assert.rejects(
    queryA(pod.netns, { server: clusterDnsIp, name: webName, timeoutMs: 1500 }),
    /TIMEOUT|timed out|ECONNREFUSED/i,
  );
  assert.deepEqual(await queryA(pod.netns, { server: dnsPod.address, name: webName }), [
    web.spec!.clusterIP!,
  ]);
});
