/**
 * The Containers feature's InstallState on the host itself (Server Manager's
 * Get-WindowsFeature), for a host that joins on its own: without the feature there is no Host
 * Compute Service, so the kubelet would register a node on which no pod ever starts, having
 * spent a use of the join token. The statements are those of the operator's host facts
 * (remote-scripts.ts), so a host joined either way reads the feature alike: "Unknown" where
 * Get-WindowsFeature is missing (not Windows Server) or knows no such feature.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import { parsePowerShellJson, powerShellScript, writeJson } from '../../powershell/powershell.ts';

/** Server Manager's InstallState values, and Unknown. */
export const containersFeatureStates = [
  'Installed',
  'Available',
  'InstallPending',
  'UninstallPending',
  'Removed',
  'Unknown',
] as const;
export type ContainersFeatureState = (typeof containersFeatureStates)[number];

/** The script that prints {"state": "<InstallState>"}. */
export function containersFeatureScript(): string {
  return powerShellScript(
    "$state = 'Unknown'",
    "if (Get-Command -Name 'Get-WindowsFeature' -ErrorAction SilentlyContinue) {",
    "  $feature = Get-WindowsFeature -Name 'Containers'",
    '  if ($feature) { $state = [string]$feature.InstallState }',
    '}',
    writeJson('[ordered]@{ state = $state }', 2),
  );
}

/** Reads what `containersFeatureScript` printed: exactly one known state. */
export function parseContainersFeatureOutput(stdout: string): ContainersFeatureState {
  const value = parsePowerShellJson(stdout, "the Containers feature's state");
  const state =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>).state
      : undefined;
  const keys = typeof value === 'object' && value !== null ? Object.keys(value) : [];
  const known = containersFeatureStates.find((s) => s === state);
  if (!known || keys.length !== 1)
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the Containers feature's state from ${JSON.stringify(value)?.slice(0, 200)}: expected {"state": one of ${containersFeatureStates.join(', ')}}`,
    );
  return known;
}
