/**
 * The payload artifact against the real registry (Debian's docker-registry, distribution 2.8):
 * `winfleet payload push` run as a user runs it — anonymous over plain HTTP, with htpasswd
 * credentials from the Docker config or --password-stdin, over TLS with --ca-file, and with
 * bearer tokens — then resolved by digest and every file pulled and checked; the operator's
 * registry payload source (mirrors, the download cache); and what the CLI refuses.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startTestRegistry } from '../../../sim/registry/registry-process.ts';
import { startTokenServer, type TokenServer } from '../../../sim/registry/token-server.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { servicesManifestFor } from '../node-services.ts';
import type { Payload } from '../payload.ts';
import { registryPayloadSource } from '../registry-payload-source.ts';
import { parsePinnedReference } from './payload-reference.ts';
import { PayloadRegistry, saveVerified } from './payload-registry.ts';
import { type PayloadRouting, payloadTargets } from './payload-targets.ts';
import { pullLayer, resolvePayload } from './resolve-payload.ts';

const main = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
const repository = 'winfleet/payload';

let dir: string;
let payloadDir: string;
let payload: Payload;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'winfleet-oci-e2e-'));
  payloadDir = join(dir, 'payload');
  payload = await writeStandInPayload(payloadDir, { sizes: { 'kubelet.exe': 3 * 1024 * 1024 } });
});
after(() => rm(dir, { recursive: true, force: true }));

/** Runs `winfleet payload push` as a child process. */
function push(
  reference: string,
  flags: string[] = [],
  options: { dockerConfig?: object; stdin?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const configDir = join(dir, `docker-${Math.random().toString(36).slice(2)}`);
    mkdir(configDir)
      .then(() =>
        options.dockerConfig
          ? writeFile(join(configDir, 'config.json'), JSON.stringify(options.dockerConfig))
          : undefined,
      )
      .then(() => {
        const child = execFile(
          process.execPath,
          [main, 'payload', 'push', payloadDir, reference, ...flags],
          { timeout: 120_000, env: { ...process.env, NO_COLOR: '1', DOCKER_CONFIG: configDir } },
          (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
            resolve({ code, stdout, stderr });
          },
        );
        child.stdin?.end(options.stdin ?? '');
      }, reject);
  });
}

/** Resolves `reference` and pulls every file, checking each against payload.json. */
async function pullAll(reference: string, routing: PayloadRouting) {
  const ref = parsePinnedReference(reference);
  const targets = payloadTargets(ref, routing);
  const registry = new PayloadRegistry({ trustedOrigins: targets.map((t) => t.endpoint.origin) });
  try {
    const resolved = await resolvePayload(registry, targets, ref);
    assert.deepEqual(resolved.payload, payload);
    assert.deepEqual(resolved.config, await readFile(join(payloadDir, 'payload.json')));
    const into = await mkdtemp(join(dir, 'pulled-'));
    for (const layer of resolved.manifest.layers) {
      await pullLayer(registry, targets, ref, layer, (chunks) =>
        saveVerified(chunks, join(into, layer.name)),
      );
      const bytes = await readFile(join(into, layer.name));
      assert.equal(
        createHash('sha256').update(bytes).digest('hex'),
        payload.files.find((f) => f.name === layer.name)!.sha256,
      );
      assert.deepEqual(bytes, await readFile(join(payloadDir, layer.name)));
    }
    assert.equal((await readdir(into)).length, payload.files.length);
  } finally {
    registry.close();
  }
}

const pinned = /^(127\.0\.0\.1:\d+\/winfleet\/payload@sha256:[0-9a-f]{64})\n$/;

test('anonymous over plain HTTP: push, push again (nothing uploaded), resolve and pull every file', async (t) => {
  const registry = await startTestRegistry();
  t.after(() => registry.stop());
  const first = await push(`${registry.host}/${repository}:1.36.5-wf.1`, ['--plain-http']);
  assert.equal(first.code, 0, first.stderr);
  const reference = pinned.exec(first.stdout)?.[1];
  assert.ok(reference, first.stdout);
  assert.match(first.stderr, /pushed kubelet\.exe \(3\.0 MiB\)/);
  assert.equal(first.stderr.match(/^pushed /gm)?.length, payload.files.length + 1);
  const again = await push(`${registry.host}/${repository}:latest`, ['--plain-http']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, first.stdout, 'the same bytes: the same digest');
  assert.doesNotMatch(again.stderr, /^pushed /m);
  assert.equal(again.stderr.match(/in the registry already$/gm)?.length, payload.files.length + 1);
  await pullAll(reference, { plainHttp: true });
});

