/**
 * Windows command lines for services. A service's binPath is one string that the SCM hands to
 * CreateProcess; the program (kubelet, containerd: Go, which follows the Microsoft C runtime
 * rules) splits it back into arguments. `serviceCommandLine` quotes for those rules and
 * `splitServiceCommandLine` is their inverse, so the agent can compare an installed binPath
 * with the one it wants and the simulated hosts can recover the arguments.
 *
 * The rules are Microsoft's ("Parsing C++ command-line arguments"); only a real Windows
 * service start proves a given program applies them the same way.
 */
import { WinfleetError } from '../../errors/catalog.ts';

const needsQuotes = /[ \t\n\v"]/;

/**
 * Quotes one argument so the C runtime reads it back unchanged: wrapped in double quotes when
 * it is empty or holds whitespace or a quote; backslashes doubled only before a quote.
 *
 * @example quoteWindowsArgument('C:\\k dir\\') // '"C:\\k dir\\\\"'
 * @package
 */
export function quoteWindowsArgument(arg: string): string {
  if (arg !== '' && !needsQuotes.test(arg)) return arg;
  let quoted = '"';
  let backslashes = 0;
  for (const ch of arg) {
    if (ch === '\\') {
      backslashes++;
      continue;
    }
    quoted += '\\'.repeat(ch === '"' ? backslashes * 2 + 1 : backslashes) + ch;
    backslashes = 0;
  }
  return `${quoted}${'\\'.repeat(backslashes * 2)}"`;
}

/**
 * The binPath for a service: the executable always quoted (an unquoted path with spaces is the
 * classic "unquoted service path" hole), then each argument quoted as needed.
 *
 * @example serviceCommandLine('C:\\k\\kubelet.exe', ['--v=2']) // '"C:\\k\\kubelet.exe" --v=2'
 */
export function serviceCommandLine(binaryPath: string, args: readonly string[]): string {
  if (binaryPath === '' || /["\0\r\n]/.test(binaryPath)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use "${binaryPath}" as a service executable; give a full Windows path without quotes or line breaks`,
    );
  }
  for (const arg of args) {
    if (arg.includes('\0')) {
      throw new WinfleetError(
        'WF_INVARIANT',
        `Cannot pass argument ${JSON.stringify(arg)} to a service: it contains a NUL character`,
      );
    }
  }
  return [`"${binaryPath}"`, ...args.map(quoteWindowsArgument)].join(' ');
}

/** A command line split back into the executable and its arguments. */
export interface SplitCommandLine {
  binaryPath: string;
  args: string[];
}

/**
 * Splits a command line as the C runtime does: the program name ends at the closing quote (or
 * the first blank, unquoted) with no escapes; then arguments with backslash and quote rules,
 * where `""` inside quotes is a literal quote.
 */
export function splitServiceCommandLine(line: string): SplitCommandLine {
  let i = 0;
  let binaryPath = '';
  if (line.startsWith('"')) {
    const end = line.indexOf('"', 1);
    binaryPath = end < 0 ? line.slice(1) : line.slice(1, end);
    i = end < 0 ? line.length : end + 1;
  } else {
    while (i < line.length && line[i] !== ' ' && line[i] !== '\t') binaryPath += line[i++];
  }

  const args: string[] = [];
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (i >= line.length) break;
    let arg = '';
    let inQuotes = false;
    while (i < line.length) {
      const ch = line[i]!;
      if (!inQuotes && (ch === ' ' || ch === '\t')) break;
      if (ch === '\\') {
        let backslashes = 0;
        while (line[i] === '\\') {
          backslashes++;
          i++;
        }
        if (line[i] === '"') {
          arg += '\\'.repeat(Math.floor(backslashes / 2));
          if (backslashes % 2 === 1) {
            arg += '"';
            i++;
          }
        } else {
          arg += '\\'.repeat(backslashes);
        }
        continue;
      }
      if (ch === '"') {
        if (inQuotes && line[i + 1] === '"') {
          arg += '"';
          i += 2;
          continue;
        }
        inQuotes = !inQuotes;
        i++;
        continue;
      }
      arg += ch;
      i++;
    }
    args.push(arg);
  }
  return { binaryPath, args };
}
