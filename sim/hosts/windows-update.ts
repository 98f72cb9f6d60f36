/**
 * A simulated host's Windows Update: a per-machine patch catalog (what Microsoft Update offers
 * this host), what is installed, the two registry keys that say servicing waits for a reboot,
 * and Session Manager's PendingFileRenameOperations (boot-time deletions, no pending reboot).
 * It answers what the Windows Update Agent answers the agent's scripts
 * (src/agent/windows/windows-update.ts) and with the same texts:
 * - search: the catalog entries not installed ("IsInstalled=0 and Type='Software' and
 *   IsHidden=0"; nothing here is hidden or a driver);
 * - install: each KB asked for is installed, fails with its `failsWith` HRESULT, or is
 *   "not found" (not offered or installed already); an update that needs a reboot creates
 *   Component Based Servicing\RebootPending (and WindowsUpdate\Auto Update\RebootRequired)
 *   and its new UBR takes effect only at the next boot, which clears the keys;
 * - from a remote session (SSH, WinRM) download and install fail whole with E_ACCESSDENIED,
 *   as PowerShell/Win32-OpenSSH #2083 and #2310 report (search still works there, as in those
 *   reports). The simulated SSH server runs no WUA script, so only the unit test reaches it.
 */

import type { OsVersion, UpdateInstallResult } from '../../src/agent/host-os.ts';
import {
  describeHresult,
  updateFailureText,
  updateNotFoundText,
} from '../../src/agent/windows/windows-update.ts';
import {
  dismAddPackageArgs,
  dismFailedText,
  dismOutcome,
  msuWithoutCabText,
} from '../../src/agent/windows/windows-update-msu.ts';
import type { ReportedUpdate } from '../../src/api/windows-updates.ts';

/** One update the catalog offers. */
export interface CatalogUpdate {
  /** "KB5040437". */
  kb: string;
  title: string;
  /** WUA category names: "Security Updates", "Critical Updates", "Updates", … */
  categories: string[];
  /** The update build revision the OS has once it is installed (and, if needed, rebooted). */
  ubr?: number;
  /** It needs a reboot to finish (InstallationBehavior.RebootBehavior ≠ 0). */
  rebootRequired: boolean;
  /** The HRESULT its install fails with, e.g. "0x80240022" (then it stays available). */
  failsWith?: string;
}

/** Where the install call comes from: the agent's service (local) or an SSH/WinRM session. */
export type WuaSession = 'local' | 'remote';

const kbPattern = /^KB[0-9]{6,8}$/;
const hresultPattern = /^0x[0-9A-F]{8}$/;

function checkUpdate(update: CatalogUpdate): CatalogUpdate {
  if (!kbPattern.test(update.kb)) {
    throw new RangeError(`catalog update kb: "${update.kb}" is not a KB number like "KB5040437"`);
  }
  if (update.ubr !== undefined && (!Number.isInteger(update.ubr) || update.ubr < 0)) {
    throw new RangeError(`catalog update ${update.kb} ubr: give a whole number from 0`);
  }
  if (update.failsWith !== undefined && !hresultPattern.test(update.failsWith)) {
    throw new RangeError(
      `catalog update ${update.kb} failsWith: "${update.failsWith}" is not an HRESULT like "0x80240022"`,
    );
  }
  return { ...update, categories: [...update.categories] };
}

export class SimWindowsUpdate {
  readonly #catalog = new Map<string, CatalogUpdate>();
  readonly #installed: string[] = [];
  /** The UBR waiting for the next boot. */
  #pendingUbr?: number;
  /**
   * Whether Windows Update's servers are reachable. An air-gapped host (false) fails its
   * search with WU_E_PT_WINHTTP_NAME_NOT_RESOLVED and gets its updates from the payload's
   * .msu files.
   */
  online = true;
  /** The registry's reboot-pending entries. */
  readonly registry = {
    componentBasedServicingRebootPending: false,
    windowsUpdateRebootRequired: false,
    /** Session Manager's PendingFileRenameOperations (source/destination pairs). */
    pendingFileRenameOperations: [] as string[],
  };

  /** The machine's version, whose UBR installed updates raise. */
  readonly #os: OsVersion;

  constructor(os: OsVersion, catalog: readonly CatalogUpdate[] = []) {
    this.#os = os;
    this.publish(...catalog);
  }

  /** Adds updates to the catalog (Patch Tuesday); a KB already there is replaced. */
  publish(...updates: CatalogUpdate[]): void {
    for (const update of updates) this.#catalog.set(update.kb, checkUpdate(update));
  }

  /** The catalog's entry for `kb`, if it offers it. */
  catalogUpdate(kb: string): CatalogUpdate | undefined {
    const update = this.#catalog.get(kb);
    return update && checkUpdate(update);
  }

