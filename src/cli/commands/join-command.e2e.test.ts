/**
 * `winfleet join-command` and `winfleet join-tokens` as a child process (real exit codes)
 * against real control planes and a real registry (Debian's docker-registry):
 *
 * - with the operator serving a payload directory, the command says hosts cannot pull it;
 * - with winfleet-join naming a payload artifact, it prints the script: the agent's blob URL
 *   and SHA-256 from the artifact's manifest, the CA hash as OpenSSL computes it, a token whose
 *   Secret has the usages and group, and a record with the pool, uses, expiry and labels;
 *   join-tokens lists it (never the secret) and revokes it;
 * - a pool the command cannot serve, and a cluster without bootstrap-token authentication,
 *   are refused plainly, and nothing is left behind.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { parse as parseYaml, stringify } from 'yaml';
import { startTestRegistry } from '../../../sim/registry/registry-process.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { pushTestPayloadArtifact } from '../../../sim/testkit/payload-artifact.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { freshCluster } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { runWinfleet, type WinfleetRun } from '../../../sim/testkit/winfleet-cli.ts';
import { installCrds } from '../../api/install-crds.ts';
import { clusterInfoKubeconfig } from '../../controllers/join-info/cluster-info-controller.ts';
import {
  clusterInfoKubeconfigKey,
  clusterInfoName,
  clusterInfoNamespace,
} from '../../join/cluster-info.ts';
import {
  type JoinInfo,
  joinInfoConfigMapName,
  joinInfoKey,
  parseJoinInfo,
} from '../../join/join-info.ts';
import { joinTokenLabel, joinTokenRecordName } from '../../join/join-token-record.ts';
import { readJoinTokenRecord } from '../../join/join-tokens.ts';
import { isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { agentFileName } from '../../payload/payload.ts';
import { createCertificateAuthority, issueCertificate } from '../../pki/certificates.ts';

const namespace = 'winfleet-system';

type Run = WinfleetRun;
const winfleet = runWinfleet;

const show = (run: Run) => `exit ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;

const registry = await startTestRegistry();
after(() => registry.stop());
const payloadDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
const payload = await writeStandInPayload(payloadDir);
const repository = `${registry.host}/winfleet/payload`;
const artifact = await pushTestPayloadArtifact(
  registry.url,
  'winfleet/payload',
  payloadDir,
  payload,
);
const agentSha256 = payload.files.find((f) => f.name === agentFileName)!.sha256;

/** Nothing join-command made is left: no join token Secret, no record. */
async function nothingLeft(kc: k8s.KubeConfig): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const tokens = await core.listNamespacedSecret({
    namespace: 'kube-system',
    labelSelector: joinTokenLabel,
  });
  assert.deepEqual(
    tokens.items.map((s) => s.metadata?.name),
    [],
    'join token Secrets left',
  );
  const records = await core.listNamespacedConfigMap({ namespace, labelSelector: joinTokenLabel });
  assert.deepEqual(
    records.items.map((c) => c.metadata?.name),
    [],
    'join token records left',
  );
}

/** winfleet-join naming the pushed artifact, as the operator writes it with a registry payload. */
async function publishWithPayload(kc: k8s.KubeConfig, info: JoinInfo): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const text = JSON.stringify({
    ...info,
    payload: { repository, digest: artifact.digest, mirrors: [], insecure: true },
  });
  parseJoinInfo(text);
  const body = {
    metadata: { name: joinInfoConfigMapName, namespace },
    data: { [joinInfoKey]: text },
  };
  try {
    await core.createNamespacedConfigMap({ namespace, body });
  } catch {
    await core.replaceNamespacedConfigMap({ name: joinInfoConfigMapName, namespace, body });
  }
}

/** The pin of the cluster CA as OpenSSL computes it (kubeadm's documented recipe). */
function opensslPin(caFile: string): string {
  const pubkey = execFileSync('openssl', ['x509', '-pubkey', '-noout', '-in', caFile]);
  const der = execFileSync('openssl', ['pkey', '-pubin', '-outform', 'der'], { input: pubkey });
  return `sha256:${createHash('sha256').update(der).digest('hex')}`;
}

const decode = (secret: k8s.V1Secret, key: string) =>
  Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');

