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
  throughput: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
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
      { maxBuffer: 1 << 20 },
      (error, stdout) => {
        if (error) reject(error);
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult);
      },
    );
  });
}

/** One line of figures. */
export function formatLoad(r: LoadResult): string {
  return `${r.throughput.toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p90 ${r.p90.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(6)} ms  max ${r.max.toFixed(1).padStart(6)} ms  errors ${r.errors}`;
}
