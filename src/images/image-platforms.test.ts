// Image platform lookups against real docker-registry processes on loopback: plain, htpasswd,
// token auth (with our token service) and TLS, seeded with the synthetic MCR catalog.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Registry } from 'prom-client';
import { freePort } from '../../sim/cluster/free-port.ts';
import {
  dockerHubCatalog,
  expectedPlatforms,
  mcrCatalog,
  osVersions,
  testCatalog,
} from '../../sim/registry/catalog.ts';
import { startTestRegistry, type TestRegistry } from '../../sim/registry/registry-process.ts';
import { type SeededImage, seedImages } from '../../sim/registry/seed-images.ts';
import { type SilentServer, startSilentServer } from '../../sim/registry/silent-server.ts';
import { startTokenServer, type TokenServer } from '../../sim/registry/token-server.ts';
import { compatibleNodeBuilds } from '../windows/compatibility.ts';
import {
  createImagePlatformResolver,
  type ImagePlatformResolver,
  type ImagePlatformResolverOptions,
  type ImagePlatformsResult,
  type ResolvedImagePlatforms,
  windowsOsVersions,
} from './image-platforms.ts';
import { prometheusLookupObserver } from './lookup-metrics.ts';
import { mediaTypes } from './manifest-platforms.ts';

let plain: TestRegistry;
let basic: TestRegistry;
let tokenRegistry: TestRegistry;
let tls: TestRegistry;
let tokens: TokenServer;
let silent: SilentServer;
let deadPort: number;
let seeded: SeededImage[];
const tokenUser = { username: 'alice', password: 'alice-password' };

before(async () => {
  tokens = await startTokenServer({
    users: { [tokenUser.username]: tokenUser.password },
    refreshTokens: { 'alice-refresh': 'alice' },
  });
  [plain, basic, tokenRegistry, tls, silent, deadPort] = await Promise.all([
    startTestRegistry(),
    startTestRegistry({ auth: 'htpasswd' }),
    startTestRegistry({ auth: { token: tokens } }),
    startTestRegistry({ tls: true }),
    startSilentServer(),
    freePort(),
  ]);
  const small = mcrCatalog.filter((e) => e.repository === 'windows/servercore');
  const privateImages = testCatalog.filter((e) => e.repository.startsWith('private/'));
  [seeded] = await Promise.all([
    seedImages(plain, [...mcrCatalog, ...dockerHubCatalog, ...testCatalog]),
    seedImages(plain, small, { pathPrefix: 'mirrors/mcr' }),
    seedImages(basic, small),
    seedImages({ ...tokenRegistry, credentials: tokenUser }, [...small, ...privateImages]),
    seedImages(tls, small),
  ]);
});

after(async () => {
  await Promise.all([plain, basic, tokenRegistry, tls].map((r) => r?.stop()));
  await Promise.all([tokens?.stop(), silent?.stop()]);
});

const resolvers: ImagePlatformResolver[] = [];
after(() => {
  for (const r of resolvers) r.close();
});

function resolverFor(options: ImagePlatformResolverOptions): ImagePlatformResolver {
  const resolver = createImagePlatformResolver(options);
  resolvers.push(resolver);
  return resolver;
}

/** Mirrors mcr.microsoft.com and Docker Hub to `registry`, as the lab does. */
function mirroredTo(
  registry: TestRegistry,
  extra: Partial<ImagePlatformResolverOptions> = {},
): ImagePlatformResolverOptions {
  const endpoint = {
    endpoint: registry.url,
    insecure: registry.url.startsWith('http:'),
    ...(registry.caPem ? { caBundle: registry.caPem } : {}),
  };
  return { mirrors: { 'mcr.microsoft.com': [endpoint], 'docker.io': [endpoint] }, ...extra };
}

function assertResolved(result: ImagePlatformsResult): asserts result is ResolvedImagePlatforms {
  assert.equal(result.status, 'resolved', result.status === 'unknown' ? result.message : '');
}

