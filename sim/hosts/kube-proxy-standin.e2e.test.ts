/**
 * The kube-proxy stand-in on a joined simulated host, against the real API server (issue 11):
 * with the credentials the agent obtained for it, a Service with endpoints gets an HNS load
 * balancer to its ready endpoints; started as today's main started it — with the kubelet's
 * node credentials — it gets 403 on EndpointSlices, keeps retrying and programs nothing;
 * without a network name it exits as kube-proxy does; it waits for its HNS network.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { agentServiceName } from '../../src/agent/converge.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { cniNetworkName, hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import { joinWorld } from '../testkit/join-fixture.ts';
import { testNamespace } from '../testkit/test-cluster.ts';
import { createWindowsHosts, firstHostWithNode } from '../testkit/windows-hosts.ts';
import { hnsProtocol } from './hns-networks.ts';
import { kubeProxyStatus } from './kube-proxy-standin.ts';
import type { SimMachine } from './machine.ts';

/** Starts C:\k\kube-proxy.exe with `args` outside the SCM, its output kept. */
async function startKubeProxy(
  machine: SimMachine,
  args: string[],
  env: Record<string, string> = machine.env.entries(),
) {
  const output: string[] = [];
  const process = await machine.spawn({
    binaryPath: 'C:\\k\\kube-proxy.exe',
    args,
    env,
    stdout: (text) => output.push(text),
    stderr: (text) => output.push(text),
  });
  return { process, output };
}

test('kube-proxy programs a Service’s load balancer with its own credentials, none with the node’s', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const sim = world.fleet.hosts[0]!;
  const { machine } = sim;
  const os = sim.hostOS();
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const host = await firstHostWithNode(kc, world.namespace);
  const nodeName = host.status!.nodeName!;
  await waitFor(() => os.readFile(hostPaths.kubeProxyKubeconfig), {
    description: 'kube-proxy’s own kubeconfig, from the agent',
    timeoutMs: 90_000,
  });
  // The pod network: the CNI plugin creates it at the node's first pod sandbox; here the test
  // makes sure it exists, so kube-proxy has one to program.
  machine.hns.ensure(cniNetworkName, 'L2Bridge');

  // A Service and its EndpointSlice: two ready endpoints, one not ready.
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
  const namespace = await testNamespace(kc, 'kube-proxy');
  const service = await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: 'web' },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
    },
  });
  const clusterIP = service.spec!.clusterIP!;
  await discovery.createNamespacedEndpointSlice({
    namespace,
    body: {
      metadata: { name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: [
        { addresses: ['10.244.1.10'], conditions: { ready: true } },
        { addresses: ['10.244.2.11'], conditions: { ready: true } },
        { addresses: ['10.244.3.12'], conditions: { ready: false } },
      ],
    },
  });
  const network = machine.hns.find(cniNetworkName)!;
  const expected = {
    networkId: network.id,
    frontendVips: [clusterIP],
    protocol: hnsProtocol.TCP,
    externalPort: 80,
    internalPort: 8080,
    endpoints: ['10.244.1.10', '10.244.2.11'],
  };
  const programmed = () =>
    machine.hns
      .loadBalancers()
      .filter((lb) => lb.frontendVips.includes(clusterIP))
      .map(({ id: _id, ...lb }) => lb);
  await waitFor(() => isDeepStrictEqual(programmed(), [expected]), {
    description: `the load balancer of ${clusterIP}:80 to the ready endpoints`,
    timeoutMs: 60_000,
  }).catch((error: Error) => {
    throw new Error(
      `${error.message}; programmed ${JSON.stringify(machine.hns.loadBalancers())}; status ${JSON.stringify(kubeProxyStatus(machine))}`,
    );
  });
  assert.equal((await os.queryService('kube-proxy'))?.state, 'running');

  // From here the test runs kube-proxy itself: the agent would start the service again.
  await os.stopService(agentServiceName);
  await os.stopService('kube-proxy');
  const args = (kubeconfig: string, more: string[] = []) => [
    `--kubeconfig=${kubeconfig}`,
    `--hostname-override=${nodeName}`,
    '--proxy-mode=kernelspace',
    '--cluster-cidr=10.244.0.0/16',
    ...more,
  ];

  await t.test('with the kubelet’s node credentials, as on main, it programs nothing', async () => {
    const run = await startKubeProxy(
      machine,
      args(hostPaths.kubeconfig, [`--network-name=${cniNetworkName}`]),
    );
    // Services are listed; EndpointSlices are refused, and retried like a reflector.
    const status = await waitFor(
      () => {
        const s = kubeProxyStatus(machine);
        return s?.pid === run.process.pid &&
          s.servicesSynced &&
          (s.failures.endpointslices ?? 0) >= 2
          ? s
          : undefined;
      },
      { description: 'kube-proxy refused EndpointSlices twice', timeoutMs: 30_000 },
    );
    assert.match(
      status.lastFailure.endpointslices!,
      /endpointslices\.discovery\.k8s\.io is forbidden: User "system:node:[^"]+" cannot list resource "endpointslices"/,
    );
    // It removed every load balancer at start and, never having both lists, programmed none.
    assert.equal(status.endpointSlicesSynced, false);
    assert.equal(status.syncs, 0);
    assert.deepEqual(machine.hns.loadBalancers(), []);
    assert.ok(run.process.alive, 'a 403 is not fatal');
    run.process.requestStop();
    assert.deepEqual(await run.process.exited, { code: 0, killed: false });
  });

  await t.test('without --network-name or KUBE_NETWORK it exits 1 as kube-proxy does', async () => {
    const environment = machine.env.entries();
    delete environment.KUBE_NETWORK;
    const run = await startKubeProxy(machine, args(hostPaths.kubeProxyKubeconfig), environment);
    const exit = await run.process.exited;
    assert.equal(exit.code, 1);
    assert.match(
      run.output.join(''),
      /"command failed" err="unable to create proxier: Environment variable KUBE_NETWORK and network-flag not initialized"/,
    );
  });

  await t.test(
    'KUBE_NETWORK in its environment names the network; it waits for that network',
    async () => {
      machine.hns.remove(network.id);
      const run = await startKubeProxy(machine, args(hostPaths.kubeProxyKubeconfig), {
        ...machine.env.entries(),
        KUBE_NETWORK: cniNetworkName,
      });
      await waitFor(
        () =>
          kubeProxyStatus(machine)?.pid === run.process.pid &&
          run.output.join('').includes('Unable to find HNS Network specified'),
        { description: 'kube-proxy waiting for the HNS network', timeoutMs: 30_000 },
      );
      assert.equal(kubeProxyStatus(machine)?.phase, 'waiting-for-network');
      const recreated = machine.hns.ensure(cniNetworkName, 'L2Bridge');
      await waitFor(
        () => isDeepStrictEqual(programmed(), [{ ...expected, networkId: recreated.id }]),
        { description: 'the load balancer on the new network', timeoutMs: 30_000 },
      );
      run.process.requestStop();
      assert.equal((await run.process.exited).code, 0);
    },
  );
});
