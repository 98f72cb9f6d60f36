// The sizes of spec.prePull images per Windows build, looked up in a real docker-registry on
// loopback (seeded with the synthetic MCR catalog) through the webhook's resolver.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type CatalogEntry, mcrCatalog, osVersions } from '../../../sim/registry/catalog.ts';
import { startTestRegistry, type TestRegistry } from '../../../sim/registry/registry-process.ts';
import { seedImages } from '../../../sim/registry/seed-images.ts';
import { formatPrePullCommand, parsePrePullCommand, prePullCommand } from '../../api/pre-pull.ts';
import {
  createImagePlatformResolver,
  type ImagePlatform,
  type ImagePlatformResolver,
} from '../../images/image-platforms.ts';
import { createLogger } from '../../log/logger.ts';
import { chooseWindowsVariant, createPrePullSizes, nodeWindowsBuild } from './pre-pull-sizes.ts';

const windows = (osVersion: string, declaredLayerBytes: number) => ({
  kind: 'manifest' as const,
  format: 'oci' as const,
  platform: { os: 'windows', architecture: 'amd64', osVersion },
  declaredLayerBytes,
});
/** One index with a 2019, a 2022 and a 2025 variant of different sizes. */
const sized: CatalogEntry = {
  repository: 'example/app',
  tag: '1',
  upstream: 'mcr.microsoft.com',
  image: {
    kind: 'index',
    format: 'oci',
    entries: [
      { image: windows(osVersions.ltsc2019, 1_000) },
      { image: windows(osVersions.ltsc2022, 2_000) },
      { image: windows(osVersions.ltsc2025, 3_000) },
    ],
  },
};

let registry: TestRegistry;
let resolver: ImagePlatformResolver;
before(async () => {
  registry = await startTestRegistry();
  await seedImages(registry, [...mcrCatalog.filter((e) => e.tag === 'ltsc2022'), sized]);
  resolver = createImagePlatformResolver({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: registry.url, insecure: true }] },
  });
});
after(async () => {
  resolver?.close();
  await registry?.stop();
});

/** The resolver, counting what is asked of it. */
function counted() {
  const calls = { platforms: 0, layers: 0 };
  const wrapped: ImagePlatformResolver = {
    ...resolver,
    resolveImagePlatforms: (...args) => {
      calls.platforms++;
      return resolver.resolveImagePlatforms(...args);
    },
    manifestLayerBytes: (...args) => {
      calls.layers++;
      return resolver.manifestLayerBytes(...args);
    },
  };
  return { calls, wrapped };
}

test('chooseWindowsVariant: the host’s own build first, else the newest it runs; none for another OS or build', () => {
  const p = (
    osVersion: string | undefined,
    os = 'windows',
    architecture = 'amd64',
  ): ImagePlatform => ({
    os,
    architecture,
    ...(osVersion ? { osVersion } : {}),
    manifestDigest: `d-${os}-${architecture}-${osVersion}`,
  });
  const all = [
    p('10.0.17763.6054'),
    p('10.0.20348.100'),
    p('10.0.20348.2582'),
    p('10.0.26100.1742'),
    p(undefined, 'linux'),
    p('10.0.26100.1742', 'windows', 'arm64'),
  ];
  assert.equal(chooseWindowsVariant(all, '10.0.20348')?.osVersion, '10.0.20348.2582');
  assert.equal(chooseWindowsVariant(all, '10.0.17763')?.osVersion, '10.0.17763.6054');
  assert.equal(chooseWindowsVariant(all, '10.0.26100')?.osVersion, '10.0.26100.1742');
  // A 2025 host runs 2022 images too: with no 2025 variant, the newest 2022 one.
  assert.equal(
    chooseWindowsVariant([p('10.0.20348.100'), p('10.0.20348.2582')], '10.0.26100')?.osVersion,
    '10.0.20348.2582',
  );
  assert.equal(chooseWindowsVariant([p('10.0.26100.1742')], '10.0.20348'), undefined);
  assert.equal(chooseWindowsVariant([p(undefined, 'linux')], '10.0.20348'), undefined);
  assert.equal(chooseWindowsVariant([p('10.0.x')], '10.0.20348'), undefined);
  // An entry without os.version runs anywhere, after an exact match.
  assert.equal(chooseWindowsVariant([p(undefined)], '10.0.20348')?.os, 'windows');
  assert.equal(
    chooseWindowsVariant([p(undefined), p('10.0.20348.1')], '10.0.20348')?.osVersion,
    '10.0.20348.1',
  );
  assert.throws(() => chooseWindowsVariant(all, 'ltsc2022'), /host Windows build/);
});

test('nodeWindowsBuild: the windows-build label, else the kernel version’s build', () => {
  assert.equal(
    nodeWindowsBuild({
      metadata: { labels: { 'node.kubernetes.io/windows-build': '10.0.20348' } },
    }),
    '10.0.20348',
  );
  assert.equal(
    nodeWindowsBuild({
      metadata: {},
      status: { nodeInfo: { kernelVersion: '10.0.26100.1742' } as never },
    }),
    '10.0.26100',
  );
  assert.equal(nodeWindowsBuild({ metadata: {} }), undefined);
});

