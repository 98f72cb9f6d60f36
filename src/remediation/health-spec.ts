/**
 * A pool's spec.health, checked and with its defaults: the policy health checks and the
 * remediation ladder use. As checkPoolSpec does for the rest of the spec, this checks every
 * field again (the CRD schema refuses most bad values, but an object stored before a schema
 * change reaches here too) and reports each problem naming the field and the fix. A field with
 * a problem takes its default, so hosts are still checked and reported; a pool whose health
 * spec has a problem repairs nothing (see healthPass).
 */
import {
  type ConditionStatus,
  conditionStatuses,
  type HealthSpec,
  healthDefaults,
} from '../api/windows-node-pool.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { type DurationBounds, parseDuration } from '../rollout/duration.ts';
import { field } from '../rollout/pool-spec.ts';

/** @package */
export interface UnhealthyRule {
  type: string;
  status: ConditionStatus;
  timeoutMs: number;
}

/** @package */
export interface HealthPolicy {
  unhealthyConditions: readonly UnhealthyRule[];
  nodeStartupTimeoutMs: number;
  maxUnhealthy: MaxUnhealthy;
  /** False: hosts are checked and reported, never repaired. */
  remediationEnabled: boolean;
  restartServiceTimeoutMs: number;
  rebootstrapTimeoutMs: number;
  rebootTimeoutMs: number;
}

/** @package */
export type MaxUnhealthy = { kind: 'count'; count: number } | { kind: 'percent'; percent: number };

/** A condition may count at once ("0s") or after up to a day. */
const conditionTimeoutBounds: DurationBounds = { minMs: 0, maxMs: 86_400_000 };
/** A Node may take from 30 seconds to a day to report Ready after its bootstrap. */
const startupTimeoutBounds: DurationBounds = { minMs: 30_000, maxMs: 86_400_000 };
/** Each rung: from a second to a day. */
const rungTimeoutBounds: DurationBounds = { minMs: 1000, maxMs: 86_400_000 };
/** At most this many unhealthy conditions per pool (the CRD's maxItems). */
const maxUnhealthyConditions = 32;
/** The largest whole number maxUnhealthy takes (the CRD's bound). */
const maxUnhealthyLimit = 100_000;

// A Kubernetes condition type: a qualified name, as metav1.Condition's type is validated.
const conditionTypePattern =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const percentPattern = /^(100|[1-9]?[0-9])%$/;

function rule(c: { type: string; status: ConditionStatus; timeout: string }): UnhealthyRule {
  return { type: c.type, status: c.status, timeoutMs: parseDuration(c.timeout, 'default') };
}

/** The policy of hosts no pool selects, and of a pool without spec.health. */
export const defaultHealthPolicy: Readonly<HealthPolicy> = Object.freeze({
  unhealthyConditions: Object.freeze(healthDefaults.unhealthyConditions.map(rule)),
  nodeStartupTimeoutMs: parseDuration(healthDefaults.nodeStartupTimeout, 'default'),
  maxUnhealthy: parseMaxUnhealthy(healthDefaults.maxUnhealthy, 'default'),
  remediationEnabled: healthDefaults.remediationEnabled,
  restartServiceTimeoutMs: parseDuration(healthDefaults.restartServiceTimeout, 'default'),
  rebootstrapTimeoutMs: parseDuration(healthDefaults.rebootstrapTimeout, 'default'),
  rebootTimeoutMs: parseDuration(healthDefaults.rebootTimeout, 'default'),
});

/**
 * Parses spec.health.maxUnhealthy: a whole number from 0, or "0%" to "100%" of the pool's
 * hosts. Throws a WinfleetError naming `field` and saying what to write.
 * @package
 */
export function parseMaxUnhealthy(value: unknown, field: string): MaxUnhealthy {
  const hint = `use a whole number of hosts from 0 to ${maxUnhealthyLimit}, or a percentage from "0%" to "100%" of the pool's hosts, e.g. "40%"`;
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0 || value > maxUnhealthyLimit) {
      throw new WinfleetError('WF_SCHEMA_INVALID', `${field} is ${value}; ${hint}`);
    }
    return { kind: 'count', count: value };
  }
  if (typeof value === 'string') {
    const match = percentPattern.exec(value);
    if (match) return { kind: 'percent', percent: Number(match[1]) };
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `Cannot parse ${field} ${JSON.stringify(value)}; ${hint}`,
    );
  }
  throw new WinfleetError(
    'WF_SCHEMA_INVALID',
    `${field} must be a number or a percentage string; ${hint}`,
  );
}

/**
 * How many of a pool's `hosts` may be unhealthy while winfleet still repairs: the count, or the
 * percentage of `hosts` rounded down (as a MachineHealthCheck's maxUnhealthy: 40% of 5 is 2) and
 * at least 1 unless it is "0%" — unlike a MachineHealthCheck, where 40% of a pool of 1 or 2 is
 * 0 and a single broken host is never repaired; one host failing is not a mass failure.
 * @package
 */
