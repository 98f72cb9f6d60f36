/**
 * The catalog of PowerShell scripts the operator runs on a Windows host over SSH. The operator
 * does as little as possible remotely: read facts, compare file hashes, make a directory and
 * lock it down to SYSTEM and Administrators, run the agent (which does the real work locally) and remove what it copied. Each script starts
 * with a marker line naming it and reads its arguments from one JSON literal, so a reader (or
 * a simulated host) can tell which catalog entry it is and with what arguments.
 */
import {
  powerShellCommandLine,
  powerShellScript,
  quotePowerShellString,
  writeJson,
} from '../powershell/powershell.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import {
  type HostDefaultRoute,
  type HostIpAddress,
  type HostNetwork,
  usableAddresses,
} from './node-address.ts';

/** Well-known SIDs: LocalSystem and BUILTIN\Administrators (never their localized names). */
export const systemSid = 'S-1-5-18';
export const administratorsSid = 'S-1-5-32-544';

/** The agent `run-agent` starts. */
export const agentExecutable = hostPaths.agentExe;

/** The marker line: `# winfleet-script: <name>`. */
export const scriptMarker = '# winfleet-script: ';
/** The arguments line: `$winfleetArgs = ConvertFrom-Json -InputObject '<json>'`. */
export const argsVariable = '$winfleetArgs';

export interface RemoteScripts {
  /**
   * Hostname, OS version, free disk on C:, IPv4 addresses with their interfaces, the default
   * routes, PowerShell version.
   */
  'host-facts': Record<string, never>;
  /** SHA-256 (lower-case hex) of each path, or null when the file is missing. */
  'file-hashes': { paths: string[] };
  /**
   * Creates `path` and its missing parents, appending each directory it created to the file
   * `record` (one per line), so cleanup can later remove exactly what winfleet created.
   */
  'ensure-directory': { path: string; record: string };
  /**
   * Gives the existing directory `path` a protected DACL: inheritance from its parent off,
   * full control (inherited by everything below) for SYSTEM and Administrators only, owner
   * Administrators. By well-known SID, so it works on every display language.
   */
  'protect-directory': { path: string };
  /** Runs the agent with `args`; its stdout/stderr and exit code pass through. */
  'run-agent': { args: string[] };
  /** Removes a file or directory tree; missing is fine. */
  'remove-path': { path: string };
  /**
   * Puts `source` in place of `target`, which may be a running executable: Windows will not
   * overwrite one, but lets it be renamed, so the old file moves aside to a name of its own,
   * `<target>.old-<n>` (the one before may still run: a second upgrade before a restart), and
   * goes at once if nothing runs it. Copies of earlier replacements that nothing runs any
   * more (and the fixed `<target>.old` of earlier versions) are removed first.
   */
  'replace-file': { source: string; target: string };
  /**
   * Install-WindowsFeature: prints {success, restartNeeded ("Yes"/"No"/"Maybe"), exitCode}.
   * Only the Containers feature is installed (the join's; host-bootstrap.ts).
   */
  'install-windows-feature': { name: 'Containers' };
  /**
   * Schedules a restart in 5 s with shutdown.exe (planned, "Operating System:
   * Reconfiguration", p:2:4), so the command returns before the session drops; a restart
   * already scheduled (1190) is fine.
   */
  'restart-host': Record<string, never>;
}

export type RemoteScriptName = keyof RemoteScripts;

/** What `host-facts` prints. */
export interface HostFactsReport extends HostNetwork {
  hostname: string;
  osVersion: { major: number; minor: number; build: number; ubr: number; productName: string };
  freeBytes: number;
  powerShellVersion: string;
  /**
   * The Containers feature's InstallState (Installed, Available, InstallPending, Removed,
   * UninstallPending), or "Unknown" where Get-WindowsFeature is missing.
   */
  containersFeature: string;
  /**
   * When the host last booted (Win32_OperatingSystem.LastBootUpTime, ISO 8601 UTC); absent
   * where the host does not report it. The Containers feature step uses it to tell whether
   * the restart it asked for has happened (containers-feature.ts).
   */
  lastBootTime?: string;
}

