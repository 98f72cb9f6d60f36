/**
 * Host Network Service networks through PowerShell: the scripts that list and remove them and
 * the parsers of what they print.
 *
 * Get-HnsNetwork comes from the HostNetworkingService module on current hosts and from
 * microsoft/SDN's Kubernetes/windows/hns.v2.psm1 on older ones (that file exports
 * Get-HnsNetwork and Remove-HnsNetwork; its older sibling hns.psm1 has exported neither since
 * microsoft/SDN commit 710cad6, "Fix scripts"). Each script loads whichever exists and, when
 * neither does, says so in its JSON instead of failing with "not recognized", so the caller can
 * report it clearly (WF_HNS_UNAVAILABLE). Properties are cast to strings in the script because
 * Windows PowerShell 5.1 serializes enums as numbers.
 *
 * The fixtures hold `Get-HnsNetwork | Select Id,Name,Type | ConvertTo-Json` as Windows
 * PowerShell prints it (a single network is an object, not an array; no network is no output)
 * and what these scripts print. Only a real host proves the module loading and that
 * Remove-HnsNetwork accepts the piped objects of both module flavours.
 */

import { WinfleetError } from '../../errors/catalog.ts';
import {
  cidrContains,
  formatIpv4,
  lastAddress,
  parseIpv4,
  parseIpv4Cidr,
} from '../../net/ipv4-cidr.ts';
import {
  parsePowerShellJson,
  powerShellScript,
  quotePowerShellArray,
  quotePowerShellString,
  writeJson,
} from '../../powershell/powershell.ts';
import type { HnsEndpoint, HnsNetwork, HnsNetworkSpec } from '../../windows/hns-objects.ts';

/** microsoft/SDN's module that exports Get-HnsNetwork and Remove-HnsNetwork. */
export const hnsModuleFile = 'hns.v2.psm1';

/** Where hns.v2.psm1 is looked for when the HostNetworkingService module is missing. */
export const defaultHnsModulePaths: readonly string[] = [`C:\\k\\${hnsModuleFile}`];

/** What a WF_HNS_UNAVAILABLE error carries: the modules that were tried. */
export interface HnsUnavailableDetails {
  readonly tried: readonly string[];
}

/** Get-HnsNetwork is available on neither module; the host cannot list or remove networks. */
export function hnsUnavailableError(
  action: string,
  tried: readonly string[],
  command = 'Get-HnsNetwork',
): WinfleetError<HnsUnavailableDetails> {
  return new WinfleetError(
    'WF_HNS_UNAVAILABLE',
    `Cannot ${action}: ${command} is not available (tried ${tried.map((t) => `"${t}"`).join(', ')}); install the Containers feature, or copy ${hnsModuleFile} from microsoft/SDN (Kubernetes/windows/${hnsModuleFile}) to ${defaultHnsModulePaths[0]}`,
    { details: { tried } },
  );
}

// Loads `command` (Get-HnsNetwork by default) if it is not already there, recording what was
// tried, and stops the script with {"available":false} when nothing provides it.
function loadHnsModule(modulePaths: readonly string[], command = 'Get-HnsNetwork'): string[] {
  const has = `Get-Command -Name ${quotePowerShellString(command)} -ErrorAction SilentlyContinue`;
  return [
    '$tried = @()',
    `if (-not (${has})) {`,
    "  $tried += 'HostNetworkingService'",
    "  if (Get-Module -ListAvailable -Name 'HostNetworkingService') {",
    "    Import-Module -Name 'HostNetworkingService' -DisableNameChecking",
    '  }',
    '}',
    `foreach ($path in ${quotePowerShellArray(modulePaths)}) {`,
    `  if (${has}) { break }`,
    '  $tried += $path',
    '  if (Test-Path -LiteralPath $path) { Import-Module -Name $path -DisableNameChecking }',
    '}',
    `if (-not (${has})) {`,
    `  ${writeJson('@{ available = $false; tried = @($tried) }', 3)}`,
    '  exit 0',
    '}',
  ];
}

/** The script that prints {"available":true,"networks":[{Id,Name,Type}...]}. */
export function listHnsNetworksScript(modulePaths = defaultHnsModulePaths): string {
  return powerShellScript(
    ...loadHnsModule(modulePaths),
    '$networks = @(Get-HnsNetwork | Where-Object { $_ -and $_.Id } | ForEach-Object {',
    '  [pscustomobject]@{ Id = [string]$_.Id; Name = [string]$_.Name; Type = [string]$_.Type }',
    '})',
    writeJson('@{ available = $true; networks = @($networks) }', 4),
  );
}

