/**
 * API times as Kubernetes writes and reads them (metav1.Time: RFC 3339 in UTC, whole seconds):
 * the one formatter every status and annotation time winfleet writes goes through, and the
 * strict parser for times a user or the cluster sends.
 */
import { WinfleetError } from '../errors/catalog.ts';

/** An API timestamp without fractions, as Kubernetes writes them. */
export function apiTime(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** An API timestamp (string, or Date as client-node parses some) in ms, if there is one. */
export function timeOf(value: string | Date | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

const rfc3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses an RFC 3339 time as Kubernetes writes and reads them ("2025-06-07T01:00:00Z",
 * "2025-06-07T03:00:00+02:00"), refusing impossible dates (Feb 30), leap seconds, lowercase
 * separators and anything else. Returns milliseconds since the epoch; throws a WinfleetError
 * naming `field`.
 */
export function parseApiTime(value: unknown, field: string): number {
  const match = typeof value === 'string' ? rfc3339.exec(value) : null;
  const refuse = () =>
    new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: ${JSON.stringify(value) ?? String(value)} is not an RFC 3339 time; write e.g. "2025-06-07T01:00:00Z"`,
    );
  if (!match) throw refuse();
  const [, y, mo, d, h, mi, s, fraction, zone, sign, oh, om] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const offsetH = Number(oh ?? 0);
  const offsetM = Number(om ?? 0);
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    offsetH > 23 ||
    offsetM > 59
  ) {
    throw refuse();
  }
  const ms = Math.floor(Number(`0${fraction ?? ''}`) * 1000);
  const offset = zone === 'Z' ? 0 : (sign === '-' ? -1 : 1) * (offsetH * 60 + offsetM) * 60_000;
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, ms);
  return utc.getTime() - offset;
}
