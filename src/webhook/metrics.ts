/**
 * Prometheus metrics of the webhook: admissions by decision and latency. Image lookups and
 * cache hits are counted by the image resolver's observer (src/images/lookup-metrics.ts) in
 * the same registry.
 */
import { Counter, Histogram, Registry } from 'prom-client';

export interface WebhookMetrics {
  registry: Registry;
  admissions: Counter<'webhook' | 'decision'>;
  latency: Histogram<'webhook'>;
}

/** Creates the webhook's metrics in their own registry (or `registry`). */
export function createWebhookMetrics(registry = new Registry()): WebhookMetrics {
  return {
    registry,
    admissions: new Counter({
      name: 'winfleet_webhook_admissions_total',
      help: 'Admission requests answered, by webhook (mutate/validate) and decision (allowed, patched, denied, error, bad_request)',
      labelNames: ['webhook', 'decision'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'winfleet_webhook_admission_duration_seconds',
      help: 'Time to answer an admission request',
      labelNames: ['webhook'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}
