/**
 * The API requests a process makes, by verb, resource and HTTP status code: a Prometheus
 * counter that belongs to no registry until a process registers it in the one it serves
 * (the operator's /metrics). A request that got no response counts with code "error".
 */
import { Counter, type Registry } from 'prom-client';

export const kubeApiRequestsMetric = 'winfleet_kube_api_requests_total';

/** @package */
export class KubeRequestCounter {
  readonly metric = new Counter({
    name: kubeApiRequestsMetric,
    help: 'Kubernetes API requests this process made, by verb, resource and HTTP status code (watches count once, when they start)',
    labelNames: ['verb', 'resource', 'code'] as const,
    registers: [],
  });

  count(verb: string, resource: string, code: string): void {
    this.metric.inc({ verb, resource, code });
  }

  /** The counts so far, keyed `<verb> <resource> <code>`. */
  async counts(): Promise<Record<string, number>> {
    const { values } = await this.metric.get();
    return Object.fromEntries(
      values.map((v) => [`${v.labels.verb} ${v.labels.resource} ${v.labels.code}`, v.value]),
    );
  }

  registerIn(registry: Registry): void {
    if (!registry.getSingleMetric(kubeApiRequestsMetric)) registry.registerMetric(this.metric);
  }
}
