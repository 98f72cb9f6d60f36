/**
 * Joining by command against the real control plane, with no operator: the test plays the
 * cluster side by hand (what the operator will maintain): a bootstrap token with
 * usage-bootstrap-signing, a `kube-public/cluster-info` that the controller manager's real
 * bootstrapsigner signs for it, anonymous read of it (kubeadm's Role), winfleet-join and a
 * published services manifest, and, in place of winfleet's CSR approver, an admin approving the
 * kubelet's client CSR. The hosts boot with the AWS user data `renderJoinScript` writes: they
 * download the agent from the real registry, check its hash and run the real agent's join,
 * with SSH refused the whole time.
 *
 * The payload pull is the one stand-in: until src/agent/payload-pull.ts lands, the join is given
 * a pull that fails twice as an unreachable registry would, then stages the stand-in payload
 * (JoinTuning.pullPayload), so the retry and its status are exercised too.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { podCidr, serviceCidr } from '../../sim/cluster/start-cluster.ts';
import { startUserDataHosts } from '../../sim/hosts/userdata-hosts.ts';
import { startTestRegistry } from '../../sim/registry/registry-process.ts';
import { nextBaseAddress } from '../../sim/testkit/loopback-range.ts';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { managedNodeLabel, servicesManifestConfigMapName } from '../api/node-annotations.ts';
import { createManifestPublisher } from '../controllers/hosts/manifest-publisher.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { caPublicKeyPin, parseCertificateBundle } from '../join/ca-pin.ts';
import type { JoinInfo } from '../join/join-info.ts';
import { renderJoinScript } from '../join/scripts/render-join-script.ts';
import { waitFor } from '../kube/wait-for.ts';
import { servicesManifestFor } from '../payload/node-services.ts';
import { publishedManifestsConfigMapName } from '../servicesmanifest/published-manifests.ts';
import { paths } from './agent-config.ts';
import type { PullPayload } from './join-payload.ts';
import { joinStatusPath } from './join-status.ts';

const bootstrapGroup = 'system:bootstrappers:winfleet';

/** Pushes `bytes` as a blob of `repository` (the two calls of a monolithic upload). */
async function pushBlob(registryUrl: string, repository: string, bytes: Buffer): Promise<string> {
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  const start = await fetch(`${registryUrl}/v2/${repository}/blobs/uploads/`, { method: 'POST' });
  assert.equal(start.status, 202);
  const location = new URL(start.headers.get('location')!, registryUrl);
  location.searchParams.set('digest', digest);
  const put = await fetch(location, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': 'application/octet-stream' },
  });
  assert.equal(put.status, 201, await put.text());
  return `${registryUrl}/v2/${repository}/blobs/${digest}`;
}

/** Whether something accepts TCP connections on address:22. */
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

