/**
 * The agent pulling its payload from the real docker-registry onto a simulated host (its
 * HostOS with Windows' rules: disk space, locked files): only what is not staged is pulled,
 * verified as it streams, never held in memory, never left unverified under a file's name.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SimHostOS } from '../../sim/hosts/sim-host-os.ts';
import { createTestMachine } from '../../sim/hosts/test-machine.ts';
import { startTestRegistry, type TestRegistry } from '../../sim/registry/registry-process.ts';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { errorCode, isRetryable } from '../errors/catalog.ts';
import { parseDockerConfig } from '../images/docker-config.ts';
import type { JoinPayloadSource } from '../join/join-info.ts';
import { servicesManifestFor } from '../payload/node-services.ts';
import { buildPayloadManifest } from '../payload/oci/payload-manifest.ts';
import { pushPayload } from '../payload/oci/push-payload.ts';
import type { Payload } from '../payload/payload.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import { emptyState } from './agent-state.ts';
import { installPayloadFiles } from './converge.ts';
import { pullPayload as joinPull } from './join-payload.ts';
import { pullPayload } from './payload-pull.ts';

const MiB = 1024 * 1024;
const repository = 'winfleet/payload';

// Garbage is collected before each sample (as in src/hostaccess/payload-streaming.test.ts), so
// the samples count what is held, not what awaits collection.
setFlagsFromString('--expose-gc');
setFlagsFromString('--no-concurrent-array-buffer-sweeping');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * The most `process.memoryUsage()` grew above its level at the start while `work` ran. Samples
 * once a second, as a full collection in the unit suite's one big process is slow; they stop
 * when the test ends, however it ends.
 */
async function peakGrowth<T>(signal: AbortSignal, work: () => Promise<T>) {
  collectGarbage();
  const start = process.memoryUsage();
  const peak = { arrayBuffers: 0, heapUsed: 0 };
  const sample = () => {
    collectGarbage();
    const now = process.memoryUsage();
    peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers - start.arrayBuffers);
    peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed - start.heapUsed);
  };
  const sampler = setInterval(sample, 1000);
  signal.addEventListener('abort', () => clearInterval(sampler), { once: true });
  try {
    const result = await work();
    sample();
    return { result, peak };
  } finally {
    clearInterval(sampler);
  }
}

let registry: TestRegistry;
let secured: TestRegistry;
before(async () => {
  [registry, secured] = await Promise.all([
    startTestRegistry(),
    startTestRegistry({ auth: 'htpasswd' }),
  ]);
});
after(async () => {
  await Promise.all([registry?.stop(), secured?.stop()]);
});