const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The script that removes the network with `id` (compared case-insensitively) and prints
 * {"available":true,"removed":n}; a missing network is removed 0 times, not an error.
 */
export function removeHnsNetworkScript(id: string, modulePaths = defaultHnsModulePaths): string {
  if (!guid.test(id)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot remove HNS network "${id}": an HNS network id is a GUID such as "5f0ba94e-3f4b-4c0e-8c79-4e5b3c1d8b21"`,
    );
  }
  return powerShellScript(
    ...loadHnsModule(modulePaths),
    `$targets = @(Get-HnsNetwork | Where-Object { $_ -and ([string]$_.Id -eq ${quotePowerShellString(id)}) })`,
    'if ($targets.Count -gt 0) { $targets | Remove-HnsNetwork }',
    writeJson('@{ available = $true; removed = $targets.Count }', 2),
  );
}

/**
 * The elements of a JSON list as Windows PowerShell 5.1 may print it: an array, a single value
 * (ConvertTo-Json does not wrap one pipeline result), nothing, or {"value":[...],"Count":n}
 * (5.1 serializes a PSObject-wrapped array that way when type data extends System.Array).
 */
function listItems(value: unknown): unknown[] {
  if (value === null || value === undefined || value === '') return [];
  if (Array.isArray(value)) return value;
  if (typeof value === 'object' && Array.isArray((value as { value?: unknown }).value)) {
    const keys = Object.keys(value).sort().join(',');
    if (keys === 'Count,value') return (value as { value: unknown[] }).value;
  }
  return [value];
}

/**
 * Networks from `Get-HnsNetwork | Select Id,Name,Type | ConvertTo-Json` as parsed JSON, in any
 * of the list shapes `listItems` accepts. Property names are matched case-insensitively
 * (hns.v2.psm1 objects say "ID").
 * @package
 */
export function parseHnsNetworks(value: unknown): HnsNetwork[] {
  const items = listItems(value);
  return items.map((item, index) => {
    if (typeof item !== 'object' || item === null) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read HNS network ${index}: expected an object, got ${JSON.stringify(item)}`,
      );
    }
    const property = (name: string): string => {
      const entry = Object.entries(item).find(([key]) => key.toLowerCase() === name);
      return entry?.[1] === null || entry?.[1] === undefined ? '' : String(entry[1]);
    };
    const network = { id: property('id'), name: property('name'), type: property('type') };
    if (network.id === '') {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read HNS network ${index} ${JSON.stringify(item)}: it has no Id`,
      );
    }
    return network;
  });
}

/** Reads the raw `Get-HnsNetwork | Select Id,Name,Type | ConvertTo-Json` output. */
export function parseGetHnsNetworkOutput(stdout: string): HnsNetwork[] {
  if (stdout.trim() === '') return [];
  return parseHnsNetworks(parsePowerShellJson(stdout, 'HNS networks'));
}

type ScriptResult<T> = ({ available: true } & T) | { available: false; tried: string[] };

function readAvailability(stdout: string, what: string): Record<string, unknown> {
  const value = parsePowerShellJson(stdout, what);
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as { available?: unknown }).available !== 'boolean'
  ) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read ${what} from ${JSON.stringify(value)}: expected {"available": true|false, ...}`,
    );
  }
  return value as Record<string, unknown>;
}

function tried(value: Record<string, unknown>): string[] {
  return listItems(value.tried).map(String);
}

/** Reads what `listHnsNetworksScript` printed. */
export function parseHnsListOutput(stdout: string): ScriptResult<{ networks: HnsNetwork[] }> {
  const value = readAvailability(stdout, 'HNS networks');
  if (value.available === false) return { available: false, tried: tried(value) };
  return { available: true, networks: parseHnsNetworks(value.networks) };
}

