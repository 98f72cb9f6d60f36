/**
 * Updates for air-gapped hosts: .msu files shipped in the payload (copied, SHA-256 checked,
 * to C:\k\winfleet\payload\ like every payload file) and installed without Windows Update's
 * servers — `wusa.exe <msu> /extract:<dir>`, then `dism.exe /online /add-package` for each
 * update .cab inside.
 *
 * What an .msu holds (Microsoft KB 934307, "Description of the Windows Update Standalone
 * Installer"): Windows Update metadata (WSUSSCAN.cab), one .cab per update, an .xml and a
 * properties file. DISM's exit code is the HRESULT of the failure, or 3010
 * (ERROR_SUCCESS_REBOOT_REQUIRED) when the package is staged for the next boot; /norestart
 * keeps DISM from restarting the host itself (the rollout engine decides when).
 *
 * Conventions (winfleet's, not Windows'): an .msu names its KB in its file name as the
 * Microsoft Update Catalog does ("windows10.0-kb5040437-x64_<sha1>.msu"); the payload's
 * author put it there to be installed, so it is reported in the "Security Updates" category
 * (what the Security policy installs) and as needing a reboot. Whether it is installed comes
 * from Get-HotFix (Win32_QuickFixEngineering). The same KB offered by Windows Update is
 * reported once, with WUA's description, and still installed from the payload's file.
 *
 * The routing (searchWithPayload, installWithPayload) is shared by WindowsHostOS and the
 * simulated hosts, which give their own primitives. Not handled: checkpoint cumulative
 * updates (Windows Server 2025) that need several .msu files in order, and .msu files that
 * carry a servicing stack update DISM must install first (the .cab files are installed in
 * name order, SSU first when its name says so).
 */
import type { ReportedUpdate } from '../../api/windows-updates.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { parsePowerShellJson, powerShellScript, writeJson } from '../../powershell/powershell.ts';
import type { UpdateInstallResult } from '../host-os.ts';
import { describeHresult, updateNotFoundText } from './windows-update.ts';

/** An .msu file of the payload directory, by its KB. */
export interface PayloadMsu {
  kb: string;
  /** Its file name in the payload directory. */
  name: string;
}

const msuName = /^[A-Za-z0-9_.-]+\.msu$/i;
const kbInName = /(?:^|[-_.])kb([0-9]{6,8})(?=[-_.])/i;

/** The .msu files among a directory's names, one per KB (the first by name when two share one). */
export function payloadMsuFiles(names: readonly string[]): PayloadMsu[] {
  const byKb = new Map<string, PayloadMsu>();
  for (const name of [...names].sort()) {
    if (!msuName.test(name)) continue;
    const match = kbInName.exec(name);
    if (!match) continue;
    const kb = `KB${match[1]}`;
    if (!byKb.has(kb)) byKb.set(kb, { kb, name });
  }
  return [...byKb.values()];
}

/** How an .msu of the payload is reported. */
export function payloadUpdate(msu: PayloadMsu): ReportedUpdate {
  return {
    kb: msu.kb,
    title: `${msu.name} (from the payload)`,
    categories: ['Security Updates'],
    rebootRequired: true,
  };
}

/** Prints the HotFixIDs Get-HotFix lists, as a JSON list. */
export function installedHotfixesScript(): string {
  return powerShellScript(
    '$ids = @(Get-HotFix | ForEach-Object { [string]$_.HotFixID })',
    writeJson('@($ids)', 2),
  );
}

/** The KBs of what installedHotfixesScript printed (other entries, e.g. "Q123", are ignored). */
export function parseInstalledHotfixes(stdout: string): string[] {
  const value = parsePowerShellJson(stdout, 'the installed hotfixes');
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      'Cannot read the installed hotfixes: expected a list of strings',
    );
  }
  return value.map((v) => v.trim().toUpperCase()).filter((v) => /^KB[0-9]{6,8}$/.test(v));
}

/** wusa.exe's arguments to unpack `msu` into `dir`. */
export function wusaExtractArgs(msu: string, dir: string): string[] {
  return [msu, `/extract:${dir}`];
}

/** dism.exe's arguments to add one package to the running system, without restarting. */
export function dismAddPackageArgs(cab: string): string[] {
  return ['/online', '/add-package', `/packagepath:${cab}`, '/quiet', '/norestart'];
}

