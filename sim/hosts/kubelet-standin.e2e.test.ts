/**
 * The kubelet stand-in against a real control plane: TLS bootstrap with a real bootstrap
 * token, a CSR approved here as an admin and signed by the controller manager, a Node built
 * from the kubelet's flags and config, NotReady until its runtime has a CNI config, then handed
 * to kwok (Ready), taken back when the service stops, and back with a new boot id after a
 * reboot.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { agentConfigFrom, parseBootstrapConfig } from '../../src/agent/agent-config.ts';
import type { ServiceConfig } from '../../src/agent/host-os.ts';
import { cniConfig } from '../../src/agent/node-files.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { hostNodeAnnotation, podCidr } from '../cluster/start-cluster.ts';
import { nextBaseAddress } from '../testkit/loopback-range.ts';
import { sharedCluster, uniqueSuffix } from '../testkit/test-cluster.ts';
import { testBootstrapConfig } from './agent-test-host.ts';
import { startSimulatedHosts } from './fleet.ts';
import { clientSignerName, servingSignerName } from './kubelet-standin.ts';
import type { SimMachine } from './machine.ts';
import { serviceLog } from './service-logs.ts';
import { containerdDefaultCniDirs } from './sim-cni.ts';
import { SimHostOS } from './sim-host-os.ts';
import { generateTestKey } from './ssh-test-client.ts';
import { standInBinary } from './stand-in-binary.ts';
import { createTestMachine, serviceConfig } from './test-machine.ts';

const bootstrapGroup = 'system:bootstrappers:winfleet';

const kubeletConfig = stringify({
  apiVersion: 'kubelet.config.k8s.io/v1beta1',
  kind: 'KubeletConfiguration',
  registerWithTaints: [{ key: 'os', value: 'windows', effect: 'NoSchedule' }],
  systemReserved: { cpu: '500m', memory: '2Gi', 'ephemeral-storage': '1Gi' },
  cgroupsPerQOS: false,
  enforceNodeAllocatable: [],
  containerRuntimeEndpoint: 'npipe://./pipe/containerd-containerd',
  rotateCertificates: true,
  serverTLSBootstrap: true,
  authentication: { x509: { clientCAFile: 'C:\\k\\ca.crt' } },
});

function kubeletService(nodeName: string, nodeIp: string): ServiceConfig {
  // As the agent registers it: under kube-log-runner.exe, which keeps its log (a service has
  // no console).
  return serviceConfig('kubelet', {
    binaryPath: 'C:\\k\\kube-log-runner.exe',
    args: [
      '-log-file=C:\\k\\logs\\kubelet.log',
      'C:\\k\\kubelet.exe',
      '--config=C:\\k\\kubelet-config.yaml',
      '--bootstrap-kubeconfig=C:\\k\\bootstrap-kubeconfig',
      '--kubeconfig=C:\\k\\kubeconfig',
      '--cert-dir=C:\\k\\pki',
      `--hostname-override=${nodeName}`,
      `--node-ip=${nodeIp}`,
      '--node-labels=winfleet.io/pool=blue,winfleet.io/host=sim',
      '--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS',
      '--windows-service',
      '--v=2',
    ],
    dependencies: ['containerd'],
    startType: 'auto',
    recovery: { restartDelaysMs: [1000], resetPeriodSeconds: 86400 },
  });
}

/** kube-log-runner.exe and the directory its log goes to, as the agent installs them. */
async function installLogRunner(fs: SimMachine['fs']): Promise<void> {
  await fs.writeFileAtomic(
    'C:\\k\\kube-log-runner.exe',
    standInBinary('kube-log-runner', 'v1.36.5'),
  );
  await fs.mkdir('C:\\k\\logs', { recursive: true });
}

/** Client-node returns class instances; compare their data. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** The node's taints without those the node lifecycle controller manages. */
function ownTaints(node: k8s.V1Node): k8s.V1Taint[] {
  return plain(node.spec?.taints ?? []).filter((t) => !t.key.startsWith('node.kubernetes.io/'));
}

