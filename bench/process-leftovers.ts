/**
 * What a Node process keeps, read over its inspector (bench:join --leftovers): after a full
 * collection, the V8 heap used, external memory, the RSS, and the handles it keeps open by kind
 * (process.getActiveResourcesInfo(): timers, sockets, …) with its armed timers, unref'd ones
 * included. Taken before and after some work, the difference is what the work left behind.
 */
import type { Inspector } from './inspector-client.ts';

/** The process after a full collection. */
export interface Leftovers {
  heapMiB: number;
  externalMiB: number;
  rssMiB: number;
  /** Open handles by kind, and 'armed timers (ref and unref)'. */
  resources: Record<string, number>;
}

const mib = 1024 * 1024;

/** Collects garbage in the process, then reads what it holds. */
export async function leftoversNow(inspector: Inspector): Promise<Leftovers> {
  await inspector.send('HeapProfiler.collectGarbage');
  const { heapUsed, external, rss, resources } = await inspector.evaluate<{
    heapUsed: number;
    external: number;
    rss: number;
    resources: string[];
  }>('({ ...process.memoryUsage(), resources: process.getActiveResourcesInfo() })');
  const counts: Record<string, number> = {};
  for (const r of resources) counts[r] = (counts[r] ?? 0) + 1;
  counts['armed timers (ref and unref)'] = await inspector.countTimers();
  return {
    heapMiB: heapUsed / mib,
    externalMiB: external / mib,
    rssMiB: rss / mib,
    resources: counts,
  };
}

/** Two lines: memory before → after, and each kind of handle before → after. */
export function describeLeftovers(before: Leftovers, after: Leftovers): string[] {
  const kinds = [
    ...new Set([...Object.keys(before.resources), ...Object.keys(after.resources)]),
  ].sort();
  return [
    `V8 heap ${before.heapMiB.toFixed(1)} → ${after.heapMiB.toFixed(1)} MiB, external ${before.externalMiB.toFixed(1)} → ${after.externalMiB.toFixed(1)} MiB, RSS ${before.rssMiB.toFixed(0)} → ${after.rssMiB.toFixed(0)} MiB`,
    `open handles: ${kinds.map((k) => `${k} ${before.resources[k] ?? 0} → ${after.resources[k] ?? 0}`).join(', ')}`,
  ];
}
