/**
 * Gauges of the controller layer, read when Prometheus scrapes (collect), never on a timer:
 * each controller's work queue depth, the objects each informer caches, and the webhook's
 * aggregate of Ready Windows nodes per build. Reading them costs the number of series, not
 * the number of objects: queue lengths and cache sizes are counters the structures keep.
 */
import { Gauge, type Registry } from 'prom-client';

export interface ControllerMetricSources {
  /** The controllers running now (the list may grow after registration). */
  controllers: () => readonly { name: string; queue: { length: number } }[];
  /** Objects cached per resource (plural). */
  informerObjects: () => ReadonlyMap<string, number>;
  /** Ready schedulable Windows nodes per build, as the webhook counts them. */
  readyWindowsNodes?: () => ReadonlyMap<string, number>;
}

/** Registers the gauges in `registry`. */
export function registerControllerMetrics(
  registry: Registry,
  sources: ControllerMetricSources,
): void {
  new Gauge({
    name: 'winfleet_workqueue_depth',
    help: 'Keys waiting or being reconciled in a controller work queue',
    labelNames: ['queue'],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of sources.controllers()) this.set({ queue: c.name }, c.queue.length);
    },
  });
  new Gauge({
    name: 'winfleet_informer_objects',
    help: 'Objects held in the informer caches, by resource',
    labelNames: ['resource'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [resource, count] of sources.informerObjects()) this.set({ resource }, count);
    },
  });
  const ready = sources.readyWindowsNodes;
  if (!ready) return;
  new Gauge({
    name: 'winfleet_webhook_ready_windows_nodes',
    help: 'Ready schedulable Windows nodes by windows-build, as the webhook places pods on them',
    labelNames: ['build'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [build, count] of ready()) this.set({ build }, count);
    },
  });
}
