/**
 * Joins by command, the cluster side, against a real control plane (a private cluster: its
 * controller manager runs the bootstrapsigner) and the operator in-process: cluster-info made
 * and signed for a join token; winfleet-join and who may read it; and CSRs sent with real join
 * tokens through the real API server — approved with a Pull-mode WindowsHost and a use taken;
 * refused for a taken name (WindowsHost, Node, a racing CSR), a name outside the pool's
 * pattern, a used-up, revoked or expired token. Each waits for the approver's decision, never
 * for a fixed time. Tokens that no longer authenticate are used through impersonation of the
 * identity the API server gave them.
 */
// @peculiar/x509 needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { parse } from 'yaml';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { freshCluster } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { csrDecision, readWindowsHost } from '../../../sim/testkit/windows-hosts.ts';
import { servicesManifestConfigMapName } from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import { hostFinalizer } from '../../api/windows-host.ts';
import { kubeRequest } from '../../cli/check/kube-request.ts';
import { bootstrapTokenAuthentication, tokenKubeConfig } from '../../join/bootstrap-token-auth.ts';
import { bootstrapGroup, bootstrapTokenSecretName } from '../../join/bootstrap-tokens.ts';
import {
  clusterInfoKubeconfigKey,
  clusterInfoName,
  clusterInfoNamespace,
  trustClusterInfo,
} from '../../join/cluster-info.ts';
import { joinCaHash } from '../../join/join-ca-hash.ts';
import { joinInfoConfigMapName, joinInfoKey, parseJoinInfo } from '../../join/join-info.ts';
import {
  joinTokenRecordKey,
  joinTokenRecordName,
  parseJoinTokenRecord,
} from '../../join/join-token-record.ts';
import { createJoinToken, readJoinTokenRecord, revokeJoinToken } from '../../join/join-tokens.ts';
import { readRetiredNodeName } from '../../join/retired-node-names.ts';
import { isConflict, isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import { createCsrPem, generateKeyPair } from '../../pki/certificates.ts';
import { publishedManifestsConfigMapName } from '../../servicesmanifest/published-manifests.ts';
import { pullModeMessage } from '../hosts/pull-mode-host.ts';

const cluster = await freshCluster();
after(() => cluster.stop());
const { kc } = cluster;
const namespace = 'winfleet-system';
const payloadDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
await writeStandInPayload(payloadDir);
const logLines: string[] = [];
const operator = await startTestOperator(kc, {
  namespace,
  payloadDir,
  webhook: false,
  log: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
  config: { hosts: { agentCheckIntervalSeconds: 1 } },
});
after(() => operator.stop());
const core = kc.makeApiClient(k8s.CoreV1Api);
const certificates = kc.makeApiClient(k8s.CertificatesV1Api);
const authorization = kc.makeApiClient(k8s.AuthorizationV1Api);
const server = kc.getCurrentCluster()!.server;
const secrets: string[] = [];

await createPool(kc, namespace, 'web', {
  selector: { matchLabels: { pool: 'web' } },
  join: { nodeNamePattern: '^web-[0-9]+$' },
});

async function newToken(uses: number, ttlMs = 10 * 60_000) {
  const made = await createJoinToken(kc, {
    operatorNamespace: namespace,
    pool: 'web',
    namespace,
    uses,
    ttlMs,
    labels: { pool: 'web' },
  });
  secrets.push(made.token.split('.')[1]!);
  return made;
}

/** Waits until the API server authenticates `token` (its authenticator reads a Secret cache). */
async function authenticated(token: string): Promise<k8s.KubeConfig> {
  await waitFor(
    async () =>
      (await bootstrapTokenAuthentication(kc, token, { timeoutMs: 0 })).outcome === 'authenticated',
    { description: 'the join token to authenticate', timeoutMs: 20_000 },
  );
  return tokenKubeConfig(kc, token);
}

let csrCount = 0;
async function csrBody(nodeName: string) {
  const request = Buffer.from(
    await createCsrPem(
      { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] },
      await generateKeyPair(),
    ),
  ).toString('base64');
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name: `join-${nodeName}-${++csrCount}` },
    spec: {
      request,
      signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
      usages: ['digital signature', 'key encipherment', 'client auth'],
    },
  };
}

/** A kubelet's client CSR for `nodeName`, sent with the join token; its name. */
async function submit(tokenKc: k8s.KubeConfig, nodeName: string): Promise<string> {
  const body = await csrBody(nodeName);
  await tokenKc.makeApiClient(k8s.CertificatesV1Api).createCertificateSigningRequest({ body });
  return body.metadata.name;
}

