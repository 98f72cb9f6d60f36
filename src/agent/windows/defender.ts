/**
 * Microsoft Defender's threats, as the agent's problem detection reports them (issue 13): the
 * script that lists them with Get-MpThreat (Defender module, learn.microsoft.com/powershell/
 * module/defender/get-mpthreat) and the strict parser of what it prints.
 *
 * MSFT_MpThreat properties used: ThreatID (UInt64), ThreatName (e.g. "Trojan:Win32/Wacatac.B!ml",
 * "Virus:DOS/EICAR_Test_File"), SeverityID (0 Unknown, 1 Low, 2 Moderate, 4 High, 5 Severe) and
 * Resources (string[], e.g. "file:_C:\\Users\\Public\\x.exe"). A host without Defender (the
 * feature removed, a Server Core image without it) has no Get-MpThreat: that is "not available",
 * not an error.
 *
 * Attacker side: a threat's resources are paths an attacker chose (the file it dropped), so they
 * are cleaned of control and bidirectional characters and cut short before they go into an
 * Event; the structure (keys, types, counts, ids, names, severities) is refused when it is not
 * exactly what the script prints. The script itself bounds the counts, so more means the output
 * is not the script's.
 */
import { unprintable } from '../../api/windows-updates.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { type OutputReader, outputReader } from '../../powershell/output-reader.ts';
import { parsePowerShellJson, powerShellScript, writeJson } from '../../powershell/powershell.ts';

/** At most this many threats are listed (the first ones Get-MpThreat returns). */
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

/** Defender's threat names: category:platform/family.variant!suffix, no spaces. */
const threatNamePattern = /^[A-Za-z0-9][A-Za-z0-9:/._!#+@()-]{0,127}$/;
const threatIdPattern = /^[0-9]{1,20}$/;

export interface DefenderThreatList {
  /** False when the host has no Defender (Get-MpThreat does not exist). */
  available: boolean;
  threats: { id: string; name: string; severity: string; resources: string[] }[];
}

/**
 * Prints {"ok":true,"available":bool,"threats":[{id,name,severityId,resources}]} or
 * {"ok":false,"message":…} when Get-MpThreat failed.
 */
export function defenderThreatsScript(): string {
  return powerShellScript(
    "if (-not (Get-Command -Name 'Get-MpThreat' -ErrorAction SilentlyContinue)) {",
    `  ${writeJson('@{ ok = $true; available = $false; threats = @() }')}`,
    '  exit 0',
    '}',
    'try {',
    '  $all = @(Get-MpThreat -ErrorAction Stop)',
    '} catch {',
    `  ${writeJson('@{ ok = $false; message = [string]$_.Exception.Message }')}`,
    '  exit 0',
    '}',
    `$threats = @(foreach ($t in ($all | Select-Object -First ${maxThreats})) {`,
    '  [pscustomobject]@{',
    '    id = [string]$t.ThreatID',
    '    name = [string]$t.ThreatName',
    '    severityId = [int]$t.SeverityID',
    `    resources = @(foreach ($r in (@($t.Resources) | Select-Object -First ${maxResources})) { [string]$r })`,
    '  }',
    '})',
    writeJson('@{ ok = $true; available = $true; threats = $threats }', 5),
  );
}

const what = 'read the Microsoft Defender threats (Get-MpThreat)';
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
    const t = exactKeys(item, field, ['id', 'name', 'severityId', 'resources']);
    if (typeof t.id !== 'string' || !threatIdPattern.test(t.id))
      fail(`${field}.id is not a ThreatID (decimal digits)`);
    if (typeof t.name !== 'string' || !threatNamePattern.test(t.name))
      fail(`${field}.name is not a Defender threat name (like Trojan:Win32/Wacatac.B!ml)`);
    const severity =
      typeof t.severityId === 'number' ? defenderSeverities[t.severityId] : undefined;
    if (!severity) fail(`${field}.severityId is not 0, 1, 2, 4 or 5`);
    if (!Array.isArray(t.resources) || !t.resources.every((x) => typeof x === 'string'))
      fail(`${field}.resources is not a list of strings`);
    if (t.resources.length > maxResources) fail(`${field} has more than ${maxResources} resources`);
    return {
      id: t.id,
      name: t.name,
      severity,
      resources: (t.resources as string[]).map(cleanResource).filter((x) => x !== ''),
    };
  });
  return { available: r.available, threats };
}
