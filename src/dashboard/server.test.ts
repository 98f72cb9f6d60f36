import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { runInNewContext } from 'node:vm';
import type * as k8s from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { WindowsHost } from '../api/windows-host.ts';
import type { WindowsNodePool } from '../api/windows-node-pool.ts';
import { objectKey } from '../controller-runtime/informer.ts';
import { silentLogger } from '../log/logger.ts';
import { startStatusServer } from '../operator/status-server.ts';
import { dashboardScript } from './dashboard-page.ts';
import { detailEventLimit, type HostDetail, type Overview } from './overview.ts';
import {
  createDashboard,
  type DashboardCaches,
  dashboardHostAllowed,
  type EventLister,
  type EventPageLister,
  eventReadLimit,
  pagedEventLister,
} from './server.ts';

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
    pools: new FakeInformer<WindowsNodePool>(),
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

test('a HEAD of the stream gets its headers and an end, and takes no slot', async (t) => {
  const { base, dashboard } = await world(t, noEvents, 1);
  for (let i = 0; i < 3; i++) {
    const head = await new Promise<{ status: number; type: string }>((resolve, reject) => {
      const req = request(`${base}/api/stream`, { method: 'HEAD' }, (res) => {
        res.resume();
        res.once('end', () =>
          resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] ?? '' }),
        );
      });
      req.on('error', reject);
      req.end();
    });
    assert.deepEqual(head, { status: 200, type: 'text/event-stream; charset=utf-8' });
    assert.equal(dashboard.broadcaster.clientCount, 0, 'a HEAD is no stream');
  }
  const stream = await openStream(base);
  assert.equal(stream.status, 200, 'the one slot is still free after the HEADs');
  stream.close();
});

test("a host's detail carries its overview row, with the pool its selector gives it", async (t) => {
  const { base, caches } = await world(t, noEvents);
  caches.pools.set({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsNodePool',
    metadata: { name: 'web', namespace: 'ns1' },
    spec: { selector: { matchLabels: { role: 'web' } } },
  });
  const labelled = host('win-a');
  labelled.metadata.labels = { role: 'web' };
  caches.hosts.set(labelled);
  const overview = (await (await fetch(`${base}/api/overview`)).json()) as Overview;
  const detail = (await (await fetch(`${base}/api/hosts/ns1/win-a`)).json()) as HostDetail;
  assert.equal(overview.hosts[0]?.pool, 'web');
  assert.deepEqual(detail.host, overview.hosts[0]);
});

