/**
 * PowerShell as winfleet generates it, for the operator (over SSH) and the agent (locally).
 *
 * Every generated script goes through here:
 * - values enter a script only as single-quoted literals (`quotePowerShellString`), never by
 *   interpolation;
 * - each script starts with the same prelude: errors stop it (`$ErrorActionPreference =
 *   'Stop'`), progress records are off (`$ProgressPreference = 'SilentlyContinue'`: over SSH they
 *   arrive as CLIXML and broke Install-WindowsFeature in WMCO), and `ConvertTo-WinfleetJson`
 *   prints results as one line of ASCII-only JSON, so output survives any console code page;
 * - a script travels as `-EncodedCommand` (base64 of UTF-16LE), whose alphabet has nothing that
 *   cmd.exe (the default shell of Windows OpenSSH) or CreateProcess quoting could alter.
 *
 * The simulated hosts decode the same command lines back into scripts
 * (`decodePowerShellCommandLine`). Tests parse every generated script with a PowerShell grammar
 * (sim/testkit/powershell-grammar.ts). Only a real Windows host proves that powershell.exe 5.1
 * runs them as intended: the JSON escaping, the CLIXML shape of stderr and the length limits are
 * written from the documented behaviour, not observed here.
 */
import { WinfleetError } from '../errors/catalog.ts';

/** The Windows PowerShell 5.1 executable, present on every supported Windows Server. */
export const powerShellExecutable = 'powershell.exe';

/**
 * The flags every invocation carries, before `-EncodedCommand`. `-InputFormat None`: the script
 * travels in the command line, never on stdin, and with a redirected stdin (an SSH exec
 * channel, a pipe) powershell.exe otherwise reads it as pipeline input until end of file before
 * it exits (ConsoleHost's Executor.ExecuteCommandHelper with ReadInputObjects; DataFormat.None
 * reads nothing), so a session whose stdin stays open hangs until its timeout. `None` is not in
 * the documented values (Text, XML) but is an accepted value of the DataFormat enum.
 */
export const powerShellFlags: readonly string[] = [
  '-NoProfile',
  '-NonInteractive',
  '-InputFormat',
  'None',
  '-ExecutionPolicy',
  'Bypass',
];

/** cmd.exe refuses command lines longer than this (Windows OpenSSH runs commands through it). */
export const cmdExeMaxCommandLine = 8191;

/** CreateProcess refuses command lines longer than this. */
export const createProcessMaxCommandLine = 32767;

// PowerShell treats these as single quotes too, so each must be doubled like "'".
const singleQuoteLike = /['\u2018\u2019\u201a\u201b]/g;

/**
 * Quotes `value` as a PowerShell single-quoted string literal: nothing inside is expanded, and
 * every quote character (including the typographic ones PowerShell also accepts) is doubled.
 *
 * @example quotePowerShellString("it's") // "'it''s'"
 */
export function quotePowerShellString(value: string): string {
  if (value.includes('\0')) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot quote ${JSON.stringify(value)} for PowerShell: it contains a NUL character`,
    );
  }
  return `'${value.replace(singleQuoteLike, '$&$&')}'`;
}

/** Quotes a list of strings as a PowerShell array expression: `@('a', 'b')`. */
export function quotePowerShellArray(values: readonly string[]): string {
  return `@(${values.map(quotePowerShellString).join(', ')})`;
}

/**
 * The lines every generated script starts with. `ConvertTo-WinfleetJson` escapes every
 * non-ASCII character as `\uXXXX`, because Windows PowerShell writes redirected output in the
 * console's OEM code page and would otherwise mangle it.
 */
export const powerShellPrelude = [
  "$ErrorActionPreference = 'Stop'",
  "$ProgressPreference = 'SilentlyContinue'",
  'function ConvertTo-WinfleetJson {',
  '  param($InputObject, [int] $Depth = 4)',
  '  $json = ConvertTo-Json -InputObject $InputObject -Compress -Depth $Depth',
  "  [regex]::Replace($json, '[^\\x00-\\x7F]', { param($m) '\\u{0:x4}' -f [int][char]$m.Value })",
  '}',
].join('\n');

/** A complete script: the prelude, then `body` lines. */
export function powerShellScript(...body: string[]): string {
  return `${powerShellPrelude}\n${body.join('\n')}\n`;
}

/**
 * The statement that prints `expression` as one line of JSON. Pass arrays as `@(...)`: piping
 * would unroll a one-element array into a bare object.
 */
export function writeJson(expression: string, depth = 4): string {
  if (!Number.isInteger(depth) || depth < 1 || depth > 100) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use JSON depth "${depth}"; use an integer from 1 to 100`,
    );
  }
  return `ConvertTo-WinfleetJson -InputObject (${expression}) -Depth ${depth}`;
}

/** Base64 of the script's UTF-16LE bytes, the form `-EncodedCommand` takes. */
export function encodePowerShellCommand(script: string): string {
  return Buffer.from(script, 'utf16le').toString('base64');
}