test('htpasswd: credentials from the Docker config or --password-stdin; wrong or none refused (exit 1)', async (t) => {
  const registry = await startTestRegistry({ auth: 'htpasswd' });
  t.after(() => registry.stop());
  const { username, password } = registry.credentials!;
  const to = `${registry.host}/${repository}:1`;
  const auth = Buffer.from(`${username}:${password}`).toString('base64');
  const fromConfig = await push(to, ['--plain-http'], {
    dockerConfig: { auths: { [registry.host]: { auth } }, credsStore: 'desktop' },
  });
  assert.equal(fromConfig.code, 0, fromConfig.stderr);
  assert.match(
    fromConfig.stderr,
    /keeps some credentials in a credential helper, which winfleet does not run/,
  );
  const fromStdin = await push(to, ['--plain-http', '--username', username, '--password-stdin'], {
    stdin: `${password}\n`,
  });
  assert.equal(fromStdin.code, 0, fromStdin.stderr);
  assert.equal(fromStdin.stdout, fromConfig.stdout);
  const wrong = await push(to, ['--plain-http', '--username', username, '--password-stdin'], {
    stdin: 'not-the-password\n',
  });
  assert.equal(wrong.code, 1, wrong.stderr);
  assert.match(wrong.stderr, /HTTP 401/);
  assert.doesNotMatch(wrong.stderr, /not-the-password/);
  const none = await push(to, ['--plain-http']);
  assert.equal(none.code, 1, none.stderr);
  assert.match(
    none.stderr,
    /requires credentials for "winfleet\/payload" and the Docker config has none for it; log in with docker login, or give --username and --password-stdin/,
  );
  const reference = pinned.exec(fromConfig.stdout)![1]!;
  await pullAll(reference, {
    plainHttp: true,
    credentials: [{ source: 'test', config: { auths: { [registry.host]: { auth } } } }],
  });
});

test('TLS: --ca-file trusts the registry; without it the push fails saying so', async (t) => {
  const registry = await startTestRegistry({ tls: true });
  t.after(() => registry.stop());
  const caFile = join(dir, 'registry-ca.pem');
  await writeFile(caFile, registry.caPem!);
  const to = `${registry.host}/${repository}:1`;
  const untrusted = await push(to);
  assert.equal(untrusted.code, 1, untrusted.stderr);
  assert.match(
    untrusted.stderr,
    /TLS with registry "https:\/\/127\.0\.0\.1:\d+" failed: .*; give the CA of its certificate with --ca-file/,
  );
  const trusted = await push(to, ['--ca-file', caFile]);
  assert.equal(trusted.code, 0, trusted.stderr);
  await pullAll(pinned.exec(trusted.stdout)![1]!, { caBundle: registry.caPem! });
});

test('bearer tokens: the push asks for pull,push; anonymous readers pull a public repository', async (t) => {
  const token: TokenServer = await startTokenServer({ users: { ci: 'ci-password' } });
  const registry = await startTestRegistry({ auth: { token } });
  t.after(async () => {
    await registry.stop();
    await token.stop();
  });
  const pushed = await push(
    `${registry.host}/${repository}:1`,
    ['--plain-http', '--username', 'ci', '--password-stdin'],
    {
      stdin: 'ci-password',
    },
  );
  assert.equal(pushed.code, 0, pushed.stderr);
  assert.ok(
    token.requests.some(
      (r) => r.account === 'ci' && r.scope === `repository:${repository}:pull,push`,
    ),
    JSON.stringify(token.requests),
  );
  await pullAll(pinned.exec(pushed.stdout)![1]!, { plainHttp: true });
  assert.ok(
    token.requests.some((r) => r.account === '' && r.scope === `repository:${repository}:pull`),
  );
});

test('the operator: payload.json from the registry (or its mirror), files fetched into the cache once, as a stream', async (t) => {
  const upstream = await startTestRegistry();
  const mirror = await startTestRegistry();
  t.after(() => Promise.all([upstream.stop(), mirror.stop()]));
  const [up, down] = await Promise.all([
    push(`${upstream.host}/${repository}:1`, ['--plain-http']),
    push(`${mirror.host}/mirrored/${repository}:1`, ['--plain-http']),
  ]);
  assert.equal(up.code, 0, up.stderr);
  assert.equal(down.code, 0, down.stderr);
  const reference = pinned.exec(up.stdout)![1]!;
  const cacheDir = join(dir, 'cache');
  await mkdir(cacheDir);
  await writeFile(join(cacheDir, 'a'.repeat(64)), 'a file of an older payload');
  const config = parseConfig(
    `images:\n  mirrors:\n    "${upstream.host}":\n      - endpoint: ${mirror.url}\n        pathPrefix: mirrored\n        insecure: true\n`,
  );
  const source = registryPayloadSource({
    reference: parsePinnedReference(reference),
    config: () => config,
    cacheDir,
    plainHttp: true,
  });
  // The upstream is down: the mirror serves it all.
  await upstream.stop();
  const loaded = await source();
  assert.deepEqual(loaded.payload, payload);
  assert.deepEqual(loaded.manifest, servicesManifestFor(payload));
  assert.deepEqual(loaded.registry, {
    repository: `${upstream.host}/${repository}`,
    digest: reference.slice(reference.indexOf('@') + 1),
    insecure: true,
  });
  assert.deepEqual(await readdir(cacheDir), [], 'nothing fetched yet; the older file pruned');
  const kubelet = payload.files.find((f) => f.name === 'kubelet.exe')!;
  const [one, two] = await Promise.all([loaded.fileOnDisk(kubelet), loaded.fileOnDisk(kubelet)]);
  assert.equal(one.path, two.path);
  assert.equal(one.path, join(cacheDir, kubelet.sha256));
  assert.equal(one.size, 3 * 1024 * 1024);
  assert.deepEqual(await readFile(one.path), await readFile(join(payloadDir, 'kubelet.exe')));
  assert.deepEqual(await readdir(cacheDir), [kubelet.sha256], 'one fetch, no temporary file');
  // From the cache once fetched, whatever the registry does.
  await mirror.stop();
  assert.equal((await loaded.fileOnDisk(kubelet)).path, one.path);
  assert.equal(await source(), loaded, 'read once: the digest pins it');
});
