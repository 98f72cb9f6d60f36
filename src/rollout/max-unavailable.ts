/**
 * A pool's `maxUnavailable`, an IntOrString as in a Deployment: a whole number of hosts, or a
 * percentage of the pool's hosts. A percentage rounds down, as a Deployment's maxUnavailable
 * does, and is at least 1: a Deployment whose maxUnavailable and maxSurge both round to 0 uses 1
 * (`ResolveFenceposts`), and a pool of hosts you bring has no surge. So "10%" of 5 hosts is 1,
 * "50%" of 5 is 2. An explicit 0 or "0%" is refused: a pool that may never take a host down
 * could never change (pause it instead).
 */
import { WinfleetError } from '../errors/catalog.ts';

const percent = /^(100|[1-9][0-9]?)%$/;

/** The largest whole number accepted: far above any fleet, small enough to be exact. */
export const maxUnavailableLimit = 100_000;

/** @package */
export type MaxUnavailable =
  | { kind: 'count'; count: number }
  | { kind: 'percent'; percent: number };

/**
 * Parses spec.maxUnavailable: a whole number from 1, or "1%" to "100%". Throws a WinfleetError
 * naming `field` and saying what to write.
 * @package
 */
export function parseMaxUnavailable(value: unknown, field: string): MaxUnavailable {
  const hint = 'use a whole number ≥ 1 (hosts) or a percentage from "1%" to "100%" of the pool';
  if (typeof value === 'number') {
    if (value === 0) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `${field} is 0: the pool could never take a host down to change it; ${hint}, or set spec.paused: true to hold changes`,
      );
    }
    if (!Number.isInteger(value) || value < 1 || value > maxUnavailableLimit) {
      throw new WinfleetError('WF_SCHEMA_INVALID', `${field} is ${value}; ${hint}`);
    }
    return { kind: 'count', count: value };
  }
  if (typeof value === 'string') {
    const match = percent.exec(value);
    if (match) return { kind: 'percent', percent: Number(match[1]) };
    if (value === '0%') {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `${field} is "0%": the pool could never take a host down to change it; ${hint}, or set spec.paused: true to hold changes`,
      );
    }
    throw new WinfleetError('WF_SCHEMA_INVALID', `Cannot parse ${field} "${value}"; ${hint}`);
  }
  throw new WinfleetError(
    'WF_SCHEMA_INVALID',
    `${field} must be a number or a percentage string; ${hint}`,
  );
}

/**
 * How many of a pool's `hosts` may be unavailable at once: the count itself, or the
 * percentage of `hosts` rounded down and at least 1.
 *
 * @example resolveMaxUnavailable({ kind: 'percent', percent: 25 }, 10) // 2
 * @package
 */
export function resolveMaxUnavailable(max: MaxUnavailable, hosts: number): number {
  if (!Number.isInteger(hosts) || hosts < 0) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `Cannot resolve maxUnavailable for ${hosts} hosts: a count ≥ 0 is needed`,
    );
  }
  if (max.kind === 'count') return max.count;
  return Math.max(1, Math.floor((max.percent * hosts) / 100));
}
