/**
 * Windows Update through the Windows Update Agent's COM API (Microsoft.Update.Session), run
 * by the agent on the host itself: the scripts that search, download and install, and read the
 * three reboot-pending registry entries, and the strict parsers of what they print.
 *
 * Why locally: WUA's download and install calls return E_ACCESSDENIED (0x80070005) from a
 * remote session — an SSH session included (PowerShell/Win32-OpenSSH #2083 and #2310); the
 * PSWindowsUpdate maintainer: "This is a limitation of the Windows Update API itself. It must
 * be run locally" (mgajda83/PSWindowsUpdate #18). The agent runs as a local service, so it does
 * this and the operator never does over SSH.
 *
 * Upstream documentation relied on (learn.microsoft.com, wuapi.h):
 * - IUpdateSearcher::Search and its criteria language (IsInstalled, Type, IsHidden; "and");
 *   strings in single quotes.
 * - IUpdate: KBArticleIDs (numbers without "KB"), Title, Categories (ICategory.Name, e.g.
 *   "Security Updates", "Critical Updates"), EulaAccepted / AcceptEula(),
 *   InstallationBehavior.RebootBehavior (InstallationRebootBehavior: 0 irbNeverReboots,
 *   1 irbAlwaysRequiresReboot, 2 irbCanRequestReboot).
 * - IUpdateSession::CreateUpdateDownloader / CreateUpdateInstaller, Microsoft.Update.UpdateColl;
 *   IDownloadResult / IInstallationResult: ResultCode, HResult, RebootRequired and
 *   GetUpdateResult(index) per update (IUpdateDownloadResult, IUpdateInstallationResult).
 * - OperationResultCode: 0 orcNotStarted, 1 orcInProgress, 2 orcSucceeded,
 *   3 orcSucceededWithErrors, 4 orcFailed, 5 orcAborted.
 * - The HRESULT names and texts: "Windows Update error codes by component"
 *   (learn.microsoft.com/windows/deployment/update/windows-update-error-reference).
 *
 * A COM exception reaches PowerShell wrapped (MethodInvocationException); the scripts print
 * the innermost exception's HResult as 0x%08X. Only a real host proves the exact shapes; the
 * parsers refuse anything else rather than guess.
 */

import type { ReportedUpdate } from '../../api/windows-updates.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import {
  parsePowerShellJson,
  powerShellScript,
  quotePowerShellArray,
  quotePowerShellString,
  writeJson,
} from '../../powershell/powershell.ts';
import type { UpdateInstallResult } from '../host-os.ts';

/** What the agent searches for: software updates not installed and not hidden. */
export const updateSearchCriteria = "IsInstalled=0 and Type='Software' and IsHidden=0";

/**
 * The registry keys either of which means Windows servicing waits for a reboot. Session
 * Manager's PendingFileRenameOperations is not one: it is MoveFileEx(MOVEFILE_DELAY_UNTIL_REBOOT)
 * housekeeping that antivirus engines (Defender's platform and definition updates among them)
 * and installers write routinely, so counting it would drain and reboot hosts for nothing
 * (bcwilhite/PendingReboot's Test-PendingReboot documents it as one that "can be a false
 * positive" and offers -SkipPendingFileRenameOperationsCheck).
 */
