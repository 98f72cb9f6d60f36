/**
 * Gives memory back once a burst of work is over. V8 collects its old generation when it
 * allocates towards a limit, not when work ends: after 200 hosts joined, the operator held its
 * peak of 155 MiB for as long as nothing else happened, against 128 MiB after one full
 * collection (`npm run bench:join -- --sizes 1,200 --modes concurrent --settle-seconds 60
 * --leftovers`, 2026-11-27). So every `intervalMs` (an unref'd timer; no API request), when
 * the process was nearly idle over the interval (event-loop utilization below `idleBelow`) and
 * its RSS is `growthBytes` or more above what it was right after the last collection, it runs
 * one full collection. A collection while admissions arrive would pause them: the idle check
 * keeps it to quiet minutes (1,000 admissions a second keep the loop ~50 % busy).
 *
 * It needs `gc` (Node's --expose-gc, in the image's IMAGE_NODE_FLAGS); without it, it does
 * nothing.
 */
import { performance } from 'node:perf_hooks';
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../log/logger.ts';

export interface MemorySettleOptions {
  /** How often to look (default 30 s). */
  intervalMs?: number;
  /** Event-loop utilization over the interval below which the process counts as idle (0.05). */
  idleBelow?: number;
  /** RSS growth since the last collection that makes one worth it (16 MiB). */
  growthBytes?: number;
  /** The collector (default: globalThis.gc, present with --expose-gc). */
  gc?: () => void;
  /** Resident set size now (default: process.memoryUsage.rss). */
  rss?: () => number;
  /** Event-loop utilization since the previous call, 0..1 (default: from perf_hooks). */
  utilization?: () => number;
  registry?: Registry;
}

export interface MemorySettle {
  /** One look now (what the timer does); true when it collected. */
  check(): boolean;
  stop(): void;
}

/** The decision alone: collect when idle and grown enough since the last collection. */
export function shouldCollect(input: {
  utilization: number;
  rss: number;
  rssAfterLastCollection: number;
  idleBelow: number;
  growthBytes: number;
}): boolean {
  return (
    input.utilization < input.idleBelow &&
    input.rss - input.rssAfterLastCollection >= input.growthBytes
  );
}

/** Event-loop utilization between calls. */
function utilizationSinceLast(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const delta = performance.eventLoopUtilization(now, last);
    last = now;
    return delta.utilization;
  };
}

/** Starts looking every `intervalMs`; returns undefined when there is no collector to call. */
export function startMemorySettle(
  log: Logger,
  options: MemorySettleOptions = {},
): MemorySettle | undefined {
  const gc = options.gc ?? (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') {
    log.debug('memory settle off: no gc() (run node with --expose-gc, as the image does)');
    return undefined;
  }
  const intervalMs = options.intervalMs ?? 30_000;
  const idleBelow = options.idleBelow ?? 0.05;
  const growthBytes = options.growthBytes ?? 16 * 2 ** 20;
  const rss = options.rss ?? (() => process.memoryUsage.rss());
  const utilization = options.utilization ?? utilizationSinceLast();
  const collections = new Counter({
    name: 'winfleet_memory_settle_collections_total',
    help: 'Full collections run once the operator went idle with its RSS grown since the last one',
    registers: options.registry ? [options.registry] : [],
  });
  // The first look compares with the RSS at start: what the process holds before any burst.
  let rssAfterLastCollection = rss();
  const check = (): boolean => {
    const now = rss();
    if (
      !shouldCollect({
        utilization: utilization(),
        rss: now,
        rssAfterLastCollection,
        idleBelow,
        growthBytes,
      })
    ) {
      return false;
    }
    const started = performance.now();
    gc();
    rssAfterLastCollection = rss();
    collections.inc();
    log.info('idle after a burst: ran a full collection', {
      rssBeforeMiB: Math.round(now / 2 ** 20),
      rssAfterMiB: Math.round(rssAfterLastCollection / 2 ** 20),
      pauseMs: Math.round(performance.now() - started),
    });
    return true;
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
