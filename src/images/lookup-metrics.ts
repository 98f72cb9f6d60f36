/**
 * Prometheus metrics for image lookups: lookups by outcome and source, their latency, and
 * cache hits and misses, registered in the registry the caller passes (the webhook's /metrics).
 * Labels take fixed values only (no image or registry names), so cardinality stays bounded
 * whatever images pods name.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { ImageLookupObserver } from './image-platforms.ts';

export interface LookupMetricsOptions {
  /** Prefix of the metric names (default "winfleet_"). */
  prefix?: string;
}

/**
 * Registers the image-lookup metrics in `registry` and returns the observer that feeds them:
 * `<prefix>image_lookups_total{outcome,source}`,
 * `<prefix>image_lookup_duration_seconds{source}` and
 * `<prefix>image_cache_requests_total{result="hit"|"miss"}`.
 */
export function prometheusLookupObserver(
  registry: Registry,
  options: LookupMetricsOptions = {},
): ImageLookupObserver {
  const prefix = options.prefix ?? 'winfleet_';
  const lookups = new Counter({
    name: `${prefix}image_lookups_total`,
    help: 'Image platform lookups by outcome ("resolved" or why not) and source (cache or registry)',
    labelNames: ['outcome', 'source'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: `${prefix}image_lookup_duration_seconds`,
    help: 'Time to answer an image platform lookup, from the cache or the registry',
    labelNames: ['source'] as const,
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4],
    registers: [registry],
  });
  const cache = new Counter({
    name: `${prefix}image_cache_requests_total`,
    help: 'Image platform cache consultations by result',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  return {
    lookup({ outcome, source, durationMs }) {
      lookups.inc({ outcome, source });
      duration.observe({ source }, durationMs / 1000);
    },
    cache(result) {
      cache.inc({ result });
    },
  };
}
