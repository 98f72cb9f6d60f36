/**
 * A host joined with only the script `winfleet join-command` prints, the cluster side played by
 * winfleet itself: the operator in-process approves the kubelet's CSR (creating the Pull-mode
 * WindowsHost and taking a use of the token), the CLI makes the token and the script, and the
 * simulated host (no SSH server) runs it as EC2Launch runs user data: downloads the agent from
 * the real registry, checks its hash, and runs the real agent's join. A second host with the
 * same name, from the same token, gets its CSR denied.
 *
 * winfleet-join, naming the payload artifact in the real registry, is written as the operator
 * writes it (joinInfoFor); the agent pulls the payload from that registry itself
 * (src/agent/payload-pull.ts), by digest, verified.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import {
  createAwsIdentitySigner,
  SimInstanceMetadata,
} from '../../../sim/hosts/instance-metadata.ts';
import { runUserData } from '../../../sim/hosts/userdata.ts';
import { startUserDataHosts } from '../../../sim/hosts/userdata-hosts.ts';
import { startTestRegistry } from '../../../sim/registry/registry-process.ts';
import { nextBaseAddress } from '../../../sim/testkit/loopback-range.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { pushTestPayloadArtifact } from '../../../sim/testkit/payload-artifact.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { freshCluster } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { readWindowsHost } from '../../../sim/testkit/windows-hosts.ts';
import { runWinfleet } from '../../../sim/testkit/winfleet-cli.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import {
  clusterInfoKubeconfigKey,
  clusterInfoName,
  clusterInfoNamespace,
} from '../../join/cluster-info.ts';
import { joinInfoConfigMapName, joinInfoKey } from '../../join/join-info.ts';
import { readJoinTokenRecord } from '../../join/join-tokens.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import { servicesManifestFor } from '../../payload/node-services.ts';
import { payloadFileOnDisk } from '../../payload/payload-file.ts';
import { applyClusterInfoReaderRbac, applyJoinInfoRbac } from '../hosts/cluster-rbac.ts';
import { createManifestPublisher } from '../hosts/manifest-publisher.ts';
import { clusterInfoKubeconfig } from './cluster-info-controller.ts';
import { joinInfoFor } from './join-info-controller.ts';

const namespace = 'winfleet-system';

function sshAnswers(address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port: 22 });
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * What the operator makes with a registry payload: the published manifest and its RBAC,
 * winfleet-join naming the artifact, cluster-info and who may read them.
 */
async function publishJoinInfo(cluster: Awaited<ReturnType<typeof freshCluster>>): Promise<void> {
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const server = kc.getCurrentCluster()!.server;
  const payloadDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
  const payload = await writeStandInPayload(payloadDir);
  const manifest = servicesManifestFor(payload);
  await createManifestPublisher(kc, namespace)(manifest);
  await applyJoinInfoRbac(kc, namespace, undefined);
  await applyClusterInfoReaderRbac(kc);
  await core.createNamespacedConfigMap({
    namespace: clusterInfoNamespace,
    body: {
      metadata: { name: clusterInfoName, labels: { 'app.kubernetes.io/managed-by': 'winfleet' } },
      data: {
        [clusterInfoKubeconfigKey]: clusterInfoKubeconfig(
          server,
          await readFile(cluster.pki.caCert, 'utf8'),
        ),
      },
    },
  });
  const registry = await startTestRegistry();
  after(() => registry.stop());
  const artifact = await pushTestPayloadArtifact(
    registry.url,
    'winfleet/payload',
    payloadDir,
    payload,
  );
  const info = joinInfoFor(parseConfig('hosts: {agentCheckIntervalSeconds: 1}'), server, {
    fileOnDisk: (file) => payloadFileOnDisk(payloadDir, file),
    payload,
    manifest,
    totalBytes: 0,
    registry: {
      repository: `${registry.host}/winfleet/payload`,
      digest: artifact.digest,
      insecure: true,
    },
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: joinInfoConfigMapName },
      data: { [joinInfoKey]: JSON.stringify(info) },
    },
  });
}

