/**
 * What PowerShell module logging would record of a catalog script on a simulated host: event
 * 4103 in Microsoft-Windows-PowerShell/Operational, one per command invocation, with
 * "CommandInvocation(<cmdlet>)" and a "ParameterBinding(<cmdlet>): name=…; value=…" line per
 * bound parameter, values as text (about_Logging_Windows, Microsoft.PowerShell.Core 5.1: module
 * logging "records pipeline execution details as PowerShell executes, including variable
 * initialization and command invocations"; the Turn on Module Logging policy, commonly set to
 * `*` by CIS/STIG baselines). .NET method calls ([Console]::In.ReadLine(),
 * SecureString.AppendChar) are not commands and are not recorded; script block logging (4104)
 * records the script's text, which is what the command line carries anyway.
 *
 * The simulation does not run PowerShell, so it reads the script's statements and follows what
 * came from standard input (the credentials):
 * - a variable is tainted when it is assigned from `[Console]::In` or a tainted variable, except
 *   by a constructor of a SecureString or a PSCredential (whose text in the log is its type
 *   name; ConvertTo-SecureString's output too), and a `foreach` variable over a tainted one is;
 * - each command invocation (a Verb-Noun name outside quotes) is recorded; when its statement
 *   reads stdin or a tainted variable (as an argument or as pipeline input), the binding is
 *   recorded with the whole of stdin as its value. That over-approximates (a binding of one
 *   field shows all of stdin), so the simulation never shows fewer leaks than Windows would.
 */

/** One 4103 event's text, as Event Viewer shows its payload. */
export interface ModuleLogEvent {
  eventId: 4103;
  command: string;
  payload: string;
}

/** An object whose log text is its type name, even when built from stdin. */
const objectConstructor =
  /^(?:\[(?:System\.Security\.)?SecureString\]::new\(|\[(?:System\.Management\.Automation\.)?PSCredential\]::new\(|ConvertTo-SecureString\b|New-Object\b[^|]*PSCredential)/i;
/** A command name at a command position (a Verb-Noun cmdlet or function). */
const commandName = /(?<![\w$.:[-])([A-Z][A-Za-z]+-[A-Z][A-Za-z]+)\b/g;

/** The script's text without single- and double-quoted strings (their words are no commands). */
function unquoted(statement: string): string {
  return statement.replace(/'(?:[^']|'')*'|"(?:[^"`]|`.)*"/g, "''");
}

/** The 4103 events `script` would log when run with `stdin` on its standard input. */
export function moduleLogEvents(script: string, stdin: string): ModuleLogEvent[] {
  const tainted = new Set<string>();
  const events: ModuleLogEvent[] = [];
  for (const line of script.split(/\r?\n/)) {
    const text = unquoted(line);
    const readsSecret = (part: string) =>
      /\[Console\]::In\b/i.test(part) ||
      [...part.matchAll(/\$(\w+)/g)].some((m) => tainted.has(m[1]!.toLowerCase()));
    const loop = /^\s*foreach\s*\(\s*\$(\w+)\s+in\s+([^)]*)\)/i.exec(text);
    if (loop && readsSecret(loop[2]!)) tainted.add(loop[1]!.toLowerCase());
    const assignment = /^\s*\$(\w+)\s*=\s*(.*)$/.exec(text);
    if (assignment) {
      const [, name, value] = assignment as unknown as [string, string, string];
      if (readsSecret(value) && !objectConstructor.test(value.trim())) {
        tainted.add(name.toLowerCase());
      } else {
        tainted.delete(name.toLowerCase());
      }
    }
    // Each pipeline element: a command there binds its arguments and the previous element.
    const elements = text.split('|');
    elements.forEach((element, i) => {
      for (const match of element.matchAll(commandName)) {
        const command = match[1]!;
        const args = element.slice(match.index! + command.length);
        const input = i > 0 ? elements[i - 1]! : '';
        const leaks = readsSecret(args) || readsSecret(input);
        const bindings = leaks
          ? `ParameterBinding(${command}): name="${readsSecret(input) ? 'InputObject' : 'String'}"; value="${stdin}"`
          : `ParameterBinding(${command}): value="${args.trim()}"`;
        events.push({
          eventId: 4103,
          command,
          payload: `CommandInvocation(${command}): "${command}"\n${bindings}`,
        });
      }
    });
  }
  return events;
}