/** Reads what `removeHnsNetworkScript` printed. */
export function parseHnsRemoveOutput(stdout: string): ScriptResult<{ removed: number }> {
  const value = readAvailability(stdout, 'the HNS network removal');
  if (value.available === false) return { available: false, tried: tried(value) };
  const removed = value.removed;
  if (typeof removed !== 'number' || !Number.isInteger(removed) || removed < 0) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the HNS network removal from ${JSON.stringify(value)}: "removed" is not a count`,
    );
  }
  return { available: true, removed };
}

const hnsNetworkName = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Refuses an HNS network to create unless every field is exactly what a CNI config can give:
 * a plain name, the L2Bridge type, a network-aligned IPv4 subnet of /8 to /30 and a gateway that
 * is a host address inside it.
 * @package
 */
export function checkHnsNetworkSpec(spec: HnsNetworkSpec): void {
  const what = `HNS network ${JSON.stringify(spec.name)}`;
  if (typeof spec.name !== 'string' || !hnsNetworkName.test(spec.name)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot create ${what}: a network name has 1 to 64 letters, digits, "_", "." and "-" (the CNI config's "name")`,
    );
  }
  if (spec.type !== 'L2Bridge') {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot create ${what} of type ${JSON.stringify(spec.type)}: winfleet creates L2Bridge networks only (sdnbridge's)`,
    );
  }
  const subnet = parseIpv4Cidr(spec.addressPrefix);
  if (!subnet || subnet.address !== subnet.network || subnet.prefix < 8 || subnet.prefix > 30) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot create ${what} with address prefix ${JSON.stringify(spec.addressPrefix)}: give an IPv4 network of /8 to /30 such as 10.244.1.0/24`,
    );
  }
  const gateway = parseIpv4(spec.gateway);
  if (
    gateway === undefined ||
    !cidrContains(subnet, gateway) ||
    gateway === subnet.network ||
    gateway === lastAddress(subnet)
  ) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot create ${what} with gateway ${JSON.stringify(spec.gateway)}: give a host address inside ${spec.addressPrefix}, such as its first one`,
    );
  }
}

/**
 * The HCN settings (schema 2.0) of an L2Bridge or Overlay network with one subnet and its
 * default route via the gateway: hcsshim hcn/hcnnetwork.go HostComputeNetwork (Name, Type,
 * Ipams[].Subnets[].IpAddressPrefix and Routes[].NextHop/DestinationPrefix, SchemaVersion).
 */
export function hcnNetworkSettings(spec: HnsNetworkSpec): string {
  checkHnsNetworkSpec(spec);
  return JSON.stringify({
    SchemaVersion: { Major: 2, Minor: 0 },
    Name: spec.name,
    Type: spec.type,
    Ipams: [
      {
        Type: 'Static',
        Subnets: [
          {
            IpAddressPrefix: spec.addressPrefix,
            Routes: [{ NextHop: spec.gateway, DestinationPrefix: '0.0.0.0/0' }],
          },
        ],
      },
    ],
  });
}

/**
 * The script that creates the network unless one of that name exists, and prints
 * {"available":true,"created":bool,"network":{Id,Name,Type}} (an existing network is used as it
 * is, as sdnbridge's getOrCreateNetwork does). Windows' own HostNetworkingService module has no
 * New-HnsNetwork (only Get- and Remove- cmdlets: learn.microsoft.com/powershell/module/
 * hostnetworkingservice), so the network is created through the documented Host Compute
 * Network API, HcnCreateNetwork and HcnCloseNetwork of computenetwork.dll (Windows Server 2019
 * and later), with hcnNetworkSettings; a failed HRESULT stops the script with HCN's error record.
 */
export function createHnsNetworkScript(
  spec: HnsNetworkSpec,
  modulePaths = defaultHnsModulePaths,
): string {
  const settings = hcnNetworkSettings(spec);
  const select =
    '[pscustomobject]@{ Id = [string]$network.Id; Name = [string]$network.Name; Type = [string]$network.Type }';
  const find = `$network = @(Get-HnsNetwork | Where-Object { $_ -and ([string]$_.Name -eq ${quotePowerShellString(spec.name)}) }) | Select-Object -First 1`;
  return powerShellScript(
    ...loadHnsModule(modulePaths),
    find,
    '$created = $false',
    'if (-not $network) {',
    "  if (-not ('WinfleetHcn' -as [type])) {",
    '    Add-Type -TypeDefinition @(',
    "      'using System;',",
    "      'using System.Runtime.InteropServices;',",
    "      'public static class WinfleetHcn {',",
    `      '  [DllImport("computenetwork.dll", ExactSpelling = true)]',`,
    "      '  public static extern int HcnCreateNetwork(ref Guid id, [MarshalAs(UnmanagedType.LPWStr)] string settings, out IntPtr network, [MarshalAs(UnmanagedType.LPWStr)] out string errorRecord);',",
    `      '  [DllImport("computenetwork.dll", ExactSpelling = true)]',`,
    "      '  public static extern int HcnCloseNetwork(IntPtr network);',",
    "      '}'",
    '    ) -join [Environment]::NewLine',
    '  }',
    '  $id = [Guid]::NewGuid()',
    '  $handle = [IntPtr]::Zero',
    '  $errorRecord = $null',
    `  $hr = [WinfleetHcn]::HcnCreateNetwork([ref]$id, ${quotePowerShellString(settings)}, [ref]$handle, [ref]$errorRecord)`,
    "  if ($hr -ne 0) { throw ('HcnCreateNetwork failed with HRESULT 0x{0:X8}: {1}' -f $hr, $errorRecord) }",
    '  [void][WinfleetHcn]::HcnCloseNetwork($handle)',
    `  ${find}`,
    '  $created = $true',
    '}',
    writeJson(`@{ available = $true; created = $created; network = ${select} }`, 3),
  );
}

