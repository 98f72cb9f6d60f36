/**
 * npm run bench:webhook — admission latency and throughput of the Pod webhook over HTTPS on
 * loopback, with a warm image cache (images resolved once from a real docker-registry mirror),
 * against a no-op server built from the same admission server code, measured in the same run.
 *
 *   npm run bench:webhook [-- --seconds 4 --concurrency 16 --rate 1000 --rounds 3]
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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
  namespaceOptedOut: () => false,
  log: silentLogger,
};

// The pod of the seed's win-webserver Deployment, as the API server sends it.
const review = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    operation: 'CREATE',
    namespace: 'default',
    userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
    object: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: 'win-webserver-5d4b8c7f9-',
        namespace: 'default',
        labels: { app: 'win-webserver' },
      },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        containers: [
          {
            name: 'windowswebserver',
            image: 'mcr.microsoft.com/windows/servercore:ltsc2019',
            command: ['powershell.exe', '-command', 'echo'],
          },
        ],
      },
    },
  },
});

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

interface Result {
  count: number;
  errors: number;
  throughput: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}
const generator = fileURLToPath(new URL('./load-generator.ts', import.meta.url));
function load(port: number, path: string, mode: 'closed' | 'open'): Promise<Result> {
  const spec = {
    url: `https://127.0.0.1:${port}${path}`,
    ca: ca.certPem,
    body: review,
    mode,
    concurrency,
    rate,
    seconds,
    maxRequests: 200_000,
  };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [generator, JSON.stringify(spec)],
      { maxBuffer: 1 << 20 },
      (error, stdout) => {
        if (error) reject(error);
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!));
      },
    );
  });
}

const fmt = (r: Result) =>
  `${r.throughput.toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p90 ${r.p90.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(6)} ms  max ${r.max.toFixed(1).padStart(6)} ms  errors ${r.errors}`;

console.log(`Pod admission over HTTPS on loopback, warm image cache, ${seconds}s per run\n`);
const rows: [string, Result, Result][] = [];
for (const path of ['/mutate/pods', '/validate/pods']) {
  // Alternate the two servers over several rounds: the machine is shared and noisy, and the
  // median of the per-round ratios is steadier than one pair of runs.
  const ratios: number[] = [];
  console.log(`${path}, closed loop, concurrency ${concurrency}, ${rounds} alternating rounds:`);
  let closedReal: Result | undefined;
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
