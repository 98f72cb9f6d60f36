// Protocol edge cases against an in-process fake registry; the real-registry flows are in
// image-platforms.test.ts.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { freePort } from '../../sim/cluster/free-port.ts';
import { startSilentServer } from '../../sim/registry/silent-server.ts';
import type { AddressPolicy } from './address-policy.ts';
import { mediaTypes } from './manifest-platforms.ts';
import { RegistryClient } from './registry-client.ts';

// The fake registries listen on loopback, which the default policy refuses; the policy itself
// is tested below and in address-policy.test.ts.
const trustEverything: AddressPolicy = { forbiddenAddress: () => undefined, isTrusted: () => true };

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface FakeServer {
  origin: string;
  seen: { method: string; url: string; authorization?: string; body: string }[];
  route(path: string, handler: Handler): void;
}

const servers: { close(): void; closeAllConnections(): void }[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function fakeServer(): Promise<FakeServer> {
  const routes = new Map<string, Handler>();
  const seen: FakeServer['seen'] = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const url = new URL(req.url ?? '/', 'http://x');
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      body,
    });
    const handler = routes.get(url.pathname);
    if (handler) handler(req, res, body);
    else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ errors: [{ code: 'MANIFEST_UNKNOWN', message: 'manifest unknown' }] }),
      );
    }
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, seen, route: (p, h) => routes.set(p, h) };
}

const sha256 = (data: string | Buffer) =>
  `sha256:${createHash('sha256').update(data).digest('hex')}`;
const manifestBody = JSON.stringify({
  schemaVersion: 2,
  mediaType: mediaTypes.ociManifest,
  config: { mediaType: mediaTypes.ociConfig, digest: sha256('{}'), size: 2 },
  layers: [],
});

function serveManifest(
  res: ServerResponse,
  body = manifestBody,
  headers: Record<string, string> = {},
): void {
  res.writeHead(200, {
    'content-type': mediaTypes.ociManifest,
    'docker-content-digest': sha256(body),
    ...headers,
  });
  res.end(body);
}

const access = (origin: string, extra: object = {}) => ({
  endpoint: { origin },
  repository: 'app',
  ...extra,
});

test('bearer flow: challenge, token with basic credentials and scope, retry; the token is then reused', async () => {
  const registry = await fakeServer();
  const auth = await fakeServer();
  registry.route('/v2/app/manifests/v1', (req, res) => {
    if (req.headers.authorization !== 'Bearer t1') {
      res.writeHead(401, {
        'www-authenticate': `Bearer realm="${auth.origin}/token",service="fake",scope="repository:app:pull"`,
      });
      return res.end();
    }
    serveManifest(res);
  });
  auth.route('/token', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: 't1', expires_in: 300 }));
  });
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  const creds = { credentials: { username: 'u', password: 'p' } };
  const fetched = await client.fetchManifest(access(registry.origin, creds), 'v1');
  assert.equal(fetched.digest, sha256(manifestBody));
  assert.equal(fetched.contentType, mediaTypes.ociManifest);
  assert.equal(auth.seen.length, 1);
  const tokenUrl = new URL(auth.seen[0]!.url, 'http://x');
  assert.equal(tokenUrl.searchParams.get('service'), 'fake');
  assert.equal(tokenUrl.searchParams.get('scope'), 'repository:app:pull');
  assert.equal(tokenUrl.searchParams.get('account'), 'u');
  assert.equal(auth.seen[0]!.authorization, `Basic ${Buffer.from('u:p').toString('base64')}`);

  await client.fetchManifest(access(registry.origin, creds), 'v1');
  assert.equal(auth.seen.length, 1, 'the token is reused');
  assert.deepEqual(
    registry.seen.map((s) => s.authorization ?? 'none'),
    ['none', 'Bearer t1', 'Bearer t1'],
    'the second lookup sends the token up front',
  );
});

test('identity tokens are exchanged with a refresh-token POST; registry tokens are sent as is', async () => {
  const registry = await fakeServer();
  const auth = await fakeServer();
  registry.route('/v2/app/manifests/v1', (req, res) => {
    if (!['Bearer from-refresh', 'Bearer direct'].includes(req.headers.authorization ?? '')) {
      res.writeHead(401, {
        'www-authenticate': `Bearer realm="${auth.origin}/oauth2/token",service="fake"`,
      });
      return res.end();
    }
    serveManifest(res);
  });
  auth.route('/oauth2/token', (req, res) => {
    res.writeHead(req.method === 'POST' ? 200 : 405, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: 'from-refresh' }));
  });
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  await client.fetchManifest(
    access(registry.origin, { credentials: { username: '<token>', identityToken: 'rt' } }),
    'v1',
  );
  const form = new URLSearchParams(auth.seen[0]!.body);
  assert.equal(auth.seen[0]!.method, 'POST');
  assert.equal(form.get('grant_type'), 'refresh_token');
  assert.equal(form.get('refresh_token'), 'rt');
  assert.equal(form.get('scope'), 'repository:app:pull');
  assert.equal(form.get('service'), 'fake');

  await client.fetchManifest(
    access(registry.origin, { credentials: { registryToken: 'direct' } }),
    'v1',
  );
  assert.equal(auth.seen.length, 1, 'a registry token needs no token service');
});

