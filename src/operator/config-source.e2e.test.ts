/**
 * A bad winfleet-config never stops the operator. The operator process is started with a
 * ConfigMap whose mirrors the resolver cannot use (one endpoint carrying credentials): it runs
 * on the defaults, its CSR approver decides CSRs, and it reports each bad field (log, Event,
 * /config on the status server) without the credentials. A bad edit while running keeps the
 * previous routing in force, as the webhook's warnings show. What watchConfig decides for each
 * state of the ConfigMap (a renamed key or a deleted ConfigMap is reported and never means
 * "back to the defaults", too) is config-source.test.ts; this file shows the process wired to it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { freePort } from '../../sim/cluster/free-port.ts';
import { dryRunCreate } from '../../sim/testkit/kubectl.ts';
import { createWindowsNode } from '../../sim/testkit/nodes.ts';
import { spawnOperator, stopProcess } from '../../sim/testkit/operator-process.ts';
import { freshCluster, testNamespace, uniqueSuffix } from '../../sim/testkit/test-cluster.ts';
import { writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import { EventReason } from '../api/reasons.ts';
import { applyJoinRbac } from '../controllers/hosts/cluster-rbac.ts';
import { waitFor } from '../kube/wait-for.ts';
import { createCsrPem, generateKeyPair } from '../pki/certificates.ts';
import { configMapName } from './config-source.ts';

const secret = 'cfg-secret-5d81e0';
const badConfig = `images:
  mirrors:
    mcr.microsoft.com:
      - endpoint: https://cfg-user:${secret}@mirror.example.com
      - endpoint: http://bad-mirror.invalid
`;

test('a bad ConfigMap is reported and never stops the operator', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = `winfleet-cfg-${uniqueSuffix()}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await writeOperatorConfig(kc, namespace, badConfig);
  const logFile = join(await mkdtemp(join(tmpdir(), 'winfleet-config-e2e-')), 'operator.log');
  const [statusPort, webhookPort] = [await freePort(), await freePort()];
  const operator = spawnOperator({
    kubeconfig: cluster.kubeconfigPath,
    namespace,
    statusPort,
    webhookPort,
    logFile,
    logLevel: 'debug',
  });
  t.after(() => stopProcess(operator));
  const status = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${statusPort}${path}`);
    return { code: response.status, text: await response.text() };
  };
  const configStatus = async () =>
    JSON.parse((await status('/config')).text) as {
      valid: boolean;
      inForce: string;
      problems?: string[];
    };

  await t.test('it starts on the defaults and reports each bad field', async () => {
    const problems = await waitFor(
      async () => {
        if (operator.exitCode !== null) throw new Error(`operator exited ${operator.exitCode}`);
        const health = await status('/healthz').catch(() => undefined);
        if (health?.code !== 200) return undefined;
        return (await configStatus()).problems;
      },
      { description: 'the operator healthy and reporting the config', timeoutMs: 60_000 },
    );
    assert.equal((await configStatus()).inForce, 'defaults');
    const text = problems.join('\n');
    assert.match(
      text,
      /images\.mirrors\["mcr\.microsoft\.com"\]\[0\]\.endpoint "https:\/\/\*\*\*@mirror\.example\.com" must not carry credentials/,
    );
    assert.match(
      text,
      /images\.mirrors\["mcr\.microsoft\.com"\]\[1\]\.endpoint "http:\/\/bad-mirror\.invalid" uses plain HTTP; set insecure: true/,
    );
    const event = await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace })).items.find(
          (e) => e.reason === EventReason.InvalidConfig && e.involvedObject.name === configMapName,
        ),
      { description: 'the InvalidConfig Event on the ConfigMap', timeoutMs: 30_000 },
    );
    assert.match(event.message ?? '', /\[1\]\.endpoint "http:\/\/bad-mirror\.invalid"/);
    assert.match(event.message ?? '', /runs on the default configuration/);
  });

  await t.test('its CSR approver runs', async () => {
    // A CSR from a bootstrap token in winfleet's group that no WindowsHost was given (the
    // group may create CSRs once a host joined; here the test grants it).
    await applyJoinRbac(kc, namespace, []);
    await core.createNamespacedSecret({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'bootstrap-token-cfgcfg' },
        type: 'bootstrap.kubernetes.io/token',
        stringData: {
          'token-id': 'cfgcfg',
          'token-secret': 'cfgcfgcfgcfgcfgc',
          'usage-bootstrap-authentication': 'true',
          'auth-extra-groups': 'system:bootstrappers:winfleet',
          expiration: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      },
    });
    const cluster0 = kc.getCurrentCluster()!;
    const asToken = new k8s.KubeConfig();
    asToken.loadFromOptions({
      clusters: [{ ...cluster0, name: 'c' }],
      users: [{ name: 'u', token: 'cfgcfg.cfgcfgcfgcfgcfgc' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const request = Buffer.from(
      await createCsrPem(
        { commonName: 'system:node:nobody', organizations: ['system:nodes'] },
        await generateKeyPair(),
      ),
    ).toString('base64');
    await asToken.makeApiClient(k8s.CertificatesV1Api).createCertificateSigningRequest({
      body: {
        metadata: { name: 'config-e2e-probe' },
        spec: {
          request,
          signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
          usages: ['digital signature', 'key encipherment', 'client auth'],
        },
      },
    });
    const certificates = kc.makeApiClient(k8s.CertificatesV1Api);
    const decided = await waitFor(
      async () => {
        const csr = await certificates.readCertificateSigningRequest({ name: 'config-e2e-probe' });
        return csr.status?.conditions?.find((c) => c.type === 'Denied' || c.type === 'Approved');
      },
      { description: 'the approver deciding the probe CSR', timeoutMs: 30_000 },
    );
    assert.equal(decided.type, 'Denied');
  });

  await createWindowsNode(kc, { name: 'win-2022', release: '2022', revision: 2582 });
  const podNamespace = await testNamespace(kc, 'cfg');
  /** The webhook's warning for a Windows pod with an mcr.microsoft.com image. */
  const warningFor = async (tag: string) => {
    const pod = `apiVersion: v1
kind: Pod
metadata: { name: probe, namespace: ${podNamespace} }
spec:
  nodeSelector: { kubernetes.io/os: windows }
  containers: [{ name: app, image: "mcr.microsoft.com/windows/app:${tag}" }]
`;
    return (await dryRunCreate(cluster.kubeconfigPath, pod)).stderr;
  };

  await t.test('a bad edit while running keeps the previous routing and is reported', async () => {
    await writeOperatorConfig(
      kc,
      namespace,
      stringify({
        images: {
          mirrors: { 'mcr.microsoft.com': [{ endpoint: 'https://good-mirror.invalid' }] },
          fallbackToUpstream: false,
        },
      }),
    );
    await waitFor(
      async () => {
        const s = await configStatus();
        return s.valid && s.inForce === `${namespace}/${configMapName}` ? s : undefined;
      },
      { description: 'the good configuration in force', timeoutMs: 30_000 },
    );
    let n = 0;
    await waitFor(async () => /good-mirror\.invalid/.test(await warningFor(`good-${++n}`)), {
      description: 'lookups going to the good mirror',
      timeoutMs: 30_000,
    });
    await writeOperatorConfig(kc, namespace, badConfig);
    await waitFor(async () => ((await configStatus()).valid ? undefined : true), {
      description: 'the bad edit reported',
      timeoutMs: 30_000,
    });
    const now = await configStatus();
    assert.equal(now.inForce, `${namespace}/${configMapName}`);
    const warning = await warningFor('after-bad-edit');
    assert.match(warning, /good-mirror\.invalid/);
    assert.doesNotMatch(warning, /bad-mirror|mirror\.example\.com/);
    assert.equal(operator.exitCode, null);
  });

  await t.test('the credentials reach no log and no Event', async () => {
    const events = (await core.listNamespacedEvent({ namespace })).items;
    assert.ok(events.length > 0);
    for (const e of events) {
      assert.ok(!(e.message ?? '').includes(secret), e.message);
      assert.ok(!(e.message ?? '').includes('cfg-user'), e.message);
    }
    const log = await readFile(logFile, 'utf8');
    assert.match(log, /invalid configuration/);
    assert.ok(!log.includes(secret), 'the endpoint password is in the operator log');
    assert.ok(!log.includes('cfg-user'), 'the endpoint user is in the operator log');
  });
});
