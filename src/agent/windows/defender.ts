/**
 * Microsoft Defender's active threats, as the agent's problem detection reports them (issue 13,
 * corrected in issue 32): the script that lists them and the strict parser of what it prints.
 *
 * Get-MpThreat is the history of every threat Defender detected, cleaned ones included
 * (learn.microsoft.com/powershell/module/defender/get-mpthreat: "gets the history of threats");
 * what is still there is in Get-MpThreatDetection (MSFT_MpThreatDetection: one detection per
 * threat and time, InitialDetectionTime, ThreatStatusID). A detection is active unless
 * Defender settled it: ThreatStatusID 2 Cleaned, 3 Quarantined, 4 Removed, 5 Allowed or
 * 6 Blocked (MPTHREAT_STATUS, learn.microsoft.com/windows/win32/lwef/mpthreat-status); 0 Unknown,
 * 1 Detected and the failures 102-107 (clean, quarantine, remove, allow failed, abandoned, block
 * failed) are active. The script lists the active detections, named from the history
 * (MSFT_MpThreat ThreatName, SeverityID 0 Unknown, 1 Low, 2 Moderate, 4 High, 5 Severe).
 * A detection is known by its ThreatID and InitialDetectionTime: the same threat found again
 * later is a new detection. A host without Defender (the feature removed, a Server Core image
 * without it) has no Get-MpThreatDetection: that is "not available", not an error.
 *
 * Attacker side: a threat's resources are paths an attacker chose (the file it dropped), so they
 * are cleaned of control and bidirectional characters and cut short before they go into an
 * Event; the structure (keys, types, counts, ids, names, severities, statuses, times) is refused
 * when it is not exactly what the script prints. The script itself bounds the counts, so more
 * means the output is not the script's.
 */
import { unprintable } from '../../api/windows-updates.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { type OutputReader, outputReader } from '../../powershell/output-reader.ts';
import { parsePowerShellJson, powerShellScript, writeJson } from '../../powershell/powershell.ts';

/** At most this many active detections are listed (the first ones Get-MpThreatDetection returns). */
export const maxThreats = 32;
/** At most this many resources per threat. */
export const maxResources = 4;
/** A resource (a path) is cut to this many characters. */
export const maxResourceLength = 260;

export const defenderSeverities: Readonly<Record<number, string>> = {
  0: 'Unknown',
  1: 'Low',
  2: 'Moderate',
  4: 'High',
  5: 'Severe',
};

/**
 * ThreatStatusID of a detection Defender has not settled (MPTHREAT_STATUS): Unknown, Detected,
 * and the failed actions and Abandoned.
 */
export const activeThreatStatuses: Readonly<Record<number, string>> = {
  0: 'Unknown',
  1: 'Detected',
  102: 'CleanFailed',
  103: 'QuarantineFailed',
  104: 'RemoveFailed',
  105: 'AllowFailed',
  106: 'Abandoned',
  107: 'BlockFailed',
};