  /** KBs installed, in order. */
  installed(): string[] {
    return [...this.#installed];
  }

  /** What WUA's search finds: catalog entries not installed. */
  search(): ReportedUpdate[] {
    return [...this.#catalog.values()]
      .filter((u) => !this.#installed.includes(u.kb))
      .map((u) => ({
        kb: u.kb,
        title: u.title,
        categories: [...u.categories],
        rebootRequired: u.rebootRequired,
      }));
  }

  /** Downloads and installs `kbs` as IUpdateDownloader/IUpdateInstaller would. */
  install(kbs: readonly string[], session: WuaSession = 'local'): UpdateInstallResult {
    if (kbs.length === 0) return { installed: [], failed: [], rebootRequired: false };
    if (session === 'remote') {
      throw new Error(
        `Cannot install Windows updates ${kbs.join(', ')}: the Windows Update Agent's download failed with ${describeHresult('0x80070005')}`,
      );
    }
    const installed: string[] = [];
    const failed: { kb: string; error: string }[] = [];
    let rebootRequired = false;
    for (const kb of kbs) {
      const update = this.#catalog.get(kb);
      if (!update || this.#installed.includes(kb)) {
        failed.push({ kb, error: updateNotFoundText });
        continue;
      }
      if (update.failsWith) {
        failed.push({ kb, error: updateFailureText('install', 4, update.failsWith) });
        continue;
      }
      installed.push(kb);
      if (this.#apply(update)) rebootRequired = true;
    }
    return { installed, failed, rebootRequired };
  }

  /** Records `update` as installed; true when it waits for a reboot. */
  #apply(update: Pick<CatalogUpdate, 'kb' | 'ubr' | 'rebootRequired'>): boolean {
    this.#installed.push(update.kb);
    if (update.rebootRequired) {
      // CBS stages it; WUA's installs also set Auto Update\RebootRequired.
      this.registry.componentBasedServicingRebootPending = true;
      this.registry.windowsUpdateRebootRequired = true;
      if (update.ubr !== undefined) this.#pendingUbr = Math.max(this.#pendingUbr ?? 0, update.ubr);
      return true;
    }
    if (update.ubr !== undefined && update.ubr > this.#os.ubr) this.#os.ubr = update.ubr;
    return false;
  }

  /**
   * `wusa.exe /extract` then `dism.exe /online /add-package` of a stand-in .msu (standInMsu):
   * an .msu for another build is not applicable (CBS_E_NOT_APPLICABLE); a file that is no
   * stand-in .msu unpacks to no update .cab. DISM stages the package for the next boot
   * (exit 3010) and creates only the CBS RebootPending key.
   */
  installMsu(name: string, data: Buffer): { rebootRequired: boolean } {
    const msu = readStandInMsu(data);
    if (!msu) throw new Error(msuWithoutCabText(name));
    const cab = `C:\\k\\winfleet\\msu-${msu.kb}\\Windows10.0-${msu.kb}-x64.cab`;
    if (msu.build !== this.#os.build) {
      const outcome = dismOutcome(-2146498530); // 0x800F081E
      throw new Error(dismFailedText(dismAddPackageArgs(cab), outcome.ok ? '' : outcome.error));
    }
    this.#installed.push(msu.kb);
    this.registry.componentBasedServicingRebootPending = true;
    this.#pendingUbr = Math.max(this.#pendingUbr ?? 0, msu.ubr);
    return { rebootRequired: true };
  }

  /**
   * Servicing waits for a reboot: either key exists. PendingFileRenameOperations is boot-time
   * housekeeping (MoveFileEx MOVEFILE_DELAY_UNTIL_REBOOT, which Defender's updates and
   * installers use routinely), not a reboot servicing waits for: it does not count.
   */
  rebootPending(): boolean {
    const r = this.registry;
    return r.componentBasedServicingRebootPending || r.windowsUpdateRebootRequired;
  }

  /** A boot: servicing finishes (the new UBR), the entries are removed. */
  boot(): void {
    if (this.#pendingUbr !== undefined && this.#pendingUbr > this.#os.ubr) {
      this.#os.ubr = this.#pendingUbr;
    }
    this.#pendingUbr = undefined;
    this.registry.componentBasedServicingRebootPending = false;
    this.registry.windowsUpdateRebootRequired = false;
    this.registry.pendingFileRenameOperations = [];
  }
}

const standInMsuMarker = 'winfleet stand-in msu';

/** A stand-in .msu: the update it installs, for the Windows build it applies to. */
export interface StandInMsu {
  kb: string;
  /** The build it applies to (20348 for Windows Server 2022). */
  build: number;
  /** The UBR it raises the OS to, at the next boot. */
  ubr: number;
}

/** The bytes of a stand-in .msu file (what a payload ships to an air-gapped simulated host). */
export function standInMsu(msu: StandInMsu): Buffer {
  return Buffer.from(JSON.stringify({ [standInMsuMarker]: 1, ...msu }));
}

function readStandInMsu(data: Buffer): StandInMsu | undefined {
  try {
    const value = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    if (value[standInMsuMarker] !== 1) return undefined;
    const { kb, build, ubr } = value;
    if (typeof kb !== 'string' || !kbPattern.test(kb)) return undefined;
    if (!Number.isInteger(build) || !Number.isInteger(ubr)) return undefined;
    return { kb, build: build as number, ubr: ubr as number };
  } catch {
    return undefined;
  }
}

/**
 * The sample catalog tests use: a Security cumulative update that raises the UBR to
 * `patchedUbr` and needs a reboot, a Critical servicing stack update without one, and an
 * Update Rollups tool that the Security policy leaves alone.
 */
export function sampleCatalog(patchedUbr = 2700): CatalogUpdate[] {
  return [
    {
      kb: 'KB5040437',
      title: '2024-07 Cumulative Update for Microsoft server operating system version 21H2',
      categories: ['Security Updates'],
      ubr: patchedUbr,
      rebootRequired: true,
    },
    {
      kb: 'KB5041160',
      title: '2024-07 Servicing Stack Update',
      categories: ['Critical Updates'],
      rebootRequired: false,
    },
    {
      kb: 'KB890830',
      title: 'Windows Malicious Software Removal Tool x64',
      categories: ['Update Rollups'],
      rebootRequired: false,
    },
  ];
}
