/**
 * The health metrics in the operator's Prometheus registry: each pool's health pass hands its
 * samples (healthPass's `metrics`) to `applyPoolPass`. A pass is the whole truth about its
 * pool's gauges: the series it sets are set, the pool's series it no longer sets are removed
 * (a host no longer unhealthy loses its winfleet_host_condition series at once, so a stale 1
 * never lingers). Counters are added to by each sample's value. `forgetPool` drops every series
 * of a pool that is gone, counters included, so deleted pools do not grow the scrape.
 *
 * Samples come from product code, not from users; one that does not fit the metric's labels is
 * a bug and is refused whole (nothing of the pass is applied) with an error naming it.
 */

import { Counter, Gauge, type Registry } from 'prom-client';
import { WinfleetError } from '../errors/catalog.ts';
import { type MetricSample, metricLabels, metricNames } from './metrics.ts';

type MetricName = MetricSample['name'];
type Labels = Record<string, string>;

export interface HealthMetrics {
  /** Replaces the pool's gauges with the pass's and adds its counter samples. */
  applyPoolPass(pool: string, samples: readonly MetricSample[]): void;
  /** Removes every series of the pool (it was deleted). */
  forgetPool(pool: string): void;
}

const help: Record<MetricName, string> = {
  [metricNames.hostCondition]:
    "1 while a host's Node has a condition of its pool's spec.health.unhealthyConditions in the listed status (no series otherwise)",
  [metricNames.remediationsTotal]: 'Remediation rungs ended, by pool, rung and result',
  [metricNames.unhealthyHosts]: "The pool's hosts unhealthy past a timeout",
  [metricNames.remediationAllowed]:
    '1 when the pool repairs hosts, 0 when maxUnhealthy, a spec.health problem or enabled: false stops it',
};

const counterNames: ReadonlySet<MetricName> = new Set([metricNames.remediationsTotal]);

/** The sample's labels in the metric's label order, as a map key. */
const seriesKey = (name: MetricName, labels: Labels) =>
  JSON.stringify(metricLabels[name].map((l) => labels[l]));

function checkSample(pool: string, s: MetricSample, index: number): void {
  const where = `health metrics sample ${index} (${String(s.name)})`;
  if (!Object.hasOwn(metricLabels, s.name)) {
    throw new WinfleetError(
      'WF_METRIC_SAMPLE_INVALID',
      `${where}: unknown metric name; use one of metricNames (src/remediation/metrics.ts)`,
    );
  }
  const wanted: readonly string[] = metricLabels[s.name];
  const got = Object.keys(s.labels);
  const missing = wanted.filter((l) => typeof s.labels[l] !== 'string');
  const extra = got.filter((l) => !wanted.includes(l));
  if (missing.length > 0 || extra.length > 0) {
    throw new WinfleetError(
      'WF_METRIC_SAMPLE_INVALID',
      `${where}: labels must be exactly ${wanted.join(', ')} (missing: ${missing.join(', ') || 'none'}; unexpected: ${extra.join(', ') || 'none'})`,
    );
  }
  if (s.labels.pool !== pool) {
    throw new WinfleetError(
      'WF_METRIC_SAMPLE_INVALID',
      `${where}: label pool is ${JSON.stringify(s.labels.pool)}, but the pass is pool ${JSON.stringify(pool)}; a pass sets only its own pool's series`,
    );
  }
  if (!Number.isFinite(s.value) || (counterNames.has(s.name) && s.value < 0)) {
    throw new WinfleetError(
      'WF_METRIC_SAMPLE_INVALID',
      `${where}: value ${s.value} is not ${counterNames.has(s.name) ? 'a finite number >= 0 (a counter only goes up)' : 'a finite number'}`,
    );
  }
}

/** Registers the health metrics in `registry` (the operator's /metrics). */
export function createHealthMetrics(registry: Registry): HealthMetrics {
  const gauges = new Map<MetricName, Gauge<string>>();
  const counters = new Map<MetricName, Counter<string>>();
  for (const name of Object.values(metricNames)) {
    const config = {
      name,
      help: help[name],
      labelNames: metricLabels[name],
      registers: [registry],
    };
    if (counterNames.has(name)) counters.set(name, new Counter(config));
    else gauges.set(name, new Gauge(config));
  }

  /** Per pool, the series it has: metric name → series key → labels. */
  const series = new Map<string, Map<MetricName, Map<string, Labels>>>();

  const removeAll = (name: MetricName, labels: Iterable<Labels>) => {
    const metric = gauges.get(name) ?? counters.get(name);
    for (const l of labels) metric?.remove(l);
  };

  return {
    applyPoolPass(pool, samples) {
      samples.forEach((s, i) => {
        checkSample(pool, s, i);
      });
      const before = series.get(pool) ?? new Map<MetricName, Map<string, Labels>>();
      const after = new Map<MetricName, Map<string, Labels>>();
      // Counters keep every series the pool ever had (until forgetPool).
      for (const name of counterNames) {
        const had = before.get(name);
        if (had) after.set(name, new Map(had));
      }
      for (const s of samples) {
        const labels = { ...s.labels };
        const known = after.get(s.name) ?? new Map<string, Labels>();
        after.set(s.name, known);
        known.set(seriesKey(s.name, labels), labels);
        const counter = counters.get(s.name);
        if (counter) counter.inc(labels, s.value);
        else gauges.get(s.name)?.set(labels, s.value);
      }
      for (const [name, had] of before) {
        if (counterNames.has(name)) continue;
        const now = after.get(name);
        removeAll(
          name,
          [...had].filter(([key]) => !now?.has(key)).map(([, labels]) => labels),
        );
      }
      series.set(pool, after);
    },
    forgetPool(pool) {
      const had = series.get(pool);
      if (!had) return;
      for (const [name, known] of had) removeAll(name, known.values());
      series.delete(pool);
    },
  };
}