test('sizes: the variant of the host’s build, its layers summed; looked up once per image and build; kept through a registry’s blip', async (t) => {
  const { calls, wrapped } = counted();
  let now = 0;
  const sizes = createPrePullSizes({
    resolver: () => wrapped,
    log: createLogger({ write: () => {} }),
    sizeTtlMs: 60_000,
    now: () => now,
  });
  const image = 'mcr.microsoft.com/example/app:1';
  assert.deepEqual(await sizes.sizes([image], '10.0.20348'), new Map([[image, 2_000]]));
  assert.deepEqual(await sizes.sizes([image], '10.0.17763'), new Map([[image, 1_000]]));
  assert.deepEqual(await sizes.sizes([image], '10.0.26100'), new Map([[image, 3_000]]));
  assert.deepEqual(calls, { platforms: 3, layers: 3 });
  // Again within the TTL: from the cache, nothing asked of the registry.
  await Promise.all([sizes.sizes([image], '10.0.20348'), sizes.sizes([image], '10.0.20348')]);
  assert.deepEqual(calls, { platforms: 3, layers: 3 });
  // The references are normalised as the command writes them; a real seed image's one layer.
  const seeded = await sizes.sizes(['mcr.microsoft.com/windows/servercore:ltsc2022'], '10.0.20348');
  const bytes = seeded.get('mcr.microsoft.com/windows/servercore:ltsc2022');
  assert.ok(bytes !== undefined && bytes > 0 && bytes < 1000, `one small gzip layer: ${bytes}`);
  now += 60_001;
  await sizes.sizes([image], '10.0.20348');
  assert.equal(calls.platforms, 5, 'asked again once the size expired');
  // The registry stops answering: the size known before is kept (the Node's list unchanged),
  // and asked again after the failure TTL.
  // No mirror: mcr.microsoft.com itself, unreachable here or not within 200 ms.
  const unreachable = createImagePlatformResolver({ lookupTimeoutMs: 200 });
  t.after(() => unreachable.close());
  let down = true;
  const flaky = createPrePullSizes({
    resolver: () => (down ? unreachable : resolver),
    log: createLogger({ write: () => {} }),
    sizeTtlMs: 1_000,
    failureTtlMs: 5_000,
    now: () => now,
  });
  down = false;
  assert.deepEqual(await flaky.sizes([image], '10.0.20348'), new Map([[image, 2_000]]));
  down = true;
  now += 1_001;
  assert.deepEqual(await flaky.sizes([image], '10.0.20348'), new Map([[image, 2_000]]));
  // No build known: nothing looked up.
  assert.deepEqual(await sizes.sizes([image], undefined), new Map());
});

test('sizes: a failure leaves the image out, is logged once and cached for the failure TTL', async () => {
  const { calls, wrapped } = counted();
  const lines: string[] = [];
  let now = 0;
  const sizes = createPrePullSizes({
    resolver: () => wrapped,
    log: createLogger({ write: (line) => lines.push(line) }),
    failureTtlMs: 30_000,
    now: () => now,
  });
  const good = 'mcr.microsoft.com/example/app:1';
  const missing = 'mcr.microsoft.com/example/nope:1';
  const refused = '169.254.169.254/steal:1';
  const only2025 = 'mcr.microsoft.com/windows/servercore:ltsc2022';
  const found = await sizes.sizes([good, missing, refused], '10.0.20348');
  assert.deepEqual(found, new Map([[good, 2_000]]));
  // A 2019 host does not run the 2022 image: no variant, no size.
  assert.deepEqual(await sizes.sizes([only2025], '10.0.17763'), new Map());
  const warnings = new Map(
    lines.map((l) => JSON.parse(l) as Record<string, string>).map((w) => [w.image!, w]),
  );
  assert.deepEqual([...warnings.keys()].sort(), [refused, missing, only2025]);
  assert.match(warnings.get(missing)!.error!, /No manifest "example\/nope:1" .*HTTP 404/);
  assert.match(warnings.get(refused)!.error!, /169\.254\.169\.254/);
  assert.match(warnings.get(only2025)!.error!, /no Windows variant that build 10\.0\.17763 runs/);
  for (const w of warnings.values()) assert.match(w.msg!, /without the disk check/);
  const before = { ...calls };
  await sizes.sizes([missing, refused], '10.0.20348');
  assert.deepEqual(calls, before, 'failures answered from the cache');
  assert.equal(lines.length, 3, 'logged once');
  now += 30_001;
  await sizes.sizes([missing], '10.0.20348');
  assert.equal(calls.platforms, before.platforms + 1);
  assert.equal(lines.length, 4);
});

test('sizes from the attacker’s side: a registry declaring sizes beyond counting never breaks the signed list', async () => {
  const declared = [Number.MAX_SAFE_INTEGER * 2, -1, 1.5, Number.NaN];
  for (const bytes of declared) {
    const sizes = createPrePullSizes({
      resolver: () => ({
        ...resolver,
        manifestLayerBytes: async () => ({ status: 'resolved' as const, bytes }),
      }),
      log: createLogger({ write: () => {} }),
    });
    const image = 'mcr.microsoft.com/example/app:1';
    const found = await sizes.sizes([image], '10.0.20348');
    assert.deepEqual(found, new Map(), `${bytes}: left out`);
    // The list the operator signs still parses on the agent.
    const command = prePullCommand({ images: [image] }, found);
    assert.deepEqual(parsePrePullCommand(formatPrePullCommand(command)), command);
  }
});
