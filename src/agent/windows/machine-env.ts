/**
 * Machine-level environment variables (HKLM\SYSTEM\CurrentControlSet\Control\Session
 * Manager\Environment) through `[Environment]::Get/SetEnvironmentVariable(name, value,
 * 'Machine')`, which also broadcasts the change to running programs; services see it only
 * after they restart.
 *
 * Known behaviour of that API on Windows PowerShell 5.1 (.NET Framework), which only a real
 * host can confirm: reading expands REG_EXPAND_SZ values (%SystemRoot% comes back resolved) and
 * writing stores REG_SZ, so rewriting PATH through it freezes the expanded form; an empty value
 * deletes the variable, which is why `setMachineEnvScript(name, '')` removes it explicitly.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import {
  parsePowerShellJson,
  powerShellScript,
  quotePowerShellString,
  writeJson,
} from '../../powershell/powershell.ts';

/** Windows' limit for an environment variable value, in characters. */
const maxValueLength = 32767;

/** Throws unless `name` can name an environment variable. */
export function checkEnvName(name: string): void {
  if (name === '' || /[=\0]/.test(name) || name.length > 255) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use "${name}" as an environment variable name; use 1 to 255 characters without "="`,
    );
  }
}

/** The script that prints {"value": "..."} or {"value": null} when the variable is unset. */
export function getMachineEnvScript(name: string): string {
  checkEnvName(name);
  return powerShellScript(
    `$value = [Environment]::GetEnvironmentVariable(${quotePowerShellString(name)}, 'Machine')`,
    writeJson('@{ value = $value }', 2),
  );
}

/** The script that sets the variable, or removes it when `value` is undefined or empty. */
export function setMachineEnvScript(name: string, value: string | undefined): string {
  checkEnvName(name);
  if (value !== undefined && (value.includes('\0') || value.length > maxValueLength)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot set environment variable "${name}": its value must be at most ${maxValueLength} characters without NUL`,
    );
  }
  const literal = value === undefined || value === '' ? '$null' : quotePowerShellString(value);
  return powerShellScript(
    `[Environment]::SetEnvironmentVariable(${quotePowerShellString(name)}, ${literal}, 'Machine')`,
  );
}

/** Reads what `getMachineEnvScript` printed. */
export function parseMachineEnvOutput(stdout: string, name: string): string | undefined {
  const parsed = parsePowerShellJson(stdout, `environment variable "${name}"`);
  const value = (parsed as { value?: unknown } | null)?.value;
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read environment variable "${name}" from ${JSON.stringify(parsed)}: expected {"value": string|null}`,
    );
  }
  return value;
}
