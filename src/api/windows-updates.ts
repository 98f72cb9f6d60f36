/**
 * The agent's Windows Update report, carried as JSON in the Node annotation
 * winfleet.io/windows-updates (windowsUpdatesAnnotation). The agent writes it with the node's
 * own credentials, so to the operator it is input from a host that may be hostile: it is parsed
 * strictly (exact keys, KB numbers, bounded lengths and counts) and a bad report is refused
 * whole, naming the field — it never half-counts. A node can only lie about itself: what it
 * reports decides which changes its own host goes through, never another host's.
 */

import { WinfleetError } from '../errors/catalog.ts';
import { parseApiTime } from '../kube/api-time.ts';
import type { AvailableUpdate } from './rollout-status.ts';
import type { HostWindowsUpdates } from './windows-host.ts';

/** One update the Windows Update Agent found and has not installed. */
export interface ReportedUpdate extends AvailableUpdate {
  /** WUA's title, e.g. "2024-07 Cumulative Update for Microsoft server operating system…". */
  title: string;
  /** The update needs a reboot to finish installing (WUA's InstallationBehavior.RebootBehavior). */
  rebootRequired?: boolean;
}

export interface WindowsUpdateReport {
  /** The Node's status.nodeInfo.bootID as the agent read it when it wrote the report. */
  bootId: string;
  /** When the search ran (RFC 3339). */
  searchedAt: string;
  available: ReportedUpdate[];
  /** KBs winfleet installed on this host, newest last (at most maxInstalled kept). */
  installed: string[];
  /** The last install's failures: the KB and the error (an HRESULT and its meaning). */
  failed: { kb: string; error: string }[];
  /** Any of the three reboot-pending registry keys is present. */
  rebootPending: boolean;
  /** The last search failed: why (the report keeps the previous search's updates). */
  error?: string;
}

export const maxReportedUpdates = 200;
export const maxInstalled = 50;
/** Annotations share 256 KiB per object; the report keeps well under it. */
export const maxReportBytes = 64 * 1024;

const kbPattern = /^KB[0-9]{6,8}$/;
const bootIdPattern = /^[A-Za-z0-9-]{1,64}$/;
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Control characters, the Unicode line and paragraph separators, and the bidirectional
 * embeddings, overrides and isolates (which make `kubectl` output show text other than what
 * it is).
 */
export const unprintable = /[\p{Cc}\p{Zl}\p{Zp}\u202A-\u202E\u2066-\u2069]/u;

function printable(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: expected a string of 1–${max} characters`,
    );
  }
  if (unprintable.test(value)) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: control characters (line separators and bidirectional overrides included) are not allowed`,
    );
  }
  return value;
}

function exactKeys(
  value: unknown,
  field: string,
  required: readonly string[],
  optional: readonly string[] = [],
): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WinfleetError('WF_SCHEMA_INVALID', `${field}: expected an object`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!required.includes(key) && !optional.includes(key)) {
      throw new WinfleetError('WF_SCHEMA_INVALID', `${field}: unknown key "${key}"`);
    }
  }
  for (const key of required) {
    if (!(key in record)) throw new WinfleetError('WF_SCHEMA_INVALID', `${field}.${key}: missing`);
  }
  return record;
}

function list(value: unknown, field: string, max: number): unknown[] {
  if (!Array.isArray(value))
    throw new WinfleetError('WF_SCHEMA_INVALID', `${field}: expected a list`);
  if (value.length > max)
    throw new WinfleetError('WF_SCHEMA_INVALID', `${field}: more than ${max} entries`);
  return value;
}

