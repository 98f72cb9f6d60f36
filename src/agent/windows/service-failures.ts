/**
 * When a service ended unexpectedly, from the System event log: the Service Control Manager
 * writes event 7031 ("The %1 service terminated unexpectedly. It has done this %2 time(s). The
 * following corrective action will be taken in %3 milliseconds: %5.") when a recovery action
 * follows, and 7034 ("... terminated unexpectedly. It has done this %2 time(s).") when none
 * does; %1 (Properties[0]) is the service's display name. The agent's restart-loop check counts
 * these: a service that dies within a second of each start is rarely seen running by a check
 * every few seconds, so counting new PIDs misses most of its restarts.
 *
 * Only a real host proves that a service exiting non-zero with the failure flag set (sc.exe
 * failureflag 1) is logged as 7031 too, and how Get-WinEvent's StartTime compares with the
 * events' times; the tests check the script's grammar and the parser.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import {
  parsePowerShellJson,
  powerShellScript,
  quotePowerShellString,
  writeJson,
} from '../../powershell/powershell.ts';
import { checkServiceName } from './sc-commands.ts';

/** At most this many events are read (the newest). */
export const maxServiceFailures = 200;

/**
 * Prints {"ok":true,"times":[ms since the epoch, ...]} or {"ok":false,"message":...} when the
 * service does not exist. No event is not an error (Get-WinEvent's "No events were found" is
 * silenced).
 */
export function serviceFailuresScript(name: string, sinceMs: number): string {
  checkServiceName(name);
  if (!Number.isSafeInteger(sinceMs) || sinceMs < 0) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot read the failures of service "${name}" since ${sinceMs}: give ms since the epoch`,
    );
  }
  return powerShellScript(
    `$service = Get-Service -Name ${quotePowerShellString(name)} -ErrorAction SilentlyContinue`,
    'if (-not $service) {',
    `  ${writeJson(`@{ ok = $false; message = ${quotePowerShellString(`service ${name} does not exist`)} }`, 2)}`,
    '  exit 0',
    '}',
    `$since = [DateTimeOffset]::FromUnixTimeMilliseconds(${sinceMs}).LocalDateTime`,
    "$filter = @{ LogName = 'System'; ProviderName = 'Service Control Manager'; Id = 7031, 7034; StartTime = $since }",
    `$events = @(Get-WinEvent -FilterHashtable $filter -MaxEvents ${maxServiceFailures} -ErrorAction SilentlyContinue | Where-Object { [string]$_.Properties[0].Value -eq $service.DisplayName })`,
    '$times = @($events | ForEach-Object { [DateTimeOffset]::new($_.TimeCreated).ToUnixTimeMilliseconds() })',
    writeJson('@{ ok = $true; times = @($times) }', 3),
  );
}

/** Reads what serviceFailuresScript printed: the times, oldest first. */
export function parseServiceFailuresOutput(stdout: string, name: string): number[] {
  const value = parsePowerShellJson(stdout, `the failures of service "${name}"`) as Record<
    string,
    unknown
  >;
  const fail = (why: string): never => {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the failures of service "${name}": ${why}`,
    );
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('not an object');
  if (value.ok === false) {
    fail(typeof value.message === 'string' ? value.message.slice(0, 200) : 'the script failed');
  }
  if (value.ok !== true) fail('"ok" is not true or false');
  const raw = value.times;
  const times =
    raw === null || raw === undefined ? [] : Array.isArray(raw) ? raw : [raw as unknown];
  if (times.length > maxServiceFailures) fail(`more than ${maxServiceFailures} times`);
  for (const t of times) {
    if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < 0) {
      fail(`${JSON.stringify(t)} is not a time in ms since the epoch`);
    }
  }
  return (times as number[]).sort((a, b) => a - b);
}
