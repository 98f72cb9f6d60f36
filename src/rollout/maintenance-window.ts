/**
 * Maintenance windows: when a pool may start disruptive changes. A window opens on each listed
 * day at `start` and closes at `end`, local time in an IANA time zone, read through Intl (the
 * time zone data Node carries; no extra dependency). A window whose end is not after its start
 * crosses midnight and belongs to the day it starts on: {days: [Sat], start: "22:00", end:
 * "02:00"} is Saturday 22:00 to Sunday 02:00. "24:00" as the end is the end of the day.
 *
 * Clock changes are handled as Temporal's "compatible" disambiguation does: a local time that
 * does not exist (skipped when clocks go forward) moves forward by the gap, and one that occurs
 * twice (when clocks go back) is its first occurrence. So a window over the night clocks go
 * forward is an hour shorter in real time and one over the night they go back an hour longer;
 * a window inside the skipped hour opens an hour later, and one that starts in it but ends
 * before its moved start (02:30–03:00 when 02:00 jumps to 03:00) does not open that night.
 */
import { type MaintenanceWindow, poolDefaults, weekdays } from '../api/windows-node-pool.ts';
import { WinfleetError } from '../errors/catalog.ts';

/** A window, checked: minutes after local midnight, days as indexes into `weekdays`. */
export interface ParsedWindow {
  days: ReadonlySet<number>;
  startMinute: number;
  /** 1440 for "24:00". */
  endMinute: number;
  /** As Intl resolves it. */
  timeZone: string;
}

const clock = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;
const dayMs = 86_400_000;
// IANA names: segments of letters, digits, "_", "-" and "+", each starting with a capital
// ("UTC", "Europe/Berlin", "America/Port-au-Prince", "Etc/GMT+5"). Intl also takes offsets
// ("+01:00") and any letter case; a pool's time zone is a name, written as the database does.
const zoneName = /^[A-Z][A-Za-z0-9_+-]*(\/[A-Z][A-Za-z0-9_+-]*)*$/;
const windowKeys = new Set(['days', 'start', 'end', 'timeZone']);

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * Checks an IANA time zone name and returns it as Intl resolves it. Throws a WinfleetError naming
 * `field` for an unknown zone, an offset ("+01:00") or a name in the wrong letter case.
 * @package
 */
export function parseTimeZone(value: unknown, field: string): string {
  const hint = 'use an IANA time zone name such as "UTC" or "Europe/Berlin"';
  if (typeof value !== 'string' || !zoneName.test(value)) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: ${JSON.stringify(value) ?? String(value)} is not a time zone name; ${hint}`,
    );
  }
  let resolved: string;
  try {
    resolved = formatter(value).resolvedOptions().timeZone;
  } catch {
    throw new WinfleetError('WF_SCHEMA_INVALID', `${field}: unknown time zone "${value}"; ${hint}`);
  }
  if (resolved !== value && resolved.toLowerCase() === value.toLowerCase()) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: write the time zone "${value}" as "${resolved}"`,
    );
  }
  return resolved;
}

function parseClock(value: unknown, field: string, allowEndOfDay: boolean): number {
  if (allowEndOfDay && value === '24:00') return 1440;
  const match = typeof value === 'string' ? clock.exec(value) : null;
  if (!match) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: ${JSON.stringify(value) ?? String(value)} is not a time of day; write HH:MM in 24-hour time, e.g. "01:00"${allowEndOfDay ? ' ("24:00" for the end of the day)' : ''}`,
    );
  }
  return Number(match[1]) * 60 + Number(match[2]);
}

function parseDays(value: unknown, field: string): Set<number> {
  if (value === undefined) return new Set(weekdays.keys());
  const hint = `list days as ${weekdays.join(', ')}, or leave days out for every day`;
  if (!Array.isArray(value) || value.length === 0) {
    throw new WinfleetError('WF_SCHEMA_INVALID', `${field}: ${hint}`);
  }
  const days = new Set<number>();
  for (const [i, day] of value.entries()) {
    const index = weekdays.indexOf(day);
    if (index < 0) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `${field}[${i}]: ${JSON.stringify(day)} is not a day; ${hint}`,
      );
    }
    if (days.has(index))
      throw new WinfleetError('WF_SCHEMA_INVALID', `${field}[${i}]: ${day} is listed twice`);
    days.add(index);
  }
  return days;
}

/**
 * Checks a maintenance window. Throws a WinfleetError naming the field at fault (under `field`)
 * and the fix.
 * @package
 */
export function parseMaintenanceWindow(
  window: unknown,
  field = 'spec.maintenanceWindow',
): ParsedWindow {
  if (typeof window !== 'object' || window === null || Array.isArray(window)) {
    throw new WinfleetError('WF_SCHEMA_INVALID', `${field}: must be {days, start, end, timeZone}`);
  }
  for (const key of Object.keys(window)) {
    if (!windowKeys.has(key)) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `${field}.${key}: unknown field; remove it (days, start, end, timeZone)`,
      );
    }
  }
  const w = window as MaintenanceWindow;
  const startMinute = parseClock(w.start, `${field}.start`, false);
  const endMinute = parseClock(w.end, `${field}.end`, true);
  if (startMinute === endMinute) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: start and end are both "${w.start}"; a window needs a length (for a whole day use start "00:00" and end "24:00")`,
    );
  }
  return {
    days: parseDays(w.days, `${field}.days`),
    startMinute,
    endMinute,
    timeZone: parseTimeZone(w.timeZone ?? poolDefaults.timeZone, `${field}.timeZone`),
  };
}