function isReady(node: k8s.V1Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

test('the kubelet stand-in bootstraps, registers the Node its configuration describes, and follows the service and reboots', async (t) => {
  const { kc } = await sharedCluster();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const certificates = kc.makeApiClient(k8s.CertificatesV1Api);
  const cluster = kc.getCurrentCluster()!;
  const caPem = cluster.caData
    ? Buffer.from(cluster.caData, 'base64').toString()
    : readFileSync(cluster.caFile!, 'utf8');

  // A bootstrap token whose group may create CSRs, as the operator will issue per host.
  const suffix = uniqueSuffix();
  const tokenId = randomBytes(3).toString('hex');
  const tokenSecret = randomBytes(8).toString('hex');
  await core.createNamespacedSecret({
    namespace: 'kube-system',
    body: {
      metadata: { name: `bootstrap-token-${tokenId}` },
      type: 'bootstrap.kubernetes.io/token',
      stringData: {
        'token-id': tokenId,
        'token-secret': tokenSecret,
        'usage-bootstrap-authentication': 'true',
        'auth-extra-groups': bootstrapGroup,
        expiration: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    },
  });
  const bindingName = `winfleet-simhost-test-${suffix}`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: bindingName },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:node-bootstrapper',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: bootstrapGroup }],
    },
  });

  const fleet = await startSimulatedHosts({
    count: 1,
    releases: ['2022'],
    baseAddress: nextBaseAddress(),
    authorizedKeys: [generateTestKey().publicKey],
    machine: { ubr: 2582, timings: { rebootDowntimeMs: 300 } },
  });
  const host = fleet.hosts[0]!;
  const nodeName = `simk-${suffix}`;
  t.after(async () => {
    await fleet.stop();
    await core.deleteNode({ name: nodeName }).catch(() => {});
    await core
      .deleteNamespacedSecret({ name: `bootstrap-token-${tokenId}`, namespace: 'kube-system' })
      .catch(() => {});
    await rbac.deleteClusterRoleBinding({ name: bindingName }).catch(() => {});
  });

  // What the agent would write.
  const fs = host.machine.fs;
  await fs.writeFileAtomic(
    'C:\\k\\bootstrap-kubeconfig',
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: {
            server: cluster.server,
            'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          },
        },
      ],
      users: [{ name: 'kubelet-bootstrap', user: { token: `${tokenId}.${tokenSecret}` } }],
      contexts: [{ name: 'bootstrap', context: { cluster: 'c', user: 'kubelet-bootstrap' } }],
      'current-context': 'bootstrap',
    }),
  );
  await fs.writeFileAtomic('C:\\k\\kubelet-config.yaml', kubeletConfig);
  await fs.writeFileAtomic('C:\\k\\ca.crt', caPem);
  await fs.writeFileAtomic('C:\\k\\kubelet.exe', standInBinary('kubelet', 'v1.36.5'));
  await installLogRunner(fs);
  await fs.writeFileAtomic('C:\\k\\containerd.exe', standInBinary('containerd', 'v2.1.4'));
  const os = host.hostOS();
  await os.createService(
    serviceConfig('containerd', {
      binaryPath: 'C:\\k\\containerd.exe',
      args: ['--run-service'],
      startType: 'auto',
    }),
  );
  await os.createService(kubeletService(nodeName, host.address));
  await os.startService('kubelet');

  // The client CSR, made with the bootstrap token; approved here, signed by the controller manager.
  const clientCsr = await waitFor(
    async () =>
      (await certificates.listCertificateSigningRequest()).items.find(
        (csr) =>
          csr.spec.username === `system:bootstrap:${tokenId}` &&
          csr.spec.signerName === clientSignerName,
      ),
    { description: 'the kubelet client CSR', timeoutMs: 30_000 },
  );
  assert.ok(clientCsr.spec.groups?.includes(bootstrapGroup));
  assert.deepEqual([...(clientCsr.spec.usages ?? [])].sort(), [
    'client auth',
    'digital signature',
    'key encipherment',
  ]);
  const request = Buffer.from(clientCsr.spec.request, 'base64').toString();
  assert.match(request, /BEGIN CERTIFICATE REQUEST/);
  assert.match(clientCsr.metadata!.name!, /^node-csr-/);

  // A kubelet restarted during its bootstrap keeps its key and waits on the same CSR.
  await os.stopService('kubelet');
  await os.startService('kubelet');
  await waitFor(
    async () =>
      (await serviceLog(host.machine, 'kubelet')).filter((l) =>
        /Waiting for the client certificate/.test(l),
      ).length >= 2,
    { description: 'the restarted kubelet waiting again', timeoutMs: 10_000 },
  );
  const bootstrapCsrs = (await certificates.listCertificateSigningRequest()).items.filter(
    (csr) => csr.spec.username === `system:bootstrap:${tokenId}`,
  );
  assert.deepEqual(
    bootstrapCsrs.map((csr) => csr.metadata!.name),
    [clientCsr.metadata!.name],
  );
  await certificates.replaceCertificateSigningRequestApproval({
    name: clientCsr.metadata!.name!,
    body: {
      ...clientCsr,
      status: {
        conditions: [
          {
            type: 'Approved',
            status: 'True',
            reason: 'WinfleetTest',
            message: 'approved by the simhost test',
          },
        ],
      },
    },
  });

  // Registered with a pod CIDR, but NotReady with the kubelet's reason until containerd (here
  // without --config: its default directories) has a CNI config; kwok does not have it yet.
  const registered = await waitFor(
    async () => {
      const current = await core.readNode({ name: nodeName }).catch(() => undefined);
      const ready = current?.status?.conditions?.find((c) => c.type === 'Ready');
      return current?.spec?.podCIDR && ready?.status === 'False' ? current : undefined;
    },
    { description: `node ${nodeName} registered NotReady`, timeoutMs: 60_000, intervalMs: 500 },
  );
  assert.equal(
    registered.status?.conditions?.find((c) => c.type === 'Ready')?.message,
    'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
  );
  assert.equal(registered.metadata?.annotations?.[hostNodeAnnotation.key], undefined);
  // What the agent's run loop then writes: the conflist for the Node's pod CIDR, and the plugins.
  for (const plugin of ['sdnbridge', 'host-local']) {
    await fs.writeFileAtomic(
      `${containerdDefaultCniDirs.binDirs[0]}\\${plugin}.exe`,
      standInBinary(plugin, 'v0.3.2'),
    );
  }
  const settings = {
    ...agentConfigFrom(parseBootstrapConfig(testBootstrapConfig())),
    nodeName,
    nodeIP: host.address,
    podCIDR: podCidr,
  };
  await fs.writeFileAtomic(
    `${containerdDefaultCniDirs.confDir}\\10-winfleet.conflist`,
    cniConfig(settings, registered.spec!.podCIDR!),
  );

  const node = await waitFor(
    async () => {
      const current = await core.readNode({ name: nodeName });
      return isReady(current) ? current : undefined;
    },
    { description: `node ${nodeName} Ready`, timeoutMs: 60_000, intervalMs: 500 },
  );
  const labels = node.metadata!.labels!;
  assert.equal(labels['kubernetes.io/os'], 'windows');
  assert.equal(labels['kubernetes.io/arch'], 'amd64');
  assert.equal(labels['kubernetes.io/hostname'], nodeName);
  assert.equal(labels['node.kubernetes.io/windows-build'], '10.0.20348');
  assert.equal(labels['winfleet.io/pool'], 'blue');
  assert.equal(labels['winfleet.io/host'], 'sim');
  assert.deepEqual(ownTaints(node), [{ key: 'os', value: 'windows', effect: 'NoSchedule' }]);
  assert.equal(node.metadata!.annotations![hostNodeAnnotation.key], hostNodeAnnotation.value);
  const info = node.status!.nodeInfo!;
  assert.equal(info.operatingSystem, 'windows');
  assert.equal(info.architecture, 'amd64');
  assert.equal(info.kernelVersion, '10.0.20348.2582');
  assert.equal(info.osImage, 'Windows Server 2022 Datacenter');
  assert.equal(info.kubeletVersion, 'v1.36.5');
  assert.equal(info.containerRuntimeVersion, 'containerd://2.1.4');
  assert.equal(info.bootID, host.machine.bootId);
  assert.deepEqual(plain(node.status!.addresses), [
    { type: 'InternalIP', address: host.address },
    { type: 'Hostname', address: nodeName },
  ]);
  assert.equal(node.status!.capacity!.cpu, '4');
  assert.equal(node.status!.allocatable!.cpu, '3500m');
  // The API server prints quantities canonically: 16777216Ki is 16Gi.
  assert.equal(node.status!.capacity!.memory, '16Gi');
  assert.equal(node.status!.allocatable!.memory, '14Gi');
  assert.equal(node.status!.allocatable!.pods, '110');

  // The files a kubelet leaves after its bootstrap (the temporary key is gone).
  assert.match(
    (await fs.readFile('C:\\k\\pki\\kubelet-client-current.pem')).toString(),
    /BEGIN CERTIFICATE[\s\S]*BEGIN PRIVATE KEY/,
  );
  assert.match(
    (await fs.readFile('C:\\k\\kubeconfig')).toString(),
    /client-certificate: C:\\k\\pki\\kubelet-client-current\.pem/,
  );
  assert.equal(await fs.stat('C:\\k\\pki\\kubelet-client.key.tmp'), undefined);

  // The serving CSR, as the node, with its address and name; nobody approves it here.
  const servingCsr = await waitFor(
    async () =>
      (await certificates.listCertificateSigningRequest()).items.find(
        (csr) =>
          csr.spec.username === `system:node:${nodeName}` &&
          csr.spec.signerName === servingSignerName,
      ),
    { description: 'the kubelet serving CSR', timeoutMs: 30_000 },
  );
  assert.deepEqual([...(servingCsr.spec.usages ?? [])].sort(), [
    'digital signature',
    'key encipherment',
    'server auth',
  ]);

  // Service stopped: kwok lets go of the node (its lease lapses as with a dead kubelet).
  await os.stopService('kubelet');
  await waitFor(
    async () =>
      !(await core.readNode({ name: nodeName })).metadata?.annotations?.[hostNodeAnnotation.key],
    { description: 'the kwok annotation removed after the kubelet stopped', timeoutMs: 30_000 },
  );

  // A condition another writer owns (the agent's health checks, Node Problem Detector) stays
  // through the kubelet's status updates: they merge conditions by type (strategic merge), as
  // the kubelet's PatchNodeStatus does.
  await core.patchNodeStatus(
    {
      name: nodeName,
      body: {
        status: {
          conditions: [
            { type: 'KubeletUnhealthy', status: 'False', reason: 'ServiceHealthy', message: 'ok' },
          ],
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );

  // Reboot: the auto-start kubelet comes back with its certificate (no new CSR) and a new boot id.
  // Without its CNI config at first, so it posts NotReady again (the update that must keep the
  // condition above); then the config comes back.
  const conflist = `${containerdDefaultCniDirs.confDir}\\10-winfleet.conflist`;
  const conflistData = await fs.readFile(conflist);
  await fs.remove(conflist);
  const bootBefore = host.machine.bootId;
  await host.faults.reboot();
  assert.notEqual(host.machine.bootId, bootBefore);
  await waitFor(
    async () => {
      const current = await core.readNode({ name: nodeName });
      const ready = current.status?.conditions?.find((c) => c.type === 'Ready');
      return current.status?.nodeInfo?.bootID === host.machine.bootId &&
        ready?.status === 'False' &&
        /cni plugin not initialized/.test(ready.message ?? '')
        ? current
        : undefined;
    },
    { description: 'NotReady after the reboot without a CNI config', timeoutMs: 60_000 },
  );
  await fs.writeFileAtomic(conflist, conflistData);
  const back = await waitFor(
    async () => {
      const current = await core.readNode({ name: nodeName });
      return current.status?.nodeInfo?.bootID === host.machine.bootId &&
        current.metadata?.annotations?.[hostNodeAnnotation.key] === hostNodeAnnotation.value &&
        isReady(current)
        ? current
        : undefined;
    },
    {
      description: 'the node back with the new boot id after the reboot',
      timeoutMs: 60_000,
      intervalMs: 500,
    },
  );
  assert.deepEqual(ownTaints(back), [{ key: 'os', value: 'windows', effect: 'NoSchedule' }]);
  assert.equal(
    back.status?.conditions?.find((c) => c.type === 'KubeletUnhealthy')?.reason,
    'ServiceHealthy',
    'the re-registering kubelet kept a condition it does not own',
  );
  const clientCsrs = (await certificates.listCertificateSigningRequest()).items.filter(
    (csr) => csr.spec.username === `system:bootstrap:${tokenId}`,
  );
  assert.equal(clientCsrs.length, 1, 'the stored client certificate was reused');
  assert.ok(
    (await serviceLog(host.machine, 'kubelet')).some((l) =>
      /Using the client certificate in C:\\k\\kubeconfig/.test(l),
    ),
  );
});

test('a kubelet configuration a real kubelet refuses on Windows makes the service fail', async (t) => {
  const machine = await createTestMachine(t);
  await machine.fs.writeFileAtomic('C:\\k\\kubelet.exe', standInBinary('kubelet', 'v1.36.5'));
  await installLogRunner(machine.fs);
  await machine.fs.writeFileAtomic(
    'C:\\k\\kubelet-config.yaml',
    kubeletConfig.replace('cgroupsPerQOS: false', 'cgroupsPerQOS: true'),
  );
  const os = new SimHostOS(machine);
  await os.createService({ ...kubeletService('bad-node', '127.0.0.200'), dependencies: [] });
  await os.startService('kubelet');
  await waitFor(async () => (await os.queryService('kubelet'))?.state === 'stopped', {
    description: 'the kubelet to exit',
    timeoutMs: 5000,
    intervalMs: 20,
  });
  assert.equal((await os.queryService('kubelet'))?.exitCode, 1);
  assert.ok(
    (await serviceLog(machine, 'kubelet')).some((l) =>
      /CgroupsPerQOS \(--cgroups-per-qos\) true is not supported on Windows/.test(l),
    ),
  );
});
