/**
 * A load generator for HTTPS POST endpoints, run as its own process so it does not share a
 * core with the server it measures. Closed loop (fixed concurrency, as fast as possible) or
 * open loop (a fixed rate, with latency measured from the scheduled send time so queueing is
 * counted). Prints one JSON line with the count, errors, throughput and latency percentiles.
 *
 *   node bench/load-generator.ts '{"url":…,"ca":…,"body":…,"mode":"closed","concurrency":16,"seconds":5}'
 */
import { Agent, request } from 'node:https';
import { percentile } from './admission-load.ts';

interface LoadSpec {
  url: string;
  ca: string;
  body: string;
  mode: 'closed' | 'open';
  concurrency: number;
  /** Requests per second in open mode. */
  rate?: number;
  seconds: number;
  /** Hard cap on requests, so a run always ends. */
  maxRequests?: number;
  /** Requests sent first and not measured: they open the keep-alive connections (TLS handshakes). */
  warmupRequests?: number;
  /**
   * A request without an answer after this long is an error (default 10 s, the API server's
   * default webhook timeout), so a server that stops answering cannot hold the run.
   */
  requestTimeoutMs?: number;
  /** Also print every latency (ms, to the microsecond), for merging alternating rounds. */
  raw?: boolean;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
const url = new URL(spec.url);
const agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency, ca: spec.ca });
const latencies: number[] = [];
let errors = 0;
const maxRequests = spec.maxRequests ?? 1_000_000;

function once(scheduledAt: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(spec.body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) latencies.push(performance.now() - scheduledAt);
          else errors++;
          resolve();
        });
      },
    );
    req.setTimeout(spec.requestTimeoutMs ?? 10_000, () => req.destroy(new Error('timed out')));
    req.on('error', () => {
      errors++;
      resolve();
    });
    req.end(spec.body);
  });
}

// Open the connections (TLS handshakes) before measuring; those requests are not counted.
const warmup = spec.warmupRequests ?? spec.concurrency * 20;
for (let i = 0; i < warmup; i += spec.concurrency) {
  await Promise.all(Array.from({ length: spec.concurrency }, () => once(performance.now())));
}
latencies.length = 0;
errors = 0;

const started = performance.now();
const end = started + spec.seconds * 1000;
let sent = 0;
if (spec.mode === 'closed') {
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < end && sent < maxRequests) {
        sent++;
        await once(performance.now());
      }
    }),
  );
} else {
  const interval = 1000 / (spec.rate ?? 1000);
  const inflight: Promise<void>[] = [];
  let next = started;
  while (next < end && sent < maxRequests) {
    // Sleep at least a timer tick (never spin: the generator would take the server's core),
    // then send everything that is due; latency counts from the scheduled time.
    const wait = next - performance.now();
    await new Promise((r) => setTimeout(r, Math.max(1, wait)));
    while (next <= performance.now() && next < end && sent < maxRequests) {
      sent++;
      inflight.push(once(next));
      next += interval;
    }
  }
  await Promise.all(inflight);
}
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p: number) => percentile(latencies, p);
agent.destroy();
console.log(
  JSON.stringify({
    count: latencies.length,
    errors,
    seconds: elapsed,
    throughput: latencies.length / elapsed,
    p50: pct(50),
    p90: pct(90),
    p99: pct(99),
    max: latencies.at(-1) ?? Number.NaN,
    ...(spec.raw ? { latencies: latencies.map((l) => Math.round(l * 1000) / 1000) } : {}),
  }),
);