interface LocalDate {
  year: number;
  month: number;
  day: number;
}

/** The zone's offset from UTC at instant `t`, in ms (local = UTC + offset). */
function offsetAt(t: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(t)) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const local = Date.UTC(
    parts.year!,
    parts.month! - 1,
    parts.day!,
    parts.hour!,
    parts.minute!,
    parts.second!,
  );
  return local - (t - (((t % 1000) + 1000) % 1000));
}

function localDateOf(t: number, timeZone: string): LocalDate {
  const local = new Date(t + offsetAt(t, timeZone));
  return { year: local.getUTCFullYear(), month: local.getUTCMonth() + 1, day: local.getUTCDate() };
}

/** The local date `days` after `date` (calendar arithmetic, no time zone involved). */
function addDays(date: LocalDate, days: number): LocalDate {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day + days));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** Index into `weekdays` (Mon = 0) of a local date. */
function weekdayOf(date: LocalDate): number {
  return (new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay() + 6) % 7;
}

/**
 * The instant a local date and minute of the day (up to 1440) name in `timeZone`: a skipped
 * local time moves forward by the gap, a repeated one is its first occurrence.
 * @package
 */
export function zonedInstant(date: LocalDate, minute: number, timeZone: string): number {
  const local = Date.UTC(date.year, date.month - 1, date.day) + minute * 60_000;
  // Offsets a day either side: a zone changes its offset at most once in between.
  const before = offsetAt(local - dayMs, timeZone);
  const after = offsetAt(local + dayMs, timeZone);
  const valid = [local - before, local - after].filter((t) => t + offsetAt(t, timeZone) === local);
  return valid.length > 0 ? Math.min(...valid) : local - before;
}

/** The window that opens on local `date`, or undefined when it does not open that day. */
function windowOn(w: ParsedWindow, date: LocalDate): { start: number; end: number } | undefined {
  if (!w.days.has(weekdayOf(date))) return undefined;
  const start = zonedInstant(date, w.startMinute, w.timeZone);
  const endDate = w.endMinute > w.startMinute ? date : addDays(date, 1);
  const end = zonedInstant(endDate, w.endMinute, w.timeZone);
  // Empty when it starts in the hour the clocks skip and ends before its moved start.
  return end > start ? { start, end } : undefined;
}

function checked(window: MaintenanceWindow | ParsedWindow): ParsedWindow {
  return 'startMinute' in window ? window : parseMaintenanceWindow(window);
}

/** The window `now` is in, as [start, end) instants, or undefined. */
export function currentWindow(
  window: MaintenanceWindow | ParsedWindow,
  now: Date,
): { start: Date; end: Date } | undefined {
  const w = checked(window);
  const t = now.getTime();
  const today = localDateOf(t, w.timeZone);
  // A window that crossed midnight opened yesterday.
  for (const date of [addDays(today, -1), today]) {
    const open = windowOn(w, date);
    if (open && open.start <= t && t < open.end) {
      return { start: new Date(open.start), end: new Date(open.end) };
    }
  }
  return undefined;
}

/**
 * True when `now` is inside the window: start inclusive, end exclusive.
 *
 * @example isInWindow({ days: ['Sat'], start: '22:00', end: '02:00' }, new Date('2025-06-08T01:00:00Z')) // true (Sunday 01:00 UTC)
 * @package
 */
export function isInWindow(window: MaintenanceWindow | ParsedWindow, now: Date): boolean {
  return currentWindow(window, now) !== undefined;
}

/** When the window next opens strictly after `now` (the next one when `now` is inside one). */
export function nextWindowStart(window: MaintenanceWindow | ParsedWindow, now: Date): Date {
  const w = checked(window);
  const t = now.getTime();
  const today = localDateOf(t, w.timeZone);
  // Every listed weekday comes round within a week; a day whose window is empty (it starts in
  // the skipped hour and ends before its moved start) is passed over, at most once a year.
  for (let k = 0; k <= 14; k++) {
    const open = windowOn(w, addDays(today, k));
    if (open && open.start > t) return new Date(open.start);
  }
  throw new WinfleetError(
    'WF_SCHEMA_INVALID',
    `The maintenance window never opens after ${now.toISOString()}`,
  );
}