/** The script inside an `-EncodedCommand` value; throws for anything that is not one. */
export function decodePowerShellCommand(encoded: string): string {
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot decode -EncodedCommand value "${excerpt(encoded)}": it is not base64`,
    );
  }
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length % 2 !== 0) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot decode -EncodedCommand value "${excerpt(encoded)}": ${bytes.length} bytes is not UTF-16LE`,
    );
  }
  return bytes.toString('utf16le');
}

/**
 * The arguments for running `script` with `execFile(powerShellExecutable, args)`.
 *
 * @example powerShellArgs(s) // ['-NoProfile', '-NonInteractive', '-InputFormat', 'None', '-ExecutionPolicy', 'Bypass', '-EncodedCommand', '...']
 */
export function powerShellArgs(script: string): string[] {
  const args = [...powerShellFlags, '-EncodedCommand', encodePowerShellCommand(script)];
  const length = [powerShellExecutable, ...args].join(' ').length;
  if (length > createProcessMaxCommandLine) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `PowerShell script is too long to run: its command line has ${length} characters, more than ${createProcessMaxCommandLine}; write it to a file and run it with -File`,
    );
  }
  return args;
}

/**
 * The one-line command that runs `script` through cmd.exe, as sent over SSH to a Windows
 * OpenSSH server.
 */
export function powerShellCommandLine(script: string): string {
  const line = [powerShellExecutable, ...powerShellArgs(script)].join(' ');
  if (line.length > cmdExeMaxCommandLine) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `PowerShell script is too long for cmd.exe: its command line has ${line.length} characters, more than ${cmdExeMaxCommandLine}; send the script over SFTP and run it with -File`,
    );
  }
  return line;
}

/**
 * The script inside a command line built by `powerShellCommandLine` (or any
 * `powershell[.exe] ... -EncodedCommand <base64>` line, with `-enc`/`-ec`/`-e` abbreviations);
 * undefined for any other command line. Simulated hosts use it to run what the operator sends.
 */
export function decodePowerShellCommandLine(line: string): string | undefined {
  const [program, ...args] = splitCommandLineWords(line);
  if (!program || !/(^|[\\/])powershell(\.exe)?$/i.test(program)) return undefined;
  return decodePowerShellArgs(args);
}

/** Like `decodePowerShellCommandLine`, for an argument vector (without the executable). */
export function decodePowerShellArgs(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (isEncodedCommandFlag(args[i]!)) {
      const value = args[i + 1];
      if (value === undefined) {
        throw new WinfleetError(
          'WF_WINDOWS_COMMAND_FAILED',
          'Cannot decode PowerShell command line: -EncodedCommand has no value',
        );
      }
      return decodePowerShellCommand(value);
    }
  }
  return undefined;
}

function isEncodedCommandFlag(arg: string): boolean {
  const flag = /^[-/](\w+)$/.exec(arg)?.[1]?.toLowerCase();
  if (!flag) return false;
  // powershell.exe resolves -e and -ec to -EncodedCommand although -e is also a prefix of
  // -ExecutionPolicy; longer prefixes must be of "encodedcommand".
  return flag === 'e' || flag === 'ec' || (flag.length >= 2 && 'encodedcommand'.startsWith(flag));
}

// Whitespace-separated words with double quotes grouping; enough for the lines above, whose
// words never contain quotes or backslashes.
function splitCommandLineWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|(\S+)/g)) {
    words.push(match[1] ?? match[2]!);
  }
  return words;
}

/**
 * Reads the JSON a generated script printed. Accepts a whole JSON document or, when something
 * else was printed first (a WARNING line from a module import), the last line.
 */
export function parsePowerShellJson(stdout: string, what: string): unknown {
  const text = stdout.replace(/^\uFEFF/, '').trim();
  if (text === '') {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: PowerShell printed nothing`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    const lastLine = text.split(/\r?\n/).at(-1)!.trim();
    try {
      return JSON.parse(lastLine);
    } catch {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what} from PowerShell output "${excerpt(text)}": expected JSON`,
      );
    }
  }
}

/**
 * The error text in PowerShell's stderr. Windows PowerShell sometimes writes its streams as
 * CLIXML (`#< CLIXML` then `<Objs>` with `<S S="Error">` lines and progress records); this keeps
 * the error lines, decoded, and drops the rest. Plain text comes back trimmed.
 */
export function powerShellErrorText(stderr: string): string {
  const marker = stderr.indexOf('#< CLIXML');
  if (marker < 0) return stderr.trim();
  const before = stderr.slice(0, marker);
  const rest = stderr.slice(marker + '#< CLIXML'.length);
  const objsAt = rest.indexOf('<Objs');
  const plain = `${before}${objsAt < 0 ? rest : rest.slice(0, objsAt)}`.trim();
  const errors = [...rest.matchAll(/<S S="Error">([\s\S]*?)<\/S>/g)].map((m) =>
    decodeClixmlString(m[1]!),
  );
  return [plain, errors.join('').trim()].filter((s) => s !== '').join('\n');
}

function decodeClixmlString(text: string): string {
  return text
    .replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    )
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\r\n/g, '\n');
}

function excerpt(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