/** The same CSR from token `id`'s identity (impersonated): for a token that no longer authenticates. */
async function submitAs(id: string, nodeName: string): Promise<string> {
  const body = await csrBody(nodeName);
  const response = await kubeRequest(
    kc,
    'POST',
    '/apis/certificates.k8s.io/v1/certificatesigningrequests',
    {
      body,
      headers: {
        'Impersonate-User': `system:bootstrap:${id}`,
        'Impersonate-Group': ['system:bootstrappers', bootstrapGroup] as unknown as string,
      },
    },
  );
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return body.metadata.name;
}

const decision = (name: string) => csrDecision(certificates, name);

/** Whether a user in `groups` may do it, once the RBAC cache has caught up. */
async function eventually(
  expected: boolean,
  user: string,
  groups: string[],
  attributes: k8s.V1ResourceAttributes,
) {
  await waitFor(
    async () =>
      (
        await authorization.createSubjectAccessReview({
          body: {
            spec: {
              user,
              groups: [...groups, 'system:authenticated'],
              resourceAttributes: attributes,
            },
          },
        })
      ).status?.allowed === expected,
    {
      description: `${user} ${expected ? '' : 'not '}allowed ${JSON.stringify(attributes)}`,
      timeoutMs: 20_000,
    },
  );
}

test('cluster-info: made by the operator, signed by the bootstrapsigner for a join token, readable by anyone', async () => {
  const info = await waitFor(
    () => core.readNamespacedConfigMap({ name: clusterInfoName, namespace: clusterInfoNamespace }),
    { description: 'kube-public/cluster-info', timeoutMs: 30_000 },
  );
  assert.equal(info.metadata?.labels?.['app.kubernetes.io/managed-by'], 'winfleet');
  const kubeconfig = info.data![clusterInfoKubeconfigKey]!;
  const parsed = parse(kubeconfig) as { clusters: { cluster: Record<string, string> }[] };
  assert.equal(parsed.clusters.length, 1);
  assert.equal(parsed.clusters[0]!.cluster.server, server);
  assert.equal(
    Buffer.from(parsed.clusters[0]!.cluster['certificate-authority-data']!, 'base64').toString(),
    await readFile(cluster.pki.caCert, 'utf8'),
  );

  const { id, token } = await newToken(1);
  const jws = await waitFor(
    async () =>
      (
        await core.readNamespacedConfigMap({
          name: clusterInfoName,
          namespace: clusterInfoNamespace,
        })
      ).data?.[`jws-kubeconfig-${id}`],
    { description: `the bootstrapsigner's jws-kubeconfig-${id}`, timeoutMs: 30_000 },
  );
  // A detached JWS (RFC 7515 appendix F): HS256 keyed by the token's secret, over the kubeconfig.
  const [header, payload, signature] = jws.split('.');
  assert.equal(payload, '');
  assert.deepEqual(JSON.parse(Buffer.from(header!, 'base64url').toString()), {
    alg: 'HS256',
    kid: id,
  });
  const expected = createHmac('sha256', token.split('.')[1]!)
    .update(`${header}.${Buffer.from(kubeconfig).toString('base64url')}`)
    .digest('base64url');
  assert.equal(signature, expected, 'the signature verifies with the token secret');
  // And as a joining agent checks it (src/join/cluster-info.ts), with the hash join-command pins.
  const pin = await joinCaHash(kc);
  assert.ok('hash' in pin, JSON.stringify(pin));
  const signed = await core.readNamespacedConfigMap({
    name: clusterInfoName,
    namespace: clusterInfoNamespace,
  });
  const [tokenId, tokenSecret] = token.split('.') as [string, string];
  const trusted = trustClusterInfo(signed.data!, { id: tokenId, secret: tokenSecret }, pin.hash);
  assert.equal(trusted.server, server);
  assert.throws(
    () => trustClusterInfo(signed.data!, { id: tokenId, secret: 'x'.repeat(16) }, pin.hash),
    /does not match its kubeconfig/,
  );

  // Anyone may read it (a joining host has no credential yet), and nothing else there.
  const anonymous = new k8s.KubeConfig();
  const c = kc.getCurrentCluster()!;
  anonymous.loadFromOptions({
    clusters: [{ ...c, name: 'c' }],
    users: [{ name: 'anonymous' }],
    contexts: [{ name: 'a', cluster: 'c', user: 'anonymous' }],
    currentContext: 'a',
  });
  await waitFor(
    () =>
      anonymous
        .makeApiClient(k8s.CoreV1Api)
        .readNamespacedConfigMap({ name: clusterInfoName, namespace: clusterInfoNamespace }),
    { description: 'an anonymous read of cluster-info', timeoutMs: 20_000 },
  );
  await eventually(false, 'system:anonymous', ['system:unauthenticated'], {
    namespace: clusterInfoNamespace,
    verb: 'get',
    resource: 'configmaps',
    name: 'kube-root-ca.crt',
  });
  await revokeJoinToken(kc, namespace, id);
});