test('join-command prints the script, makes a signing token in winfleet’s group and its record; join-tokens lists and revokes it', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const kubeconfig = ['--kubeconfig', cluster.kubeconfigPath];
  const operator = await startTestOperator(kc, { namespace, payloadDir, webhook: false });
  await createPool(kc, namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    join: { nodeNamePattern: '^web-[0-9]+$' },
  });
  await createPool(kc, namespace, 'gpu', {
    selector: {
      matchLabels: { pool: 'gpu' },
      matchExpressions: [{ key: 'zone', operator: 'Exists' }],
    },
    join: { nodeNamePattern: '^gpu-[0-9]+$' },
  });
  // Attacker's side: a pool with no name pattern would let a token claim any node name, names
  // of nodes that will exist later included; an AD pool's hosts register before a domain join.
  await createPool(kc, namespace, 'open', { selector: { matchLabels: { pool: 'open' } } });
  await createPool(kc, namespace, 'corp', {
    selector: { matchLabels: { pool: 'corp' } },
    join: { nodeNamePattern: '^corp-[0-9]+$' },
    activeDirectory: { domain: 'corp.example.com', credentialsSecretRef: { name: 'ad' } },
  });
  const info = parseJoinInfo(
    (
      await waitFor(
        () => core.readNamespacedConfigMap({ name: joinInfoConfigMapName, namespace }),
        {
          description: 'winfleet-join',
          timeoutMs: 30_000,
        },
      )
    ).data![joinInfoKey]!,
  );
  await waitFor(
    () => core.readNamespacedConfigMap({ name: clusterInfoName, namespace: clusterInfoNamespace }),
    {
      description: 'cluster-info',
      timeoutMs: 30_000,
    },
  );

  // The operator serves a payload directory: hosts could not pull it.
  const fromDir = await winfleet(['join-command', ...kubeconfig, '--pool', 'web']);
  assert.equal(fromDir.code, 1, show(fromDir));
  assert.match(
    fromDir.stderr,
    /serves its payload from a directory \(--payload-dir\), which hosts cannot pull; joining by command needs it running with --payload-image/,
  );
  await nothingLeft(kc);

  // As the operator would publish a registry payload (it is stopped so as not to rewrite it).
  await operator.stop();
  await publishWithPayload(kc, info);

  for (const [args, message] of [
    [
      ['--pool', 'nope'],
      /--pool: no WindowsNodePool nope in namespace winfleet-system \(there: corp, gpu, open, web\)/,
    ],
    [
      ['--pool', 'open'],
      /WindowsNodePool winfleet-system\/open sets no spec\.join\.nodeNamePattern, which a pool must before it takes join tokens .*kubectl patch windowsnodepool -n winfleet-system open --type merge/,
    ],
    [
      ['--pool', 'corp'],
      /WindowsNodePool winfleet-system\/corp joins its hosts to Active Directory domain "corp\.example\.com" \(spec\.activeDirectory\).*takes no join tokens/,
    ],
    [['--pool', 'gpu'], /selector cannot be met by its matchLabels alone/],
    [
      ['--pool', 'web', '--operator-namespace', 'elsewhere'],
      /has not published ConfigMap elsewhere\/winfleet-join/,
    ],
  ] as const) {
    const refused = await winfleet(['join-command', ...kubeconfig, ...args]);
    assert.equal(refused.code, 1, show(refused));
    assert.match(refused.stderr, message);
    assert.equal(refused.stdout, '');
  }
  await nothingLeft(kc);
  const badFlags = await winfleet(['join-command', ...kubeconfig, '--pool', 'web', '--ttl', '30d']);
  assert.equal(badFlags.code, 2, show(badFlags));

  const run = await winfleet([
    'join-command',
    ...kubeconfig,
    '--pool',
    'web',
    '--uses',
    '2',
    '--ttl',
    '30m',
    '--format',
    'aws',
  ]);
  assert.equal(run.code, 0, show(run));
  const [, id, secret] = /'([a-z0-9]{6})\.([a-z0-9]{16})'/.exec(run.stdout) ?? [];
  assert.ok(id && secret, `a token in the script:\n${run.stdout}`);
  assert.match(run.stdout, /^<powershell>\n[\s\S]*<\/powershell>\n$/);
  assert.ok(
    run.stdout.includes(`'${opensslPin(cluster.pki.caCert)}'`),
    'the CA hash, as OpenSSL computes it',
  );
  assert.ok(run.stdout.includes(`'${info.apiServer}'`), 'the API server');
  assert.ok(run.stdout.includes(`'${namespace}'`), 'the operator namespace');
  assert.match(run.stdout, new RegExp(agentSha256, 'i'), 'the agent’s SHA-256');
  const agentUrl = `http://${repository.replace('/winfleet/payload', '')}/v2/winfleet/payload/blobs/sha256:${agentSha256}`;
  assert.ok(run.stdout.includes(`'${agentUrl}'`), `the agent's blob URL ${agentUrl}`);
  const agent = Buffer.from(await (await fetch(agentUrl)).arrayBuffer());
  assert.equal(
    createHash('sha256').update(agent).digest('hex'),
    agentSha256,
    'the URL serves the agent',
  );
  assert.match(
    run.stderr,
    new RegExp(
      `^join token ${id}: 2 hosts may join WindowsNodePool winfleet-system/web until \\S+Z; revoke it with: winfleet join-tokens revoke ${id}\\n$`,
    ),
  );

  const token = await core.readNamespacedSecret({
    name: `bootstrap-token-${id}`,
    namespace: 'kube-system',
  });
  assert.equal(token.type, 'bootstrap.kubernetes.io/token');
  assert.equal(`${decode(token, 'token-id')}.${decode(token, 'token-secret')}`, `${id}.${secret}`);
  assert.equal(decode(token, 'usage-bootstrap-authentication'), 'true');
  assert.equal(decode(token, 'usage-bootstrap-signing'), 'true');
  assert.equal(decode(token, 'auth-extra-groups'), 'system:bootstrappers:winfleet');
  const expires = Date.parse(decode(token, 'expiration'));
  assert.ok(
    Math.abs(expires - (Date.now() + 30 * 60_000)) < 2 * 60_000,
    decode(token, 'expiration'),
  );
  const record = (await readJoinTokenRecord(kc, namespace, id!))!;
  assert.deepEqual(
    { ...record, expires: Date.parse(record.expires) },
    {
      tokenId: id,
      pool: 'web',
      namespace,
      uses: 2,
      usesLeft: 2,
      expires,
      labels: { pool: 'web' },
      joined: [],
    },
  );
  // The bootstrapsigner signed cluster-info for it before the command returned.
  const signed = await core.readNamespacedConfigMap({
    name: clusterInfoName,
    namespace: clusterInfoNamespace,
  });
  assert.ok(signed.data?.[`jws-kubeconfig-${id}`]);

  const withUrl = await winfleet([
    'join-command',
    ...kubeconfig,
    '--pool',
    'web',
    '--agent-url',
    'https://downloads.example.com/winfleet-agent.exe',
  ]);
  assert.equal(withUrl.code, 0, show(withUrl));
  assert.ok(withUrl.stdout.includes("'https://downloads.example.com/winfleet-agent.exe'"));
  assert.match(withUrl.stdout, new RegExp(agentSha256, 'i'), 'still the payload’s SHA-256');
  const secondId = /join token ([a-z0-9]{6})/.exec(withUrl.stderr)![1]!;

  const listed = await winfleet(['join-tokens', 'list', ...kubeconfig, '-o', 'json']);
  assert.equal(listed.code, 0, show(listed));
  const rows = JSON.parse(listed.stdout) as {
    id: string;
    pool: string;
    usesLeft: number;
    uses: number;
  }[];
  assert.deepEqual(
    rows.map((r) => [r.id, r.pool, r.usesLeft, r.uses]).sort(),
    [
      [id, 'winfleet-system/web', 2, 2],
      [secondId, 'winfleet-system/web', 1, 1],
    ].sort(),
  );
  const table = await winfleet(['join-tokens', 'list', ...kubeconfig]);
  assert.match(table.stdout, /^ID\s+POOL\s+USES LEFT\s+EXPIRES\n/);
  for (const output of [listed.stdout, table.stdout])
    assert.ok(!output.includes(secret!), 'no secret listed');

  // The second token expires (its record says so, as time would): prune takes it, record and
  // Secret, and leaves the first, which still has uses left.
  const secondName = joinTokenRecordName(secondId);
  const second = await core.readNamespacedConfigMap({ name: secondName, namespace });
  const secondRecord = JSON.parse(second.data!['token.json']!) as Record<string, unknown>;
  second.data!['token.json'] = JSON.stringify({ ...secondRecord, expires: '2020-01-01T00:00:00Z' });
  await core.replaceNamespacedConfigMap({ name: secondName, namespace, body: second });
  const dry = await winfleet(['join-tokens', 'prune', ...kubeconfig, '--dry-run']);
  assert.equal(dry.code, 0, show(dry));
  assert.equal(
    dry.stdout,
    `join token ${secondId} would be revoked: expired at 2020-01-01T00:00:00Z\n`,
  );
  await core.readNamespacedConfigMap({ name: secondName, namespace });
  const pruned = await winfleet(['join-tokens', 'prune', ...kubeconfig]);
  assert.equal(pruned.code, 0, show(pruned));
  assert.equal(pruned.stdout, `join token ${secondId} revoked: expired at 2020-01-01T00:00:00Z\n`);
  await assert.rejects(core.readNamespacedConfigMap({ name: secondName, namespace }), (e) =>
    isNotFound(e),
  );
  await assert.rejects(
    core.readNamespacedSecret({ name: `bootstrap-token-${secondId}`, namespace: 'kube-system' }),
    (e) => isNotFound(e),
  );
  assert.ok(await readJoinTokenRecord(kc, namespace, id!), 'the first token is kept');
  const none = await winfleet(['join-tokens', 'prune', ...kubeconfig]);
  assert.equal(none.stdout, 'no expired or used-up join token in winfleet-system\n');

  const revoked = await winfleet(['join-tokens', 'revoke', ...kubeconfig, id!]);
  assert.equal(revoked.code, 0, show(revoked));
  await assert.rejects(
    core.readNamespacedSecret({ name: `bootstrap-token-${id}`, namespace: 'kube-system' }),
    (e) => isNotFound(e),
  );
  await assert.rejects(
    core.readNamespacedConfigMap({ name: joinTokenRecordName(id!), namespace }),
    (e) => isNotFound(e),
  );
  const again = await winfleet(['join-tokens', 'revoke', ...kubeconfig, id!]);
  assert.equal(again.code, 1, show(again));
  assert.match(again.stderr, /no join token \w+ in winfleet-system/);
  await nothingLeft(kc);

  // A kubeconfig that skips TLS verification and names no CA works with the CA's hash: the
  // command verifies the API server against cluster-info's CA of that hash (issue 33).
  const insecure = parseYaml(await readFile(cluster.kubeconfigPath, 'utf8')) as {
    clusters: { cluster: Record<string, unknown> }[];
  };
  for (const { cluster: c } of insecure.clusters) {
    delete c['certificate-authority-data'];
    delete c['certificate-authority'];
    c['insecure-skip-tls-verify'] = true;
  }
  const insecurePath = join(await mkdtemp(join(tmpdir(), 'winfleet-insecure-')), 'kubeconfig');
  await writeFile(insecurePath, stringify(insecure));
  const refusedInsecure = await winfleet([
    'join-command',
    '--kubeconfig',
    insecurePath,
    '--pool',
    'web',
  ]);
  assert.equal(refusedInsecure.code, 1, show(refusedInsecure));
  assert.match(refusedInsecure.stderr, /--ca-cert-hash sha256:<hash>.* or --ca-file/);
  const pinned = await winfleet([
    'join-command',
    '--kubeconfig',
    insecurePath,
    '--pool',
    'web',
    '--ca-cert-hash',
    opensslPin(cluster.pki.caCert).toUpperCase().replace('SHA256:', 'sha256:'),
  ]);
  assert.equal(pinned.code, 0, show(pinned));
  assert.ok(pinned.stdout.includes(opensslPin(cluster.pki.caCert)), 'the script pins that CA');
  const pinnedId = /join token ([a-z0-9]{6})/.exec(pinned.stderr)![1]!;
  assert.equal((await winfleet(['join-tokens', 'revoke', ...kubeconfig, pinnedId])).code, 0);
  await nothingLeft(kc);
});