async function tempDir(t: { after(fn: () => unknown): void }) {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-payload-pull-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A stand-in payload pushed to `to`, and where hosts pull it from. */
async function pushed(
  t: { after(fn: () => unknown): void },
  to: TestRegistry,
  options: Parameters<typeof writeStandInPayload>[1] = {},
) {
  const dir = await tempDir(t);
  const payload = await writeStandInPayload(dir, options);
  const result = await pushPayload(
    dir,
    { registry: to.host, repository, tag: payload.version },
    { plainHttp: true, ...(to.credentials ? { credentials: to.credentials } : {}) },
  );
  const source: JoinPayloadSource = {
    repository: `${to.host}/${repository}`,
    digest: result.digest,
    mirrors: [],
    insecure: true,
  };
  return { payload, manifest: servicesManifestFor(payload), source };
}

const staged = (name: string) => `${hostPaths.payload}\\${name}`;
const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

test('the agent pulls every manifest file not staged, verified; then nothing; then only what changed', async (t) => {
  const { payload, manifest, source } = await pushed(t, registry);
  const os = new SimHostOS(await createTestMachine(t));
  const first = await pullPayload(os, manifest, source, { extraFiles: ['winfleet-service.exe'] });
  const names = [...manifest.files.map((f) => f.payload), 'winfleet-service.exe'];
  assert.deepEqual(first.downloaded, names);
  assert.equal(first.payload.version, payload.version);
  for (const file of payload.files.filter((f) => names.includes(f.name)))
    assert.equal(await os.fileSha256(staged(file.name)), file.sha256, file.name);
  assert.equal(await os.fileSha256(staged('winfleet-agent.exe')), undefined, 'not asked for');

  assert.deepEqual((await pullPayload(os, manifest, source)).downloaded, [], 'all staged');
  await os.writeFile(staged('kubelet.exe'), 'someone else’s kubelet');
  const again = await pullPayload(os, manifest, source);
  assert.deepEqual(again.downloaded, ['kubelet.exe']);
  assert.equal(
    await os.fileSha256(staged('kubelet.exe')),
    payload.files.find((f) => f.name === 'kubelet.exe')!.sha256,
  );
  // What was pulled installs as what the operator copies does.
  const installed = await installPayloadFiles(os, manifest, emptyState());
  assert.deepEqual(
    installed,
    manifest.files.map((f) => f.path),
  );
});

test('credentials come from the payload pull secret; without them the registry refuses, naming the fix', async (t) => {
  const { manifest, source } = await pushed(t, secured);
  const os = new SimHostOS(await createTestMachine(t));
  const error = await pullPayload(os, manifest, source).then(
    () => assert.fail('pulled without credentials'),
    (e: unknown) => e as Error,
  );
  assert.equal(errorCode(error), 'WF_PAYLOAD_DOWNLOAD');
  assert.match(
    error.message,
    new RegExp(
      `registry "http://${secured.host.replace(/\./g, '\\.')}" requires credentials for "winfleet/payload" and the payload pull secret has none for it; name a kubernetes\\.io/dockerconfigjson Secret`,
    ),
  );
  assert.doesNotMatch(error.message, new RegExp(secured.credentials!.password));
  const pullSecret = {
    source: 'secret winfleet-system/payload-pull',
    config: {
      auths: {
        [secured.host]: {
          auth: Buffer.from(
            `${secured.credentials!.username}:${secured.credentials!.password}`,
          ).toString('base64'),
        },
      },
    },
  };
  const pulled = await pullPayload(os, manifest, source, { pullSecret });
  assert.equal(pulled.downloaded.length, manifest.files.length);
});

test('a registry that is down is a retryable WF_PAYLOAD_DOWNLOAD naming it', async (t) => {
  const gone = await startTestRegistry();
  const { manifest, source } = await pushed(t, gone);
  await gone.stop();
  const os = new SimHostOS(await createTestMachine(t));
  const error = await pullPayload(os, manifest, source).then(
    () => assert.fail('pulled from a stopped registry'),
    (e: unknown) => e as Error,
  );
  assert.equal(errorCode(error), 'WF_PAYLOAD_DOWNLOAD');
  assert.ok(isRetryable(error));
  assert.match(
    error.message,
    new RegExp(
      `registry "http://${gone.host.replace(/\./g, '\\.')}": Cannot reach .*ECONNREFUSED.*; check that the registry is up`,
    ),
  );
});

test('a layer that is not what its digest says never lands, and a pull that cannot fit is refused first', async (t) => {
  // A hostile registry: an honest manifest and payload.json, one file's bytes changed.
  const { payload, manifest } = await pushed(t, registry);
  const config = Buffer.from(JSON.stringify(payload));
  const sizes = new Map<string, Buffer>();
  for (const f of payload.files)
    sizes.set(
      f.sha256,
      Buffer.from(`winfleet-standin ${f.name.replace(/\.exe$/, '')} ${f.version}\n`),
    );
  const artifact = buildPayloadManifest(
    config,
    payload.files.map((f) => ({
      name: f.name,
      sha256: f.sha256,
      size: sizes.get(f.sha256)!.length,
    })),
  );
  const kubelet = payload.files.find((f) => f.name === 'kubelet.exe')!;
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    const digest = path.slice(path.lastIndexOf('/') + 1);
    if (path.endsWith(`/manifests/${artifact.digest}`)) res.end(artifact.bytes);
    else if (digest === `sha256:${sha(config)}`) res.end(config);
    else if (digest === `sha256:${kubelet.sha256}`)
      res.end(Buffer.from(sizes.get(kubelet.sha256)!.toString().replace('kubelet', 'kubelot')));
    else if (sizes.has(digest.slice(7))) res.end(sizes.get(digest.slice(7)));
    else res.writeHead(404).end();
  });
  t.after(() => server.close());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const source = {
    repository: `${host}/${repository}`,
    digest: artifact.digest,
    mirrors: [],
    insecure: true,
  };
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  const error = await pullPayload(os, manifest, source).then(
    () => assert.fail('a tampered file was pulled'),
    (e: unknown) => e as Error,
  );
  assert.equal(errorCode(error), 'WF_PAYLOAD_INVALID');
  assert.equal(isRetryable(error), false);
  assert.match(
    error.message,
    /Cannot get payload file kubelet\.exe .* has \d+ bytes hashing to sha256:[0-9a-f]{64}, the payload manifest says/,
  );
  assert.equal(await os.fileSha256(staged('kubelet.exe')), undefined, 'nothing under its name');
  assert.deepEqual(
    (await os.listDirectory(hostPaths.payload))?.filter((n) => n.endsWith('.tmp')),
    [],
    'no temporary file left',
  );

  // Too little room for what there is to pull: refused before a byte is written.
  const honest = await pushed(t, registry, { version: '1.36.5-wf.2' });
  const need = honest.payload.files
    .filter((f) => honest.manifest.files.some((m) => m.payload === f.name))
    .reduce((sum, f) => sum + sizes.get(f.sha256)!.length, 0);
  const fresh = await createTestMachine(t);
  fresh.fs.setFreeBytes(need - 1);
  const full = new SimHostOS(fresh);
  await assert.rejects(pullPayload(full, honest.manifest, honest.source), (e: Error) => {
    assert.equal(errorCode(e), 'WF_HOST_DISK_FULL');
    assert.match(
      e.message,
      new RegExp(
        `take ${need} bytes and the volume of C:\\\\k\\\\winfleet\\\\payload has ${need - 1} free`,
      ),
    );
    return true;
  });
  assert.equal(await full.listDirectory(hostPaths.payload), undefined, 'nothing written');
});