test('winfleet-join: written from the config and payload, its manifest published; readable by name by joining hosts and nodes only', async () => {
  const configMap = await waitFor(
    () => core.readNamespacedConfigMap({ name: joinInfoConfigMapName, namespace }),
    { description: 'winfleet-join', timeoutMs: 30_000 },
  );
  const info = parseJoinInfo(configMap.data![joinInfoKey]!);
  assert.equal(info.apiServer, server);
  assert.equal(info.payload, undefined, 'a payload directory: hosts cannot pull it');
  assert.equal(info.checkIntervalSeconds, 1);
  const manifestName = servicesManifestConfigMapName(info.servicesVersion);
  await core.readNamespacedConfigMap({ name: manifestName, namespace });
  const record = await core.readNamespacedConfigMap({
    name: publishedManifestsConfigMapName,
    namespace,
  });
  assert.ok(record.data?.[manifestName], 'the published record lists it');

  const getConfigMap = (name: string) => ({ namespace, verb: 'get', resource: 'configmaps', name });
  for (const [user, groups] of [
    ['system:bootstrap:abcdef', ['system:bootstrappers', bootstrapGroup]],
    ['system:node:web-1', ['system:nodes']],
  ] as const) {
    for (const name of [joinInfoConfigMapName, manifestName, publishedManifestsConfigMapName]) {
      await eventually(true, user, [...groups], getConfigMap(name));
    }
    await eventually(false, user, [...groups], getConfigMap('winfleet-config'));
    await eventually(false, user, [...groups], getConfigMap(joinTokenRecordName('abcdef')));
    await eventually(false, user, [...groups], { namespace, verb: 'list', resource: 'configmaps' });
    await eventually(false, user, [...groups], {
      namespace,
      verb: 'get',
      resource: 'secrets',
      name: 'winfleet-ssh-key',
    });
  }
  // Another bootstrap token (kubeadm's group) reads none of it.
  await eventually(
    false,
    'system:bootstrap:kubeadm',
    ['system:bootstrappers'],
    getConfigMap(joinInfoConfigMapName),
  );
});