const secret = (
  host: string,
  credentials: Record<string, string>,
  source = `secret test/${host}`,
) => ({
  source,
  config: { auths: { [host]: credentials } },
});
const basicSecret = (host: string, username: string, password: string) =>
  secret(host, { auth: Buffer.from(`${username}:${password}`).toString('base64') });

test('every MCR seed image resolves through the mirror with its platforms and digest', async () => {
  const resolver = resolverFor(mirroredTo(plain));
  for (const entry of mcrCatalog) {
    const image = `mcr.microsoft.com/${entry.repository}:${entry.tag}`;
    const result = await resolver.resolveImagePlatforms(image);
    assertResolved(result);
    const pushed = seeded.find((s) => s.entry === entry)!;
    assert.equal(result.digest, pushed.digest, image);
    assert.equal(result.mediaType, pushed.mediaType, image);
    assert.equal(result.endpoint, plain.url);
    assert.equal(result.source, 'registry');
    assert.equal(result.reference, image);
    assert.deepEqual(
      result.platforms.map(({ manifestDigest: _, ...p }) => p),
      expectedPlatforms(entry.image),
      image,
    );
    for (const p of result.platforms) assert.match(p.manifestDigest ?? '', /^sha256:[0-9a-f]{64}$/);
  }
});

test('the seed images land on the builds the issue describes', async () => {
  const resolver = resolverFor(mirroredTo(plain));
  const nodes = ['10.0.17763', '10.0.20348', '10.0.26100'];
  const buildsFor = async (image: string) => {
    const result = await resolver.resolveImagePlatforms(image);
    assertResolved(result);
    return compatibleNodeBuilds(nodes, [windowsOsVersions(result.platforms)]);
  };
  assert.deepEqual(await buildsFor('mcr.microsoft.com/windows/servercore:ltsc2019'), [
    '10.0.17763',
  ]);
  assert.deepEqual(await buildsFor('mcr.microsoft.com/windows/servercore:ltsc2022'), [
    '10.0.20348',
    '10.0.26100',
  ]);
  assert.deepEqual(
    await buildsFor('mcr.microsoft.com/windows/servercore/iis'),
    nodes,
    'iis:latest lists 2019 and 2022',
  );
  assert.deepEqual(await buildsFor('mcr.microsoft.com/windows/servercore:ltsc2025'), [
    '10.0.26100',
  ]);
  assert.deepEqual(await buildsFor('mcr.microsoft.com/dotnet/runtime:8.0'), nodes);
  assert.deepEqual(await buildsFor('nginx'), [], 'a Linux image runs on no Windows build');
});

test('Linux images: index entries for each architecture, attestations skipped', async () => {
  const resolver = resolverFor(mirroredTo(plain));
  const result = await resolver.resolveImagePlatforms('nginx');
  assertResolved(result);
  assert.equal(result.reference, 'docker.io/library/nginx:latest');
  assert.equal(result.mediaType, mediaTypes.ociIndex);
  assert.deepEqual(
    result.platforms.map((p) => `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ''}`),
    ['linux/amd64', 'linux/arm64/v8'],
  );
  const busybox = await resolver.resolveImagePlatforms('docker.io/library/busybox');
  assertResolved(busybox);
  assert.equal(busybox.mediaType, mediaTypes.dockerManifest);
  assert.deepEqual(
    busybox.platforms.map((p) => p.os),
    ['linux'],
  );
});

