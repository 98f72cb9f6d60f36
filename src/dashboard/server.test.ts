import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { WindowsHost } from '../api/windows-host.ts';
import { objectKey } from '../controller/informer.ts';
import { silentLogger } from '../log/logger.ts';
import { startStatusServer } from '../operator/status-server.ts';
import { createDashboard, type DashboardCaches, type EventLister } from './server.ts';

/** What the dashboard uses of an informer: list, get, on; `set` stores and notifies. */
class FakeInformer<T extends k8s.KubernetesObject> {
  readonly store = new Map<string, T>();
  readonly handlers: Record<string, ((o: T) => void)[]> = { add: [], update: [], delete: [] };
  list = () => [...this.store.values()];
  get = (key: string) => this.store.get(key);
  on(event: string, handler: (o: T) => void) {
    this.handlers[event]?.push(handler);
    return this;
  }
  set(object: T) {
    const had = this.store.has(objectKey(object));
    this.store.set(objectKey(object), object);
    for (const h of this.handlers[had ? 'update' : 'add'] ?? []) h(object);
  }
}

const hostile = '<script>window.__xss=1</script>';

function host(name: string, message = 'ok'): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name, namespace: 'ns1' },
    spec: { address: '127.0.0.9', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
    status: {
      nodeName: name,
      conditions: [
        {
          type: 'Reachable',
          status: 'False',
          reason: 'Unreachable',
          message,
          lastTransitionTime: '2026-11-23T10:00:00Z',
        },
      ],
    },
  };
}

async function world(
  t: { after(fn: () => unknown): void },
  listEvents: EventLister,
  maxClients = 20,
) {
  const caches = {
    hosts: new FakeInformer<WindowsHost>(),
    nodes: new FakeInformer<k8s.V1Node>(),
    pools: new FakeInformer(),
    runtimeClasses: new FakeInformer(),
  };
  const dashboard = createDashboard(caches as unknown as DashboardCaches, listEvents, {
    maxClients,
    coalesceMs: 10,
  });
  const status = await startStatusServer({
    host: '127.0.0.1',
    port: 0,
    registry: new Registry(),
    ready: () => true,
    log: silentLogger,
    routes: [dashboard.route],
  });
  t.after(() => status.close());
  return { caches, dashboard, status, base: `http://127.0.0.1:${status.port}` };
}

const noEvents: EventLister = async () => [];

test('the page and its assets are served with a strict CSP; the API is read-only and checks its paths', async (t) => {
  const { base, caches } = await world(t, noEvents);
  caches.hosts.set(host('win-a', hostile));
  const page = await fetch(`${base}/`);
  assert.equal(page.status, 200);
  const csp = page.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  const html = await page.text();
  assert.doesNotMatch(html, /<script>/, 'no inline script: the CSP forbids it');
  assert.doesNotMatch(html, /https?:\/\//, 'no external asset');
  assert.match(
    (await fetch(`${base}/dashboard.js`)).headers.get('content-type') ?? '',
    /javascript/,
  );
  assert.doesNotMatch(
    await (await fetch(`${base}/dashboard.js`)).text(),
    /innerHTML|outerHTML|insertAdjacentHTML|document\.write/,
  );
  assert.equal((await fetch(`${base}/dashboard.css`)).status, 200);

  const overview = (await (await fetch(`${base}/api/overview`)).json()) as {
    hosts: { message: string }[];
  };
  assert.equal(overview.hosts[0]?.message, hostile);

  assert.equal((await fetch(`${base}/api/overview`, { method: 'POST' })).status, 405);
  assert.equal((await fetch(`${base}/api/hosts/NS/x`)).status, 400);
  assert.equal((await fetch(`${base}/api/hosts/ns1/a%2Fb`)).status, 400);
  assert.equal((await fetch(`${base}/api/hosts/ns1/a_b<x>`)).status, 400);
  const missing = await fetch(`${base}/api/hosts/ns1/nope`);
  assert.equal(missing.status, 404);
  assert.match(
    ((await missing.json()) as { error: string }).error,
    /kubectl get windowshosts -n ns1/,
  );
  assert.equal((await fetch(`${base}/api/other`)).status, 404);
});

test('the detail reads Events about the host and its Node; a refused list is shown with its fix', async (t) => {
  const asked: string[] = [];
  const lister: EventLister = async (namespace, kind, name) => {
    asked.push(`${namespace}/${kind}/${name}`);
    if (kind === 'Node') throw Object.assign(new Error('forbidden'), { code: 403 });
    return [
      {
        metadata: { name: 'e' },
        involvedObject: { kind, name },
        reason: 'HostKeyPinned',
        message: hostile,
        type: 'Normal',
      },
    ];
  };
  const { base, caches } = await world(t, lister);
  caches.hosts.set(host('win-a'));
  const d = (await (await fetch(`${base}/api/hosts/ns1/win-a`)).json()) as {
    events: { reason: string; message: string }[];
    eventsError?: string;
  };
  assert.deepEqual(asked.sort(), ['default/Node/win-a', 'ns1/WindowsHost/win-a']);
  assert.deepEqual(
    d.events.map((e) => [e.reason, e.message]),
    [['HostKeyPinned', hostile]],
  );
  assert.match(
    d.eventsError ?? '',
    /may not list Events in namespace default: give its ServiceAccount "list" on events/,
  );
});

/** Opens /api/stream; resolves with the status and a reader of what arrives. */
function openStream(
  base: string,
): Promise<{ status: number; text: () => string; close: () => void; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/api/stream`, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
      });
      const closed = new Promise<void>((done) => res.once('close', () => done()));
      resolve({
        status: res.statusCode ?? 0,
        text: () => text,
        close: () => req.destroy(),
        closed,
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('streams: the overview on connect and after a change; the limit answers 503; a client that goes frees its slot; close() ends them', async (t) => {
  const { base, caches, dashboard, status } = await world(t, noEvents, 2);
  caches.hosts.set(host('win-a'));
  const a = await openStream(base);
  assert.equal(a.status, 200);
  await until(() => a.text().includes('"win-a"'), 'the first overview');
  caches.hosts.set(host('win-b'));
  await until(() => a.text().includes('"win-b"'), 'the overview after a change');

  const b = await openStream(base);
  assert.equal(b.status, 200);
  const refused = await fetch(`${base}/api/stream`);
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get('retry-after'), '10');
  assert.match(await refused.text(), /at most 2.*close other dashboard tabs/);

  b.close();
  await until(() => dashboard.broadcaster.clientCount === 1, 'the closed stream dropped');
  const c = await openStream(base);
  assert.equal(c.status, 200);
  await until(() => dashboard.broadcaster.clientCount === 2, 'the slot taken again');

  await status.close();
  await Promise.all([a.closed, c.closed]);
  await until(() => dashboard.broadcaster.clientCount === 0, 'no stream left after close');
});