export const rebootPendingEntries = {
  componentBasedServicing:
    'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Component Based Servicing\\RebootPending',
  windowsUpdate:
    'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\WindowsUpdate\\Auto Update\\RebootRequired',
} as const;
/** HRESULTs the Windows Update Agent returns, with their meaning and what to do. */
export const wuaErrors: Readonly<Record<string, string>> = {
  '0x80070005':
    'E_ACCESSDENIED: access is denied; the Windows Update Agent refuses download and install from a remote session (SSH, WinRM: Win32-OpenSSH #2083, #2310) and from non-administrators; the winfleet agent service (LocalSystem) runs it locally — do not run it over SSH',
  '0x80070422':
    'ERROR_SERVICE_DISABLED: the Windows Update service (wuauserv) is disabled; set its start type to Manual (sc.exe config wuauserv start= demand)',
  '0x80240016':
    'WU_E_INSTALL_NOT_ALLOWED: another installation is in progress or Windows waits for a mandatory restart; reboot the host, then install again',
  '0x8024001E':
    'WU_E_SERVICE_STOP: the Windows Update service or the system was shutting down; install again',
  '0x80240022': 'WU_E_ALL_UPDATES_FAILED: the operation failed for all the updates',
  '0x80240024': 'WU_E_NO_UPDATE: there are no updates',
  '0x80240044':
    'WU_E_PER_MACHINE_UPDATE_ACCESS_DENIED: only administrators can install per-machine updates; run the agent as LocalSystem',
  '0x8024402C':
    'WU_E_PT_WINHTTP_NAME_NOT_RESOLVED: the Windows Update server name cannot be resolved; check the host’s DNS and proxy (netsh winhttp show proxy), or use the payload’s .msu files on an air-gapped host',
  '0x80244022':
    'WU_E_PT_HTTP_STATUS_SERVICE_UNAVAIL: the Windows Update server is unavailable (HTTP 503); search again later',
  '0x8024A105':
    'WU_E_AU_NO_REGISTERED_SERVICE: no update service is registered; check the WSUS policy (HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate)',
};

const hresultPattern = /^0x[0-9A-F]{8}$/;

/** "0x80070005 (E_ACCESSDENIED: …)", or the bare code when it is not a known one. */
export function describeHresult(hresult: string, message?: string): string {
  const known = wuaErrors[hresult];
  if (known) return `${hresult} (${known})`;
  const text = message?.replace(/[\p{Cc}\s]+/gu, ' ').trim();
  return text ? `${hresult} (${text.slice(0, 300)})` : hresult;
}

// The innermost exception's HRESULT and message, for a catch block's $_.
const errorRecordJson = (step: string) =>
  writeJson(
    `@{ ok = $false; step = ${quotePowerShellString(step)}; hresult = ('0x{0:X8}' -f $inner.HResult); message = [string]$inner.Message }`,
    2,
  );
const innermost = [
  '  $inner = $_.Exception',
  '  while ($inner.InnerException) { $inner = $inner.InnerException }',
];

// The search, shared by both scripts: $result.Updates afterwards, or the error printed.
function searchLines(): string[] {
  return [
    "$session = New-Object -ComObject 'Microsoft.Update.Session'",
    "$session.ClientApplicationID = 'winfleet-agent'",
    'try {',
    '  $searcher = $session.CreateUpdateSearcher()',
    `  $result = $searcher.Search(${quotePowerShellString(updateSearchCriteria)})`,
    '} catch {',
    ...innermost,
    `  ${errorRecordJson('search')}`,
    '  exit 0',
    '}',
  ];
}

/** Prints {"ok":true,"updates":[{kbs,title,categories,rebootBehavior}]} or {"ok":false,…}. */
export function searchUpdatesScript(): string {
  return powerShellScript(
    ...searchLines(),
    '$updates = @(foreach ($u in $result.Updates) {',
    '  [pscustomobject]@{',
    '    kbs = @(foreach ($id in $u.KBArticleIDs) { [string]$id })',
    '    title = [string]$u.Title',
    '    categories = @(foreach ($c in $u.Categories) { [string]$c.Name })',
    '    rebootBehavior = [int]$u.InstallationBehavior.RebootBehavior',
    '  }',
    '})',
    writeJson('@{ ok = $true; updates = $updates }', 5),
  );
}