test('a cluster without bootstrap-token authentication: said plainly, and nothing left behind', async (t) => {
  const cluster = await freshCluster(t, { bootstrapTokenAuth: false });
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await installCrds(kc);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await createPool(kc, namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    join: { nodeNamePattern: '^web-[0-9]+$' },
  });
  // What the operator would have made: cluster-info and winfleet-join with a registry payload.
  const c = kc.getCurrentCluster()!;
  await core.createNamespacedConfigMap({
    namespace: clusterInfoNamespace,
    body: {
      metadata: { name: clusterInfoName, namespace: clusterInfoNamespace },
      data: {
        [clusterInfoKubeconfigKey]: clusterInfoKubeconfig(
          c.server,
          await readFile(cluster.pki.caCert, 'utf8'),
        ),
      },
    },
  });
  await publishWithPayload(kc, {
    apiServer: c.server,
    clusterDNS: '10.96.0.10',
    clusterDomain: 'cluster.local',
    serviceCIDR: '10.96.0.0/12',
    podCIDR: '10.244.0.0/16',
    windowsTaint: { key: 'os', value: 'windows', effect: 'NoSchedule' },
    kubelet: { systemReserved: {}, priorityClass: 'system-node-critical', maxPods: 110 },
    checkIntervalSeconds: 5,
    servicesVersion: payload.version,
  });

  const run = await winfleet([
    'join-command',
    '--kubeconfig',
    cluster.kubeconfigPath,
    '--pool',
    'web',
  ]);
  assert.equal(run.code, 1, show(run));
  assert.equal(run.stdout, '', 'no script');
  assert.match(
    run.stderr,
    /^error: the cluster does not accept bootstrap tokens: the API server answered 401 to the new join token for 10 s, so it runs without bootstrap-token authentication \(kube-apiserver --enable-bootstrap-token-auth\), as some managed Kubernetes offerings do\. Joining by command needs it/,
  );
  assert.match(run.stderr, /nothing was left behind/);
  await nothingLeft(kc);
});