test('a join token’s CSRs through the real API server: approved with a Pull WindowsHost and a use taken; refused for a taken name, a name outside the pattern, a racing CSR, a used-up token', async () => {
  const { id, token } = await newToken(3);
  const tokenKc = await authenticated(token);

  const first = await submit(tokenKc, 'web-1');
  assert.match(
    await decision(first),
    /^Approved: kubelet client certificate for new Node web-1 joining WindowsNodePool winfleet-system\/web with join token \w+; WindowsHost winfleet-system\/web-1 created in Pull mode; 2 uses left$/,
  );
  const host = await readWindowsHost(kc, namespace, 'web-1');
  assert.equal(host.spec.mode, 'Pull');
  assert.equal(host.spec.pool, 'web');
  assert.equal(host.spec.nodeName, 'web-1');
  assert.equal(host.spec.sshKeySecretRef, undefined);
  assert.equal(host.metadata.labels?.pool, 'web', 'the pool selects it');
  let record = (await readJoinTokenRecord(kc, namespace, id))!;
  assert.equal(record.usesLeft, 2);
  assert.deepEqual(
    record.joined.map((u) => u.nodeName),
    ['web-1'],
  );
  // The controller manager signs it: the join is real.
  await waitFor(
    async () =>
      (await certificates.readCertificateSigningRequest({ name: first })).status?.certificate,
    {
      description: 'the signed kubelet client certificate',
      timeoutMs: 30_000,
    },
  );
  // The host controller runs it through its agent, never over SSH, and says so; its finalizer
  // has the removal ask the agent to deconfigure the host.
  const reported = await waitFor(
    async () => {
      const h = await readWindowsHost(kc, namespace, 'web-1');
      return h.status?.conditions?.some((c) => c.reason === ConditionReason.PullMode)
        ? h
        : undefined;
    },
    { description: 'the PullMode condition', timeoutMs: 20_000 },
  );
  const reachable = reported.status!.conditions!.find((c) => c.type === ConditionType.Reachable)!;
  assert.deepEqual([reachable.status, reachable.message], ['Unknown', pullModeMessage]);
  const finalized = await waitFor(
    async () => {
      const h = await readWindowsHost(kc, namespace, 'web-1');
      return h.metadata.finalizers?.length ? h : undefined;
    },
    { description: 'the finalizer', timeoutMs: 20_000 },
  );
  assert.deepEqual(finalized.metadata.finalizers, [hostFinalizer]);
  const events = await core.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.name=web-1`,
  });
  assert.ok(
    events.items.some((e) => e.reason === EventReason.CSRApproved && e.message?.includes(first)),
  );

  // Attacker side: the same token for a taken name, a Node's name, a name off the pattern.
  assert.match(
    await decision(await submit(tokenKc, 'web-1')),
    /^Denied: join by command refused \(name-taken\): node name web-1 is taken: WindowsHost winfleet-system\/web-1/,
  );
  await core.createNode({ body: { metadata: { name: 'web-7' } } });
  assert.match(
    await decision(await submit(tokenKc, 'web-7')),
    /^Denied: .*\(name-taken\): node name web-7 is taken: Node web-7 already exists/,
  );
  assert.match(
    await decision(await submit(tokenKc, 'db-1')),
    /^Denied: .*\(name-pattern\): node name db-1 does not match/,
  );

  // Two CSRs racing for one name: exactly one is approved.
  const racing = await Promise.all([submit(tokenKc, 'web-3'), submit(tokenKc, 'web-3')]);
  const outcomes = await Promise.all(racing.map(decision));
  assert.deepEqual(
    outcomes.map((o) => o.split(':')[0]).sort(),
    ['Approved', 'Denied'],
    outcomes.join('\n'),
  );
  assert.match(outcomes.find((o) => o.startsWith('Denied'))!, /\(name-taken\)/);

  // The last use: the token's Secret goes, the token stops working, its identity is refused.
  assert.match(await decision(await submit(tokenKc, 'web-2')), /^Approved: .*; 0 uses left$/);
  record = (await readJoinTokenRecord(kc, namespace, id))!;
  assert.deepEqual(
    [record.usesLeft, record.joined.map((u) => u.nodeName).sort()],
    [0, ['web-1', 'web-2', 'web-3']],
  );
  await assert.rejects(
    core.readNamespacedSecret({ name: bootstrapTokenSecretName(id), namespace: 'kube-system' }),
    (error) => isNotFound(error),
  );
  await waitFor(
    async () =>
      (await bootstrapTokenAuthentication(kc, token, { timeoutMs: 0 })).outcome === 'refused',
    {
      description: 'the used-up token to be refused',
      timeoutMs: 20_000,
    },
  );
  assert.match(
    await decision(await submitAs(id, 'web-4')),
    /^Denied: join by command refused \(uses\): join token \w+ is used up \(3 uses\)$/,
  );
  for (const name of ['web-4', 'web-7', 'db-1']) {
    await assert.rejects(readWindowsHost(kc, namespace, name), (error) => isNotFound(error), name);
  }
});

test('attacker’s side: a removed Pull host’s name is not issued again while its certificate may be valid', async () => {
  // web-2 joined in the test above (its certificate was issued); it is removed, never having
  // registered a Node, so its removal ends at once.
  await k8s.KubernetesObjectApi.makeApiClient(kc).delete(
    await readWindowsHost(kc, namespace, 'web-2'),
  );
  await waitFor(
    async () =>
      readWindowsHost(kc, namespace, 'web-2').then(
        () => false,
        (error) => isNotFound(error),
      ),
    { description: 'WindowsHost web-2 gone', timeoutMs: 60_000 },
  );
  const retired = await readRetiredNodeName(kc, namespace, 'web-2', new Date());
  assert.ok(retired && !('problem' in retired), JSON.stringify(retired));
  assert.equal(retired.host, `${namespace}/web-2`);
  // A year by default: kube-controller-manager's default signing duration.
  assert.ok(Date.parse(retired.until) > Date.now() + 364 * 86_400_000, retired.until);

  // A new token asking for the name again: denied, naming why and until when.
  const { id, token } = await newToken(2);
  const tokenKc = await authenticated(token);
  assert.match(
    await decision(await submit(tokenKc, 'web-2')),
    /^Denied: join by command refused \(name-retired\): node name web-2 belonged to WindowsHost winfleet-system\/web-2, removed; the node certificate it was given may be valid until \d{4}-.*Z \(Kubernetes cannot revoke it\)/,
  );
  await assert.rejects(readWindowsHost(kc, namespace, 'web-2'), (error) => isNotFound(error));
  assert.equal((await readJoinTokenRecord(kc, namespace, id))?.usesLeft, 2, 'no use taken');
  // Another name still joins.
  assert.match(await decision(await submit(tokenKc, 'web-20')), /^Approved: /);
  await revokeJoinToken(kc, namespace, id);
});

test('refused: a revoked token (its record deleted, the token still valid), an expired record, a record someone wrote wrong', async () => {
  const revoked = await newToken(5);
  const revokedKc = await authenticated(revoked.token);
  await core.deleteNamespacedConfigMap({ name: joinTokenRecordName(revoked.id), namespace });
  assert.match(
    await decision(await submit(revokedKc, 'web-10')),
    /^Denied: join by command refused \(token\): bootstrap token \w+ belongs to no known WindowsHost and has no join-token record: it was revoked/,
  );

  const expired = await newToken(5);
  const expiredKc = await authenticated(expired.token);
  const name = joinTokenRecordName(expired.id);
  const configMap = await core.readNamespacedConfigMap({ name, namespace });
  const record = parseJoinTokenRecord(name, configMap.data![joinTokenRecordKey]);
  // The Secret still authenticates; the operator's own record says the token has expired.
  configMap.data![joinTokenRecordKey] = JSON.stringify({
    ...record,
    expires: '2020-01-01T00:00:00Z',
  });
  await core.replaceNamespacedConfigMap({ name, namespace, body: configMap });
  assert.match(
    await decision(await submit(expiredKc, 'web-11')),
    /^Denied: .*\(expiry\): join token \w+ expired at 2020-01-01T00:00:00Z$/,
  );

  const latest = await core.readNamespacedConfigMap({ name, namespace });
  latest.data![joinTokenRecordKey] = JSON.stringify({ ...record, usesLeft: 900 });
  await core.replaceNamespacedConfigMap({ name, namespace, body: latest });
  assert.match(
    await decision(await submit(expiredKc, 'web-12')),
    /^Denied: .*\(token\): Invalid ConfigMap winfleet-join-token-\w+ key token\.json:.*usesLeft/s,
  );
  for (const host of ['web-10', 'web-11', 'web-12']) {
    await assert.rejects(readWindowsHost(kc, namespace, host), (error) => isNotFound(error), host);
  }
  await revokeJoinToken(kc, namespace, expired.id);
});

test('a cluster-info someone else made is left alone; deleted, winfleet makes its own again', async () => {
  const foreign = 'apiVersion: v1\nkind: Config\nclusters: []\n';
  // The controller manager's bootstrap signer writes jws-kubeconfig-* keys
  // into cluster-info whenever a token comes or goes: replace on the latest
  // version, again on a conflict.
  for (let attempt = 1; ; attempt++) {
    const current = await core.readNamespacedConfigMap({
      name: clusterInfoName,
      namespace: clusterInfoNamespace,
    });
    try {
      await core.replaceNamespacedConfigMap({
        name: clusterInfoName,
        namespace: clusterInfoNamespace,
        body: {
          metadata: {
            name: clusterInfoName,
            namespace: clusterInfoNamespace,
            resourceVersion: current.metadata?.resourceVersion,
          },
          data: { [clusterInfoKubeconfigKey]: foreign },
        },
      });
      break;
    } catch (error) {
      if (!isConflict(error) || attempt >= 10) throw error;
    }
  }
  await waitFor(() => logLines.some((l) => l.includes('not winfleet’s: left alone')), {
    description: 'the operator to see the foreign cluster-info',
    timeoutMs: 20_000,
  });
  const after = await core.readNamespacedConfigMap({
    name: clusterInfoName,
    namespace: clusterInfoNamespace,
  });
  assert.equal(after.data?.[clusterInfoKubeconfigKey], foreign);
  await core.deleteNamespacedConfigMap({ name: clusterInfoName, namespace: clusterInfoNamespace });
  await waitFor(
    async () =>
      (
        await core.readNamespacedConfigMap({
          name: clusterInfoName,
          namespace: clusterInfoNamespace,
        })
      ).metadata?.labels?.['app.kubernetes.io/managed-by'] === 'winfleet',
    { description: 'winfleet’s cluster-info again', timeoutMs: 20_000 },
  );
});

test('every decision is logged with its reason, denials with their check; no token secret is ever logged', () => {
  const decisions = logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'CSR approved' || l.msg === 'CSR denied');
  assert.ok(decisions.some((l) => l.msg === 'CSR approved'));
  for (const check of ['name-taken', 'name-pattern', 'uses', 'token', 'expiry']) {
    assert.ok(
      decisions.some((l) => l.msg === 'CSR denied' && l.check === check),
      `a denial logged with check ${check}`,
    );
  }
  for (const secret of secrets) {
    assert.ok(!logLines.some((l) => l.includes(secret)), 'a token secret in the operator log');
  }
});
