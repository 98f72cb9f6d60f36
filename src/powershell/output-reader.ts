/**
 * Strict readers for the JSON a generated script printed: every failure is a WinfleetError
 * "Cannot <what>: <detail>", naming the field. One reader per script (defender.ts,
 * gmsa-host-facts.ts), so each error says which script's output was wrong.
 */
import { WinfleetError } from '../errors/catalog.ts';
export interface OutputReader {
  /** Throws "Cannot <what>: <detail>". */
  fail(detail: string): never;
  /** `value` as an object with exactly `keys` (in any order), or a failure naming `field`. */
  exactKeys(value: unknown, field: string, keys: readonly string[]): Record<string, unknown>;
  /** `record[key]` as a boolean, or a failure naming `${prefix}${key}`. */
  bool(record: Record<string, unknown>, key: string, prefix: string): boolean;
}

export function outputReader(what: string): OutputReader {
  const fail = (detail: string): never => {
    throw new WinfleetError('WF_WINDOWS_COMMAND_FAILED', `Cannot ${what}: ${detail}`);
  };
  return {
    fail,
    exactKeys(value, field, keys) {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        fail(`${field} is not an object`);
      const record = value as Record<string, unknown>;
      const actual = Object.keys(record).sort();
      if (actual.join(',') !== [...keys].sort().join(','))
        fail(`${field} has the keys ${actual.join(', ') || 'none'}; expected ${keys.join(', ')}`);
      return record;
    },
    bool(record, key, prefix) {
      const value = record[key];
      if (typeof value !== 'boolean') fail(`${prefix}${key} is not a boolean`);
      return value as boolean;
    },
  };
}
