/**
 * What the admission benchmarks share: the AdmissionReview they send (the pod of the seed's
 * win-webserver Deployment, as the API server sends it) and a run of the load generator,
 * which is its own process so that it does not share a core with the server it measures.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const seedPodReview = {
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
} as const;

export interface LoadResult {
  count: number;
  errors: number;
  /** Wall seconds of the measured part. */
  seconds: number;
  throughput: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Every latency, sorted (ms), when the run was asked for them (`raw`). */
  latencies?: number[];
  /** Merged rounds (mergeLoads): each round's p99, in the order run. */
  roundP99s?: number[];
}

export interface LoadOptions {
  /** https://127.0.0.1:PORT/path */
  url: string;
  /** PEM of the CA that signed the server's certificate. */
  ca: string;
  mode: 'closed' | 'open';
  concurrency: number;
  /** Requests per second in open mode. */
  rate: number;
  seconds: number;
  body?: string;
  /** Return every latency too (for mergeLoads). */
  raw?: boolean;
}

const generator = fileURLToPath(new URL('./load-generator.ts', import.meta.url));

/** Runs the load generator once and returns its figures. */
export function runAdmissionLoad(options: LoadOptions): Promise<LoadResult> {
  const spec = {
    body: JSON.stringify(seedPodReview),
    maxRequests: 200_000,
    ...options,
  };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [generator, JSON.stringify(spec)],
      { maxBuffer: 64 << 20 },
      (error, stdout) => {
        if (error) reject(error);
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult);
      },
    );
  });
}

/** One line of figures. */
export function formatLoad(r: LoadResult): string {
  return `${r.throughput.toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p90 ${r.p90.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(6)} ms  max ${r.max.toFixed(1).padStart(6)} ms  errors ${r.errors}${r.roundP99s ? `  (p99 by round: ${r.roundP99s.map((x) => x.toFixed(1)).join(', ')} ms)` : ''}`;
}

/** The p-th percentile (0..100) of sorted `values` (the load generator's rule too). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/**
 * Several runs against one server taken as one: their latencies pooled (each run must have
 * been asked for them with `raw`), throughput over their summed time, and each run's own p99
 * kept in order, so a tail that came from one round (a burst on the machine) shows as such.
 */
export function mergeLoads(runs: LoadResult[]): LoadResult {
  if (runs.length === 0) throw new Error('mergeLoads: no runs');
  const latencies = runs
    .flatMap((r) => {
      if (!r.latencies) throw new Error('mergeLoads: a run without its latencies (raw: true)');
      return r.latencies;
    })
    .sort((a, b) => a - b);
  const seconds = runs.reduce((a, r) => a + r.seconds, 0);
  return {
    count: latencies.length,
    errors: runs.reduce((a, r) => a + r.errors, 0),
    seconds,
    throughput: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? Number.NaN,
    roundP99s: runs.map((r) => r.p99),
  };
}