test('basic challenges are answered with the credentials; without any the lookup is unauthorized', async () => {
  const registry = await fakeServer();
  const basic = `Basic ${Buffer.from('u:p').toString('base64')}`;
  registry.route('/v2/app/manifests/v1', (req, res) => {
    if (req.headers.authorization !== basic) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="fake"' });
      return res.end();
    }
    serveManifest(res);
  });
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  await client.fetchManifest(
    access(registry.origin, { credentials: { username: 'u', password: 'p' } }),
    'v1',
  );
  await assert.rejects(client.fetchManifest(access(registry.origin), 'v1'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'unauthorized' },
    message: /requires credentials for "app" and none of the pull secrets match it/,
  });
  await assert.rejects(
    client.fetchManifest(
      access(registry.origin, { credentials: { username: 'u', password: 'wrong' } }),
      'v1',
    ),
    {
      code: 'WF_REGISTRY_LOOKUP',
      details: { reason: 'unauthorized' },
      message: /^Not allowed to read manifest "app:v1" at http:\/\/127\.0\.0\.1:\d+ \(HTTP 401\)/,
    },
  );
});

test('broken auth answers fail with a reason', async () => {
  const registry = await fakeServer();
  const auth = await fakeServer();
  let challenge = '';
  registry.route('/v2/app/manifests/v1', (_req, res) => {
    res.writeHead(401, challenge ? { 'www-authenticate': challenge } : {});
    res.end();
  });
  auth.route('/token', (_req, res) => {
    res.writeHead(200);
    res.end('{"nothing": true}');
  });
  auth.route('/denied', (_req, res) => {
    res.writeHead(401);
    res.end();
  });
  auth.route('/broken', (_req, res) => {
    res.writeHead(200);
    res.end('<html>');
  });
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  const cases: [string, string, RegExp][] = [
    ['', 'unauthorized', /answered 401 without a Basic or Bearer challenge/],
    ['Negotiate', 'unauthorized', /without a Basic or Bearer challenge in WWW-Authenticate$/],
    [
      'Bearer realm="ftp://x/token"',
      'registry-error',
      /a token realm on host "x" that is not HTTP\(S\)/,
    ],
    ['Bearer realm="::"', 'registry-error', /names a token realm that is not a URL/],
    [
      `Bearer realm="${auth.origin}/token"`,
      'registry-error',
      /answered without "token" or "access_token"/,
    ],
    [
      `Bearer realm="${auth.origin}/broken"`,
      'registry-error',
      /answered with a body that is not JSON/,
    ],
    [
      `Bearer realm="${auth.origin}/denied"`,
      'unauthorized',
      /refused anonymous access for "repository:app:pull" \(HTTP 401\); add an imagePullSecret/,
    ],
  ];
  for (const [header, reason, message] of cases) {
    challenge = header;
    await assert.rejects(
      client.fetchManifest(access(registry.origin), 'v1'),
      { code: 'WF_REGISTRY_LOOKUP', details: { reason }, message },
      header,
    );
  }
});

test('content must match its digest', async () => {
  const registry = await fakeServer();
  registry.route('/v2/app/manifests/lying', (_req, res) =>
    serveManifest(res, manifestBody, { 'docker-content-digest': sha256('other') }),
  );
  registry.route(`/v2/app/manifests/${sha256('expected')}`, (_req, res) => serveManifest(res));
  registry.route(`/v2/app/blobs/${sha256('{}')}`, (_req, res) => res.end('{ }'));
  registry.route('/v2/app/manifests/odd-algorithm', (_req, res) =>
    serveManifest(res, manifestBody, { 'docker-content-digest': 'md5:abc' }),
  );
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  await assert.rejects(client.fetchManifest(access(registry.origin), 'lying'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'invalid-manifest' },
    message:
      /^The content of manifest "app:lying" at .* does not match its digest: expected "sha256:[0-9a-f]{64}", got "sha256:/,
  });
  await assert.rejects(client.fetchManifest(access(registry.origin), sha256('expected')), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'invalid-manifest' },
  });
  await assert.rejects(client.fetchBlob(access(registry.origin), sha256('{}')), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'invalid-manifest' },
    message: /blob "sha256:/,
  });
  await assert.rejects(client.fetchManifest(access(registry.origin), 'odd-algorithm'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'invalid-manifest' },
    message: /digest algorithm "md5" is not supported/,
  });
});