test('lookups by digest, and by tag plus digest, return the same platforms', async () => {
  const resolver = resolverFor(mirroredTo(plain));
  const byTag = await resolver.resolveImagePlatforms(
    'mcr.microsoft.com/windows/servercore:multiarch',
  );
  assertResolved(byTag);
  const fresh = resolverFor(mirroredTo(plain));
  const byDigest = await fresh.resolveImagePlatforms(
    `mcr.microsoft.com/windows/servercore@${byTag.digest}`,
  );
  assertResolved(byDigest);
  assert.equal(byDigest.source, 'registry');
  assert.deepEqual(byDigest.platforms, byTag.platforms);
  assert.deepEqual(windowsOsVersions(byDigest.platforms), [
    osVersions.ltsc2019,
    osVersions.ltsc2022,
    osVersions.ltsc2025,
  ]);
  assert.deepEqual(windowsOsVersions(byDigest.platforms, 'arm64'), [osVersions.ltsc2025]);
  // The digest wins over a tag that points elsewhere.
  const pinned = await fresh.resolveImagePlatforms(
    `mcr.microsoft.com/windows/servercore:ltsc2019@${byTag.digest}`,
  );
  assertResolved(pinned);
  assert.equal(pinned.digest, byTag.digest);
  assert.equal(pinned.platforms.length, 4);
  // A digest that is not there.
  const missing = await fresh.resolveImagePlatforms(
    `mcr.microsoft.com/windows/servercore@sha256:${'0'.repeat(64)}`,
  );
  assert.equal(missing.status, 'unknown');
  assert.equal(missing.status === 'unknown' && missing.reason, 'not-found');
});

test('a loopback registry is reached directly when configured as insecure', async () => {
  const resolver = resolverFor({
    registries: { [plain.host]: { endpoint: plain.url, insecure: true } },
  });
  const result = await resolver.resolveImagePlatforms(`${plain.host}/windows/nanoserver:1809`);
  assertResolved(result);
  assert.deepEqual(windowsOsVersions(result.platforms), [osVersions.ltsc2019]);
  assert.equal(result.reference, `${plain.host}/windows/nanoserver:1809`);
});

test('mirrors: path prefixes, order, fallback to upstream only when configured', async () => {
  const ltsc2022 = 'mcr.microsoft.com/windows/servercore:ltsc2022';
  const prefixed = resolverFor({
    mirrors: {
      'mcr.microsoft.com': [{ endpoint: plain.url, insecure: true, pathPrefix: 'mirrors/mcr' }],
    },
  });
  const viaPrefix = await prefixed.resolveImagePlatforms(ltsc2022);
  assertResolved(viaPrefix);
  assert.equal(viaPrefix.repository, 'mirrors/mcr/windows/servercore');

  const dead = { endpoint: `http://127.0.0.1:${deadPort}`, insecure: true };
  const second = resolverFor({
    mirrors: { 'mcr.microsoft.com': [dead, { endpoint: plain.url, insecure: true }] },
  });
  const viaSecond = await second.resolveImagePlatforms(ltsc2022);
  assertResolved(viaSecond);
  assert.equal(viaSecond.endpoint, plain.url);

  const noFallback = resolverFor({
    mirrors: { 'mcr.microsoft.com': [dead] },
    registries: { 'mcr.microsoft.com': { endpoint: plain.url, insecure: true } },
  });
  const failed = await noFallback.resolveImagePlatforms(ltsc2022);
  assert.equal(failed.status, 'unknown');
  assert.ok(failed.status === 'unknown');
  assert.equal(failed.reason, 'unreachable');
  assert.deepEqual(
    failed.attempts.map((a) => a.endpoint),
    [dead.endpoint],
  );
  assert.match(
    failed.message,
    /^Cannot read the platforms of "mcr\.microsoft\.com\/windows\/servercore:ltsc2022": Cannot reach registry "http:\/\/127\.0\.0\.1:\d+"/,
  );

  // "Upstream" here is the registry override, so no test ever leaves loopback.
  const withFallback = resolverFor({
    mirrors: { 'mcr.microsoft.com': [dead] },
    fallbackToUpstream: true,
    registries: { 'mcr.microsoft.com': { endpoint: plain.url, insecure: true } },
  });
  const upstream = await withFallback.resolveImagePlatforms(ltsc2022);
  assertResolved(upstream);
  assert.equal(upstream.endpoint, plain.url);

  // A mirror without the image: not found there, and the reason says so.
  const notMirrored = await prefixed.resolveImagePlatforms(
    'mcr.microsoft.com/windows/nanoserver:1809',
  );
  assert.equal(notMirrored.status === 'unknown' && notMirrored.reason, 'not-found');
});