/** Reads what `createHnsNetworkScript` printed. */
export function parseHnsCreateOutput(
  stdout: string,
): ScriptResult<{ created: boolean; network: HnsNetwork }> {
  const value = readAvailability(stdout, 'the HNS network creation');
  if (value.available === false) return { available: false, tried: tried(value) };
  if (typeof value.created !== 'boolean') {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the HNS network creation from ${JSON.stringify(value)}: "created" is not true or false`,
    );
  }
  const [network] = parseHnsNetworks(value.network);
  if (!network || listItems(value.network).length !== 1) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the HNS network creation from ${JSON.stringify(value)}: expected one network`,
    );
  }
  return { available: true, created: value.created, network };
}

// Endpoints (stale-endpoint detection, src/node-health/stale-endpoints.ts).
//
// Get-HnsEndpoint prints HNS v1 endpoint objects from the HostNetworkingService module (hcsshim
// internal/hns/hnsendpoint.go HNSEndpoint: ID, Name, VirtualNetwork, VirtualNetworkName,
// IPAddress, IsRemoteEndpoint — the last one left out when false) and HCN v2 objects from
// hns.v2.psm1 (hcsshim hcn/hcnendpoint.go HostComputeEndpoint: ID, Name, HostComputeNetwork,
// IpConfigurations[].IpAddress, Flags with bit 1 EndpointFlagsRemoteEndpoint). The script maps
// both to one flat shape, every property cast to a string or a boolean, so the parser reads one
// thing. Both modules export Remove-HnsEndpoint, which takes the piped endpoint objects
// (microsoft/SDN's Kubernetes/flannel/l2bridge/reset.ps1 runs `Get-HNSEndpoint |
// Remove-HNSEndpoint`). Only a real host proves the mapping of both flavours.

/** At most this many endpoints are read; more is refused as not an HNS listing. */
export const maxHnsEndpoints = 16384;

/** The script that prints {"available":true,"endpoints":[{Id,Name,NetworkId,IpAddress,Remote}...]}. */
export function listHnsEndpointsScript(modulePaths = defaultHnsModulePaths): string {
  return powerShellScript(
    ...loadHnsModule(modulePaths, 'Get-HnsEndpoint'),
    '$endpoints = @(Get-HnsEndpoint | Where-Object { $_ -and $_.ID } | ForEach-Object {',
    "  $ip = ''",
    '  if ($_.IPAddress) { $ip = [string]$_.IPAddress }',
    '  elseif ($_.IpConfigurations) { $ip = [string](@($_.IpConfigurations)[0].IpAddress) }',
    '  $networkId = [string]$_.VirtualNetwork',
    '  if (-not $networkId) { $networkId = [string]$_.HostComputeNetwork }',
    '  $remote = [bool]$_.IsRemoteEndpoint',
    '  if ($_.Flags -is [int] -or $_.Flags -is [long]) { $remote = $remote -or (($_.Flags -band 1) -ne 0) }',
    '  [pscustomobject]@{ Id = [string]$_.ID; Name = [string]$_.Name; NetworkId = $networkId; IpAddress = $ip; Remote = $remote }',
    '})',
    writeJson('@{ available = $true; endpoints = @($endpoints) }', 4),
  );
}

/**
 * The script that removes the endpoint with `id` (case-insensitive) only while it still has
 * `ipAddress` (so an id that was read before and now means something else is not removed), and
 * prints {"available":true,"removed":n}; a missing endpoint is removed 0 times.
 */
