/**
 * A service's own environment: the `Environment` value (REG_MULTI_SZ, one "NAME=value" entry
 * per variable) of its key HKLM\SYSTEM\CurrentControlSet\Services\<name>. The Service Control
 * Manager adds these entries to the environment it gives the service's process when the service
 * starts, on top of the machine environment it read at boot; so a variable a service needs
 * reaches it at its next start, while a machine-level one reaches it only after a reboot
 * (KB 821761). sc.exe cannot set the value, so the scripts write it through the registry
 * provider: `Set-ItemProperty -Type MultiString`, and `Remove-ItemProperty` when the service has
 * no variables left.
 *
 * What only a real host proves: that the SCM merges the value as described (the sim's model,
 * sim/hosts/machine-environment.ts) and that PowerShell 5.1 prints the entries as a JSON array.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import {
  parsePowerShellJson,
  powerShellScript,
  quotePowerShellArray,
  quotePowerShellString,
  writeJson,
} from '../../powershell/powershell.ts';
import { environmentProblems } from '../../servicesmanifest/services-manifest.ts';
import { checkServiceName } from './sc-commands.ts';

/** The registry key of a service, as the registry provider names it. */
export function serviceRegistryKey(name: string): string {
  checkServiceName(name);
  return `HKLM:\\SYSTEM\\CurrentControlSet\\Services\\${name}`;
}

/**
 * The REG_MULTI_SZ entries for `environment`, sorted by name. Throws a WinfleetError, naming each
 * variable and the fix, for what a services manifest may not hold either (environmentProblems):
 * a name Windows cannot hold or that decides which programs load, an empty value (an empty
 * entry would end the list), a NUL, a value over 32767 characters, or two names that differ
 * only in case (one variable on Windows).
 */
export function serviceEnvironmentEntries(
  service: string,
  environment: Readonly<Record<string, string>> | undefined,
): string[] {
  const problems = environmentProblems(`service "${service}" env`, environment ?? {});
  if (problems.length > 0) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot give service "${service}" this environment: ${problems.join('; ')}`,
    );
  }
  return Object.entries(environment ?? {})
    .sort(([a], [b]) => a.toLowerCase().localeCompare(b.toLowerCase()))
    .map(([name, value]) => `${name}=${value}`);
}

/** The script that prints {"exists": bool, "entries": ["NAME=value", ...]}. */
export function getServiceEnvironmentScript(name: string): string {
  const key = quotePowerShellString(serviceRegistryKey(name));
  return powerShellScript(
    `$key = ${key}`,
    '$entries = @()',
    '$exists = Test-Path -LiteralPath $key',
    'if ($exists) {',
    "  $value = (Get-ItemProperty -LiteralPath $key -Name 'Environment' -ErrorAction SilentlyContinue).Environment",
    '  if ($null -ne $value) { $entries = @($value) }',
    '}',
    writeJson('@{ exists = $exists; entries = $entries }', 2),
  );
}

/**
 * The script that makes the service's `Environment` value hold exactly `entries` (from
 * serviceEnvironmentEntries): written as REG_MULTI_SZ, or removed when there are none. The
 * service must exist.
 */
export function setServiceEnvironmentScript(name: string, entries: readonly string[]): string {
  const key = quotePowerShellString(serviceRegistryKey(name));
  if (entries.length === 0) {
    return powerShellScript(
      `Remove-ItemProperty -LiteralPath ${key} -Name 'Environment' -ErrorAction SilentlyContinue`,
    );
  }
  return powerShellScript(
    `Set-ItemProperty -LiteralPath ${key} -Name 'Environment' -Type MultiString -Value ([string[]] ${quotePowerShellArray(entries)})`,
  );
}

/**
 * Reads what `getServiceEnvironmentScript` printed: NAME → value, or undefined when the
 * service does not exist. An entry without "=" (written by hand) reads as a variable with an
 * empty value, so it never equals what winfleet wants and gets rewritten.
 * @package
 */
export function parseServiceEnvironmentOutput(
  stdout: string,
  name: string,
): Record<string, string> | undefined {
  const parsed = parsePowerShellJson(stdout, `the environment of service "${name}"`) as {
    exists?: unknown;
    entries?: unknown;
  } | null;
  const entries = parsed?.entries;
  if (
    typeof parsed?.exists !== 'boolean' ||
    !Array.isArray(entries) ||
    !entries.every((e) => typeof e === 'string')
  ) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the environment of service "${name}" from ${JSON.stringify(parsed)}: expected {"exists": boolean, "entries": [string]}`,
    );
  }
  if (!parsed.exists) return undefined;
  const environment: Record<string, string> = {};
  for (const entry of entries as string[]) {
    const at = entry.indexOf('=', 1);
    if (at < 0) environment[entry] = '';
    else environment[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return environment;
}