test('unknown tags and repositories are not-found', async () => {
  const resolver = resolverFor(mirroredTo(plain));
  for (const image of [
    'mcr.microsoft.com/windows/servercore:ltsc2016',
    'mcr.microsoft.com/windows/nothing:1',
  ]) {
    const result = await resolver.resolveImagePlatforms(image);
    assert.equal(result.status, 'unknown');
    assert.ok(result.status === 'unknown');
    assert.equal(result.reason, 'not-found');
    assert.match(result.message, /HTTP 404\)/);
    assert.doesNotMatch(result.message, /MANIFEST_UNKNOWN|NAME_UNKNOWN/);
  }
});

test('index entries without a platform are read from their configs', async () => {
  const resolver = resolverFor(mirroredTo(plain));
  const result = await resolver.resolveImagePlatforms('mcr.microsoft.com/winfleet-test/undeclared');
  assertResolved(result);
  assert.deepEqual(windowsOsVersions(result.platforms), [osVersions.ltsc2019, osVersions.ltsc2022]);
  const bare = await resolver.resolveImagePlatforms(
    'mcr.microsoft.com/winfleet-test/no-os-version',
  );
  assertResolved(bare);
  assert.deepEqual(windowsOsVersions(bare.platforms), ['']);
});

test('malformed configs are invalid-manifest with a message naming the field', async () => {
  const resolver = resolverFor(mirroredTo(plain));
  const cases: [string, RegExp][] = [
    [
      'config-not-json',
      /Invalid image config "sha256:[0-9a-f]+" of "winfleet-test\/broken": not JSON/,
    ],
    ['config-without-os', /"os" is missing/],
    ['os-version-number', /"os\.version" must be a string, got a number$/],
  ];
  for (const [tag, message] of cases) {
    const result = await resolver.resolveImagePlatforms(
      `mcr.microsoft.com/winfleet-test/broken:${tag}`,
    );
    assert.equal(result.status, 'unknown', tag);
    assert.ok(result.status === 'unknown');
    assert.equal(result.reason, 'invalid-manifest', tag);
    assert.match(result.message, message, tag);
  }
});

test('basic auth: the pull secret for the mirror host is used; none or a wrong one is unauthorized', async () => {
  const resolver = resolverFor(mirroredTo(basic));
  const image = 'mcr.microsoft.com/windows/servercore:ltsc2022';
  const anonymous = await resolver.resolveImagePlatforms(image);
  assert.equal(anonymous.status === 'unknown' && anonymous.reason, 'unauthorized');
  const wrong = await resolver.resolveImagePlatforms(image, {
    pullSecrets: [basicSecret(basic.host, 'winfleet', 'wrong')],
  });
  assert.equal(wrong.status === 'unknown' && wrong.reason, 'unauthorized');
  const unrelated = await resolver.resolveImagePlatforms(image, {
    pullSecrets: [basicSecret('other.example.com', 'winfleet', 'x')],
  });
  assert.equal(
    unrelated.status === 'unknown' && unrelated.reason,
    'unauthorized',
    'failures are cached per set of pull secrets',
  );
  const ok = await resolver.resolveImagePlatforms(image, {
    pullSecrets: [
      basicSecret(basic.host, basic.credentials!.username, basic.credentials!.password),
    ],
  });
  assertResolved(ok);
  assert.deepEqual(windowsOsVersions(ok.platforms), [osVersions.ltsc2022]);
  // The operator's own secret for the mirror serves pods that have none.
  const withDefault = resolverFor(
    mirroredTo(basic, {
      defaultDockerConfigs: [
        basicSecret(`http://${basic.host}`, 'winfleet', basic.credentials!.password),
      ],
    }),
  );
  assertResolved(await withDefault.resolveImagePlatforms(image));
});

