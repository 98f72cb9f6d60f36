/**
 * npm run bench:webhook — admission latency and throughput of the Pod webhook over HTTPS on
 * loopback, with a warm image cache (images resolved once from a real docker-registry mirror),
 * against a no-op server built from the same admission server code, measured in the same run.
 *
 *   npm run bench:webhook [-- --seconds 4 --concurrency 16 --rate 1000 --rounds 3]
 */
import { parseArgs } from 'node:util';
import { startMirrorRegistry } from '../sim/registry/mirror-registry.ts';
import { parseConfig } from '../src/config/winfleet-config.ts';
import { silentLogger } from '../src/log/logger.ts';
import { createCertificateAuthority, issueCertificate } from '../src/pki/certificates.ts';
import { type AdmissionServer, createAdmissionServer } from '../src/webhook/admission-server.ts';
import { memoizeCompatibility } from '../src/webhook/placement.ts';
import {
  admitPodMutation,
  admitPodValidation,
  type PodAdmissionDeps,
} from '../src/webhook/pod-admission.ts';
import { podImageResolver, resolverFor } from '../src/webhook/pod-images.ts';
import { isCompatibleBuild } from '../src/windows/compatibility.ts';
import { formatLoad, type LoadResult, runAdmissionLoad, seedPodReview } from './admission-load.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '16' },
    rate: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const rate = Number(values.rate);
const rounds = Math.max(1, Number(values.rounds));

const registry = await startMirrorRegistry();
const config = parseConfig(JSON.stringify({ images: { mirrors: registry.mirrors } }));
const resolver = resolverFor(config);
const deps: PodAdmissionDeps = {
  config: () => config,
  operatorNamespace: 'winfleet-system',
  runtimeClasses: () => undefined,
  readyWindowsBuilds: () => ['10.0.17763', '10.0.20348', '10.0.26100'],
  resolveImages: podImageResolver(() => resolver),
  isCompatible: memoizeCompatibility(isCompatibleBuild),
  gmsaCredentialSpecs: async () => undefined,
  // The bench's pods name no gMSA credential spec: nothing is reviewed.
  reviewGmsaUse: async () => ({ allowed: true }),
  namespaceOptedOut: () => false,
  log: silentLogger,
};

const review = JSON.stringify(seedPodReview);

const ca = await createCertificateAuthority('bench-ca');
const tls = await issueCertificate(ca, {
  commonName: 'bench',
  ipAddresses: ['127.0.0.1'],
  usage: 'server',
});
async function serve(
  routes: Parameters<typeof createAdmissionServer>[0]['routes'],
): Promise<[AdmissionServer, number]> {
  const server = createAdmissionServer({
    cert: tls.certPem,
    key: tls.keyPem,
    log: silentLogger,
    routes,
  });
  return [server, await server.listen(0)];
}
const [real, realPort] = await serve({
  '/mutate/pods': { name: 'mutate', handler: (r) => admitPodMutation(r, deps) },
  '/validate/pods': { name: 'validate', handler: (r) => admitPodValidation(r, deps) },
});
const [noop, noopPort] = await serve({
  '/mutate/pods': { name: 'mutate', handler: async () => ({ allowed: true }) },
  '/validate/pods': { name: 'validate', handler: async () => ({ allowed: true }) },
});

// Warm the cache: one lookup goes to the registry, the rest are cache hits.
const warm = await admitPodMutation(
  {
    uid: 'warm',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace: 'default',
    object: JSON.parse(review).request.object,
  },
  deps,
);
if (!warm.patch?.some((op) => JSON.stringify(op).includes('10.0.17763'))) {
  throw new Error(`warm-up did not resolve the image: ${JSON.stringify(warm)}`);
}

function load(port: number, path: string, mode: 'closed' | 'open'): Promise<LoadResult> {
  return runAdmissionLoad({
    url: `https://127.0.0.1:${port}${path}`,
    ca: ca.certPem,
    mode,
    concurrency,
    rate,
    seconds,
  });
}
const fmt = formatLoad;

console.log(`Pod admission over HTTPS on loopback, warm image cache, ${seconds}s per run\n`);
const rows: [string, LoadResult, LoadResult][] = [];
for (const path of ['/mutate/pods', '/validate/pods']) {
  // Alternate the two servers over several rounds: the machine is shared and noisy, and the
  // median of the per-round ratios is steadier than one pair of runs.
  const ratios: number[] = [];
  console.log(`${path}, closed loop, concurrency ${concurrency}, ${rounds} alternating rounds:`);
  let closedReal: LoadResult | undefined;
  for (let round = 1; round <= rounds; round++) {
    const closedNoop = await load(noopPort, path, 'closed');
    closedReal = await load(realPort, path, 'closed');
    ratios.push(closedReal.throughput / closedNoop.throughput);
    console.log(`  round ${round} no-op server   ${fmt(closedNoop)}`);
    console.log(`  round ${round} winfleet       ${fmt(closedReal)}`);
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  const medianRatio = sorted[Math.floor(sorted.length / 2)]!;
  console.log(
    `  throughput ratio winfleet / no-op: median ${medianRatio.toFixed(2)} (rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')}; target ≥ 0.80)`,
  );
  const openNoop = await load(noopPort, path, 'open');
  const openReal = await load(realPort, path, 'open');
  console.log(`${path}, open loop at ${rate}/s:`);
  console.log(`  no-op server   ${fmt(openNoop)}`);
  console.log(`  winfleet       ${fmt(openReal)}`);
  console.log(
    `  p99 ${openReal.p99.toFixed(2)} ms (target < 5 ms); ratio to no-op p99: ${(openReal.p99 / openNoop.p99).toFixed(2)}\n`,
  );
  rows.push([path, closedReal!, openReal]);
}
const stats = resolver.cacheStats();
console.log(`image cache: ${JSON.stringify(stats)}`);
await real.close();
await noop.close();
resolver.close();
await registry.stop();
