/**
 * The process's own memory in the operator's /metrics, read when scraped: resident set size
 * and V8 heap in use, under the names prom-client's default metrics use (which the operator
 * does not turn on: they add event-loop and GC observers it does not need).
 */
import { Gauge, type Registry } from 'prom-client';

/** @package */
export function registerProcessMetrics(registry: Registry): void {
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes',
    registers: [registry],
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
  new Gauge({
    name: 'nodejs_heap_size_used_bytes',
    help: 'V8 heap in use, in bytes',
    registers: [registry],
    collect() {
      this.set(process.memoryUsage().heapUsed);
    },
  });
}