test('a host with only the join command, from a stock image without the Containers feature, stops before using the token; with the feature it becomes a Ready node in its pool, SSH refused; a second host of the same name is denied', {
  timeout: 600_000,
}, async () => {
  const cluster = await freshCluster();
  after(() => cluster.stop());
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const certificates = kc.makeApiClient(k8s.CertificatesV1Api);
  const logLines: string[] = [];
  // The CSR approver (no payload here: winfleet-join and cluster-info are written below).
  const operator = await startTestOperator(kc, {
    namespace,
    webhook: false,
    log: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
  });
  after(() => operator.stop());
  await createPool(kc, namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    join: { nodeNamePattern: '^web-[0-9]+$' },
  });

  await publishJoinInfo(cluster);

  const made = await runWinfleet([
    'join-command',
    '--kubeconfig',
    cluster.kubeconfigPath,
    '--pool',
    'web',
    '--uses',
    '2',
    '--format',
    'aws',
  ]);
  assert.equal(made.code, 0, `${made.stdout}\n${made.stderr}`);
  const tokenId = /join token ([a-z0-9]{6})/.exec(made.stderr)![1]!;

  const joinTuning = {
    discoveryBackoff: { initialDelayMs: 500, maxDelayMs: 2000, maxElapsedMs: 120_000 },
    payloadBackoff: { initialDelayMs: 200, maxDelayMs: 400 },
  };
  // As the standard AWS and Azure Windows Server images come: no Containers feature.
  const good = await startUserDataHosts({
    count: 1,
    names: ['web-1'],
    baseAddress: nextBaseAddress(),
    userData: made.stdout,
    joinTuning,
    machine: { features: { Containers: 'Available' } },
  });
  after(() => good.stop());
  const host = good.hosts[0]!;
  assert.equal(await sshAnswers(host.address), false, 'no SSH on the joining host');
  const stopped = await host.userData.done;
  assert.equal(stopped.exitCode, 1, stopped.output);
  assert.match(
    stopped.output,
    /The Windows Containers feature is Available, not Installed, so no pod could run on this node; nothing was changed and the join token was not used: run Install-WindowsFeature -Name Containers -Restart, then run the join command again/,
  );
  assert.equal((await readJoinTokenRecord(kc, namespace, tokenId))?.usesLeft, 2, 'no use taken');
  assert.deepEqual(
    (await certificates.listCertificateSigningRequest()).items.filter(
      (c) => c.spec.username === `system:bootstrap:${tokenId}`,
    ),
    [],
    'no CSR from the host',
  );
  assert.equal(await core.readNode({ name: 'web-1' }).catch(() => undefined), undefined);

  // What the message says: install the feature, restart, run the join command again.
  assert.equal(host.machine.features.install('Containers').restartNeeded, 'Yes');
  await host.machine.reboot({ reason: 'Install-WindowsFeature -Name Containers -Restart' });
  assert.equal(host.machine.features.get('Containers')?.state, 'Installed');
  const result = await runUserData(host.machine, made.stdout).done;
  assert.equal(result.exitCode, 0, result.output);
  const node = await waitFor(
    async () => {
      const n = await core.readNode({ name: 'web-1' }).catch(() => undefined);
      return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'
        ? n
        : undefined;
    },
    { description: 'node web-1 Ready', timeoutMs: 180_000, intervalMs: 1000 },
  );
  assert.equal(node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, host.address);
  const windowsHost = await readWindowsHost(kc, namespace, 'web-1');
  assert.deepEqual(
    [
      windowsHost.spec.mode,
      windowsHost.spec.pool,
      windowsHost.spec.nodeName,
      windowsHost.metadata.labels?.pool,
    ],
    ['Pull', 'web', 'web-1', 'web'],
  );
  assert.equal((await readJoinTokenRecord(kc, namespace, tokenId))?.usesLeft, 1);
  assert.equal(await sshAnswers(host.address), false, 'still no SSH once joined');

  // The same token, a second machine that calls itself web-1: its kubelet's CSR is denied.
  const twin = await startUserDataHosts({
    count: 1,
    names: ['web-1'],
    baseAddress: nextBaseAddress(),
    userData: made.stdout,
    joinTuning,
  });
  after(() => twin.stop());
  const denied = await waitFor(
    async () =>
      (await certificates.listCertificateSigningRequest()).items
        .filter((c) => c.spec.username === `system:bootstrap:${tokenId}`)
        .map((c) => c.status?.conditions?.find((d) => d.type === 'Denied')?.message)
        .find((m) => m !== undefined),
    { description: 'the twin’s CSR denied', timeoutMs: 180_000, intervalMs: 500 },
  );
  assert.match(denied, /^join by command refused \(name-taken\): node name web-1 is taken/);
  assert.equal((await readJoinTokenRecord(kc, namespace, tokenId))?.usesLeft, 1, 'no use taken');
  assert.ok(
    !logLines.some((l) => l.includes(made.stdout.match(/'[a-z0-9]{6}\.([a-z0-9]{16})'/)![1]!)),
    'no token secret logged',
  );
});

