/**
 * Inbound Windows Firewall rules through the NetSecurity module: the scripts that create (or
 * update) and remove a rule by its Name, and the parsers of what they print.
 *
 * A rule is found by `Get-NetFirewallRule -Name` (its unique id, not the display name, which
 * need not be unique) with `-ErrorAction SilentlyContinue`, as WMCO does for its OpenSSH rule;
 * an existing one is brought in line with `Set-NetFirewallRule` (which changes its port filter
 * too, and takes the display name as -NewDisplayName), so running the script again changes
 * nothing and a rule someone disabled is enabled again. Only a real host proves the cmdlets'
 * behaviour; the tests parse every script with a PowerShell grammar.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import {
  parsePowerShellJson,
  powerShellScript,
  quotePowerShellString,
  writeJson,
} from '../../powershell/powershell.ts';
import type { InboundFirewallRule } from '../host-os.ts';

const ruleName = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Throws unless `name` can be a rule's Name here: 1-100 letters, digits, ".", "_", "-". */
export function checkFirewallRuleName(name: string): void {
  if (!ruleName.test(name)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use "${name}" as a firewall rule name; use 1 to 100 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
  }
}

function checkRule(rule: InboundFirewallRule): void {
  checkFirewallRuleName(rule.name);
  if (!Number.isInteger(rule.localPort) || rule.localPort < 1 || rule.localPort > 65535) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot open port ${rule.localPort} in firewall rule "${rule.name}"; use a port from 1 to 65535`,
    );
  }
  if (rule.protocol !== 'TCP' && rule.protocol !== 'UDP') {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use protocol "${rule.protocol}" in firewall rule "${rule.name}"; use TCP or UDP`,
    );
  }
}

/** The script that creates or updates the rule and prints {"created": true|false}. */
export function ensureInboundFirewallRuleScript(rule: InboundFirewallRule): string {
  checkRule(rule);
  const quote = quotePowerShellString;
  return powerShellScript(
    `$name = ${quote(rule.name)}`,
    '$rule = Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue',
    '$settings = @{',
    `  Description = ${quote(rule.description)}`,
    "  Direction = 'Inbound'",
    "  Action = 'Allow'",
    `  Protocol = ${quote(rule.protocol)}`,
    `  LocalPort = ${quote(String(rule.localPort))}`,
    "  Profile = 'Any'",
    "  Enabled = 'True'",
    '}',
    'if ($null -eq $rule) {',
    `  New-NetFirewallRule -Name $name -DisplayName ${quote(rule.displayName)} @settings | Out-Null`,
    '  $created = $true',
    '} else {',
    `  Set-NetFirewallRule -Name $name -NewDisplayName ${quote(rule.displayName)} @settings`,
    '  $created = $false',
    '}',
    writeJson('@{ created = $created }', 2),
  );
}

/** The script that removes the rule named `name` and prints {"removed": n}. */
export function removeFirewallRuleScript(name: string): string {
  checkFirewallRuleName(name);
  return powerShellScript(
    `$rules = @(Get-NetFirewallRule -Name ${quotePowerShellString(name)} -ErrorAction SilentlyContinue)`,
    'if ($rules.Count -gt 0) { $rules | Remove-NetFirewallRule }',
    writeJson('@{ removed = $rules.Count }', 2),
  );
}

/** Reads what `ensureInboundFirewallRuleScript` printed: whether the rule was new. */
export function parseEnsureFirewallRuleOutput(stdout: string): { created: boolean } {
  const value = parsePowerShellJson(stdout, 'the firewall rule') as { created?: unknown } | null;
  if (typeof value?.created !== 'boolean') {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the firewall rule from ${JSON.stringify(value)}: expected {"created": true|false}`,
    );
  }
  return { created: value.created };
}

/** Reads what `removeFirewallRuleScript` printed: how many rules went. */
export function parseRemoveFirewallRuleOutput(stdout: string): { removed: number } {
  const value = parsePowerShellJson(stdout, 'the firewall rule removal') as {
    removed?: unknown;
  } | null;
  const removed = value?.removed;
  if (typeof removed !== 'number' || !Number.isInteger(removed) || removed < 0) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the firewall rule removal from ${JSON.stringify(value)}: "removed" is not a count`,
    );
  }
  return { removed };
}
