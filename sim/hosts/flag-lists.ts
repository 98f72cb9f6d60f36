/**
 * The flags the pinned kubelet, kube-proxy and windows_exporter accept (and the exporter's
 * collectors), generated from their Go modules by hack/build-flag-lists.sh, and command-line
 * parsers with the rules and error texts of the libraries those programs use: spf13/pflag
 * (kubelet, kube-proxy) and alecthomas/kingpin (windows_exporter). A simulated program checks
 * its command line with these before anything else, so a flag the real program refuses stops
 * the simulated one too, with the real message.
 *
 * The lists come from WINFLEET_FLAG_LISTS (the path `make test` and `make lab` pass), or else
 * from running hack/build-flag-lists.sh (cached; its progress on standard error). There is no
 * fallback: without the lists the simulated programs cannot start.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseGoBool } from './go-values.ts';

/** One flag as pflag knows it (hack/payload/k8s/flaglist). */
export interface PflagFlag {
  name: string;
  shorthand?: string;
  /** The value when given without "=value" (bool flags: "true"); absent: a value is needed. */
  noOptDefVal?: string;
  deprecated?: string;
  shorthandDeprecated?: string;
  hidden?: boolean;
  type: string;
}

export interface PflagList {
  program: string;
  version: string;
  syntax: 'pflag';
  normalizesWordSeparators: boolean;
  flags: PflagFlag[];
}

/** One flag as kingpin knows it (hack/payload/windows-exporter/cmd/exporter-flags). */
export interface KingpinFlag {
  name: string;
  short?: string;
  boolean: boolean;
  hidden?: boolean;
  source: string;
}

export interface KingpinList {
  program: string;
  version: string;
  syntax: 'kingpin';
  flags: KingpinFlag[];
  collectors: string[];
  defaultCollectors: string;
}

export interface FlagLists {
  kubelet: PflagList;
  'kube-proxy': PflagList;
  windows_exporter: KingpinList;
}

export const flagListsEnv = 'WINFLEET_FLAG_LISTS';

const repoRoot = join(import.meta.dirname, '..', '..');
let loaded: FlagLists | undefined;

function parseLists(text: string, path: string): FlagLists {
  const lists = JSON.parse(text) as FlagLists;
  for (const name of ['kubelet', 'kube-proxy', 'windows_exporter'] as const) {
    if (!Array.isArray(lists[name]?.flags) || lists[name].flags.length === 0)
      throw new Error(
        `${path} has no flag list for ${name}; regenerate it: bash hack/build-flag-lists.sh`,
      );
  }
  if (!Array.isArray(lists.windows_exporter.collectors))
    throw new Error(
      `${path} has no windows_exporter collectors; regenerate it: bash hack/build-flag-lists.sh`,
    );
  return lists;
}

/** The flag lists; loaded (or generated) on first use. */
export function flagLists(): FlagLists {
  if (loaded) return loaded;
  let path = process.env[flagListsEnv];
  if (!path) {
    try {
      path = execFileSync('bash', [join(repoRoot, 'hack', 'build-flag-lists.sh')], {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'inherit'],
        encoding: 'utf8',
        timeout: 1_800_000,
      })
        .trim()
        .split('\n')
        .pop();
    } catch (error) {
      throw new Error(
        `The simulated hosts need the flag lists of the pinned kubelet, kube-proxy and windows_exporter, and hack/build-flag-lists.sh could not make them (${(error as Error).message.split('\n')[0]}); run it to see why, or run the tests with make test`,
      );
    }
    if (!path) throw new Error('hack/build-flag-lists.sh printed no path; run it to see why');
    process.env[flagListsEnv] = path;
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(
      `Cannot read the flag lists ${path} (${flagListsEnv}): ${(error as Error).message}; regenerate them with bash hack/build-flag-lists.sh`,
    );
  }
  loaded = parseLists(text, path);
  return loaded;
}

/** A command line a program refuses: `message` is the library's error text. */
export class FlagError extends Error {
  override name = 'FlagError';
}

export interface ParsedFlags {
  /** The value of each flag given, by canonical name (the last one given wins). */
  values: Map<string, string>;
  /** Every value given for each flag, in order (repeatable flags). */
  all: Map<string, string[]>;
  /** Arguments that are not flags, in order (after "--" too). */
  positional: string[];
  /** What the library prints for deprecated flags given. */
  warnings: string[];
}

/**
 * Parses `argv` as spf13/pflag (v1.0.9, flag.go parseArgs) does for `list`: `--name=value`,
 * `--name value` (unless the flag has a NoOptDefVal, like bools), `-abc` shorthand groups with
 * `-x=value` and `-xvalue`, `--` ending the flags, and "_" read as "-" when the program
 * normalizes word separators. Throws FlagError with pflag's message: "unknown flag: --x",
 * "unknown shorthand flag: 'x' in -xyz", "flag needs an argument: --x", "bad flag syntax: ---x",
 * or strconv.ParseBool's for a bad boolean.
 */
