/**
 * The health metrics' names and labels (the operator's /metrics registers them; this core only
 * says what to set). Prometheus conventions: a gauge per Node condition of a host, as
 * kube-state-metrics' kube_node_status_condition; a counter of ended rungs by rung and result.
 * @package
 */
export const metricNames = {
  /**
   * Gauge, 1 while a host's Node has a condition of its pool's unhealthyConditions in the listed
   * status (series absent otherwise). Labels: pool, namespace, host, condition, status.
   */
  hostCondition: 'winfleet_host_condition',
  /** Counter of ended remediation rungs. Labels: pool, rung, result. */
  remediationsTotal: 'winfleet_remediations_total',
  /** Gauge: the pool's hosts unhealthy past a timeout. Labels: pool. */
  unhealthyHosts: 'winfleet_pool_unhealthy_hosts',
  /** Gauge, 1 when the pool repairs hosts, 0 when maxUnhealthy, a spec problem or enabled: false stops it. Labels: pool. */
  remediationAllowed: 'winfleet_pool_remediation_allowed',
} as const;

/** @package */
export const metricLabels = {
  [metricNames.hostCondition]: ['pool', 'namespace', 'host', 'condition', 'status'],
  [metricNames.remediationsTotal]: ['pool', 'rung', 'result'],
  [metricNames.unhealthyHosts]: ['pool'],
  [metricNames.remediationAllowed]: ['pool'],
} as const;

/** One value to set (a gauge) or add (a counter). */
export interface MetricSample {
  name: (typeof metricNames)[keyof typeof metricNames];
  labels: Record<string, string>;
  value: number;
}
