/**
 * A payload artifact read from a registry that lies (an in-process HTTP server playing the
 * attacker; the honest flows run against the real docker-registry in
 * registry-round-trip.e2e.test.ts): every lie is refused, nothing unverified is kept under a
 * file's name, no credential follows a redirect or an upload location to another origin, and
 * nothing more than the manifest declares is read.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../../../sim/cluster/free-port.ts';
import { defaultConfig } from '../../config/winfleet-config.ts';
import { errorCode, isRetryable, WinfleetError } from '../../errors/catalog.ts';
import { resolverFor } from '../../webhook/pod-images.ts';
import type { Payload } from '../payload.ts';
import { payloadLimits } from './media-types.ts';
import { buildPayloadManifest, type PayloadLayer, sha256Digest } from './payload-manifest.ts';
import { PayloadRegistry, type PayloadTarget, saveVerified } from './payload-registry.ts';
import { payloadTargets } from './payload-targets.ts';
import { pullLayer, resolvePayload } from './resolve-payload.ts';

const hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const repository = 'winfleet/payload';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Until `res` drains or closes, whichever is first, leaving no listener behind. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** A loopback HTTP server with routes by path, recording what it was sent. */
interface Server {
  origin: string;
  host: string;
  seen: { method: string; path: string; authorization?: string }[];
  route(path: string, handler: Handler): void;
}

const servers: ReturnType<typeof createServer>[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function server(options: { basicAuth?: string } = {}): Promise<Server> {
  const routes = new Map<string, Handler>();
  const seen: Server['seen'] = [];
  const http = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    seen.push({
      method: req.method ?? '',
      path,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    req.resume();
    if (options.basicAuth && req.headers.authorization !== options.basicAuth) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="hostile"' });
      res.end();
      return;
    }
    const handler = routes.get(path);
    if (handler) handler(req, res);
    else {
      res.writeHead(404);
      res.end();
    }
  });
  servers.push(http);
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    seen,
    route: (p, h) => routes.set(p, h),
  };
}

/** A small payload: payload.json, its manifest and the files' bytes. */
function payloadArtifact(
  files: Record<string, Buffer> = { 'containerd.exe': Buffer.from('containerd bytes!') },
) {
  const payload: Payload = {
    version: '1.36.5-wf.1',
    kubernetesVersion: 'v1.36.5',
    files: Object.entries(files).map(([name, data]) => ({
      name,
      version: 'v1.36.5',
      sha256: hex(data),
      source: { path: name },
    })),
  };
  const config = Buffer.from(JSON.stringify(payload));
  const manifest = buildPayloadManifest(
    config,
    Object.entries(files).map(([name, data]) => ({ name, sha256: hex(data), size: data.length })),
  );
  return { payload, config, manifest, files };
}

type Artifact = ReturnType<typeof payloadArtifact>;

/** Serves `artifact` honestly (manifest by digest, blobs by digest) on `registry`. */
function serve(registry: Server, artifact: Artifact) {
  const send = (bytes: Buffer) => (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-length': bytes.length });
    res.end(bytes);
  };
  registry.route(
    `/v2/${repository}/manifests/${artifact.manifest.digest}`,
    send(artifact.manifest.bytes),
  );
  registry.route(`/v2/${repository}/blobs/${sha256Digest(artifact.config)}`, send(artifact.config));
  for (const data of Object.values(artifact.files))
    registry.route(`/v2/${repository}/blobs/sha256:${hex(data)}`, send(data));
}

function targetsOf(registry: Server, extra: Parameters<typeof payloadTargets>[1] = {}) {
  return payloadTargets({ registry: registry.host, repository }, { plainHttp: true, ...extra });
}

function client(targets: readonly PayloadTarget[], idleTimeoutMs?: number) {
  const registry = new PayloadRegistry({
    trustedOrigins: targets.map((t) => t.endpoint.origin),
    ...(idleTimeoutMs ? { idleTimeoutMs } : {}),
  });
  after(() => registry.close());
  return registry;
}