/** KB numbers as WUA's KBArticleIDs carries them: "KB5040437" → "5040437". */
function articleId(kb: string): string {
  const match = /^KB([0-9]{6,8})$/.exec(kb);
  if (!match) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot install update "${kb}": expected a KB number like "KB5040437"`,
    );
  }
  return match[1]!;
}

/**
 * Searches again (the update objects must come from this session), accepts the EULAs of the
 * updates with these KBs, downloads them and installs what downloaded. Prints
 * {"ok":true,"results":[{kb,step,resultCode,hresult,rebootRequired}],"rebootRequired":…,
 * "notFound":[…]} or {"ok":false,"step":…,"hresult":…,"message":…}.
 */
export function installUpdatesScript(kbs: readonly string[]): string {
  if (kbs.length === 0 || kbs.length > 200) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot install ${kbs.length} updates: give 1 to 200 KB numbers`,
    );
  }
  return powerShellScript(
    `$wanted = ${quotePowerShellArray(kbs.map(articleId))}`,
    ...searchLines(),
    'try {',
    "  $picked = New-Object -ComObject 'Microsoft.Update.UpdateColl'",
    '  $pickedKbs = @()',
    '  foreach ($u in $result.Updates) {',
    '    $ids = @(foreach ($id in $u.KBArticleIDs) { [string]$id })',
    '    $kb = @($ids | Where-Object { $wanted -contains $_ }) | Select-Object -First 1',
    '    if ($kb -and -not ($pickedKbs -contains $kb)) {',
    '      if (-not $u.EulaAccepted) { $u.AcceptEula() }',
    '      [void]$picked.Add($u)',
    '      $pickedKbs += $kb',
    '    }',
    '  }',
    '} catch {',
    ...innermost,
    `  ${errorRecordJson('select')}`,
    '  exit 0',
    '}',
    '$notFound = @($wanted | Where-Object { -not ($pickedKbs -contains $_) })',
    '$results = @()',
    '$rebootRequired = $false',
    'if ($picked.Count -gt 0) {',
    '  try {',
    '    $downloader = $session.CreateUpdateDownloader()',
    '    $downloader.Updates = $picked',
    '    $download = $downloader.Download()',
    '  } catch {',
    ...innermost.map((l) => `  ${l}`),
    `    ${errorRecordJson('download')}`,
    '    exit 0',
    '  }',
    "  $ready = New-Object -ComObject 'Microsoft.Update.UpdateColl'",
    '  $readyKbs = @()',
    '  for ($i = 0; $i -lt $picked.Count; $i++) {',
    '    $r = $download.GetUpdateResult($i)',
    '    if ([int]$r.ResultCode -eq 2 -or [int]$r.ResultCode -eq 3) {',
    '      [void]$ready.Add($picked.Item($i))',
    '      $readyKbs += $pickedKbs[$i]',
    '    } else {',
    "      $results += [pscustomobject]@{ kb = $pickedKbs[$i]; step = 'download'; resultCode = [int]$r.ResultCode; hresult = ('0x{0:X8}' -f $r.HResult); rebootRequired = $false }",
    '    }',
    '  }',
    '  if ($ready.Count -gt 0) {',
    '    try {',
    '      $installer = $session.CreateUpdateInstaller()',
    '      $installer.Updates = $ready',
    '      $install = $installer.Install()',
    '    } catch {',
    ...innermost.map((l) => `    ${l}`),
    `      ${errorRecordJson('install')}`,
    '      exit 0',
    '    }',
    '    $rebootRequired = [bool]$install.RebootRequired',
    '    for ($i = 0; $i -lt $ready.Count; $i++) {',
    '      $r = $install.GetUpdateResult($i)',
    "      $results += [pscustomobject]@{ kb = $readyKbs[$i]; step = 'install'; resultCode = [int]$r.ResultCode; hresult = ('0x{0:X8}' -f $r.HResult); rebootRequired = [bool]$r.RebootRequired }",
    '    }',
    '  }',
    '}',
    writeJson(
      '@{ ok = $true; results = @($results); rebootRequired = $rebootRequired; notFound = @($notFound) }',
      4,
    ),
  );
}

/** Prints which of the two reboot-pending keys exist. */
export function rebootPendingScript(): string {
  const e = rebootPendingEntries;
  return powerShellScript(
    `$cbs = Test-Path -LiteralPath ${quotePowerShellString(e.componentBasedServicing)}`,
    `$wu = Test-Path -LiteralPath ${quotePowerShellString(e.windowsUpdate)}`,
    writeJson('@{ componentBasedServicing = [bool]$cbs; windowsUpdate = [bool]$wu }', 2),
  );
}

