/**
 * The Windows version from the registry (HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion):
 * CurrentMajorVersionNumber and CurrentMinorVersionNumber (DWORDs), CurrentBuildNumber (a
 * string), UBR (the patch level, a DWORD) and ProductName. The registry, not
 * [Environment]::OSVersion, because only it carries the UBR that tells patch levels apart.
 *
 * The fixtures are what this script prints on Windows Server 2019, 2022 and 2025 (values as
 * documented for those builds); that the property names and types are exactly these on every
 * patch level is what only real hosts prove.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import { parsePowerShellJson, powerShellScript, writeJson } from '../../powershell/powershell.ts';
import type { OsVersion } from '../host-os.ts';

/** The script that prints the five registry values as one JSON object. */
export function osVersionScript(): string {
  return powerShellScript(
    "$key = Get-ItemProperty -LiteralPath 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'",
    "$version = $key | Select-Object -Property 'CurrentMajorVersionNumber', 'CurrentMinorVersionNumber', 'CurrentBuildNumber', 'UBR', 'ProductName'",
    writeJson('$version', 2),
  );
}

/** Reads what `osVersionScript` printed. */
export function parseOsVersionOutput(stdout: string): OsVersion {
  const value = parsePowerShellJson(stdout, 'the Windows version');
  if (typeof value !== 'object' || value === null) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the Windows version from ${JSON.stringify(value)}`,
    );
  }
  const key = value as Record<string, unknown>;
  const number = (name: string): number => {
    const raw = key[name];
    const parsed = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
    if (typeof parsed !== 'number' || !Number.isInteger(parsed) || parsed < 0) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read the Windows version: ${name} is ${JSON.stringify(raw)}, expected a number; winfleet needs Windows Server 2019 or later`,
      );
    }
    return parsed;
  };
  return {
    major: number('CurrentMajorVersionNumber'),
    minor: number('CurrentMinorVersionNumber'),
    build: number('CurrentBuildNumber'),
    ubr: number('UBR'),
    productName: typeof key.ProductName === 'string' ? key.ProductName : '',
  };
}