/** The host's facts as the operator uses them. */
export interface HostFacts extends HostFactsReport {
  /** Usable IPv4 addresses, the default route's first (node-address.ts). */
  addresses: string[];
}

const bodies: { [K in RemoteScriptName]: string[] } = {
  'host-facts': [
    "$cv = Get-ItemProperty -Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'",
    "$drive = Get-PSDrive -Name 'C'",
    // Every IPv4 address with its interface, and the default routes: the operator picks the
    // node's address from them (node-address.ts), not whichever row comes first.
    '$ipAddresses = @(Get-NetIPAddress -AddressFamily IPv4 | ForEach-Object {',
    '  [ordered]@{ address = [string]$_.IPAddress; interfaceIndex = [int]$_.InterfaceIndex; interfaceAlias = [string]$_.InterfaceAlias; addressState = [string]$_.AddressState }',
    '})',
    "$defaultRoutes = @(Get-NetRoute -AddressFamily IPv4 -DestinationPrefix '0.0.0.0/0' -PolicyStore ActiveStore -ErrorAction SilentlyContinue | ForEach-Object {",
    '  [ordered]@{ interfaceIndex = [int]$_.InterfaceIndex; routeMetric = [int]$_.RouteMetric; interfaceMetric = [int]$_.InterfaceMetric }',
    '})',
    // Server Manager's InstallState of the Containers feature; "Unknown" without Server
    // Manager (not Windows Server) or without such a feature.
    "$containersFeature = 'Unknown'",
    "if (Get-Command -Name 'Get-WindowsFeature' -ErrorAction SilentlyContinue) {",
    "  $feature = Get-WindowsFeature -Name 'Containers'",
    '  if ($feature) { $containersFeature = [string]$feature.InstallState }',
    '}',
    '$facts = [ordered]@{',
    '  hostname = [System.Net.Dns]::GetHostName()',
    '  osVersion = [ordered]@{',
    '    major = [int]$cv.CurrentMajorVersionNumber',
    '    minor = [int]$cv.CurrentMinorVersionNumber',
    '    build = [int]$cv.CurrentBuildNumber',
    '    ubr = [int]$cv.UBR',
    '    productName = [string]$cv.ProductName',
    '  }',
    '  freeBytes = [long]$drive.Free',
    '  ipAddresses = $ipAddresses',
    '  defaultRoutes = $defaultRoutes',
    '  powerShellVersion = $PSVersionTable.PSVersion.ToString()',
    '  containersFeature = $containersFeature',
    "  lastBootTime = (Get-CimInstance -ClassName 'Win32_OperatingSystem').LastBootUpTime.ToUniversalTime().ToString('o')",
    '}',
    writeJson('$facts'),
  ],
  'file-hashes': [
    '$hashes = [ordered]@{}',
    `foreach ($path in ${argsVariable}.paths) {`,
    '  if (Test-Path -LiteralPath $path -PathType Leaf) {',
    '    $hashes[$path] = (Get-FileHash -LiteralPath $path -Algorithm SHA256).Hash.ToLowerInvariant()',
    '  } else {',
    '    $hashes[$path] = $null',
    '  }',
    '}',
    writeJson('$hashes'),
  ],
  'ensure-directory': [
    '$missing = @()',
    `$dir = ${argsVariable}.path`,
    'while ($dir -and -not (Test-Path -LiteralPath $dir)) {',
    '  $missing = @($dir) + $missing',
    '  $dir = Split-Path -Path $dir -Parent',
    '}',
    'foreach ($d in $missing) {',
    '  New-Item -ItemType Directory -Path $d | Out-Null',
    '}',
    'if ($missing.Count -gt 0) {',
    `  Add-Content -LiteralPath ${argsVariable}.record -Value $missing`,
    '}',
    writeJson('@{ created = @($missing) }'),
  ],
  'protect-directory': [
    '$acl = New-Object -TypeName System.Security.AccessControl.DirectorySecurity',
    // Protected: nothing inherited from C:\ (whose Users and Authenticated Users entries
    // would let any local account read the node key or plant binaries), none kept.
    '$acl.SetAccessRuleProtection($true, $false)',
    `$acl.SetOwner((New-Object -TypeName System.Security.Principal.SecurityIdentifier -ArgumentList ${quotePowerShellString(administratorsSid)}))`,
    `foreach ($sid in @(${quotePowerShellString(systemSid)}, ${quotePowerShellString(administratorsSid)})) {`,
    '  $identity = New-Object -TypeName System.Security.Principal.SecurityIdentifier -ArgumentList $sid',
    "  $rule = New-Object -TypeName System.Security.AccessControl.FileSystemAccessRule -ArgumentList $identity, 'FullControl', 'ContainerInherit, ObjectInherit', 'None', 'Allow'",
    '  $acl.AddAccessRule($rule)',
    '}',
    `Set-Acl -LiteralPath ${argsVariable}.path -AclObject $acl`,
    writeJson('@{ ok = $true }'),
  ],
  'run-agent': [
    `$agent = ${quotePowerShellString(agentExecutable)}`,
    `$agentArgs = @(${argsVariable}.args)`,
    '& $agent @agentArgs',
    'exit $LASTEXITCODE',
  ],
  'replace-file': [
    `$target = ${argsVariable}.target`,
    '$leaf = Split-Path -Path $target -Leaf',
    '$copies = @(Get-ChildItem -LiteralPath (Split-Path -Path $target -Parent) -Force | Where-Object {',
    "  $_.Name.StartsWith($leaf + '.old', [System.StringComparison]::OrdinalIgnoreCase) -and $_.Name.Substring($leaf.Length) -match '^\\.old(-\\d+)?$'",
    '})',
    'foreach ($copy in $copies) {',
    '  Remove-Item -LiteralPath $copy.FullName -Force -ErrorAction SilentlyContinue',
    '}',
    'if (Test-Path -LiteralPath $target) {',
    '  $n = [System.DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()',
    "  while (Test-Path -LiteralPath ($target + '.old-' + $n)) { $n++ }",
    "  $old = $target + '.old-' + $n",
    '  Move-Item -LiteralPath $target -Destination $old',
    '  Remove-Item -LiteralPath $old -Force -ErrorAction SilentlyContinue',
    '}',
    `Move-Item -LiteralPath ${argsVariable}.source -Destination $target`,
    writeJson('@{ ok = $true }'),
  ],
  'install-windows-feature': [
    `$result = Install-WindowsFeature -Name ${argsVariable}.name`,
    writeJson(
      '[ordered]@{ success = [bool]$result.Success; restartNeeded = [string]$result.RestartNeeded; exitCode = [string]$result.ExitCode }',
    ),
  ],
  'restart-host': [
    "& shutdown.exe /r /t 5 /d p:2:4 /c 'winfleet: finishing the installation of a Windows feature'",
    'if ($LASTEXITCODE -ne 0 -and $LASTEXITCODE -ne 1190) {',
    "  throw ('shutdown.exe /r exited with ' + $LASTEXITCODE)",
    '}',
    writeJson('@{ ok = $true }'),
  ],
  'remove-path': [
    `if (Test-Path -LiteralPath ${argsVariable}.path) {`,
    `  Remove-Item -LiteralPath ${argsVariable}.path -Recurse -Force`,
    '}',
    writeJson('@{ ok = $true }'),
  ],
};

