/**
 * The health metrics as Prometheus scrapes them (registry.metrics() text): a pass replaces its
 * pool's gauges (no stale series), counters add up, forgetPool drops a pool, a sample that
 * does not fit is refused whole, and healthPass's own samples fit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { createHealthMetrics } from './health-metrics.ts';
import { type HealthPassHost, healthPass } from './health-pass.ts';
import { defaultHealthPolicy } from './health-spec.ts';
import { type MetricSample, metricNames } from './metrics.ts';

/** The sample lines of the scrape (no HELP/TYPE comments), sorted. */
async function scrape(registry: Registry): Promise<string[]> {
  const text = await registry.metrics();
  return text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .sort();
}

const condition = (pool: string, host: string, type: string, status = 'True'): MetricSample => ({
  name: metricNames.hostCondition,
  labels: { pool, namespace: 'ns', host, condition: type, status },
  value: 1,
});
const unhealthy = (pool: string, value: number): MetricSample => ({
  name: metricNames.unhealthyHosts,
  labels: { pool },
  value,
});
const allowed = (pool: string, value: number): MetricSample => ({
  name: metricNames.remediationAllowed,
  labels: { pool },
  value,
});
const rung = (pool: string, r: string, result: string, value = 1): MetricSample => ({
  name: metricNames.remediationsTotal,
  labels: { pool, rung: r, result },
  value,
});