test('attacker’s side: replayed user data gets no certificate once its one use is spent; with instance identity, a token made for one instance is refused from another, naming why', {
  timeout: 600_000,
}, async () => {
  const cluster = await freshCluster();
  after(() => cluster.stop());
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const certificates = kc.makeApiClient(k8s.CertificatesV1Api);
  const aws = await createAwsIdentitySigner();
  const operator = await startTestOperator(kc, {
    namespace,
    webhook: false,
    config: { hosts: { instanceIdentity: { aws: { certificates: aws.certificatePem } } } },
  });
  after(() => operator.stop());
  await createPool(kc, namespace, 'fleet', {
    selector: { matchLabels: { pool: 'fleet' } },
    join: { nodeNamePattern: '^i-[0-9a-f]{17}$', instanceIdentity: 'AWS' },
  });
  await publishJoinInfo(cluster);
  const [a, b, c] = ['i-0aaaaaaaaaaaaaaa1', 'i-0bbbbbbbbbbbbbbb2', 'i-0ccccccccccccccc3'];
  const tokenFor = async (instanceId: string) => {
    const made = await runWinfleet([
      'join-command',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--pool',
      'fleet',
      '--instance-id',
      instanceId,
      '--format',
      'aws',
    ]);
    assert.equal(made.code, 0, `${made.stdout}\n${made.stderr}`);
    assert.match(made.stdout, /'--instance-identity' 'aws'|--instance-identity 'aws'/);
    return { userData: made.stdout, id: /join token ([a-z0-9]{6})/.exec(made.stderr)![1]! };
  };
  const joinTuning = {
    discoveryBackoff: { initialDelayMs: 200, maxDelayMs: 1000, maxElapsedMs: 20_000 },
    payloadBackoff: { initialDelayMs: 200, maxDelayMs: 400 },
  };
  /** One EC2 instance booting with `userData`, its IMDS naming `instanceId`. */
  const boot = async (userData: string, instanceId: string) => {
    const hosts = await startUserDataHosts({
      count: 1,
      baseAddress: nextBaseAddress(),
      userData,
      joinTuning,
      instanceMetadata: (_i, address) =>
        new SimInstanceMetadata({
          instanceId,
          accountId: '123456789012',
          region: 'eu-west-1',
          privateIp: address,
          signer: aws,
        }),
    });
    after(() => hosts.stop());
    return hosts.hosts[0]!;
  };
  const csrsOf = async (tokenId: string) =>
    (await certificates.listCertificateSigningRequest()).items.filter(
      (x) =>
        x.spec.username === `system:bootstrap:${tokenId}` &&
        x.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet',
    );

  // Instance A joins with the token made for it, named for itself.
  const forA = await tokenFor(a);
  const hostA = await boot(forA.userData, a);
  assert.equal((await hostA.userData.done).exitCode, 0);
  await waitFor(() => core.readNode({ name: a }).catch(() => undefined), {
    description: `Node ${a}`,
    timeoutMs: 180_000,
    intervalMs: 1000,
  });
  assert.equal((await readWindowsHost(kc, namespace, a)).spec.nodeName, a);

  // The same user data replayed on instance B: the one use is spent, the token is gone, and
  // the join stops before any CSR (cluster-info is no longer signed for it).
  const replay = await boot(forA.userData, b);
  const replayed = await replay.userData.done;
  assert.equal(replayed.exitCode, 1, replayed.output);
  assert.equal((await csrsOf(forA.id)).length, 1, 'only A’s CSR was ever made with the token');
  assert.equal(await core.readNode({ name: b }).catch(() => undefined), undefined);

  // A token made for instance C, its user data run on instance B (leaked, or a launch template
  // used for another instance): B's CSR is denied, naming why, and the use is not taken.
  const forC = await tokenFor(c);
  await boot(forC.userData, b);
  const denied = await waitFor(
    async () =>
      (await csrsOf(forC.id))
        .map((x) => x.status?.conditions?.find((d) => d.type === 'Denied')?.message)
        .find((m) => m !== undefined),
    { description: 'B’s CSR denied', timeoutMs: 180_000, intervalMs: 500 },
  );
  assert.match(
    denied,
    /^join by command refused \(instance-identity\): the identity document names instance i-0bbbbbbbbbbbbbbb2, but join token \w+ was made for instance i-0ccccccccccccccc3/,
  );
  assert.equal((await readJoinTokenRecord(kc, namespace, forC.id))?.usesLeft, 1, 'no use taken');
  assert.equal(await core.readNode({ name: b }).catch(() => undefined), undefined);
});
