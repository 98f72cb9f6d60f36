import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { loadKubeConfig } from './client.ts';
import { kubeApiRequestsMetric } from './request-metrics.ts';
import { userAgents } from './user-agent.ts';
import type { WinfleetKubeConfig } from './winfleet-kube-config.ts';

interface Seen {
  method: string;
  url: string;
  userAgent: string | undefined;
}

/** A loopback HTTP server answering a few API paths as the API server would. */
async function fakeApiServer() {
  const seen: Seen[] = [];
  let connections = 0;
  const node = (name: string) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      userAgent: req.headers['user-agent'],
    });
    req.resume();
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/api/v1/nodes' && url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ADDED', object: node('w') })}\n`);
    } else if (url.pathname === '/api/v1/nodes') {
      json(res, 200, { apiVersion: 'v1', kind: 'NodeList', metadata: {}, items: [node('a')] });
    } else if (url.pathname === '/api/v1/nodes/a') {
      json(res, 200, node('a'));
    } else {
      json(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404 });
    }
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function kubeconfigFor(server: string, dir: string, certFile: string): Promise<string> {
  const path = join(dir, 'kubeconfig');
  await writeFile(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { 'client-certificate': certFile } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return path;
}

const counts = (kc: WinfleetKubeConfig) => kc.requests.counts();

test('every request carries the User-Agent and is counted by verb, resource and code, on one pool', async (t) => {
  const api = await fakeApiServer();
  t.after(() => api.close());
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-kc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const certFile = join(dir, 'client.crt');
  await writeFile(certFile, 'first certificate');
  const kc = loadKubeConfig(await kubeconfigFor(api.url, dir, certFile), userAgents.operator);
  t.after(() => kc.close());
  const core = kc.makeApiClient(k8s.CoreV1Api);

  await core.listNode();
  await core.readNode({ name: 'a' });
  await core.readNode({ name: 'a' });
  await assert.rejects(core.readNode({ name: 'missing' }), (e: unknown) => {
    assert.equal((e as { code?: number }).code, 404);
    return true;
  });
  const events: string[] = [];
  await new Promise<void>((resolve, reject) => {
    new k8s.Watch(kc)
      .watch(
        '/api/v1/nodes',
        {},
        (type, obj) => events.push(`${type} ${obj.metadata.name}`),
        (err) => (err ? reject(err) : resolve()),
      )
      .catch(reject);
  });
  assert.deepEqual(events, ['ADDED w']);

  assert.deepEqual(await counts(kc), {
    'list nodes 200': 1,
    'get nodes 200': 2,
    'get nodes 404': 1,
    'watch nodes 200': 1,
  });
  assert.equal(api.seen.length, 5);
  for (const s of api.seen) assert.equal(s.userAgent, userAgents.operator, `${s.method} ${s.url}`);
  assert.match(userAgents.operator, /^winfleet-operator\/\d+\.\d+\.\d+/);
  // One pool for the process: 20 more requests reuse its keep-alive connections, where
  // client-node alone builds a new pool, and opens a new connection, per request.
  const before = api.connections();
  for (let i = 0; i < 20; i++) await core.readNode({ name: 'a' });
  const pooled = api.connections() - before;
  assert.ok(pooled <= 2, `${pooled} new connections for 20 requests`);

  // A rotated client certificate file gets a new pool (new connections); the old one closes.
  await writeFile(certFile, 'rotated certificate');
  const beforeRotation = api.connections();
  for (let i = 0; i < 5; i++) await core.readNode({ name: 'a' });
  const rotated = api.connections() - beforeRotation;
  assert.ok(rotated >= 1 && rotated <= 2, `${rotated} new connections after the rotation`);
  assert.equal((await counts(kc))['get nodes 200'], 27);
});

test('a request that gets no response counts with code "error"', async (t) => {
  const api = await fakeApiServer();
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-kc-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const certFile = join(dir, 'client.crt');
  await writeFile(certFile, 'certificate');
  const kc = loadKubeConfig(await kubeconfigFor(api.url, dir, certFile), userAgents.agent);
  t.after(() => kc.close());
  await api.close();
  await assert.rejects(kc.makeApiClient(k8s.CoreV1Api).listNode());
  assert.deepEqual(await counts(kc), { 'list nodes error': 1 });
});

test('the counter registers once in a registry, under its metric name', async () => {
  const { Registry } = await import('prom-client');
  const registry = new Registry();
  const kc = loadKubeConfig(undefined);
  kc.requests.registerIn(registry);
  kc.requests.registerIn(registry);
  kc.requests.count('watch', 'leases', '200');
  assert.match(
    await registry.metrics(),
    new RegExp(`${kubeApiRequestsMetric}\\{verb="watch",resource="leases",code="200"\\} 1`),
  );
});