test('bodies over the size limit are refused, declared or streamed', async () => {
  const registry = await fakeServer();
  const big = Buffer.alloc(64 * 1024, 'x');
  registry.route('/v2/app/manifests/declared', (_req, res) => {
    res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
    res.write(big);
    // Never finishes: the client must stop on the header alone.
  });
  registry.route('/v2/app/manifests/streamed', (_req, res) => {
    res.writeHead(200, { 'transfer-encoding': 'chunked' });
    for (let i = 0; i < 4; i++) res.write(big);
    res.end();
  });
  const client = new RegistryClient({
    addressPolicy: trustEverything,
    maxManifestBytes: 100 * 1024,
  });
  after(() => client.close());
  for (const tag of ['declared', 'streamed']) {
    await assert.rejects(
      client.fetchManifest({ ...access(registry.origin), signal: AbortSignal.timeout(5000) }, tag),
      {
        code: 'WF_REGISTRY_LOOKUP',
        details: { reason: 'invalid-manifest' },
        message: /sent a body larger than 102400 bytes/,
      },
    );
  }
});

test('blob redirects are followed without the credentials; loops end', async () => {
  const registry = await fakeServer();
  const storage = await fakeServer();
  const config = '{"os":"windows","architecture":"amd64"}';
  registry.route(`/v2/app/blobs/${sha256(config)}`, (_req, res) => {
    res.writeHead(307, { location: `${storage.origin}/blob?sig=1` });
    res.end();
  });
  storage.route('/blob', (_req, res) => res.end(config));
  registry.route(`/v2/app/blobs/${sha256('loop')}`, (_req, res) => {
    res.writeHead(302, { location: `/v2/app/blobs/${sha256('loop')}` });
    res.end();
  });
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  const blob = await client.fetchBlob(
    access(registry.origin, { credentials: { registryToken: 'secret' } }),
    sha256(config),
  );
  assert.equal(blob.body.toString(), config);
  assert.equal(storage.seen[0]!.authorization, undefined, 'no credentials to another origin');
  await assert.rejects(client.fetchBlob(access(registry.origin), sha256('loop')), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'registry-error' },
    message: /redirected more than 5 times/,
  });
});

test('HTTP errors map to reasons and name the status and host, never the body', async () => {
  const registry = await fakeServer();
  registry.route('/v2/app/manifests/boom', (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ errors: [{ code: 'UNAVAILABLE', message: 'try later' }] }));
  });
  registry.route('/v2/app/manifests/forbidden', (_req, res) => {
    res.writeHead(403);
    res.end('nope');
  });
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  await assert.rejects(client.fetchManifest(access(registry.origin), 'missing'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'not-found' },
    message: /^No manifest "app:missing" at http:\/\/127\.0\.0\.1:\d+ \(HTTP 404\)$/,
  });
  await assert.rejects(client.fetchManifest(access(registry.origin), 'boom'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'registry-error' },
    message: /failed with HTTP 503$/,
  });
  await assert.rejects(client.fetchManifest(access(registry.origin), 'forbidden'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'unauthorized' },
    message: /HTTP 403\); check the pod's imagePullSecrets$/,
  });
});

test('a refused connection is unreachable; a silent one times out with the signal', async () => {
  const client = new RegistryClient({ addressPolicy: trustEverything });
  after(() => client.close());
  const port = await freePort();
  await assert.rejects(client.fetchManifest(access(`http://127.0.0.1:${port}`), 'v1'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'unreachable' },
    message: /^Cannot reach registry "http:\/\/127\.0\.0\.1:\d+": .*ECONNREFUSED/,
  });
  // "localhost" has two addresses; both refusing gives an AggregateError without a message.
  await assert.rejects(client.fetchManifest(access(`http://localhost:${port}`), 'v1'), {
    code: 'WF_REGISTRY_LOOKUP',
    details: { reason: 'unreachable' },
    message: /^Cannot reach registry "http:\/\/localhost:\d+": connect ECONNREFUSED/,
  });
  const silent = await startSilentServer();
  after(() => silent.stop());
  const started = Date.now();
  await assert.rejects(
    client.fetchManifest(
      { ...access(`http://${silent.host}`), signal: AbortSignal.timeout(200) },
      'v1',
    ),
    {
      code: 'WF_REGISTRY_LOOKUP',
      details: { reason: 'timeout' },
      message: /^Timed out waiting for registry "http:\/\/127\.0\.0\.1:\d+"/,
    },
  );
  assert.ok(Date.now() - started < 2000, 'bounded by the signal');
  const controller = new AbortController();
  const pending = client.fetchManifest(
    { ...access(`http://${silent.host}`), signal: controller.signal },
    'v1',
  );
  controller.abort();
  await assert.rejects(pending, { code: 'WF_REGISTRY_LOOKUP', details: { reason: 'aborted' } });
});