test('attacker: with a kubeconfig that skips TLS verification, join-command pins no CA it did not verify (issue 33)', async (t) => {
  // The cluster's CA, as the admin knows it (a file, or its hash), and a man in the middle that
  // answers at the API server's address with a certificate of its own CA and serves a
  // cluster-info naming that CA.
  const clusterCa = await createCertificateAuthority('the-cluster-ca');
  const hostileCa = await createCertificateAuthority('man-in-the-middle');
  const hostileCert = await issueCertificate(hostileCa, {
    commonName: 'kube-apiserver',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const requests: string[] = [];
  const hostile = createHttpsServer(
    { cert: hostileCert.certPem, key: hostileCert.keyPem },
    (request, response) => {
      requests.push(`${request.method} ${request.url}`);
      if (
        request.method === 'GET' &&
        request.url === `/api/v1/namespaces/${clusterInfoNamespace}/configmaps/${clusterInfoName}`
      ) {
        response.setHeader('content-type', 'application/json');
        response.end(
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: clusterInfoName, namespace: clusterInfoNamespace },
            data: {
              [clusterInfoKubeconfigKey]: clusterInfoKubeconfig(
                'https://127.0.0.1:6443',
                hostileCa.certPem,
              ),
            },
          }),
        );
        return;
      }
      response.statusCode = 403;
      response.end('{}');
    },
  );
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  t.after(() => hostile.close());
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-mitm-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  await writeFile(
    kubeconfigPath,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: {
            server: `https://127.0.0.1:${(hostile.address() as AddressInfo).port}`,
            'insecure-skip-tls-verify': true,
          },
        },
      ],
      users: [{ name: 'admin', user: { token: 'admin-token' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'admin' } }],
      'current-context': 'x',
    }),
  );
  const caFile = join(dir, 'ca.crt');
  await writeFile(caFile, clusterCa.certPem);
  const joinCommand = (...args: string[]) =>
    winfleet(['join-command', '--kubeconfig', kubeconfigPath, '--pool', 'web', ...args]);

  await t.test('without a CA it refuses before sending anything, naming the flags', async () => {
    const run = await joinCommand();
    assert.equal(run.code, 1, show(run));
    assert.equal(run.stdout, '', 'no script');
    assert.match(
      run.stderr,
      /^error: your kubeconfig skips TLS verification for https:\/\/127\.0\.0\.1:\d+ \(insecure-skip-tls-verify\) and names no CA, so nothing proves who answers: .* Give the cluster CA: --ca-cert-hash sha256:<hash> \(on a control-plane node: openssl x509 -pubkey .*\) or --ca-file <the CA's PEM file>\. Nothing was created/,
    );
    assert.deepEqual(requests, [], 'nothing was sent');
  });

  await t.test(
    '--ca-cert-hash of the real CA: the forged cluster-info is refused, no token made',
    async () => {
      const run = await joinCommand('--ca-cert-hash', opensslPin(caFile));
      assert.equal(run.code, 1, show(run));
      assert.match(
        run.stderr,
        /^error: ConfigMap kube-public\/cluster-info names a CA \(sha256:[0-9a-f]{64}\) other than --ca-cert-hash sha256:[0-9a-f]{64}: whoever answered at https:\/\/127\.0\.0\.1:\d+ is not the cluster that hash is of \(a man in the middle\?\)/,
      );
      assert.deepEqual(requests, [
        `GET /api/v1/namespaces/${clusterInfoNamespace}/configmaps/${clusterInfoName}`,
      ]);
    },
  );

  await t.test('--ca-file of the real CA: the handshake fails, nothing is sent', async () => {
    requests.length = 0;
    const run = await joinCommand('--ca-file', caFile);
    assert.equal(run.code, 1, show(run));
    assert.equal(run.stdout, '');
    assert.deepEqual(requests, [], 'no request reached the man in the middle');
  });

  await t.test('a malformed hash is refused naming the flag', async () => {
    const run = await joinCommand('--ca-cert-hash', 'md5:1234');
    assert.notEqual(run.code, 0, show(run));
    assert.match(run.stderr, /--ca-cert-hash.*"md5:1234" is not sha256:<64 hex digits>/);
  });
});
