/**
 * Command lines as Go's standard `flag` package parses them (go1.26 src/flag/flag.go,
 * FlagSet.parseOne), for simulated programs built on it (flanneld): one or two dashes alike,
 * `-name=value`, `-name value` for flags that take a value, a boolean set by `-name` alone (or
 * `-name=false`), parsing ending at the first argument that is not a flag or after `--`. The
 * errors are Go's: "flag provided but not defined: -name", "flag needs an argument: -name",
 * `invalid boolean value "x" for -name: parse error`, `invalid value "x" for flag -name: parse
 * error`, "bad flag syntax: ---x".
 */
import { parseGoBool } from './go-values.ts';

/** What a flag holds: a boolean, a string, an integer, or a string given any number of times. */
export type GoFlagKind = 'bool' | 'string' | 'int' | 'strings';

export class GoFlagError extends Error {
  override name = 'GoFlagError';
}

export interface GoFlags {
  /** The last value given of each flag, by name. */
  values: Map<string, string>;
  /** Every value given, in order (flags of kind "strings"). */
  all: Map<string, string[]>;
  /** What follows the flags. */
  rest: string[];
}

/** Go's strconv.ParseInt(s, 0, 64) shape, which flag's intValue uses. */
const goInt = /^[+-]?(0[xX][0-9a-fA-F_]+|0[oO]?[0-7_]+|0[bB][01_]+|[1-9][0-9_]*|0)$/;

export function parseGoFlags(
  known: ReadonlyMap<string, GoFlagKind>,
  argv: readonly string[],
): GoFlags {
  const values = new Map<string, string>();
  const all = new Map<string, string[]>();
  const set = (name: string, kind: GoFlagKind, value: string) => {
    if (kind === 'bool' && parseGoBool(value) === undefined)
      throw new GoFlagError(
        `invalid boolean value ${JSON.stringify(value)} for -${name}: parse error`,
      );
    if (kind === 'int' && !goInt.test(value))
      throw new GoFlagError(
        `invalid value ${JSON.stringify(value)} for flag -${name}: parse error`,
      );
    values.set(name, value);
    all.set(name, [...(all.get(name) ?? []), value]);
  };
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.length < 2 || arg[0] !== '-') break;
    let dashes = 1;
    if (arg[1] === '-') {
      dashes = 2;
      if (arg.length === 2) {
        i++;
        break;
      }
    }
    const body = arg.slice(dashes);
    if (body.length === 0 || body[0] === '-' || body[0] === '=')
      throw new GoFlagError(`bad flag syntax: ${arg}`);
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const kind = known.get(name);
    if (!kind) throw new GoFlagError(`flag provided but not defined: -${name}`);
    if (eq >= 0) set(name, kind, body.slice(eq + 1));
    else if (kind === 'bool') set(name, kind, 'true');
    else {
      const value = argv[i + 1];
      if (value === undefined) throw new GoFlagError(`flag needs an argument: -${name}`);
      set(name, kind, value);
      i++;
    }
  }
  return { values, all, rest: argv.slice(i) };
}