async function tempDir() {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-hostile-'));
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Pulls `layer` into `dir`, returning the error it fails with. */
async function pullFails(
  registry: PayloadRegistry,
  targets: readonly PayloadTarget[],
  host: string,
  digest: string,
  layer: PayloadLayer,
  dir: string,
): Promise<WinfleetError> {
  const ref = { registry: host, repository, digest };
  const error = await pullLayer(registry, targets, ref, layer, (chunks) =>
    saveVerified(chunks, join(dir, layer.name)),
  ).then(
    () => assert.fail('the pull succeeded'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof WinfleetError, String(error));
  assert.deepEqual(await readdir(dir), [], 'nothing is kept: no file, no temporary file');
  return error;
}

test('a layer with one changed byte is refused, not retried, and nothing is kept', async () => {
  const registry = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  const changed = Buffer.from(artifact.files['containerd.exe']!);
  changed[3] = changed[3]! ^ 1;
  registry.route(
    `/v2/${repository}/blobs/sha256:${hex(artifact.files['containerd.exe']!)}`,
    (_req, res) => res.end(changed),
  );
  const targets = targetsOf(registry);
  const reg = client(targets);
  const ref = { registry: registry.host, repository, digest: artifact.manifest.digest };
  const { manifest } = await resolvePayload(reg, targets, ref);
  const error = await pullFails(
    reg,
    targets,
    registry.host,
    ref.digest,
    manifest.layers[0]!,
    await tempDir(),
  );
  assert.equal(errorCode(error), 'WF_PAYLOAD_INVALID');
  assert.equal(isRetryable(error), false);
  assert.match(
    error.message,
    /containerd\.exe \(blob sha256:[0-9a-f]{64}\) of "winfleet\/payload" at registry "http:\/\/127\.0\.0\.1:\d+" has 17 bytes hashing to sha256:[0-9a-f]{64}, the payload manifest says 17 bytes hashing to sha256:/,
  );
});

test('a manifest whose bytes do not match the digest asked for is refused', async () => {
  const registry = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  const other = payloadArtifact({ 'containerd.exe': Buffer.from('another containerd') });
  registry.route(`/v2/${repository}/manifests/${artifact.manifest.digest}`, (_req, res) =>
    res.end(other.manifest.bytes),
  );
  const targets = targetsOf(registry);
  await assert.rejects(
    resolvePayload(client(targets), targets, {
      registry: registry.host,
      repository,
      digest: artifact.manifest.digest,
    }),
    (error: unknown) =>
      errorCode(error) === 'WF_PAYLOAD_INVALID' &&
      !isRetryable(error) &&
      /the manifest's bytes hash to sha256:[0-9a-f]{64}, not to the sha256:[0-9a-f]{64} asked for/.test(
        (error as Error).message,
      ),
  );
});

test('hostile titles, duplicates and layers payload.json does not list are refused from a registry', async () => {
  const file = Buffer.from('x');
  const config = Buffer.from(
    JSON.stringify({
      version: '1',
      kubernetesVersion: 'v1.36.5',
      files: [
        {
          name: 'containerd.exe',
          version: 'v1',
          sha256: hex(file),
          source: { path: 'containerd.exe' },
        },
      ],
    }),
  );
  const layer = (name: string) => ({ name, sha256: hex(file), size: 1 });
  const cases: [string, ReturnType<typeof buildPayloadManifest>, RegExp][] = [
    [
      '..\\',
      buildPayloadManifest(config, [layer('..\\containerd.exe')]),
      /"\.\.\\containerd\.exe" must be letters, digits/,
    ],
    [
      'C:',
      buildPayloadManifest(config, [layer('C:containerd.exe')]),
      /"C:containerd\.exe" must be letters, digits/,
    ],
    [
      '/',
      buildPayloadManifest(config, [layer('/containerd.exe')]),
      /"\/containerd\.exe" must be letters, digits/,
    ],
    [
      'a duplicate',
      buildPayloadManifest(config, [layer('containerd.exe'), layer('containerd.exe')]),
      /is also the title of layers\.0/,
    ],
    [
      'unlisted',
      buildPayloadManifest(config, [layer('containerd.exe'), layer('evil.exe')]),
      /the manifest has a layer "evil\.exe" that payload\.json does not list/,
    ],
    [
      'unlayered',
      buildPayloadManifest(config, [layer('kubelet2.exe')]),
      /"containerd\.exe" has no layer titled so in the manifest/,
    ],
  ];
  const registry = await server();
  registry.route(`/v2/${repository}/blobs/${sha256Digest(config)}`, (_req, res) => res.end(config));
  const targets = targetsOf(registry);
  const reg = client(targets);
  for (const [what, manifest, expected] of cases) {
    registry.route(`/v2/${repository}/manifests/${manifest.digest}`, (_req, res) =>
      res.end(manifest.bytes),
    );
    await assert.rejects(
      resolvePayload(reg, targets, {
        registry: registry.host,
        repository,
        digest: manifest.digest,
      }),
      (error: unknown) =>
        errorCode(error) === 'WF_PAYLOAD_INVALID' && expected.test((error as Error).message),
      what,
    );
  }
});

test('an oversized manifest or payload.json is refused without being read whole', async () => {
  const registry = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  const big = Buffer.alloc(payloadLimits.maxManifestBytes + 1024 * 1024, 0x20);
  let written = 0;
  // Declared: refused on the header. Not declared (chunked): refused at the limit.
  registry.route(`/v2/${repository}/manifests/${sha256Digest(big)}`, (_req, res) => {
    res.writeHead(200, { 'content-length': big.length });
    res.end(big);
  });
  // 256 MiB without a length, never all in memory on either side: the reader stops at 4 MiB.
  const endless = `sha256:${'e'.repeat(64)}`;
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  registry.route(`/v2/${repository}/manifests/${endless}`, async (_req, res) => {
    res.writeHead(200);
    for (let i = 0; i < 4096 && !res.destroyed; i++) {
      written += chunk.length;
      if (!res.write(chunk)) await drained(res);
    }
    res.end();
  });
  const targets = targetsOf(registry);
  const reg = client(targets);
  for (const digest of [sha256Digest(big), endless]) {
    await assert.rejects(
      resolvePayload(reg, targets, { registry: registry.host, repository, digest }),
      (error: unknown) =>
        errorCode(error) === 'WF_PAYLOAD_INVALID' &&
        /sent a body larger than 4194304 bytes/.test((error as Error).message),
    );
  }
  assert.ok(written < 64 * 1024 * 1024, `the server got to write ${written} bytes`);
  // payload.json larger than the manifest says.
  registry.route(`/v2/${repository}/blobs/${sha256Digest(artifact.config)}`, (_req, res) =>
    res.end(Buffer.concat([artifact.config, Buffer.from('   ')])),
  );
  await assert.rejects(
    resolvePayload(reg, targets, {
      registry: registry.host,
      repository,
      digest: artifact.manifest.digest,
    }),
    (error: unknown) =>
      errorCode(error) === 'WF_PAYLOAD_INVALID' &&
      new RegExp(`sent a body larger than ${artifact.config.length} bytes`).test(
        (error as Error).message,
      ),
  );
});

test('a blob larger than declared is cut off at the declared size; a wrong Content-Length is refused before reading', async () => {
  const registry = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  const digest = `sha256:${hex(artifact.files['containerd.exe']!)}`;
  let written = 0;
  registry.route(`/v2/${repository}/blobs/${digest}`, async (_req, res) => {
    res.writeHead(200);
    res.write(artifact.files['containerd.exe']!);
    const more = Buffer.alloc(64 * 1024);
    for (let i = 0; i < 1024 && !res.destroyed; i++) {
      if (!res.write(more)) await drained(res);
      written += more.length;
    }
    res.end();
  });
  const targets = targetsOf(registry);
  const reg = client(targets);
  const ref = { registry: registry.host, repository, digest: artifact.manifest.digest };
  const { manifest } = await resolvePayload(reg, targets, ref);
  const error = await pullFails(
    reg,
    targets,
    registry.host,
    ref.digest,
    manifest.layers[0]!,
    await tempDir(),
  );
  assert.equal(errorCode(error), 'WF_PAYLOAD_INVALID');
  assert.match(error.message, /sent more than the 17 bytes the payload manifest declares/);
  assert.ok(written < 64 * 1024 * 1024, `the server got to write ${written} bytes`);

  registry.route(`/v2/${repository}/blobs/${digest}`, (_req, res) => {
    res.writeHead(200, { 'content-length': 1_000_000 });
    res.write('containerd');
  });
  const declared = await pullFails(
    reg,
    targets,
    registry.host,
    ref.digest,
    manifest.layers[0]!,
    await tempDir(),
  );
  assert.match(declared.message, /sent a body larger than 17 bytes|declared with 1000000 bytes/);
});

test('a redirect to another origin gets no credentials; one to an unconfigured private host is not followed', async () => {
  const basic = `Basic ${Buffer.from('payload:secret').toString('base64')}`;
  const registry = await server({ basicAuth: basic });
  const storage = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  const data = artifact.files['containerd.exe']!;
  const digest = `sha256:${hex(data)}`;
  registry.route(`/v2/${repository}/blobs/${digest}`, (_req, res) => {
    res.writeHead(307, { location: `${storage.origin}/blobs/containerd?signature=1` });
    res.end();
  });
  storage.route('/blobs/containerd', (_req, res) => res.end(data));
  const credentials = [
    {
      source: 'test',
      config: { auths: { [registry.host]: { username: 'payload', password: 'secret' } } },
    },
  ];
  // The storage host shares the registry's loopback address: a configured host, so it is allowed.
  const targets = targetsOf(registry, { credentials });
  const reg = client(targets);
  const ref = { registry: registry.host, repository, digest: artifact.manifest.digest };
  const { manifest } = await resolvePayload(reg, targets, ref);
  const dir = await tempDir();
  await pullLayer(reg, targets, ref, manifest.layers[0]!, (chunks) =>
    saveVerified(chunks, join(dir, 'containerd.exe')),
  );
  assert.ok(
    registry.seen.some((s) => s.authorization === basic),
    'the registry got the credentials',
  );
  assert.deepEqual(
    storage.seen.map((s) => s.authorization),
    [undefined],
    'the storage host never saw them',
  );
  // A redirect to a loopback address nobody configured is refused before any connection.
  registry.route(`/v2/${repository}/blobs/${digest}`, (_req, res) => {
    res.writeHead(302, {
      location: `http://127.0.0.2:${new URL(storage.origin).port}/blobs/containerd`,
    });
    res.end();
  });
  const refused = await pullFails(
    reg,
    targets,
    registry.host,
    ref.digest,
    manifest.layers[0]!,
    await tempDir(),
  );
  assert.equal((refused.details as { reason?: string }).reason, 'blocked-address');
  assert.match(refused.message, /host "127\.0\.0\.2:\d+" is a loopback address/);
});

test('a push sends no credentials to an upload location on another origin', async () => {
  const basic = `Basic ${Buffer.from('ci:secret').toString('base64')}`;
  const registry = await server({ basicAuth: basic });
  const elsewhere = await server();
  registry.route(`/v2/${repository}/blobs/uploads/`, (_req, res) => {
    res.writeHead(202, { location: `${elsewhere.origin}/upload/1` });
    res.end();
  });
  elsewhere.route('/upload/1', (_req, res) => {
    res.writeHead(201);
    res.end();
  });
  const targets = targetsOf(registry);
  const reg = client(targets);
  await reg.uploadBlob(
    { ...targets[0]!, credentials: { username: 'ci', password: 'secret' } },
    `sha256:${hex('blob')}`,
    Buffer.from('blob'),
  );
  assert.deepEqual(elsewhere.seen, [{ method: 'PUT', path: '/upload/1' }]);
});

test('a mirror serving other bytes is passed over for the registry, which serves the right ones', async () => {
  const mirror = await server();
  const registry = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  serve(mirror, artifact);
  const digest = `sha256:${hex(artifact.files['containerd.exe']!)}`;
  mirror.route(`/v2/${repository}/blobs/${digest}`, (_req, res) => res.end('containerd bytez!!'));
  const targets = targetsOf(registry, { mirrors: [{ endpoint: mirror.origin, insecure: true }] });
  assert.deepEqual(
    targets.map((t) => [t.mirror, t.endpoint.origin]),
    [
      [true, mirror.origin],
      [false, registry.origin],
    ],
  );
  const reg = client(targets);
  const ref = { registry: registry.host, repository, digest: artifact.manifest.digest };
  const { manifest } = await resolvePayload(reg, targets, ref);
  const dir = await tempDir();
  await pullLayer(reg, targets, ref, manifest.layers[0]!, (chunks) =>
    saveVerified(chunks, join(dir, 'containerd.exe')),
  );
  assert.deepEqual(await readdir(dir), ['containerd.exe']);
  assert.ok(
    mirror.seen.some((s) => s.path.endsWith(digest)),
    'the mirror was asked first',
  );
  assert.ok(
    registry.seen.some((s) => s.path.endsWith(digest)),
    'then the registry',
  );
});

test('a registry that is down or stalls is a retryable WF_PAYLOAD_DOWNLOAD naming it and the file', async () => {
  const port = await freePort();
  const down = payloadTargets({ registry: `127.0.0.1:${port}`, repository }, { plainHttp: true });
  const digest = `sha256:${'c'.repeat(64)}`;
  const error = await resolvePayload(client(down), down, {
    registry: `127.0.0.1:${port}`,
    repository,
    digest,
  }).then(
    () => assert.fail('resolved'),
    (e: unknown) => e as WinfleetError,
  );
  assert.equal(errorCode(error), 'WF_PAYLOAD_DOWNLOAD');
  assert.equal(isRetryable(error), true);
  assert.match(
    error.message,
    new RegExp(
      `^Cannot get payload artifact 127\\.0\\.0\\.1:${port}/winfleet/payload@${digest}: registry "http://127\\.0\\.0\\.1:${port}": Cannot reach .*ECONNREFUSED.*; check that the registry is up and reachable from here; winfleet tries again$`,
    ),
  );

  const registry = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  registry.route(
    `/v2/${repository}/blobs/sha256:${hex(artifact.files['containerd.exe']!)}`,
    (_req, res) => {
      res.writeHead(200, { 'content-length': 17 });
      res.write('cont'); // and nothing more
    },
  );
  const targets = targetsOf(registry);
  const reg = client(targets, 300);
  const ref = { registry: registry.host, repository, digest: artifact.manifest.digest };
  const { manifest } = await resolvePayload(reg, targets, ref);
  const stalled = await pullFails(
    reg,
    targets,
    registry.host,
    ref.digest,
    manifest.layers[0]!,
    await tempDir(),
  );
  assert.equal(errorCode(stalled), 'WF_PAYLOAD_DOWNLOAD');
  assert.match(
    stalled.message,
    /^Cannot get payload file containerd\.exe .*: the download of containerd\.exe .* broke off after 4 of 17 bytes \(Cannot reach registry "[^"]+": no data for 0\.3 s \(ETIMEDOUT\)\); check that the registry is up/,
  );
});

test("the payload registry's trust does not reach image lookups: the webhook still refuses loopback", async () => {
  const registry = await server();
  const artifact = payloadArtifact();
  serve(registry, artifact);
  const targets = targetsOf(registry);
  const ref = { registry: registry.host, repository, digest: artifact.manifest.digest };
  assert.equal(
    (await resolvePayload(client(targets), targets, ref)).payload.version,
    '1.36.5-wf.1',
  );
  const resolver = resolverFor(defaultConfig());
  after(() => resolver.close());
  const result = await resolver.resolveImagePlatforms(
    `${registry.host}/${repository}@${artifact.manifest.digest}`,
  );
  assert.equal(result.status, 'unknown');
  assert.equal(result.status === 'unknown' && result.reason, 'blocked-address');
  assert.ok(
    registry.seen.every((s) => s.path.startsWith(`/v2/${repository}/`) && s.method === 'GET'),
    'the webhook never connected',
  );
  assert.equal(
    registry.seen.length,
    2,
    'only the payload client asked (manifest and payload.json)',
  );
});
