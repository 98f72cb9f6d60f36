/**
 * The host's IPv4 addresses and default routes (Get-NetIPAddress, Get-NetRoute), for the node
 * address a pull-joining host picks for itself by the operator's rule (node-address.ts). The
 * statements are the operator's host-facts ones (hostNetworkScriptLines), so a host joined
 * either way reads its network alike.
 *
 * The fixtures are this script's output as written from the documented cmdlet output on a
 * Windows Server 2022 host with the Containers feature (HNS's "vEthernet (nat)", a second
 * adapter with an APIPA address, the loopback pseudo-interface); only a real host proves the
 * property names and the JSON shapes Windows PowerShell 5.1 prints.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import {
  type HostNetwork,
  hostNetworkScriptLines,
  readHostNetwork,
} from '../../hostaccess/node-address.ts';
import { parsePowerShellJson, powerShellScript, writeJson } from '../../powershell/powershell.ts';

/** The script that prints {"ipAddresses": [...], "defaultRoutes": [...]}. */
export function ipv4NetworkScript(): string {
  return powerShellScript(
    ...hostNetworkScriptLines,
    writeJson('[ordered]@{ ipAddresses = $ipAddresses; defaultRoutes = $defaultRoutes }', 3),
  );
}

/** Reads what `ipv4NetworkScript` printed. */
export function parseIpv4NetworkOutput(stdout: string): HostNetwork {
  const value = parsePowerShellJson(stdout, "the host's IPv4 network");
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the host's IPv4 network from ${JSON.stringify(value)?.slice(0, 200)}: expected a JSON object`,
    );
  }
  return readHostNetwork(value as Record<string, unknown>, "the host's IPv4 network");
}