export function removeHnsEndpointScript(
  id: string,
  ipAddress: string,
  modulePaths = defaultHnsModulePaths,
): string {
  if (!guid.test(id)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot remove HNS endpoint "${id}": an HNS endpoint id is a GUID such as "5f0ba94e-3f4b-4c0e-8c79-4e5b3c1d8b21"`,
    );
  }
  if (parseIpv4(ipAddress) === undefined || formatIpv4(parseIpv4(ipAddress)!) !== ipAddress) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot remove HNS endpoint "${id}" at ${JSON.stringify(ipAddress)}: give its IPv4 address in dotted form, such as 10.244.1.7`,
    );
  }
  const address =
    "$ip = ''; if ($_.IPAddress) { $ip = [string]$_.IPAddress } elseif ($_.IpConfigurations) { $ip = [string](@($_.IpConfigurations)[0].IpAddress) }";
  return powerShellScript(
    ...loadHnsModule(modulePaths, 'Get-HnsEndpoint'),
    `$targets = @(Get-HnsEndpoint | Where-Object { $_ -and ([string]$_.ID -eq ${quotePowerShellString(id)}) } | Where-Object { ${address}; $ip -eq ${quotePowerShellString(ipAddress)} })`,
    'if ($targets.Count -gt 0) { $targets | Remove-HnsEndpoint }',
    writeJson('@{ available = $true; removed = $targets.Count }', 2),
  );
}

const endpointName = /^[\x20-\x7e]{0,256}$/;

/**
 * Endpoints as the list script prints them (in any list shape `listItems` accepts), strictly:
 * an Id that is a GUID, a NetworkId that is a GUID or empty, an IpAddress that is a dotted IPv4
 * address or empty (an IPv6-only endpoint), a printable Name of at most 256 characters and a
 * boolean Remote; anything else is refused, naming the endpoint.
 * @package
 */
export function parseHnsEndpoints(value: unknown): HnsEndpoint[] {
  const items = listItems(value);
  if (items.length > maxHnsEndpoints) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read HNS endpoints: ${items.length} of them, more than ${maxHnsEndpoints}`,
    );
  }
  return items.map((item, index) => {
    const refuse = (why: string): never => {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot read HNS endpoint ${index} ${JSON.stringify(item)?.slice(0, 200)}: ${why}`,
      );
    };
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      return refuse('expected an object');
    const fields = item as Record<string, unknown>;
    const keys = Object.keys(fields).sort().join(',');
    if (keys !== 'Id,IpAddress,Name,NetworkId,Remote')
      refuse('expected exactly Id, Name, NetworkId, IpAddress and Remote');
    const { Id, Name, NetworkId, IpAddress, Remote } = fields;
    if (typeof Id !== 'string' || !guid.test(Id)) refuse('its Id is not a GUID');
    if (typeof NetworkId !== 'string' || (NetworkId !== '' && !guid.test(NetworkId)))
      refuse('its NetworkId is not a GUID');
    if (typeof Name !== 'string' || !endpointName.test(Name))
      refuse('its Name is not up to 256 printable characters');
    if (typeof Remote !== 'boolean') refuse('its Remote is not true or false');
    if (typeof IpAddress !== 'string') refuse('its IpAddress is not a string');
    const ip = IpAddress as string;
    if (ip !== '') {
      const parsed = parseIpv4(ip);
      if (parsed === undefined || formatIpv4(parsed) !== ip)
        refuse('its IpAddress is not a dotted IPv4 address');
    }
    return {
      id: Id as string,
      name: Name as string,
      networkId: NetworkId as string,
      ipAddress: ip,
      remote: Remote as boolean,
    };
  });
}

/** Reads what `listHnsEndpointsScript` printed. */
export function parseHnsEndpointListOutput(
  stdout: string,
): ScriptResult<{ endpoints: HnsEndpoint[] }> {
  const value = readAvailability(stdout, 'HNS endpoints');
  if (value.available === false) return { available: false, tried: tried(value) };
  return { available: true, endpoints: parseHnsEndpoints(value.endpoints) };
}

/** Reads what `removeHnsEndpointScript` printed. */
export function parseHnsEndpointRemoveOutput(stdout: string): ScriptResult<{ removed: number }> {
  const value = readAvailability(stdout, 'the HNS endpoint removal');
  if (value.available === false) return { available: false, tried: tried(value) };
  const removed = value.removed;
  if (typeof removed !== 'number' || !Number.isInteger(removed) || removed < 0 || removed > 1) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read the HNS endpoint removal from ${JSON.stringify(value)}: "removed" is not 0 or 1`,
    );
  }
  return { available: true, removed };
}