export function resolveMaxUnhealthy(max: MaxUnhealthy, hosts: number): number {
  if (!Number.isInteger(hosts) || hosts < 0) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `Cannot resolve maxUnhealthy for ${hosts} hosts: a count ≥ 0 is needed`,
    );
  }
  if (max.kind === 'count') return max.count;
  if (max.percent === 0) return 0;
  return Math.max(1, Math.floor((max.percent * hosts) / 100));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseConditions(value: unknown, at: string): UnhealthyRule[] {
  const example = '[{type: Ready, status: "False", timeout: 5m}]';
  if (!Array.isArray(value) || value.length === 0) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${at}: must be a list of at least one {type, status, timeout}, e.g. ${example}; to never repair, set spec.health.remediation.enabled: false`,
    );
  }
  if (value.length > maxUnhealthyConditions) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${at}: ${value.length} entries; at most ${maxUnhealthyConditions}`,
    );
  }
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const here = `${at}[${i}]`;
    if (!isObject(entry))
      throw new WinfleetError('WF_SCHEMA_INVALID', `${here}: must be {type, status, timeout}`);
    const { type, status, timeout } = entry;
    if (typeof type !== 'string' || type.length > 316 || !conditionTypePattern.test(type)) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `${here}.type: ${JSON.stringify(type) ?? 'missing'} is not a Node condition type; write e.g. Ready or KubeletUnhealthy`,
      );
    }
    if (!conditionStatuses.includes(status as ConditionStatus)) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `${here}.status: ${JSON.stringify(status) ?? 'missing'} is not one of "True", "False", "Unknown" (quote them in YAML)`,
      );
    }
    const key = `${type}=${status}`;
    if (seen.has(key)) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `${here}: ${type} ${status} is listed twice; keep one entry`,
      );
    }
    seen.add(key);
    return {
      type,
      status: status as ConditionStatus,
      timeoutMs: parseDuration(timeout, `${here}.timeout`, conditionTimeoutBounds),
    };
  });
}

/**
 * Checks a pool's spec.health (undefined or null: the defaults). `problems` lists every bad
 * field ("spec.health.maxUnhealthy: …"); the policy has the defaults in their place.
 */
export function checkHealthSpec(health: unknown): { policy: HealthPolicy; problems: string[] } {
  const d = defaultHealthPolicy;
  if (health === undefined || health === null) return { policy: { ...d }, problems: [] };
  if (!isObject(health)) {
    return {
      policy: { ...d },
      problems: ['spec.health: must be an object such as {maxUnhealthy: "40%"}, or left out'],
    };
  }
  const h = health as HealthSpec;
  const problems: string[] = [];
  const duration = (value: unknown, fallbackText: string, at: string, bounds: DurationBounds) =>
    parseDuration(value ?? fallbackText, at, bounds);
  const remediation: unknown = h.remediation ?? {};
  const r = isObject(remediation) ? remediation : {};
  if (!isObject(remediation)) {
    problems.push('spec.health.remediation: must be an object such as {enabled: true}');
  }
  const policy: HealthPolicy = {
    unhealthyConditions:
      h.unhealthyConditions === undefined
        ? d.unhealthyConditions
        : field(problems, d.unhealthyConditions, () =>
            parseConditions(h.unhealthyConditions, 'spec.health.unhealthyConditions'),
          ),
    nodeStartupTimeoutMs: field(problems, d.nodeStartupTimeoutMs, () =>
      duration(
        h.nodeStartupTimeout,
        healthDefaults.nodeStartupTimeout,
        'spec.health.nodeStartupTimeout',
        startupTimeoutBounds,
      ),
    ),
    maxUnhealthy: field(problems, d.maxUnhealthy, () =>
      parseMaxUnhealthy(h.maxUnhealthy ?? healthDefaults.maxUnhealthy, 'spec.health.maxUnhealthy'),
    ),
    remediationEnabled: field(problems, d.remediationEnabled, () => {
      const enabled = r.enabled ?? healthDefaults.remediationEnabled;
      if (typeof enabled === 'boolean') return enabled;
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        'spec.health.remediation.enabled: must be true or false',
      );
    }),
    restartServiceTimeoutMs: field(problems, d.restartServiceTimeoutMs, () =>
      duration(
        r.restartServiceTimeout,
        healthDefaults.restartServiceTimeout,
        'spec.health.remediation.restartServiceTimeout',
        rungTimeoutBounds,
      ),
    ),
    rebootstrapTimeoutMs: field(problems, d.rebootstrapTimeoutMs, () =>
      duration(
        r.rebootstrapTimeout,
        healthDefaults.rebootstrapTimeout,
        'spec.health.remediation.rebootstrapTimeout',
        rungTimeoutBounds,
      ),
    ),
    rebootTimeoutMs: field(problems, d.rebootTimeoutMs, () =>
      duration(
        r.rebootTimeout,
        healthDefaults.rebootTimeout,
        'spec.health.remediation.rebootTimeout',
        rungTimeoutBounds,
      ),
    ),
  };
  return { policy, problems };
}
