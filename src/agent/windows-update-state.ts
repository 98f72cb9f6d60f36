/**
 * What state.json keeps of Windows Update (windows-updates.ts): the reboot tokens acted on, the
 * KBs installed, the last failures, and how a record is merged with another agent process's.
 */
import {
  maxInstalled,
  maxReportedUpdates,
  rebootTokenPattern,
  unprintable,
} from '../api/windows-updates.ts';

/** @package */
export interface WindowsUpdateState {
  /** Reboot tokens acted on, newest last (the last maxRebootTokens). */
  rebootTokens: string[];
  /** KBs winfleet installed, newest last (the last maxInstalled). */
  installed: string[];
  /** The last install's failures. */
  failed: { kb: string; error: string }[];
}

/** @package */
export const kbPattern = /^KB[0-9]{6,8}$/;

/** How many reboot tokens state.json remembers (a token older than these is long gone). */
export const maxRebootTokens = 32;

const lastUnique = (values: readonly string[], max: number): string[] => {
  const seen = new Set<string>();
  const out: string[] = [];
  for (let i = values.length - 1; i >= 0 && out.length < max; i--) {
    const v = values[i]!;
    if (!seen.has(v)) {
      seen.add(v);
      out.unshift(v);
    }
  }
  return out;
};

/**
 * state.json's record merged with what another agent process wrote meanwhile: no token or
 * installed KB recorded is forgotten (within the bounds); `failed` is the newer one's.
 * @package
 */
export function mergeWindowsUpdateState(
  onDisk: Partial<WindowsUpdateState> | undefined,
  mine: Partial<WindowsUpdateState> | undefined,
): WindowsUpdateState | undefined {
  if (!onDisk && !mine) return undefined;
  // state.json is only SYSTEM's and the administrators', but a damaged entry must not keep
  // every later report from being written: what does not fit the report is dropped.
  const list = (v: unknown, pattern: RegExp): string[] =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && pattern.test(x)) : [];
  const failures = (v: unknown) =>
    Array.isArray(v)
      ? v.flatMap((f: { kb?: unknown; error?: unknown }) => {
          const error = typeof f?.error === 'string' ? printableText(f.error, 512) : '';
          return typeof f?.kb === 'string' && kbPattern.test(f.kb) && error
            ? [{ kb: f.kb, error }]
            : [];
        })
      : undefined;
  return {
    rebootTokens: lastUnique(
      [
        ...list(onDisk?.rebootTokens, rebootTokenPattern),
        ...list(mine?.rebootTokens, rebootTokenPattern),
      ],
      maxRebootTokens,
    ),
    installed: lastUnique(
      [...list(onDisk?.installed, kbPattern), ...list(mine?.installed, kbPattern)],
      maxInstalled,
    ),
    failed: (failures(mine?.failed) ?? failures(onDisk?.failed) ?? []).slice(-maxReportedUpdates),
  };
}

/** One line, printable, at most `max` characters. */
export function printableText(value: string, max: number): string {
  return value
    .replace(new RegExp(`(?:${unprintable.source}|\\s)+`, 'gu'), ' ')
    .trim()
    .slice(0, max);
}