test('a 64 MiB payload file is pulled with live memory far below its size', async (t) => {
  const size = 64 * MiB;
  const { payload, manifest, source } = await pushed(t, registry, {
    version: '1.36.5-wf.64',
    sizes: { 'kubelet.exe': size },
  });
  const os = new SimHostOS(await createTestMachine(t));
  const { result, peak } = await peakGrowth(t.signal, () => pullPayload(os, manifest, source));
  t.diagnostic(`peak growth: arrayBuffers ${peak.arrayBuffers} bytes, heap ${peak.heapUsed} bytes`);
  assert.ok(result.downloaded.includes('kubelet.exe'));
  assert.ok(result.bytes > size);
  assert.equal(
    await os.fileSha256(staged('kubelet.exe')),
    payload.files.find((f: Payload['files'][number]) => f.name === 'kubelet.exe')!.sha256,
  );
  // Read whole, the file would be 64 MiB of Buffer at once; streamed, what is held is the
  // chunks in flight.
  assert.ok(peak.arrayBuffers < size / 4, `arrayBuffers grew by ${peak.arrayBuffers} bytes`);
  assert.ok(peak.heapUsed < size / 4, `the heap grew by ${peak.heapUsed} bytes`);
});

test('the join seam: the manifest files and the service shim at its own path, with the pull secret’s entries; none without a registry', async (t) => {
  const { payload, manifest, source } = await pushed(t, secured, { version: '1.36.5-wf.join' });
  const os = new SimHostOS(await createTestMachine(t));
  const credentials = parseDockerConfig({
    auths: {
      [secured.host]: {
        username: secured.credentials!.username,
        password: secured.credentials!.password,
      },
    },
  });
  await joinPull(os, manifest, source, credentials, {});
  const shim = payload.files.find((f) => f.name === 'winfleet-service.exe')!;
  assert.equal(await os.fileSha256(hostPaths.serviceExe), shim.sha256);
  for (const file of manifest.files)
    assert.equal(await os.fileSha256(staged(file.payload)), file.sha256, file.payload);
  // Again: nothing to do (and nothing replaced).
  await joinPull(os, manifest, source, credentials, {});

  // No registry in winfleet-join: a staged payload passes, a missing file is refused saying why.
  await joinPull(os, manifest, undefined, undefined, {});
  const bare = new SimHostOS(await createTestMachine(t));
  await assert.rejects(joinPull(bare, manifest, undefined, undefined, {}), (e: Error) => {
    assert.equal(errorCode(e), 'WF_AGENT_FILE_MISSING');
    assert.match(
      e.message,
      /the operator names no payload registry to pull it from .*run the operator with --payload-image/,
    );
    return true;
  });
});