/** Defender's threat names: category:platform/family.variant!suffix, no spaces. */
const threatNamePattern = /^[A-Za-z0-9][A-Za-z0-9:/._!#+@()-]{0,127}$/;
const threatIdPattern = /^[0-9]{1,20}$/;

export interface DefenderThreatList {
  /** False when the host has no Defender (Get-MpThreatDetection does not exist). */
  available: boolean;
  /** The active detections. */
  threats: {
    id: string;
    /** The threat's name from the history; "" when the history has none for its ThreatID. */
    name: string;
    severity: string;
    /** ThreatStatusID's name (activeThreatStatuses). */
    status: string;
    /** InitialDetectionTime, ms since the epoch (0: Defender gave none). */
    detectedAt: number;
    resources: string[];
  }[];
}

/**
 * Prints {"ok":true,"available":bool,"threats":[{id,name,severityId,statusId,detectedAt,
 * resources}]} (the active detections) or {"ok":false,"message":…} when a cmdlet failed.
 */
export function defenderThreatsScript(): string {
  const active = Object.keys(activeThreatStatuses).join(', ');
  return powerShellScript(
    "if (-not (Get-Command -Name 'Get-MpThreatDetection' -ErrorAction SilentlyContinue)) {",
    `  ${writeJson('@{ ok = $true; available = $false; threats = @() }')}`,
    '  exit 0',
    '}',
    'try {',
    '  $detections = @(Get-MpThreatDetection -ErrorAction Stop)',
    '  $history = @(Get-MpThreat -ErrorAction Stop)',
    '} catch {',
    `  ${writeJson('@{ ok = $false; message = [string]$_.Exception.Message }')}`,
    '  exit 0',
    '}',
    '$known = @{}',
    'foreach ($t in $history) { $known[[string]$t.ThreatID] = $t }',
    `$activeStatuses = @(${active})`,
    '$active = @($detections | Where-Object { $activeStatuses -contains [int]$_.ThreatStatusID })',
    `$threats = @(foreach ($d in ($active | Select-Object -First ${maxThreats})) {`,
    '  $t = $known[[string]$d.ThreatID]',
    "  $name = ''",
    '  $severityId = 0',
    '  if ($null -ne $t) {',
    '    $name = [string]$t.ThreatName',
    '    $severityId = [int]$t.SeverityID',
    '  }',
    '  $at = 0',
    '  if ($null -ne $d.InitialDetectionTime) {',
    '    $at = [DateTimeOffset]::new($d.InitialDetectionTime).ToUnixTimeMilliseconds()',
    '  }',
    '  [pscustomobject]@{',
    '    id = [string]$d.ThreatID',
    '    name = $name',
    '    severityId = $severityId',
    '    statusId = [int]$d.ThreatStatusID',
    '    detectedAt = $at',
    `    resources = @(foreach ($r in (@($d.Resources) | Select-Object -First ${maxResources})) { [string]$r })`,
    '  }',
    '})',
    writeJson('@{ ok = $true; available = $true; threats = $threats }', 5),
  );
}

const what = 'read the Microsoft Defender detections (Get-MpThreatDetection)';
const reader: OutputReader = outputReader(what);
// Annotated, so that TypeScript narrows after a call that never returns.
const fail: OutputReader['fail'] = reader.fail;
const { exactKeys } = reader;

/** A resource as an Event may carry it: one printable line, at most maxResourceLength. */
function cleanResource(value: string): string {
  const text = value.replace(new RegExp(`(?:${unprintable.source}|\\s)+`, 'gu'), ' ').trim();
  return text.length > maxResourceLength ? `${text.slice(0, maxResourceLength - 1)}…` : text;
}

/** Reads what defenderThreatsScript printed; throws on anything else. */
export function parseDefenderThreatsOutput(stdout: string): DefenderThreatList {
  const value = parsePowerShellJson(stdout, what);
  if (typeof value === 'object' && value !== null && (value as { ok?: unknown }).ok === false) {
    const r = exactKeys(value, 'the output', ['ok', 'message']);
    if (typeof r.message !== 'string') fail('message is not a string');
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot ${what}: ${cleanResource(r.message).slice(0, 300) || 'it failed without a message'}; check that the Windows Defender service (WinDefend) runs: Get-MpComputerStatus`,
    );
  }
  const r = exactKeys(value, 'the output', ['ok', 'available', 'threats']);
  if (r.ok !== true) fail('ok is not true');
  if (typeof r.available !== 'boolean') fail('available is not a boolean');
  if (!Array.isArray(r.threats)) fail('threats is not a list');
  if (r.threats.length > maxThreats) fail(`more than ${maxThreats} threats`);
  if (!r.available && r.threats.length > 0) fail('threats listed while Defender is not available');
  const threats = r.threats.map((item, i) => {
    const field = `threats[${i}]`;
    const t = exactKeys(item, field, [
      'id',
      'name',
      'severityId',
      'statusId',
      'detectedAt',
      'resources',
    ]);
    if (typeof t.id !== 'string' || !threatIdPattern.test(t.id))
      fail(`${field}.id is not a ThreatID (decimal digits)`);
    if (typeof t.name !== 'string' || (t.name !== '' && !threatNamePattern.test(t.name)))
      fail(`${field}.name is not a Defender threat name (like Trojan:Win32/Wacatac.B!ml)`);
    const severity =
      typeof t.severityId === 'number' ? defenderSeverities[t.severityId] : undefined;
    if (!severity) fail(`${field}.severityId is not 0, 1, 2, 4 or 5`);
    const status = typeof t.statusId === 'number' ? activeThreatStatuses[t.statusId] : undefined;
    if (!status)
      fail(
        `${field}.statusId is not an active ThreatStatusID (${Object.keys(activeThreatStatuses).join(', ')})`,
      );
    if (typeof t.detectedAt !== 'number' || !Number.isSafeInteger(t.detectedAt) || t.detectedAt < 0)
      fail(`${field}.detectedAt is not a time in ms since the epoch`);
    if (!Array.isArray(t.resources) || !t.resources.every((x) => typeof x === 'string'))
      fail(`${field}.resources is not a list of strings`);
    if (t.resources.length > maxResources) fail(`${field} has more than ${maxResources} resources`);
    return {
      id: t.id,
      name: t.name,
      severity,
      status,
      detectedAt: t.detectedAt,
      resources: (t.resources as string[]).map(cleanResource).filter((x) => x !== ''),
    };
  });
  return { available: r.available, threats };
}