export function parsePflag(list: PflagList, argv: readonly string[]): ParsedFlags {
  const byName = new Map(list.flags.map((f) => [f.name, f]));
  const byShort = new Map(list.flags.filter((f) => f.shorthand).map((f) => [f.shorthand!, f]));
  const normalize = (name: string) =>
    list.normalizesWordSeparators ? name.replaceAll('_', '-') : name;
  const result: ParsedFlags = { values: new Map(), all: new Map(), positional: [], warnings: [] };
  const set = (flag: PflagFlag, value: string, shown: string) => {
    if (flag.type === 'bool' && parseGoBool(value) === undefined)
      throw new FlagError(
        `invalid argument "${value}" for "${shown}" flag: strconv.ParseBool: parsing "${value}": invalid syntax`,
      );
    if (flag.deprecated)
      result.warnings.push(`Flag --${flag.name} has been deprecated, ${flag.deprecated}`);
    result.values.set(flag.name, value);
    result.all.set(flag.name, [...(result.all.get(flag.name) ?? []), value]);
  };
  const shownName = (flag: PflagFlag) =>
    flag.shorthand ? `-${flag.shorthand}, --${flag.name}` : `--${flag.name}`;
  const args = [...argv];
  while (args.length > 0) {
    const s = args.shift()!;
    if (s.length === 0 || s[0] !== '-' || s.length === 1) {
      result.positional.push(s);
      continue;
    }
    if (s[1] === '-') {
      if (s.length === 2) {
        result.positional.push(...args);
        break;
      }
      const body = s.slice(2);
      if (body[0] === '-' || body[0] === '=') throw new FlagError(`bad flag syntax: ${s}`);
      const eq = body.indexOf('=');
      const name = eq >= 0 ? body.slice(0, eq) : body;
      const flag = byName.get(normalize(name));
      if (!flag) throw new FlagError(`unknown flag: --${name}`);
      let value: string;
      if (eq >= 0) value = body.slice(eq + 1);
      else if (flag.noOptDefVal !== undefined && flag.noOptDefVal !== '') value = flag.noOptDefVal;
      else if (args.length > 0) value = args.shift()!;
      else throw new FlagError(`flag needs an argument: --${name}`);
      set(flag, value, shownName(flag));
      continue;
    }
    // A group of shorthands: -abc, -v=2, -v2, -v 2.
    let shorthands = s.slice(1);
    while (shorthands.length > 0) {
      const c = shorthands[0]!;
      const flag = byShort.get(c);
      if (!flag) throw new FlagError(`unknown shorthand flag: '${c}' in -${shorthands}`);
      let value: string;
      let rest = shorthands.slice(1);
      if (shorthands.length > 2 && shorthands[1] === '=') {
        value = shorthands.slice(2);
        rest = '';
      } else if (flag.noOptDefVal !== undefined && flag.noOptDefVal !== '') {
        value = flag.noOptDefVal;
      } else if (shorthands.length > 1) {
        value = shorthands.slice(1);
        rest = '';
      } else if (args.length > 0) {
        value = args.shift()!;
      } else {
        throw new FlagError(`flag needs an argument: '${c}' in -${shorthands}`);
      }
      if (flag.shorthandDeprecated)
        result.warnings.push(
          `Flag shorthand -${c} has been deprecated, ${flag.shorthandDeprecated}`,
        );
      set(flag, value, shownName(flag));
      shorthands = rest;
    }
  }
  return result;
}

/**
 * Parses `argv` as alecthomas/kingpin v2.4.0 (parser.go, flags.go) does for `list`, for an
 * application without positional arguments: `--name=value`, `--name value`, boolean `--name`
 * and `--no-name`, short flags (`-h`), `--` ending the flags. Throws FlagError with kingpin's
 * message: "unknown long flag '--x'", "unknown short flag '-x'", "expected argument for flag
 * '--x'", or "unexpected x" for an argument left over (a boolean given "=value" leaves one).
 */
export function parseKingpin(list: KingpinList, argv: readonly string[]): ParsedFlags {
  const byName = new Map(list.flags.map((f) => [f.name, f]));
  const byShort = new Map(list.flags.filter((f) => f.short).map((f) => [f.short!, f]));
  const result: ParsedFlags = { values: new Map(), all: new Map(), positional: [], warnings: [] };
  const set = (flag: KingpinFlag, value: string) => {
    result.values.set(flag.name, value);
    result.all.set(flag.name, [...(result.all.get(flag.name) ?? []), value]);
  };
  const args = [...argv];
  let argsOnly = false;
  while (args.length > 0) {
    const arg = args.shift()!;
    if (argsOnly) throw new FlagError(`unexpected ${arg}`);
    if (arg === '--') {
      argsOnly = true;
      continue;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
      let flag = byName.get(name);
      let invert = false;
      if (!flag && name.startsWith('no-')) {
        flag = byName.get(name.slice(3));
        invert = true;
      }
      if (!flag || (invert && !flag.boolean)) throw new FlagError(`unknown long flag '--${name}'`);
      if (flag.boolean) {
        set(flag, invert ? 'false' : 'true');
        // The "=value" stays behind as an argument, which this application does not take.
        if (eq >= 0) throw new FlagError(`unexpected ${arg.slice(eq + 1)}`);
        continue;
      }
      if (eq >= 0) set(flag, arg.slice(eq + 1));
      else if (args.length > 0 && !(args[0]!.startsWith('-') && args[0]!.length > 1))
        set(flag, args.shift()!);
      else throw new FlagError(`expected argument for flag '--${name}'`);
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      const c = arg[1]!;
      const flag = byShort.get(c);
      if (!flag) throw new FlagError(`unknown short flag '-${c}'`);
      if (flag.boolean) {
        set(flag, 'true');
        if (arg.length > 2) args.unshift(`-${arg.slice(2)}`);
        continue;
      }
      if (arg.length > 2) set(flag, arg.slice(2));
      else if (args.length > 0) set(flag, args.shift()!);
      else throw new FlagError(`expected argument for flag '-${c}'`);
      continue;
    }
    throw new FlagError(`unexpected ${arg}`);
  }
  return result;
}