/** The update .cab files of an unpacked .msu, in install order (not WSUSSCAN.cab). */
export function packageCabs(names: readonly string[]): string[] {
  const cabs = names.filter((n) => /\.cab$/i.test(n) && n.toLowerCase() !== 'wsusscan.cab');
  const ssu = (n: string) => (/(^|[-_])ssu[-_]/i.test(n) ? 0 : 1);
  return cabs.sort((a, b) => ssu(a) - ssu(b) || a.localeCompare(b));
}

/** An exit code as an HRESULT string: -2146498530 → "0x800F081E". */
export function exitCodeHresult(code: number): string {
  return `0x${(code >>> 0).toString(16).toUpperCase().padStart(8, '0')}`;
}

export const dismErrors: Readonly<Record<string, string>> = {
  '0x800F081E':
    'CBS_E_NOT_APPLICABLE: the package is not applicable to this Windows build; ship the .msu for this host’s release',
  '0x800F0922':
    'CBS_E_INSTALLERS_FAILED: an installer in the package failed; see C:\\Windows\\Logs\\CBS\\CBS.log',
  '0x80070005': 'E_ACCESSDENIED: run the agent as LocalSystem or an administrator',
};

/** What a dism.exe /add-package exit code means: done, done after a reboot, or the error. */
export function dismOutcome(
  exitCode: number,
): { ok: true; rebootRequired: boolean } | { ok: false; error: string } {
  if (exitCode === 0) return { ok: true, rebootRequired: false };
  if (exitCode === 3010) return { ok: true, rebootRequired: true };
  const hr = exitCodeHresult(exitCode);
  const known = dismErrors[hr];
  return { ok: false, error: known ? `${hr} (${known})` : describeHresult(hr) };
}

/** The error of an .msu whose unpacked contents hold no update. */
export function msuWithoutCabText(name: string): string {
  return `${name} holds no update .cab file; ship the .msu from the Microsoft Update Catalog`;
}

/** The error of a failed dism.exe /add-package. */
export function dismFailedText(args: readonly string[], error: string): string {
  return `dism.exe ${args.join(' ')} failed with ${error}`;
}

/** What a host gives the shared routing. */
export interface PayloadUpdatePrimitives {
  /** File names in the payload directory (empty when it does not exist). */
  listPayload(): Promise<string[]>;
  /** Windows Update's search (throws when it fails: no server on an air-gapped host). */
  searchOnline(): Promise<ReportedUpdate[]>;
  /** KBs Get-HotFix lists. */
  installedKbs(): Promise<string[]>;
  /** Installs through Windows Update. */
  installOnline(kbs: string[]): Promise<UpdateInstallResult>;
  /** Unpacks and adds one payload .msu; throws with the HRESULT named when it fails. */
  installMsu(msu: PayloadMsu): Promise<{ rebootRequired: boolean }>;
}

/**
 * Windows Update's updates and the payload's .msu files not installed yet. With .msu files in
 * the payload a failed Windows Update search is not an error: the host is taken to be
 * air-gapped and its updates are the payload's.
 */
export async function searchWithPayload(p: PayloadUpdatePrimitives): Promise<ReportedUpdate[]> {
  const msus = payloadMsuFiles(await p.listPayload());
  if (msus.length === 0) return p.searchOnline();
  const online = await p.searchOnline().catch(() => [] as ReportedUpdate[]);
  const installed = new Set(await p.installedKbs());
  const offered = new Set(online.map((u) => u.kb));
  return [
    ...online,
    ...msus.filter((m) => !installed.has(m.kb) && !offered.has(m.kb)).map(payloadUpdate),
  ];
}

/** Installs each KB from the payload's .msu when there is one, the others through WUA. */
export async function installWithPayload(
  p: PayloadUpdatePrimitives,
  kbs: string[],
): Promise<UpdateInstallResult> {
  if (kbs.length === 0) return { installed: [], failed: [], rebootRequired: false };
  const msus = new Map(payloadMsuFiles(await p.listPayload()).map((m) => [m.kb, m]));
  const online = kbs.filter((kb) => !msus.has(kb));
  const offline = kbs.filter((kb) => msus.has(kb));
  const result: UpdateInstallResult =
    online.length > 0
      ? await p.installOnline(online)
      : { installed: [], failed: [], rebootRequired: false };
  if (offline.length === 0) return result;
  const installed = new Set(await p.installedKbs());
  for (const kb of offline) {
    if (installed.has(kb)) {
      result.failed.push({ kb, error: updateNotFoundText });
      continue;
    }
    try {
      const done = await p.installMsu(msus.get(kb)!);
      result.installed.push(kb);
      if (done.rebootRequired) result.rebootRequired = true;
    } catch (error) {
      result.failed.push({ kb, error: (error as Error).message });
    }
  }
  return result;
}