test('bearer tokens from the real token flow: anonymous for public, pull secrets for private', async () => {
  const resolver = resolverFor({
    registries: { [tokenRegistry.host]: { endpoint: tokenRegistry.url, insecure: true } },
  });
  const before = tokens.requests.length;
  const publicImage = await resolver.resolveImagePlatforms(
    `${tokenRegistry.host}/windows/servercore:ltsc2019`,
  );
  assertResolved(publicImage);
  assert.deepEqual(windowsOsVersions(publicImage.platforms), [osVersions.ltsc2019]);
  assert.deepEqual(
    tokens.requests.slice(before).map((r) => [r.account, r.scope]),
    [['', 'repository:windows/servercore:pull']],
  );

  // Another tag of the same repository reuses the token: no new token request.
  assertResolved(
    await resolver.resolveImagePlatforms(`${tokenRegistry.host}/windows/servercore:ltsc2022`),
  );
  assert.equal(tokens.requests.length, before + 1);

  const privateImage = `${tokenRegistry.host}/private/windows-app:ltsc2022`;
  const denied = await resolver.resolveImagePlatforms(privateImage);
  assert.equal(denied.status === 'unknown' && denied.reason, 'unauthorized');
  const wrong = await resolver.resolveImagePlatforms(privateImage, {
    pullSecrets: [basicSecret(tokenRegistry.host, 'alice', 'nope')],
  });
  assert.equal(wrong.status === 'unknown' && wrong.reason, 'unauthorized');
  assert.match(
    wrong.status === 'unknown' ? wrong.message : '',
    /refused the pull secret credentials/,
  );

  const allowed = await resolver.resolveImagePlatforms(privateImage, {
    pullSecrets: [basicSecret(tokenRegistry.host, tokenUser.username, tokenUser.password)],
  });
  assertResolved(allowed);
  assert.deepEqual(windowsOsVersions(allowed.platforms), [osVersions.ltsc2022]);
  assert.deepEqual(tokens.requests.at(-1), {
    method: 'GET',
    scope: 'repository:private/windows-app:pull',
    account: 'alice',
  });

  // An identity (refresh) token from docker login works the same, through the POST grant.
  const viaRefresh = resolverFor({
    registries: { [tokenRegistry.host]: { endpoint: tokenRegistry.url, insecure: true } },
  });
  const refreshed = await viaRefresh.resolveImagePlatforms(privateImage, {
    pullSecrets: [
      secret(tokenRegistry.host, {
        username: '00000000-0000-0000-0000-000000000000',
        identitytoken: 'alice-refresh',
      }),
    ],
  });
  assertResolved(refreshed);
  assert.equal(tokens.requests.at(-1)?.method, 'POST');
});

test('TLS: the mirror CA bundle is trusted; without it the lookup is a tls-error', async () => {
  const image = 'mcr.microsoft.com/windows/servercore:ltsc2025';
  const trusted = resolverFor(mirroredTo(tls));
  const ok = await trusted.resolveImagePlatforms(image);
  assertResolved(ok);
  assert.deepEqual(windowsOsVersions(ok.platforms), [osVersions.ltsc2025]);
  const untrusted = resolverFor({ mirrors: { 'mcr.microsoft.com': [{ endpoint: tls.url }] } });
  const failed = await untrusted.resolveImagePlatforms(image);
  assert.equal(failed.status === 'unknown' && failed.reason, 'tls-error');
  assert.match(
    failed.status === 'unknown' ? failed.message : '',
    /TLS with registry "https:\/\/127\.0\.0\.1:\d+" failed: .*check its CA bundle/,
  );
  const skipVerify = resolverFor({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: tls.url, insecure: true }] },
  });
  assertResolved(await skipVerify.resolveImagePlatforms(image));
});