test('a host with only the join script becomes a Ready node; a wrong CA hash configures nothing', {
  timeout: 600_000,
}, async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  const certificates = kc.makeApiClient(k8s.CertificatesV1Api);
  const namespace = await testNamespace(kc, 'winfleet-join');
  const current = kc.getCurrentCluster()!;
  const caPem = current.caData
    ? Buffer.from(current.caData, 'base64').toString()
    : await readFile(current.caFile!, 'utf8');
  const caCertHash = caPublicKeyPin(parseCertificateBundle(caPem)[0]!);

  // The token, signing cluster-info and authenticating the kubelet's bootstrap.
  const tokenId = randomBytes(3).toString('hex');
  const token = `${tokenId}.${randomBytes(8).toString('hex')}`;
  await core.createNamespacedSecret({
    namespace: 'kube-system',
    body: {
      metadata: { name: `bootstrap-token-${tokenId}` },
      type: 'bootstrap.kubernetes.io/token',
      stringData: {
        'token-id': tokenId,
        'token-secret': token.split('.')[1]!,
        'usage-bootstrap-authentication': 'true',
        'usage-bootstrap-signing': 'true',
        'auth-extra-groups': bootstrapGroup,
        expiration: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    },
  });
  // cluster-info as kubeadm makes it, readable anonymously; the bootstrapsigner signs it.
  await core.createNamespacedConfigMap({
    namespace: 'kube-public',
    body: {
      metadata: { name: 'cluster-info' },
      data: {
        kubeconfig: stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [
            {
              name: '',
              cluster: {
                server: current.server,
                'certificate-authority-data': Buffer.from(caPem).toString('base64'),
              },
            },
          ],
        }),
      },
    },
  });
  const getByName = (names: string[]) => [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: names },
  ];
  const bind = async (ns: string, name: string, names: string[], subject: k8s.RbacV1Subject) => {
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name }, rules: getByName(names) },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [subject],
      },
    });
  };
  await bind('kube-public', 'kubeadm:bootstrap-signer-clusterinfo', ['cluster-info'], {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'User',
    name: 'system:anonymous',
  });

  // The payload's manifest, published as the operator publishes it (with its node RBAC and
  // the bootstrap group's ClusterRoleBinding), and winfleet-join naming it.
  const payloadDir = await mkdtemp(joinPath(tmpdir(), 'winfleet-join-payload-'));
  const payload = await writeStandInPayload(payloadDir);
  const manifest = servicesManifestFor(payload);
  await createManifestPublisher(kc, namespace)(manifest);
  const joinInfo: JoinInfo = {
    apiServer: current.server,
    clusterDNS: '10.96.0.10',
    clusterDomain: 'cluster.local',
    serviceCIDR: serviceCidr,
    podCIDR: podCidr,
    windowsTaint: { key: 'os', value: 'windows', effect: 'NoSchedule' },
    kubelet: {
      systemReserved: { memory: '2Gi' },
      priorityClass: 'ABOVE_NORMAL_PRIORITY_CLASS',
      maxPods: 110,
    },
    checkIntervalSeconds: 1,
    servicesVersion: manifest.version,
  };
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'winfleet-join' },
      data: { 'join.json': JSON.stringify(joinInfo) },
    },
  });
  await bind(
    namespace,
    'winfleet:join',
    [
      'winfleet-join',
      publishedManifestsConfigMapName,
      servicesManifestConfigMapName(manifest.version),
    ],
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: bootstrapGroup },
  );

  // The agent executable in the real registry, as a blob of the payload's repository.
  const registry = await startTestRegistry();
  t.after(() => registry.stop());
  const agentBytes = await readFile(joinPath(payloadDir, 'winfleet-agent.exe'));
  const agentUrl = await pushBlob(registry.url, 'winfleet/payload', agentBytes);
  const agentSha256 = createHash('sha256').update(agentBytes).digest('hex');

  // Stands in for payload-pull.ts: the registry "unreachable" twice, then the files staged.
  let pullAttempts = 0;
  const pull: PullPayload = async (host, pulled) => {
    pullAttempts++;
    if (pullAttempts <= 2) {
      throw new WinfleetError(
        'WF_PAYLOAD_DOWNLOAD',
        `registry ${registry.host} cannot be reached (ECONNREFUSED)`,
      );
    }
    for (const file of payload.files) {
      const data = await readFile(joinPath(payloadDir, file.name));
      const target =
        file.name === 'winfleet-service.exe' ? paths.serviceExe : `${paths.payload}\\${file.name}`;
      if (file.name !== 'winfleet-agent.exe') await host.writeFile(target, data);
    }
    assert.equal(pulled.version, manifest.version);
  };
  const joinTuning = {
    discoveryBackoff: { initialDelayMs: 500, maxDelayMs: 2000, maxElapsedMs: 120_000 },
    payloadBackoff: { initialDelayMs: 200, maxDelayMs: 400 },
    pullPayload: pull,
  };
  const values = {
    agentUrl,
    agentSha256,
    apiServer: current.server,
    token,
    caCertHash,
    namespace,
    nodeName: `win-pull-${tokenId}`,
  };
  const good = await startUserDataHosts({
    count: 1,
    baseAddress: nextBaseAddress(),
    userData: renderJoinScript('aws', values),
    joinTuning,
  });
  t.after(() => good.stop());
  const wrongHash = `sha256:${caCertHash.slice(7).replace(/^./, (c) => (c === '0' ? '1' : '0'))}`;
  const bad = await startUserDataHosts({
    count: 1,
    baseAddress: nextBaseAddress(),
    userData: renderJoinScript('aws', { ...values, caCertHash: wrongHash, nodeName: 'win-bad' }),
    joinTuning,
  });
  t.after(() => bad.stop());
  const host = good.hosts[0]!;
  const badHost = bad.hosts[0]!;
  assert.equal(await sshAnswers(host.address), false, 'no SSH on the joining host');

  // The wrong pin: the agent refuses after discovery, and nothing is configured.
  const refused = await badHost.userData.done;
  assert.equal(refused.exitCode, 1);
  assert.match(
    refused.output,
    new RegExp(`the cluster CA's public key does not match --ca-cert-hash ${wrongHash}`),
  );
  assert.ok(!refused.output.includes(token.split('.')[1]!), 'the token secret is not logged');
  const badFs = badHost.machine.fs;
  assert.equal(await badFs.tryReadFile(paths.bootstrapConfig), undefined);
  assert.equal(await badFs.tryReadFile(paths.caCert), undefined);
  assert.deepEqual(badHost.machine.scm.names(), []);
  assert.equal(JSON.parse((await badFs.readFile(joinStatusPath)).toString()).phase, 'failed');

  // The good host: discovery and pinning against the real bootstrapsigner's signature, then
  // the reads, the pull (retried), bootstrap; the kubelet asks for its client certificate.
  const csr = await waitFor(
    async () =>
      (await certificates.listCertificateSigningRequest()).items.find(
        (c) =>
          c.spec.username === `system:bootstrap:${tokenId}` &&
          c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet',
      ),
    { description: "the joining kubelet's client CSR", timeoutMs: 180_000, intervalMs: 500 },
  );
  await certificates.replaceCertificateSigningRequestApproval({
    name: csr.metadata!.name!,
    body: {
      ...csr,
      status: {
        conditions: [
          {
            type: 'Approved',
            status: 'True',
            reason: 'WinfleetTest',
            message: 'approved by the join e2e test',
          },
        ],
      },
    },
  });
  const result = await host.userData.done;
  assert.equal(result.exitCode, 0, result.output);
  assert.equal(pullAttempts, 3);
  assert.match(
    result.output,
    /Pulling the payload failed \(attempt 1\): registry 127\.0\.0\.1:\d+ cannot be reached \(ECONNREFUSED\); retrying in/,
  );
  const node = await waitFor(
    async () => {
      const n = await core.readNode({ name: values.nodeName }).catch(() => undefined);
      const ready = n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      return ready ? n : undefined;
    },
    { description: `node ${values.nodeName} Ready`, timeoutMs: 180_000, intervalMs: 1000 },
  );
  assert.equal(node.metadata?.labels?.[managedNodeLabel], 'true');
  assert.deepEqual(
    node.spec?.taints?.map((taint) => `${taint.key}=${taint.value}:${taint.effect}`),
    ['os=windows:NoSchedule'],
  );
  assert.equal(node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, host.address);
  const status = JSON.parse((await host.machine.fs.readFile(joinStatusPath)).toString());
  assert.equal(status.phase, 'joined');
  assert.equal(await sshAnswers(host.address), false, 'still no SSH once joined');
});
