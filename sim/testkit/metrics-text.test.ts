import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMetricsText, samplesOf, sumOf } from './metrics-text.ts';

const text = `# HELP winfleet_kube_api_requests_total API requests
# TYPE winfleet_kube_api_requests_total counter
winfleet_kube_api_requests_total{verb="watch",resource="nodes",code="200"} 12
winfleet_kube_api_requests_total{verb="update",resource="leases",code="200"} 3

process_resident_memory_bytes 123456789
odd{path="a\\"b,c",x="1"} +Inf 1700000000000
`;

test('samples, labels (escaped quotes and commas) and values are read', () => {
  const samples = parseMetricsText(text);
  assert.equal(samples.length, 4);
  assert.deepEqual(samplesOf(samples, 'winfleet_kube_api_requests_total')[0], {
    name: 'winfleet_kube_api_requests_total',
    labels: { verb: 'watch', resource: 'nodes', code: '200' },
    value: 12,
  });
  assert.equal(sumOf(samples, 'winfleet_kube_api_requests_total'), 15);
  assert.equal(sumOf(samples, 'process_resident_memory_bytes'), 123456789);
  assert.deepEqual(samplesOf(samples, 'odd')[0]!.labels, { path: 'a"b,c', x: '1' });
  assert.equal(samplesOf(samples, 'odd')[0]!.value, Number.POSITIVE_INFINITY);
  assert.equal(sumOf(samples, 'absent'), 0);
});

test('a line that is not a sample is an error, not a zero', () => {
  assert.throws(() => parseMetricsText('winfleet_x{verb="get"'), /Unreadable metrics line/);
  assert.throws(() => parseMetricsText('winfleet_x abc'), /Unreadable value/);
  assert.throws(() => parseMetricsText('winfleet_x{verb=get} 1'), /Unreadable labels/);
});