test('the cache answers repeats, tags expire before digests, and counts hits', async () => {
  let now = 1_000_000;
  const events: string[] = [];
  const resolver = resolverFor(
    mirroredTo(plain, {
      now: () => now,
      cache: { tagTtlMs: 1000, digestTtlMs: 10_000 },
      observer: {
        lookup: (e) => events.push(`${e.source}:${e.outcome}`),
        cache: (r) => events.push(r),
      },
    }),
  );
  const image = 'mcr.microsoft.com/windows/servercore/iis:latest';
  const first = await resolver.resolveImagePlatforms(image);
  assertResolved(first);
  const second = await resolver.resolveImagePlatforms(image);
  assertResolved(second);
  assert.equal(second.source, 'cache');
  assert.deepEqual(second.platforms, first.platforms);
  // Looking the tag up also taught the cache its digest.
  const byDigest = await resolver.resolveImagePlatforms(
    `mcr.microsoft.com/windows/servercore/iis@${first.digest}`,
  );
  assert.equal(byDigest.source, 'cache');
  now += 2000;
  assert.equal((await resolver.resolveImagePlatforms(image)).source, 'registry', 'the tag expired');
  now += 9000;
  assert.equal(
    (
      await resolver.resolveImagePlatforms(
        `mcr.microsoft.com/windows/servercore/iis@${first.digest}`,
      )
    ).source,
    'cache',
    'refreshed by the tag lookup',
  );
  now += 11_000;
  assert.equal(
    (
      await resolver.resolveImagePlatforms(
        `mcr.microsoft.com/windows/servercore/iis@${first.digest}`,
      )
    ).source,
    'registry',
  );
  assert.deepEqual(events, [
    'miss',
    'registry:resolved',
    'hit',
    'cache:resolved',
    'hit',
    'cache:resolved',
    'miss',
    'registry:resolved',
    'hit',
    'cache:resolved',
    'miss',
    'registry:resolved',
  ]);
  const stats = resolver.cacheStats();
  assert.equal(stats.hits, 3);
  assert.equal(stats.misses, 3);
});

test('concurrent lookups of one image share one registry lookup', async () => {
  const resolver = resolverFor(mirroredTo(tokenRegistry));
  const before = tokens.requests.length;
  const results = await Promise.all(
    Array.from({ length: 20 }, () =>
      resolver.resolveImagePlatforms('mcr.microsoft.com/windows/servercore:multiarch'),
    ),
  );
  for (const r of results) assertResolved(r);
  assert.equal(tokens.requests.length - before, 1, 'one token request for twenty lookups');
});

test('a registry that never answers costs at most the budget, and the failure is cached', async () => {
  const resolver = resolverFor({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: `http://${silent.host}`, insecure: true }] },
    lookupTimeoutMs: 300,
  });
  const started = Date.now();
  const result = await resolver.resolveImagePlatforms(
    'mcr.microsoft.com/windows/servercore:ltsc2022',
  );
  const elapsed = Date.now() - started;
  assert.equal(result.status === 'unknown' && result.reason, 'timeout');
  assert.ok(elapsed >= 250 && elapsed < 2000, `took ${elapsed} ms`);
  assert.match(
    result.status === 'unknown' ? result.message : '',
    /Timed out waiting for registry "http:\/\/127\.0\.0\.1:\d+"/,
  );
  const again = Date.now();
  const cached = await resolver.resolveImagePlatforms(
    'mcr.microsoft.com/windows/servercore:ltsc2022',
  );
  assert.equal(cached.source, 'cache');
  assert.equal(cached.status === 'unknown' && cached.reason, 'timeout');
  assert.ok(Date.now() - again < 250, 'no second wait for the budget');
});