/** One update as searchUpdatesScript prints it (before the agent names it by KB). */
export interface WuaUpdate {
  kbs: string[];
  title: string;
  categories: string[];
  /** InstallationBehavior.RebootBehavior: 0 never, 1 always, 2 can request. */
  rebootBehavior: 0 | 1 | 2;
}

function object(value: unknown, what: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: expected an object, got ${JSON.stringify(value)}`,
    );
  }
  const record = value as Record<string, unknown>;
  const extra = Object.keys(record).filter((k) => !keys.includes(k));
  const missing = keys.filter((k) => !(k in record));
  if (extra.length > 0 || missing.length > 0) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: expected the keys ${keys.join(', ')}${extra.length ? `; unexpected ${extra.join(', ')}` : ''}${missing.length ? `; missing ${missing.join(', ')}` : ''}`,
    );
  }
  return record;
}

function strings(value: unknown, what: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: expected a list of strings`,
    );
  }
  return value as string[];
}

function hresult(value: unknown, what: string): string {
  if (typeof value !== 'string' || !hresultPattern.test(value)) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: ${JSON.stringify(value)} is not an HRESULT`,
    );
  }
  return value;
}

/** The error of a failed WUA step, e.g. wuaError('search for Windows updates', 'search', '0x8024402C'). */
export function wuaError(what: string, step: string, code: string, message = ''): WinfleetError {
  return new WinfleetError(
    'WF_WINDOWS_COMMAND_FAILED',
    `Cannot ${what}: the Windows Update Agent's ${step} failed with ${describeHresult(code, message)}`,
  );
}

/** A script's {"ok":false} answer as the error it is, naming the step and the HRESULT. */
function failure(record: Record<string, unknown>, what: string): WinfleetError {
  const r = object(record, what, ['ok', 'step', 'hresult', 'message']);
  const code = hresult(r.hresult, `${what}: hresult`);
  return wuaError(what, String(r.step), code, typeof r.message === 'string' ? r.message : '');
}

function answer(stdout: string, what: string): Record<string, unknown> {
  const value = parsePowerShellJson(stdout, what);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: expected an object, got ${JSON.stringify(value)}`,
    );
  }
  const record = value as Record<string, unknown>;
  if (record.ok === false) throw failure(record, what);
  if (record.ok !== true)
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: "ok" is not true or false`,
    );
  return record;
}

const resultNames = [
  'not started',
  'in progress',
  'succeeded',
  'succeeded with errors',
  'failed',
  'aborted',
];

/** The error reported for one update whose download or install did not succeed. */
export function updateFailureText(
  step: 'download' | 'install',
  resultCode: number,
  hresult: string,
): string {
  const why = hresult === '0x00000000' ? 'no HRESULT given' : describeHresult(hresult);
  return `${step} ${resultNames[resultCode] ?? `result ${resultCode}`}: ${why}`;
}

/** The error reported for a KB asked for that the search no longer finds. */
export const updateNotFoundText = `not found by the search (${updateSearchCriteria}): installed, superseded or hidden since; ${describeHresult('0x80240024')}`;