function kb(value: unknown, field: string): string {
  if (typeof value !== 'string' || !kbPattern.test(value)) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${field}: ${JSON.stringify(value)} is not a KB number like "KB5040437"`,
    );
  }
  return value;
}

/**
 * Parses the annotation's value. Throws a WinfleetError that names the field and says the
 * report was refused; the operator then treats the host as having reported nothing.
 */
export function parseWindowsUpdateReport(text: string): WindowsUpdateReport {
  const where = 'winfleet.io/windows-updates';
  try {
    if (Buffer.byteLength(text) > maxReportBytes) {
      throw new WinfleetError('WF_SCHEMA_INVALID', `larger than ${maxReportBytes} bytes`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new WinfleetError('WF_SCHEMA_INVALID', 'not JSON');
    }
    const r = exactKeys(
      raw,
      'report',
      ['bootId', 'searchedAt', 'available', 'installed', 'failed', 'rebootPending'],
      ['error'],
    );
    if (typeof r.bootId !== 'string' || !bootIdPattern.test(r.bootId)) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        'bootId: expected 1–64 letters, digits and dashes',
      );
    }
    // A real time (no month 13), as the CRD's date-time format will check when it is copied.
    if (typeof r.searchedAt !== 'string' || !rfc3339.test(r.searchedAt)) {
      throw new WinfleetError('WF_SCHEMA_INVALID', 'searchedAt: expected an RFC 3339 time');
    }
    parseApiTime(r.searchedAt, 'searchedAt');
    if (typeof r.rebootPending !== 'boolean')
      throw new WinfleetError('WF_SCHEMA_INVALID', 'rebootPending: expected a boolean');
    const seen = new Set<string>();
    const available = list(r.available, 'available', maxReportedUpdates).map((u, i) => {
      const field = `available[${i}]`;
      const e = exactKeys(u, field, ['kb', 'title', 'categories'], ['rebootRequired']);
      const id = kb(e.kb, `${field}.kb`);
      if (seen.has(id))
        throw new WinfleetError('WF_SCHEMA_INVALID', `${field}.kb: ${id} is listed twice`);
      seen.add(id);
      const categories = list(e.categories, `${field}.categories`, 8).map((c, j) =>
        printable(c, `${field}.categories[${j}]`, 64),
      );
      if (e.rebootRequired !== undefined && typeof e.rebootRequired !== 'boolean') {
        throw new WinfleetError('WF_SCHEMA_INVALID', `${field}.rebootRequired: expected a boolean`);
      }
      return {
        kb: id,
        title: printable(e.title, `${field}.title`, 256),
        categories,
        ...(e.rebootRequired !== undefined ? { rebootRequired: e.rebootRequired } : {}),
      };
    });
    const installed = list(r.installed, 'installed', maxInstalled).map((k, i) =>
      kb(k, `installed[${i}]`),
    );
    const failed = list(r.failed, 'failed', maxReportedUpdates).map((f, i) => {
      const e = exactKeys(f, `failed[${i}]`, ['kb', 'error']);
      return {
        kb: kb(e.kb, `failed[${i}].kb`),
        error: printable(e.error, `failed[${i}].error`, 512),
      };
    });
    return {
      bootId: r.bootId,
      searchedAt: r.searchedAt,
      available,
      installed,
      failed,
      rebootPending: r.rebootPending,
      ...(r.error !== undefined ? { error: printable(r.error, 'error', 512) } : {}),
    };
  } catch (error) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `${where}: the agent's report was refused (${(error as Error).message}); the agent rewrites it at its next search, or remove the annotation`,
    );
  }
}

/** The annotation's value for `report` (what the agent writes). */
export function formatWindowsUpdateReport(report: WindowsUpdateReport): string {
  const text = JSON.stringify(report);
  parseWindowsUpdateReport(text); // never write what the operator would refuse
  return text;
}

/** A valid reboot-request token: 1–63 of [a-z0-9-], starting and ending alphanumeric. */
export const rebootTokenPattern = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The report as WindowsHost status.windowsUpdates shows it. */
export function summarizeReport(report: WindowsUpdateReport): HostWindowsUpdates {
  return {
    searchedAt: report.searchedAt,
    available: report.available.map((u) => `${u.kb} (${u.categories.join(', ') || 'no category'})`),
    installed: [...report.installed],
    failed: report.failed.map((f) => `${f.kb}: ${f.error}`),
    rebootPending: report.rebootPending,
    ...(report.error ? { error: report.error } : {}),
  };
}