test('health metrics: a pass sets its gauges and counters, with the metric names and labels', async () => {
  const registry = new Registry();
  const m = createHealthMetrics(registry);
  m.applyPoolPass('ns/a', [
    unhealthy('ns/a', 1),
    allowed('ns/a', 1),
    condition('ns/a', 'h1', 'KubeletUnhealthy'),
    rung('ns/a', 'RestartService', 'Failed'),
  ]);
  assert.deepEqual(await scrape(registry), [
    'winfleet_host_condition{pool="ns/a",namespace="ns",host="h1",condition="KubeletUnhealthy",status="True"} 1',
    'winfleet_pool_remediation_allowed{pool="ns/a"} 1',
    'winfleet_pool_unhealthy_hosts{pool="ns/a"} 1',
    'winfleet_remediations_total{pool="ns/a",rung="RestartService",result="Failed"} 1',
  ]);
  const text = await registry.metrics();
  assert.match(text, /# TYPE winfleet_host_condition gauge/);
  assert.match(text, /# TYPE winfleet_remediations_total counter/);
  assert.match(text, /# TYPE winfleet_pool_unhealthy_hosts gauge/);
  assert.match(text, /# TYPE winfleet_pool_remediation_allowed gauge/);
});

test('health metrics: the next pass replaces the pool gauges (a host no longer unhealthy loses its series), counters add up', async () => {
  const registry = new Registry();
  const m = createHealthMetrics(registry);
  m.applyPoolPass('ns/a', [
    unhealthy('ns/a', 2),
    allowed('ns/a', 1),
    condition('ns/a', 'h1', 'KubeletUnhealthy'),
    condition('ns/a', 'h2', 'Ready', 'Unknown'),
    rung('ns/a', 'RestartService', 'Failed'),
  ]);
  m.applyPoolPass('ns/b', [
    unhealthy('ns/b', 1),
    allowed('ns/b', 1),
    condition('ns/b', 'h9', 'ClockSkew'),
  ]);
  // h1 recovered; h2 is now Ready False rather than Unknown; a rung ended twice more.
  m.applyPoolPass('ns/a', [
    unhealthy('ns/a', 1),
    allowed('ns/a', 0),
    condition('ns/a', 'h2', 'Ready', 'False'),
    rung('ns/a', 'RestartService', 'Failed', 2),
    rung('ns/a', 'Rebootstrap', 'Succeeded'),
  ]);
  assert.deepEqual(await scrape(registry), [
    'winfleet_host_condition{pool="ns/a",namespace="ns",host="h2",condition="Ready",status="False"} 1',
    'winfleet_host_condition{pool="ns/b",namespace="ns",host="h9",condition="ClockSkew",status="True"} 1',
    'winfleet_pool_remediation_allowed{pool="ns/a"} 0',
    'winfleet_pool_remediation_allowed{pool="ns/b"} 1',
    'winfleet_pool_unhealthy_hosts{pool="ns/a"} 1',
    'winfleet_pool_unhealthy_hosts{pool="ns/b"} 1',
    'winfleet_remediations_total{pool="ns/a",rung="Rebootstrap",result="Succeeded"} 1',
    'winfleet_remediations_total{pool="ns/a",rung="RestartService",result="Failed"} 3',
  ]);
  // A pass with no samples of a gauge clears that gauge of the pool; counters stay.
  m.applyPoolPass('ns/a', []);
  assert.deepEqual(
    (await scrape(registry)).filter((l) => l.includes('pool="ns/a"')),
    [
      'winfleet_remediations_total{pool="ns/a",rung="Rebootstrap",result="Succeeded"} 1',
      'winfleet_remediations_total{pool="ns/a",rung="RestartService",result="Failed"} 3',
    ],
  );
});

test('health metrics: forgetPool drops every series of that pool only, counters included', async () => {
  const registry = new Registry();
  const m = createHealthMetrics(registry);
  for (const pool of ['ns/a', 'ns/b']) {
    m.applyPoolPass(pool, [
      unhealthy(pool, 1),
      allowed(pool, 1),
      condition(pool, 'h1', 'KubeletUnhealthy'),
      rung(pool, 'Reboot', 'TimedOut'),
    ]);
  }
  m.forgetPool('ns/a');
  m.forgetPool('ns/never-seen');
  const lines = await scrape(registry);
  assert.deepEqual(
    lines.filter((l) => l.includes('pool="ns/a"')),
    [],
  );
  assert.equal(lines.filter((l) => l.includes('pool="ns/b"')).length, 4);
  // The pool comes back: its counters start again from zero.
  m.applyPoolPass('ns/a', [rung('ns/a', 'Reboot', 'TimedOut')]);
  assert.ok(
    (await scrape(registry)).includes(
      'winfleet_remediations_total{pool="ns/a",rung="Reboot",result="TimedOut"} 1',
    ),
  );
});

test('health metrics: a sample that does not fit is refused with the reason, and nothing of its pass is applied', async () => {
  const registry = new Registry();
  const m = createHealthMetrics(registry);
  m.applyPoolPass('ns/a', [unhealthy('ns/a', 1), condition('ns/a', 'h1', 'KubeletUnhealthy')]);
  const before = await scrape(registry);
  const bad: [MetricSample, RegExp][] = [
    [unhealthy('ns/other', 3), /label pool is "ns\/other", but the pass is pool "ns\/a"/],
    [
      { name: metricNames.unhealthyHosts, labels: { pool: 'ns/a', host: 'h1' }, value: 1 },
      /labels must be exactly pool \(missing: none; unexpected: host\)/,
    ],
    [
      { name: metricNames.hostCondition, labels: { pool: 'ns/a', host: 'h1' }, value: 1 },
      /missing: namespace, condition, status/,
    ],
    [rung('ns/a', 'Reboot', 'Failed', -1), /value -1 is not a finite number >= 0/],
    [unhealthy('ns/a', Number.NaN), /value NaN is not a finite number/],
    [
      { name: 'winfleet_other' as MetricSample['name'], labels: { pool: 'ns/a' }, value: 1 },
      /sample 1 \(winfleet_other\): unknown metric name/,
    ],
  ];
  for (const [sample, message] of bad) {
    assert.throws(
      () => m.applyPoolPass('ns/a', [unhealthy('ns/a', 5), sample]),
      { code: 'WF_METRIC_SAMPLE_INVALID', message },
      JSON.stringify(sample),
    );
  }
  assert.deepEqual(await scrape(registry), before, 'a refused pass changes nothing');
});

test("health metrics: healthPass's samples fit, and a recovered host's condition series goes", async () => {
  const registry = new Registry();
  const m = createHealthMetrics(registry);
  const t0 = Date.parse('2025-06-07T10:00:00Z');
  const iso = (minutes: number) => new Date(t0 + minutes * 60_000).toISOString();
  const ready = { type: 'Ready', status: 'True', lastTransitionTime: iso(-60) };
  const host = (key: string, kubeletDown: boolean): HealthPassHost => ({
    key,
    status: {},
    node: {
      name: key.split('/')[1]!,
      conditions: [
        ready,
        ...(kubeletDown
          ? [{ type: 'KubeletUnhealthy', status: 'True', lastTransitionTime: iso(0) }]
          : []),
      ],
    },
    bootstrappedAt: iso(-120),
    cordonedByRemediation: false,
    skipRemediation: false,
    deleting: false,
  });
  const pass = (down: boolean) =>
    healthPass({
      pool: 'ns/pool',
      policy: defaultHealthPolicy,
      specProblems: [],
      hosts: [host('ns/win-a', down), host('ns/win-b', false)],
      now: new Date(t0 + 3 * 60_000),
    });
  m.applyPoolPass('ns/pool', pass(true).metrics);
  assert.deepEqual(
    (await scrape(registry)).filter((l) => !l.startsWith('winfleet_remediations_total')),
    [
      'winfleet_host_condition{pool="ns/pool",namespace="ns",host="win-a",condition="KubeletUnhealthy",status="True"} 1',
      'winfleet_pool_remediation_allowed{pool="ns/pool"} 1',
      'winfleet_pool_unhealthy_hosts{pool="ns/pool"} 1',
    ],
  );
  m.applyPoolPass('ns/pool', pass(false).metrics);
  assert.deepEqual(
    (await scrape(registry)).filter((l) => !l.startsWith('winfleet_remediations_total')),
    [
      'winfleet_pool_remediation_allowed{pool="ns/pool"} 1',
      'winfleet_pool_unhealthy_hosts{pool="ns/pool"} 0',
    ],
  );
});
