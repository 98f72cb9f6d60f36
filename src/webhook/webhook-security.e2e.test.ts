/**
 * The webhook from the side of someone who can create pods, through the real API server: the
 * opt-out label on a pod no longer skips validation (only a namespace label does), and an
 * image named on an internal address makes the operator connect nowhere, with no registry
 * answer echoed back in the admission warning.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { dryRunCreate } from '../../sim/testkit/kubectl.ts';
import { createWindowsNode } from '../../sim/testkit/nodes.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import { waitFor } from '../kube/wait-for.ts';

/** An HTTP server on `host` that counts connections; `status` and `body` answer everything. */
async function countingServer(host: string, status: number, body: string) {
  const server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  });
  let connections = 0;
  server.on('connection', () => connections++);
  server.listen(0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://${host}:${port}`,
    connections: () => connections,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

test('pods cannot opt out of the webhook or aim image lookups inside the cluster', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const secretBody = JSON.stringify({
    errors: [{ code: 'DENIED', message: 'metadata-credential-b64c7a' }],
  });
  const mirror = await countingServer('127.0.0.1', 404, secretBody);
  t.after(() => mirror.close());
  // The stand-in for 169.254.169.254 and cluster Services: loopback, named by no configuration.
  const internal = await countingServer('127.0.0.77', 200, '{}');
  t.after(() => internal.close());
  const operator = await startTestOperator(kc, {
    config: {
      images: {
        mirrors: { 'mcr.microsoft.com': [{ endpoint: mirror.origin, insecure: true }] },
        fallbackToUpstream: false,
      },
    },
  });
  t.after(() => operator.stop());
  await createWindowsNode(kc, { name: 'win-2022', release: '2022', revision: 2582 });
  const namespace = await testNamespace(kc, 'pods');

  const invalidPod = (ns: string, labels: Record<string, string> = {}) => ({
    metadata: { name: 'host-pid', namespace: ns, labels },
    spec: {
      nodeSelector: { 'kubernetes.io/os': 'windows' },
      hostPID: true,
      containers: [{ name: 'c', image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' }],
    },
  });

  await t.test(
    'a pod with the opt-out label in a normal namespace is still validated',
    async () => {
      await assert.rejects(
        core.createNamespacedPod({
          namespace,
          body: invalidPod(namespace, { 'winfleet.io/webhook': 'disabled' }),
          dryRun: 'All',
        }),
        (error: { body?: string }) => {
          assert.match(String(error.body), /spec\.hostPID/);
          return true;
        },
      );
    },
  );

  await t.test('a namespace with the opt-out label is skipped', async () => {
    const optedOut = await testNamespace(kc, 'opted-out');
    await core.patchNamespace(
      { name: optedOut, body: { metadata: { labels: { 'winfleet.io/webhook': 'disabled' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    // The operator's namespace cache and the API server's selector both see the label soon.
    await waitFor(
      async () => {
        try {
          await core.createNamespacedPod({
            namespace: optedOut,
            body: invalidPod(optedOut),
            dryRun: 'All',
          });
          return true;
        } catch {
          return undefined;
        }
      },
      { description: 'the invalid pod admitted in the opted-out namespace', timeoutMs: 15_000 },
    );
  });

  const kubectlCreate = (pod: string) => dryRunCreate(cluster.kubeconfigPath, pod);
  const windowsPod = (name: string, image: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: ${namespace} }
spec:
  nodeSelector: { kubernetes.io/os: windows }
  containers: [{ name: app, image: "${image}" }]
`;

  await t.test('an image on an internal address is never fetched', async () => {
    for (const image of [
      `127.0.0.77:${internal.port}/app:v1`,
      `2130706509:${internal.port}/app:v2`,
      `localhost:${internal.port}/app:v3`,
    ]) {
      const r = await kubectlCreate(windowsPod('internal', image));
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stderr,
        /Warning: spec\.containers\[0\]\.image: check the registry or its mirror; Cannot read the platforms of .*is not contacted/,
      );
      // Once: the mutating webhook leaves this report to the validating one.
      assert.equal(r.stderr.match(/^Warning:/gm)?.length, 1, r.stderr);
    }
    assert.equal(internal.connections(), 0);
  });

  await t.test('a registry error body never reaches the warning', async () => {
    const r = await kubectlCreate(windowsPod('mirrored', 'mcr.microsoft.com/windows/app:1'));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Warning: .*HTTP 404/);
    assert.ok(mirror.connections() > 0);
    assert.ok(!r.stderr.includes('metadata-credential-b64c7a'), r.stderr);
    assert.ok(!r.stderr.includes('DENIED'), r.stderr);
  });
});