/** The full script for a catalog entry with its arguments. */
export function remoteScript<K extends RemoteScriptName>(name: K, args: RemoteScripts[K]): string {
  return powerShellScript(
    `${scriptMarker}${name}`,
    `${argsVariable} = ConvertFrom-Json -InputObject ${quotePowerShellString(JSON.stringify(args))}`,
    ...bodies[name],
  );
}

/** The SSH command line (powershell.exe -EncodedCommand …) for a catalog entry. */
export function remoteCommand<K extends RemoteScriptName>(name: K, args: RemoteScripts[K]): string {
  return powerShellCommandLine(remoteScript(name, args));
}

/** Reads the catalog name and arguments back out of a decoded script (simulated hosts use it). */
export function identifyRemoteScript(
  script: string,
): { name: RemoteScriptName; args: unknown } | undefined {
  const marker = script.split('\n').find((line) => line.startsWith(scriptMarker));
  if (!marker) return undefined;
  const name = marker.slice(scriptMarker.length).trim() as RemoteScriptName;
  if (!(name in bodies)) return undefined;
  const argsLine = script
    .split('\n')
    .find((line) => line.startsWith(`${argsVariable} = ConvertFrom-Json -InputObject '`));
  if (!argsLine) return undefined;
  const literal = argsLine
    .slice(argsLine.indexOf("'") + 1, argsLine.lastIndexOf("'"))
    .replaceAll("''", "'");
  return { name, args: JSON.parse(literal) };
}