/** Kubelet-style Events about one Node, `<node>.<hex UnixNano>`: name order is time order. */
function kubeletEvents(count: number): k8s.CoreV1Event[] {
  const start = Date.parse('2026-11-23T10:00:00Z');
  return Array.from({ length: count }, (_, i) => {
    const at = new Date(start + i * 1000);
    return {
      metadata: { name: `win-a.${(BigInt(at.getTime()) * 1_000_000n).toString(16)}` },
      involvedObject: { kind: 'Node', name: 'win-a' },
      reason: `R${i}`,
      lastTimestamp: at,
    };
  }).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** Pages through `all` as the API server does: `limit` at a time, by name. */
function pagesOf(all: k8s.CoreV1Event[], asked: { limit: number; _continue?: string }[]) {
  const lister: EventPageLister = async (request) => {
    asked.push({
      limit: request.limit,
      ...(request._continue ? { _continue: request._continue } : {}),
    });
    const from = Number(request._continue ?? 0);
    const to = from + request.limit;
    return {
      items: all.slice(from, to),
      metadata: to < all.length ? { _continue: String(to) } : {},
    };
  };
  return lister;
}

test('Events are read page by page and the newest kept, newest first (the API server lists by name)', async () => {
  const all = kubeletEvents(400);
  const asked: { limit: number; _continue?: string }[] = [];
  const events = await pagedEventLister(pagesOf(all, asked))('default', 'Node', 'win-a');
  assert.equal(asked.length, 2, 'two pages');
  assert.equal(events.length, detailEventLimit);
  assert.deepEqual(
    events.slice(0, 3).map((e) => e.reason),
    ['R399', 'R398', 'R397'],
    'the newest, which are on the second page, come first',
  );
});

test('Events: at most eventReadLimit are read, however many pages the API server has', async () => {
  const all = kubeletEvents(eventReadLimit + 600);
  const asked: { limit: number; _continue?: string }[] = [];
  const events = await pagedEventLister(pagesOf(all, asked))('default', 'Node', 'win-a');
  const read = asked.reduce((sum, a) => sum + a.limit, 0);
  assert.equal(read, eventReadLimit);
  assert.equal(events[0]?.reason, `R${eventReadLimit - 1}`);
});

test('Events: a list that does not answer in time is an error that says so', async () => {
  const never: EventPageLister = () => new Promise(() => {});
  await assert.rejects(
    pagedEventLister(never, 20)('default', 'Node', 'win-a'),
    /no answer from the API server in 0.02 s/,
  );
});

/** Just enough DOM for the page's script to build its tables (nothing is laid out). */
class FakeElement {
  children: unknown[] = [];
  readonly attributes = new Map<string, string>();
  className = '';
  textContent = '';
  hidden = false;
  readonly classList = { toggle() {} };
  setAttribute(name: string, value: string) {
    this.attributes.set(name, value);
  }
  getAttribute(name: string) {
    return this.attributes.get(name) ?? null;
  }
  addEventListener() {}
  appendChild(child: unknown) {
    this.children.push(child);
    return child;
  }
  replaceChildren(...children: unknown[]) {
    this.children = children;
  }
}

/**
 * Runs the page's script against the dashboard at `base`, with the detail of `hash` open: its
 * fetches go to the dashboard; overviews are handed to it by `deliver` (its EventSource is a
 * fake); its timers run when `settle` is called, which then waits for the fetches they made.
 */
function runPage(base: string, hash: string, firstOverview?: string) {
  const elements = new Map<string, FakeElement>();
  const element = (id: string) => {
    if (!elements.has(id)) elements.set(id, new FakeElement());
    return elements.get(id)!;
  };
  const detailFetches: string[] = [];
  const inFlight: Promise<unknown>[] = [];
  const timers: (() => void)[] = [];
  const listeners = new Map<string, (ev: { data: string }) => void>();
  class FakeEventSource {
    static CLOSED = 2;
    readyState = 1;
    onerror: unknown;
    addEventListener(type: string, fn: (ev: { data: string }) => void) {
      listeners.set(type, fn);
    }
  }
  const context = {
    document: {
      createElement: () => new FakeElement(),
      createTextNode: (text: string) => ({ text }),
      getElementById: element,
      querySelector: element,
      querySelectorAll: () => [],
      addEventListener() {},
    },
    location: { hash, pathname: '/', search: '' },
    history: { replaceState() {} },
    window: { EventSource: FakeEventSource, addEventListener() {} },
    EventSource: FakeEventSource,
    setTimeout: (fn: () => void) => timers.push(fn),
    fetch: (url: string, init: RequestInit) => {
      if (url.startsWith('api/hosts/')) detailFetches.push(url);
      const answer = fetch(`${base}/${url}`, init);
      inFlight.push(answer.then((r) => r.clone().text()).catch(() => undefined));
      return answer;
    },
  };
  runInNewContext(dashboardScript, context);
  // An overview that comes before the detail's answer (nothing fetched can answer this soon).
  if (firstOverview !== undefined) listeners.get('overview')?.({ data: firstOverview });
  const settle = async () => {
    for (let round = 0; round < 10 && (timers.length > 0 || inFlight.length > 0); round++) {
      for (const fn of timers.splice(0)) fn();
      await Promise.all(inFlight.splice(0));
      // The page's own .then callbacks after the body.
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return {
    detailFetches,
    detailText: () => JSON.stringify(element('detail-body').children),
    settle,
    deliver: async () => {
      const overview = await (await fetch(`${base}/api/overview`)).text();
      listeners.get('overview')?.({ data: overview });
      await settle();
    },
  };
}

test('the page fetches the open detail again only when its host changed, not on every overview', async (t) => {
  const { base, caches } = await world(t, noEvents);
  caches.pools.set({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsNodePool',
    metadata: { name: 'web', namespace: 'ns1' },
    spec: { selector: { matchLabels: { role: 'web' } } },
  });
  const inPool = (message: string) => {
    const h = host('win-a', message);
    h.metadata.labels = { role: 'web' };
    return h;
  };
  caches.hosts.set(inPool('first'));
  caches.hosts.set(host('win-b'));
  const first = await (await fetch(`${base}/api/overview`)).text();
  const page = runPage(base, '#host/ns1/win-a', first);
  await page.settle();
  assert.deepEqual(
    page.detailFetches,
    ['api/hosts/ns1/win-a'],
    'the detail, once on open, though an overview came while it loaded',
  );
  assert.match(page.detailText(), /Administrator/);

  await page.deliver();
  assert.equal(page.detailFetches.length, 1, 'an overview with the same row: no fetch');
  caches.hosts.set(host('win-b', 'another host changed'));
  await page.deliver();
  assert.equal(page.detailFetches.length, 1, 'another host changed: no fetch');
  caches.hosts.set(inPool('win-a changed'));
  await page.deliver();
  assert.equal(page.detailFetches.length, 2, 'its row changed: fetched again');
  await page.deliver();
  assert.equal(page.detailFetches.length, 2);
});

/** A GET with the given Host header (fetch does not let a caller set it; a browser does). */
function getWithHost(base: string, path: string, hostHeader: string): Promise<number> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, headers: { host: hostHeader } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('DNS rebinding: a request naming another site in Host gets 421, whatever the path; loopback names and configured ones pass', async (t) => {
  const { base, caches, status } = await world(t, noEvents);
  caches.hosts.set(host('win-a'));
  const port = status.port;
  // The attacker's page, rebound to 127.0.0.1 through kubectl port-forward: its name is the Host.
  for (const path of ['/', '/api/overview', '/api/stream', '/api/hosts/ns1/win-a', '/dashboard.js'])
    for (const evil of [`evil.example:${port}`, 'evil.example', `127.0.0.1.evil.example:${port}`])
      assert.equal(await getWithHost(base, path, evil), 421, `${path} with Host ${evil}`);
  // Nothing that only looks like a loopback name passes.
  for (const bad of ['localhost:99999', 'localhost:80:80', 'local host', '[::1', 'user@127.0.0.1'])
    assert.equal(await getWithHost(base, '/api/overview', bad), 421, `Host ${bad}`);
  for (const good of [`127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST', `[::1]:${port}`])
    assert.equal(await getWithHost(base, '/api/overview', good), 200, `Host ${good}`);
  assert.equal(dashboardHostAllowed(undefined), false, 'no Host header, no answer');
  assert.equal(dashboardHostAllowed('winfleet.example.com:8443', ['winfleet.example.com']), true);
  assert.equal(dashboardHostAllowed('evil.example', ['winfleet.example.com']), false);
});