/** Reads what searchUpdatesScript printed; throws WF_WINDOWS_COMMAND_FAILED for a WUA error. */
export function parseSearchUpdatesOutput(stdout: string): WuaUpdate[] {
  const what = 'search for Windows updates';
  const r = object(answer(stdout, what), what, ['ok', 'updates']);
  if (!Array.isArray(r.updates))
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: updates is not a list`,
    );
  return r.updates.map((u, i) => {
    const e = object(u, `${what}: updates[${i}]`, ['kbs', 'title', 'categories', 'rebootBehavior']);
    const kbs = strings(e.kbs, `${what}: updates[${i}].kbs`);
    if (typeof e.title !== 'string') {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what}: updates[${i}].title is not a string`,
      );
    }
    if (e.rebootBehavior !== 0 && e.rebootBehavior !== 1 && e.rebootBehavior !== 2) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what}: updates[${i}].rebootBehavior is ${JSON.stringify(e.rebootBehavior)}, expected 0, 1 or 2`,
      );
    }
    return {
      kbs,
      title: e.title,
      categories: strings(e.categories, `${what}: updates[${i}].categories`),
      rebootBehavior: e.rebootBehavior,
    };
  });
}

/**
 * Reads what installUpdatesScript printed for `kbs`. A KB the search no longer found (already
 * installed, superseded, hidden) is a failure of its own, WU_E_NO_UPDATE.
 * @package
 */
export function parseInstallUpdatesOutput(
  stdout: string,
  kbs: readonly string[],
): UpdateInstallResult {
  const what = 'install Windows updates';
  const r = object(answer(stdout, what), what, ['ok', 'results', 'rebootRequired', 'notFound']);
  if (typeof r.rebootRequired !== 'boolean') {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: rebootRequired is not a boolean`,
    );
  }
  const wanted = new Map(kbs.map((kb) => [articleId(kb), kb]));
  const name = (id: unknown, field: string): string => {
    const kb = typeof id === 'string' ? wanted.get(id) : undefined;
    if (!kb)
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what}: ${field} ${JSON.stringify(id)} was not asked for`,
      );
    return kb;
  };
  if (!Array.isArray(r.results))
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what}: results is not a list`,
    );
  const installed: string[] = [];
  const failed: { kb: string; error: string }[] = [];
  let rebootRequired = r.rebootRequired;
  r.results.forEach((x, i) => {
    const field = `results[${i}]`;
    const e = object(x, `${what}: ${field}`, [
      'kb',
      'step',
      'resultCode',
      'hresult',
      'rebootRequired',
    ]);
    const kb = name(e.kb, `${field}.kb`);
    if (e.step !== 'download' && e.step !== 'install') {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what}: ${field}.step is ${JSON.stringify(e.step)}`,
      );
    }
    if (typeof e.resultCode !== 'number' || ![0, 1, 2, 3, 4, 5].includes(e.resultCode)) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what}: ${field}.resultCode is not an OperationResultCode`,
      );
    }
    if (typeof e.rebootRequired !== 'boolean') {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what}: ${field}.rebootRequired is not a boolean`,
      );
    }
    const code = hresult(e.hresult, `${what}: ${field}.hresult`);
    // orcSucceeded, orcSucceededWithErrors: installed (the errors are in its HRESULT).
    if (e.step === 'install' && (e.resultCode === 2 || e.resultCode === 3)) {
      installed.push(kb);
      if (e.rebootRequired) rebootRequired = true;
    } else {
      failed.push({ kb, error: updateFailureText(e.step, e.resultCode, code) });
    }
  });
  for (const id of strings(r.notFound, `${what}: notFound`)) {
    failed.push({ kb: name(id, 'notFound'), error: updateNotFoundText });
  }
  return { installed, failed, rebootRequired };
}

/** Reads what rebootPendingScript printed: which keys exist; nothing else is accepted. */
export function parseRebootPendingOutput(stdout: string): {
  componentBasedServicing: boolean;
  windowsUpdate: boolean;
} {
  const what = 'read the reboot-pending registry entries';
  const value = parsePowerShellJson(stdout, what);
  const r = object(value, what, ['componentBasedServicing', 'windowsUpdate']);
  for (const key of Object.keys(r)) {
    if (typeof r[key] !== 'boolean')
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read ${what}: ${key} is not a boolean`,
      );
  }
  return r as { componentBasedServicing: boolean; windowsUpdate: boolean };
}

/**
 * The updates as the agent reports them: named by their first KB (an update without a KB
 * article cannot be named in the report or installed by KB, so it is left out), needing a
 * reboot unless WUA says it never does.
 * @package
 */
export function reportedUpdates(updates: readonly WuaUpdate[]): ReportedUpdate[] {
  return updates.flatMap((u) => {
    const id = u.kbs.find((k) => /^[0-9]{6,8}$/.test(k));
    if (!id) return [];
    return [
      {
        kb: `KB${id}`,
        title: u.title,
        categories: u.categories,
        rebootRequired: u.rebootBehavior !== 0,
      },
    ];
  });
}