/**
 * Reads what `host-facts` printed: its network tables strictly (a host's output is checked
 * before anything is chosen from it), the addresses it can be reached at worked out from them.
 * Windows PowerShell 5.1 prints a one-element list as a bare object and an empty one as null;
 * both are accepted.
 */
export function readHostFacts(value: unknown): HostFacts {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SyntaxError(
      `Cannot read host-facts from ${JSON.stringify(value)?.slice(0, 200)}: expected a JSON object`,
    );
  }
  const report = value as HostFactsReport;
  const network: HostNetwork = {
    ipAddresses: rows(report.ipAddresses, 'ipAddresses').map(ipAddressRow),
    defaultRoutes: rows(report.defaultRoutes, 'defaultRoutes').map(defaultRouteRow),
  };
  return { ...report, ...network, addresses: usableAddresses(network) };
}

function rows(value: unknown, field: string): Record<string, unknown>[] {
  const list = value === null || value === undefined ? [] : Array.isArray(value) ? value : [value];
  return list.map((row, index) => {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw new SyntaxError(
        `Cannot read host-facts ${field}[${index}] ${JSON.stringify(row)}: expected an object`,
      );
    }
    return row as Record<string, unknown>;
  });
}

function field<T extends 'string' | 'number'>(
  row: Record<string, unknown>,
  name: string,
  type: T,
  where: string,
): T extends 'string' ? string : number {
  const value = row[name];
  if (typeof value !== type || (type === 'number' && !Number.isInteger(value))) {
    throw new SyntaxError(
      `Cannot read host-facts ${where}: "${name}" is ${JSON.stringify(value)}, expected ${type === 'number' ? 'an integer' : 'a string'}`,
    );
  }
  return value as T extends 'string' ? string : number;
}

function ipAddressRow(row: Record<string, unknown>, index: number): HostIpAddress {
  const where = `ipAddresses[${index}]`;
  return {
    address: field(row, 'address', 'string', where),
    interfaceIndex: field(row, 'interfaceIndex', 'number', where),
    interfaceAlias: field(row, 'interfaceAlias', 'string', where),
    addressState: field(row, 'addressState', 'string', where),
  };
}

function defaultRouteRow(row: Record<string, unknown>, index: number): HostDefaultRoute {
  const where = `defaultRoutes[${index}]`;
  return {
    interfaceIndex: field(row, 'interfaceIndex', 'number', where),
    routeMetric: field(row, 'routeMetric', 'number', where),
    interfaceMetric: field(row, 'interfaceMetric', 'number', where),
  };
}
