import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { quietWatch, watchIdleLimitMs, watchTimeoutSeconds } from './watch.ts';

function kubeConfigFor(port: number): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

/** Answers a watch with its headers, then stays silent until the client goes. */
async function silentWatchServer() {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

function watchEnd(watch: k8s.Watch, path: string): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    void watch.watch(
      path,
      {},
      () => {},
      (error: unknown) => resolve({ error, ms: performance.now() - started }),
    );
  });
}

test('the idle limit is client-node’s own field, and it decides when a silent watch gives up', async () => {
  const { server, port } = await silentWatchServer();
  try {
    const kc = kubeConfigFor(port);
    // client-node still keeps the limit where quietWatch sets it (a rename would leave it at
    // client-node's 30 s and quietWatch would change nothing).
    const plain = new k8s.Watch(kc) as unknown as { requestTimeoutMs?: unknown };
    assert.equal(plain.requestTimeoutMs, 30_000);
    // The field is what ends a silent watch: 300 ms here ends it in about 300 ms.
    const { error, ms } = await watchEnd(quietWatch(kc, 300), '/api/v1/nodes');
    assert.equal((error as DOMException | undefined)?.name, 'TimeoutError');
    assert.ok(ms >= 250 && ms < 20_000, `ended after ${ms.toFixed(0)} ms`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('a watch at rest outlives the server-side timeout winfleet asks for', () => {
  assert.ok(watchIdleLimitMs > watchTimeoutSeconds * 1000);
  const kc = kubeConfigFor(1);
  const watch = quietWatch(kc) as unknown as { requestTimeoutMs: number };
  assert.equal(watch.requestTimeoutMs, watchIdleLimitMs);
});
