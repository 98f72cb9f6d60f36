/**
 * Durations as Kubernetes objects write them: Go's `time.Duration` text ("10m", "1h30m", "90s",
 * and "10m0s" as Go prints it back), parsed strictly. Only whole numbers with the units h, m,
 * s and ms, largest unit first, each unit once; no sign, fraction, space, leading zero or
 * other unit (Go's own parser takes "1.5h", "-1m" and "1s1h"; a timeout has no use for them).
 */
import { WinfleetError } from '../errors/catalog.ts';

const unitMs = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const;
type Unit = keyof typeof unitMs;
const unitOrder: readonly Unit[] = ['h', 'm', 's', 'ms'];

const whole = /^(?:(?:0|[1-9][0-9]*)(?:h|ms|m|s))+$/;
const part = /(0|[1-9][0-9]*)(h|ms|m|s)/g;

const syntax =
  'write whole numbers with the units h, m, s or ms, largest first, e.g. "10m", "1h30m" or "90s"';

export interface DurationBounds {
  /** Smallest allowed value in milliseconds (inclusive). */
  minMs?: number;
  /** Largest allowed value in milliseconds (inclusive). */
  maxMs?: number;
}

/**
 * Parses a duration into milliseconds. Throws a WinfleetError naming `field`, quoting the value
 * and saying what to write.
 *
 * @example parseDuration('1h30m', 'spec.drainTimeout') // 5_400_000
 */
export function parseDuration(value: unknown, field: string, bounds: DurationBounds = {}): number {
  if (typeof value !== 'string') {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field} must be a duration string such as "10m", got ${typeof value}`,
    );
  }
  if (!whole.test(value)) {
    throw new WinfleetError('WF_SCHEMA_INVALID', `Cannot parse ${field} "${value}": ${syntax}`);
  }
  let ms = 0;
  let previous = -1;
  for (const [, digits, unit] of value.matchAll(part)) {
    const index = unitOrder.indexOf(unit as Unit);
    if (index <= previous) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `Cannot parse ${field} "${value}": each unit once, largest first (h, m, s, ms); ${syntax}`,
      );
    }
    previous = index;
    ms += Number(digits) * unitMs[unit as Unit];
  }
  if (!Number.isSafeInteger(ms)) {
    throw new WinfleetError('WF_SCHEMA_INVALID', `${field} "${value}" is too long`);
  }
  const { minMs, maxMs } = bounds;
  if (minMs !== undefined && ms < minMs) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field} "${value}" is too short: use at least ${formatDuration(minMs)}`,
    );
  }
  if (maxMs !== undefined && ms > maxMs) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field} "${value}" is too long: use at most ${formatDuration(maxMs)}`,
    );
  }
  return ms;
}

/**
 * Milliseconds as the shortest duration text parseDuration reads back: 5_400_000 → "1h30m",
 * 0 → "0s".
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `Cannot format ${ms} ms as a duration: a whole number ≥ 0 is needed`,
    );
  }
  if (ms === 0) return '0s';
  let rest = ms;
  let text = '';
  for (const unit of unitOrder) {
    const count = Math.floor(rest / unitMs[unit]);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * unitMs[unit];
  }
  return text;
}