test("the caller's signal bounds the wait; the lookup goes on and fills the cache", async () => {
  const resolver = resolverFor({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: `http://${silent.host}`, insecure: true }] },
    lookupTimeoutMs: 5000,
  });
  const started = Date.now();
  const timedOut = await resolver.resolveImagePlatforms(
    'mcr.microsoft.com/powershell:lts-nanoserver-1809',
    {},
    AbortSignal.timeout(150),
  );
  assert.ok(Date.now() - started < 1500);
  assert.equal(timedOut.status === 'unknown' && timedOut.reason, 'timeout');
  const controller = new AbortController();
  const pending = resolver.resolveImagePlatforms(
    'mcr.microsoft.com/powershell:lts-nanoserver-1809',
    {},
    controller.signal,
  );
  controller.abort();
  const aborted = await pending;
  assert.equal(aborted.status === 'unknown' && aborted.reason, 'aborted');
  const preAborted = await resolver.resolveImagePlatforms(
    'mcr.microsoft.com/x:y',
    {},
    AbortSignal.abort(),
  );
  assert.equal(preAborted.status === 'unknown' && preAborted.reason, 'aborted');

  // With a fast registry, an early caller timeout still leaves the answer in the cache.
  const slowCaller = resolverFor(mirroredTo(plain));
  await slowCaller.resolveImagePlatforms(
    'mcr.microsoft.com/powershell:lts-nanoserver-ltsc2022',
    {},
    AbortSignal.timeout(1),
  );
  for (let i = 0; i < 300 && slowCaller.cacheStats().size === 0; i++)
    await new Promise((r) => setTimeout(r, 10));
  const later = await slowCaller.resolveImagePlatforms(
    'mcr.microsoft.com/powershell:lts-nanoserver-ltsc2022',
  );
  assertResolved(later);
  assert.equal(later.source, 'cache');
});

test('invalid references are reported, not thrown', async () => {
  const resolver = resolverFor({});
  const result = await resolver.resolveImagePlatforms('MCR.microsoft.com/Windows/ServerCore');
  assert.equal(result.status, 'unknown');
  assert.ok(result.status === 'unknown');
  assert.equal(result.reason, 'invalid-reference');
  assert.match(result.message, /repository component "Windows" must be lowercase/);
});

test('metrics: lookups by outcome and source, cache hits, in a prom-client registry', async () => {
  const registry = new Registry();
  const resolver = resolverFor(mirroredTo(plain, { observer: prometheusLookupObserver(registry) }));
  await resolver.resolveImagePlatforms('mcr.microsoft.com/windows/nanoserver:ltsc2022');
  await resolver.resolveImagePlatforms('mcr.microsoft.com/windows/nanoserver:ltsc2022');
  await resolver.resolveImagePlatforms('mcr.microsoft.com/windows/nanoserver:nope');
  const text = await registry.metrics();
  assert.match(text, /winfleet_image_lookups_total\{outcome="resolved",source="registry"\} 1/);
  assert.match(text, /winfleet_image_lookups_total\{outcome="resolved",source="cache"\} 1/);
  assert.match(text, /winfleet_image_lookups_total\{outcome="not-found",source="registry"\} 1/);
  assert.match(text, /winfleet_image_cache_requests_total\{result="hit"\} 1/);
  assert.match(text, /winfleet_image_cache_requests_total\{result="miss"\} 2/);
  assert.match(text, /winfleet_image_lookup_duration_seconds_count\{source="registry"\} 2/);
});

test('a throwing metrics callback does not break lookups', async () => {
  const resolver = resolverFor(
    mirroredTo(plain, {
      observer: {
        lookup: () => {
          throw new Error('broken metrics');
        },
        cache: () => {
          throw new Error('broken metrics');
        },
      },
    }),
  );
  assertResolved(await resolver.resolveImagePlatforms('mcr.microsoft.com/windows/nanoserver:1809'));
});
