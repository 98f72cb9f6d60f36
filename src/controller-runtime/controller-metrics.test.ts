import assert from 'node:assert/strict';
import test from 'node:test';
import { Registry } from 'prom-client';
import { registerControllerMetrics } from '../controller-runtime/controller-metrics.ts';

test('the gauges read their sources at scrape time', async () => {
  const registry = new Registry();
  const controllers: { name: string; queue: { length: number } }[] = [];
  let ready = new Map([['10.0.20348', 3]]);
  registerControllerMetrics(registry, {
    controllers: () => controllers,
    informerObjects: () => new Map([['nodes', 10_000]]),
    readyWindowsNodes: () => ready,
  });
  controllers.push({ name: 'runtimeclasses', queue: { length: 2 } });
  let text = await registry.metrics();
  assert.match(text, /winfleet_workqueue_depth\{queue="runtimeclasses"\} 2/);
  assert.match(text, /winfleet_informer_objects\{resource="nodes"\} 10000/);
  assert.match(text, /winfleet_webhook_ready_windows_nodes\{build="10.0.20348"\} 3/);
  ready = new Map([['10.0.26100', 1]]);
  text = await registry.metrics();
  assert.doesNotMatch(text, /build="10.0.20348"/, 'a build with no node left is dropped');
  assert.match(text, /winfleet_webhook_ready_windows_nodes\{build="10.0.26100"\} 1/);
});
