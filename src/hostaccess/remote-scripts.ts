/**
 * The catalog of PowerShell scripts the operator runs on a Windows host over SSH. The operator
 * does as little as possible remotely: read facts, compare file hashes, make a directory and
 * lock it down to SYSTEM and Administrators, run the agent (which does the real work locally) and remove what it copied. Each script starts
 * with a marker line naming it and reads its arguments from one JSON literal, so a reader (or
 * a simulated host) can tell which catalog entry it is and with what arguments.
 */

import { WinfleetError } from '../errors/catalog.ts';
import {
  powerShellCommandLine,
  powerShellScript,
  quotePowerShellString,
  writeJson,
} from '../powershell/powershell.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import { domainScriptBodies } from './domain-scripts.ts';
import {
  type HostNetwork,
  hostNetworkScriptLines,
  readHostNetwork,
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
   * What `winfleet check` looks at before a join besides host-facts (src/cli/check/
   * preflight-facts.ts reads it): Win32_ComputerSystem (NetBIOS name, domain membership,
   * logical processors, physical memory), whether the SSH session's token is in
   * BUILTIN\Administrators (by SID), the host's UTC clock, who listens on TCP 10250 and the
   * firewall rules for that port, the WinHTTP proxy and the machine's proxy variables.
   */
  'preflight-facts': Record<string, never>;
  /**
   * What Hyper-V isolation needs (`winfleet check --hyperv`; preflight-facts.ts reads it): the
   * Hyper-V role's InstallState, Win32_ComputerSystem.HypervisorPresent and
   * Win32_Processor.VirtualizationFirmwareEnabled.
   */
  'hyperv-facts': Record<string, never>;
  /**
   * Schedules a restart in 5 s with shutdown.exe (planned, "Operating System:
   * Reconfiguration", p:2:4), so the command returns before the session drops; a restart
   * already scheduled (1190) is fine.
   */
  'restart-host': Record<string, never>;
  /**
   * One item of a diagnostics bundle (`winfleet diagnose`): a fixed command per item
   * (diagnosticItems), its output as text, at most diagnosticTextLimit characters (the end
   * of logs and event lists, the start of anything else). `hours` bounds the event logs.
   */
  diagnostic: { item: DiagnosticItem; hours: number };
  /** Rename-Computer -NewName (a workgroup host); takes effect at the next boot (domain-scripts.ts). */
  'rename-computer': { newName: string };
  /**
   * Add-Computer -DomainName [-OUPath] with the credentials read from stdin; takes effect at the
   * next boot (domain-scripts.ts).
   */
  'join-domain': { domain: string; organizationalUnit?: string };
  /** Remove-Computer to WORKGROUP with the credentials read from stdin (domain-scripts.ts). */
  'leave-domain': { domain: string };
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
  /** Win32_ComputerSystem.PartOfDomain; absent from hosts that predate it. */
  partOfDomain?: boolean;
  /** Win32_ComputerSystem.Domain: the AD domain's DNS name, or the workgroup's name. */
  domain?: string;
  /**
   * The hostname the host takes at its next boot (Tcpip\Parameters "NV Hostname", which
   * Rename-Computer sets); equal to `hostname` when no rename is pending.
   */
  pendingHostname?: string;
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

// Diagnostics (`winfleet diagnose`).

/**
 * The node services `sc.exe qc`/`sc.exe query` are asked about: HNS (Windows'), the payload's
 * services (node-services.ts) and the agent's.
 */
export const diagnosticServices = [
  'hns',
  'containerd',
  'kubelet',
  'kube-proxy',
  'csi-proxy',
  'windows_exporter',
  'winfleet-agent',
] as const;

/** The event logs the `events-*` items read, the last `hours` of each. */
export const diagnosticEventLogs = {
  'events-system': 'System',
  'events-application': 'Application',
  'events-hns': 'Microsoft-Windows-Host-Network-Service-Admin',
} as const;

/**
 * The files the `log-*`, `config-*` and `agent-status` items read (the last
 * diagnosticTailLines lines of each). Never the kubeconfigs or bootstrap.json: they hold
 * credentials. agent.json is the agent's configuration without the bootstrap token.
 */
export const diagnosticFiles = {
  'log-kubelet': [`${hostPaths.logs}\\kubelet.log`],
  'log-kube-proxy': [`${hostPaths.logs}\\kube-proxy.log`],
  'log-containerd': [`${hostPaths.logs}\\containerd.log`],
  'log-csi-proxy': [`${hostPaths.logs}\\csi-proxy.log`],
  'log-agent': [`${hostPaths.agentLogs}\\winfleet-agent.log`],
  'config-kubelet': [hostPaths.kubeletConfig],
  'config-containerd': [hostPaths.containerdConfig],
  'config-cni': [hostPaths.cniConfig],
  'agent-status': [hostPaths.state, hostPaths.agentConfig, hostPaths.servicesManifest],
} as const;

const commandItems = [
  'services',
  'hns',
  'ipconfig',
  'routes',
  'firewall',
  'excluded-ports',
  'os-version',
  'hotfixes',
] as const;

/** Every item, in the order a bundle lists them. */
export const diagnosticItems = [
  ...commandItems,
  ...(Object.keys(diagnosticEventLogs) as (keyof typeof diagnosticEventLogs)[]),
  ...(Object.keys(diagnosticFiles) as (keyof typeof diagnosticFiles)[]),
] as const;
export type DiagnosticItem = (typeof diagnosticItems)[number];

/** At most this many characters of an item come back (the rest is cut and said so). */
export const diagnosticTextLimit = 1_048_576;
/** Get-Content -Tail: the last lines of each file. */
export const diagnosticTailLines = 20_000;

const quote = quotePowerShellString;

/**
 * PowerShell lines (each indented by `indent`) that give every entry below the directory
 * `pathExpression` (not the directory itself, whose DACL the lines before set) to Administrators
 * and reset its DACL to what it inherits: `icacls <entry> /setowner *S-1-5-32-544 /T /Q` then
 * `icacls <entry> /reset /T /Q`. A folder a local user made in C:\k before the join (or an
 * image's, with its own protected DACL) would otherwise stay theirs, with the node's key or the
 * agent inside (https://learn.microsoft.com/windows-server/administration/windows-commands/icacls).
 * A failure of either (an entry icacls cannot reach) stops the script, naming the entry.
 */
export function resetChildrenSecurity(pathExpression: string, indent: string): string[] {
  return [
    `foreach ($child in @(Get-ChildItem -LiteralPath ${pathExpression} -Force)) {`,
    `  foreach ($icaclsArgs in @(@('/setowner', '*${administratorsSid}', '/T', '/Q'), @('/reset', '/T', '/Q'))) {`,
    '    $icaclsOutput = & icacls.exe $child.FullName @icaclsArgs 2>&1',
    "    if ($LASTEXITCODE -ne 0) { throw ('icacls ' + $child.FullName + ' ' + ($icaclsArgs -join ' ') + ' exited with code ' + $LASTEXITCODE + ': ' + (($icaclsOutput | Out-String).Trim())) }",
    '  }',
    '}',
  ].map((line) => `${indent}${line}`);
}
const outString = '| Out-String -Stream -Width 4096';

/** Whether a cut `diagnostic` item keeps its end (event logs, log files: the newest lines) rather than its start. */
export function diagnosticKeepsTail(item: DiagnosticItem): boolean {
  return (
    Object.hasOwn(diagnosticEventLogs, item) ||
    (Object.hasOwn(diagnosticFiles, item) && item.startsWith('log-'))
  );
}

/**
 * The `diagnostic` script: only the command of the item asked for (a whole catalog of them
 * would not fit cmd.exe's 8191-character command line once encoded), then the cut and the
 * JSON. An item outside diagnosticItems has no script (RangeError).
 */
function diagnosticBody({ item }: RemoteScripts['diagnostic']): string[] {
  let command: string[];
  const keepTail = diagnosticKeepsTail(item);
  if (Object.hasOwn(diagnosticEventLogs, item)) {
    const log = diagnosticEventLogs[item as keyof typeof diagnosticEventLogs];
    command = [
      `$hours = [int]${argsVariable}.hours`,
      `$events = @(Get-WinEvent -FilterHashtable @{ LogName = ${quote(log)}; StartTime = (Get-Date).AddHours(-$hours) } -ErrorAction SilentlyContinue | Sort-Object -Property TimeCreated)`,
      `$lines = @(${quote(`No events in ${log} in the last `)} + $hours + ' hours.')`,
      'if ($events.Count -gt 0) {',
      `  $lines = @($events | Format-List -Property @('TimeCreated', 'Id', 'LevelDisplayName', 'ProviderName', 'Message') ${outString})`,
      '}',
    ];
  } else if (Object.hasOwn(diagnosticFiles, item)) {
    const paths = diagnosticFiles[item as keyof typeof diagnosticFiles] as readonly string[];
    command = [
      `$lines = foreach ($path in @(${paths.map(quote).join(', ')})) {`,
      "  '==> ' + $path + ' <=='",
      '  if (Test-Path -LiteralPath $path -PathType Leaf) {',
      `    Get-Content -LiteralPath $path -Tail ${diagnosticTailLines}`,
      '  } else {',
      "    '(no such file)'",
      '  }',
      '}',
    ];
  } else {
    const commands: Record<(typeof commandItems)[number], string[]> = {
      services: [
        `$lines = foreach ($name in @(${diagnosticServices.map(quote).join(', ')})) {`,
        "  '> sc.exe qc ' + $name",
        '  & sc.exe qc $name',
        "  '> sc.exe query ' + $name",
        '  & sc.exe query $name',
        '}',
      ],
      hns: ['$lines = & hnsdiag.exe list all -d'],
      ipconfig: ['$lines = & ipconfig.exe /all'],
      routes: ['$lines = & route.exe print'],
      'excluded-ports': ['$lines = & netsh.exe int ipv4 show excludedportrange protocol=tcp'],
      firewall: [
        "$lines = Get-NetFirewallRule -Name 'winfleet-*' -ErrorAction SilentlyContinue | ForEach-Object {",
        '  $port = $_ | Get-NetFirewallPortFilter',
        "  [pscustomobject][ordered]@{ Name = $_.Name; DisplayName = $_.DisplayName; Description = $_.Description; Enabled = $_.Enabled; Profile = $_.Profile; Direction = $_.Direction; Action = $_.Action; Protocol = $port.Protocol; LocalPort = ($port.LocalPort -join ',') }",
        `} | Format-List ${outString}`,
      ],
      'os-version': [
        "$lines = Get-ItemProperty -Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion' |",
        `  Format-List -Property @('ProductName', 'EditionID', 'InstallationType', 'CurrentMajorVersionNumber', 'CurrentMinorVersionNumber', 'CurrentBuildNumber', 'UBR') ${outString}`,
      ],
      hotfixes: [`$lines = Get-HotFix | Format-Table -AutoSize ${outString}`],
    };
    if (!Object.hasOwn(commands, item))
      throw new WinfleetError(
        'WF_INVARIANT',
        `Cannot make a diagnostic script for item ${JSON.stringify(item)}; use one of ${diagnosticItems.join(', ')}`,
      );
    command = commands[item as keyof typeof commands];
  }
  return [
    ...command,
    '$text = [string]::Join("`r`n", [string[]]@($lines))',
    '$length = $text.Length',
    `$truncated = $length -gt ${diagnosticTextLimit}`,
    'if ($truncated) {',
    `  $text = $text.Substring(${keepTail ? `$length - ${diagnosticTextLimit}` : '0'}, ${diagnosticTextLimit})`,
    '}',
    writeJson(
      `[ordered]@{ item = [string]${argsVariable}.item; length = $length; truncated = $truncated; text = $text }`,
      1,
    ),
  ];
}

const bodies: { [K in Exclude<RemoteScriptName, 'diagnostic'>]: string[] } = {
  'host-facts': [
    "$cv = Get-ItemProperty -Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'",
    "$drive = Get-PSDrive -Name 'C'",
    // Every IPv4 address with its interface, and the default routes: the operator picks the
    // node's address from them (node-address.ts), not whichever row comes first.
    ...hostNetworkScriptLines,
    // Server Manager's InstallState of the Containers feature; "Unknown" without Server
    // Manager (not Windows Server) or without such a feature.
    "$containersFeature = 'Unknown'",
    "if (Get-Command -Name 'Get-WindowsFeature' -ErrorAction SilentlyContinue) {",
    "  $feature = Get-WindowsFeature -Name 'Containers'",
    '  if ($feature) { $containersFeature = [string]$feature.InstallState }',
    '}',
    "$cs = Get-CimInstance -ClassName 'Win32_ComputerSystem'",
    "$tcpip = Get-ItemProperty -Path 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\Tcpip\\Parameters'",
    '$facts = [ordered]@{',
    '  hostname = [System.Net.Dns]::GetHostName()',
    '  partOfDomain = [bool]$cs.PartOfDomain',
    '  domain = [string]$cs.Domain',
    "  pendingHostname = [string]$tcpip.'NV Hostname'",
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
    // What was there before (a C:\k a local user pre-created, an image's) keeps its owner and
    // any protected DACL of its own: every entry below is given to Administrators and reset to
    // inherit only the DACL above (resetChildrenSecurity).
    ...resetChildrenSecurity(`${argsVariable}.path`, ''),
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
  'preflight-facts': [
    "$cs = Get-CimInstance -ClassName 'Win32_ComputerSystem'",
    // The token of this session, not the account's groups on paper: an account filtered by UAC
    // has Administrators only as a deny-only group, and IsInRole says false.
    '$identity = [System.Security.Principal.WindowsIdentity]::GetCurrent()',
    '$principal = New-Object -TypeName System.Security.Principal.WindowsPrincipal -ArgumentList $identity',
    '$listeners = @(Get-NetTCPConnection -LocalPort 10250 -State Listen -ErrorAction SilentlyContinue | ForEach-Object {',
    '  [ordered]@{ localAddress = [string]$_.LocalAddress; owningProcess = [int]$_.OwningProcess; processName = [string](Get-Process -Id $_.OwningProcess -ErrorAction SilentlyContinue).ProcessName }',
    '})',
    "$rules = @(Get-NetFirewallPortFilter -Protocol 'TCP' | Where-Object { @($_.LocalPort) -contains '10250' } | Get-NetFirewallRule | ForEach-Object {",
    "  [ordered]@{ name = [string]$_.Name; enabled = ([string]$_.Enabled -eq 'True'); direction = [string]$_.Direction; action = [string]$_.Action }",
    '})',
    // What netsh winhttp show proxy prints, from the registry value it reads (its text is
    // localized, the value is not): flags at offset 8 (2: a proxy is set), then the proxy and
    // the bypass list, each a 4-byte length and ASCII characters.
    '$winHttp = [ordered]@{ proxyServer = $null; bypassList = $null }',
    "$raw = (Get-ItemProperty -Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Internet Settings\\Connections' -ErrorAction SilentlyContinue).WinHttpSettings",
    'if ($raw.Length -ge 20 -and ([System.BitConverter]::ToInt32($raw, 8) -band 2)) {',
    '  $n = [System.BitConverter]::ToInt32($raw, 12)',
    '  if ($n -gt 0 -and 20 + $n -le $raw.Length) {',
    '    $winHttp.proxyServer = [System.Text.Encoding]::ASCII.GetString($raw, 16, $n)',
    '    $m = [System.BitConverter]::ToInt32($raw, 16 + $n)',
    '    if ($m -gt 0 -and 20 + $n + $m -le $raw.Length) { $winHttp.bypassList = [System.Text.Encoding]::ASCII.GetString($raw, 20 + $n, $m) }',
    '  }',
    '}',
    '$proxyEnvironment = [ordered]@{}',
    "foreach ($name in @('HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY')) { $proxyEnvironment[$name] = [System.Environment]::GetEnvironmentVariable($name, 'Machine') }",
    '$facts = [ordered]@{',
    '  netbiosName = [string]$cs.Name',
    '  partOfDomain = [bool]$cs.PartOfDomain',
    '  domain = [string]$cs.Domain',
    '  logicalProcessors = [int]$cs.NumberOfLogicalProcessors',
    '  memoryBytes = [long]$cs.TotalPhysicalMemory',
    '  userName = [string]$identity.Name',
    `  administrator = $principal.IsInRole((New-Object -TypeName System.Security.Principal.SecurityIdentifier -ArgumentList ${quotePowerShellString(administratorsSid)}))`,
    "  utcNow = [System.DateTime]::UtcNow.ToString('o')",
    '  listeners10250 = $listeners',
    '  firewallRules10250 = $rules',
    '  winHttpProxy = $winHttp',
    '  proxyEnvironment = $proxyEnvironment',
    '}',
    writeJson('$facts'),
  ],
  'hyperv-facts': [
    // The role's InstallState ("Unknown" without Server Manager), whether a hypervisor runs,
    // and virtualization in firmware (in a VM: nested virtualization exposed).
    "$hyperVFeature = 'Unknown'",
    "if (Get-Command -Name 'Get-WindowsFeature' -ErrorAction SilentlyContinue) {",
    "  $feature = Get-WindowsFeature -Name 'Hyper-V'",
    '  if ($feature) { $hyperVFeature = [string]$feature.InstallState }',
    '}',
    "$cs = Get-CimInstance -ClassName 'Win32_ComputerSystem'",
    "$cpu = @(Get-CimInstance -ClassName 'Win32_Processor')[0]",
    '$hyperV = [ordered]@{ feature = $hyperVFeature; hypervisorPresent = [bool]$cs.HypervisorPresent; virtualizationFirmwareEnabled = [bool]$cpu.VirtualizationFirmwareEnabled }',
    writeJson('$hyperV'),
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
  ...domainScriptBodies,
};

/** The full script for a catalog entry with its arguments. */
export function remoteScript<K extends RemoteScriptName>(name: K, args: RemoteScripts[K]): string {
  return powerShellScript(
    `${scriptMarker}${name}`,
    `${argsVariable} = ConvertFrom-Json -InputObject ${quotePowerShellString(JSON.stringify(args))}`,
    ...(name === 'diagnostic'
      ? diagnosticBody(args as RemoteScripts['diagnostic'])
      : bodies[name as Exclude<RemoteScriptName, 'diagnostic'>]),
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
  if (!(name in bodies) && name !== 'diagnostic') return undefined;
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
    throw new WinfleetError(
      'WF_REMOTE_COMMAND_FAILED',
      `Cannot read host-facts from ${JSON.stringify(value)?.slice(0, 200)}: expected a JSON object`,
    );
  }
  const report = value as HostFactsReport;
  const network = readHostNetwork(report);
  return { ...report, ...network, addresses: usableAddresses(network) };
}

/** What `diagnostic` prints. */
export interface DiagnosticOutput {
  item: DiagnosticItem;
  /** Characters before any cut. */
  length: number;
  truncated: boolean;
  text: string;
}

/**
 * Reads what `diagnostic` printed, strictly: exactly the four fields, the item asked for, a
 * text within the limit and consistent with `length` and `truncated`.
 */
export function readDiagnostic(value: unknown, asked: DiagnosticItem): DiagnosticOutput {
  const fail = (why: string) =>
    new WinfleetError(
      'WF_REMOTE_COMMAND_FAILED',
      `Cannot read the host's diagnostic "${asked}": ${why}`,
    );
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw fail(`expected a JSON object, got ${JSON.stringify(value)?.slice(0, 80)}`);
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort().join(',');
  if (keys !== 'item,length,text,truncated')
    throw fail(`expected the fields item, length, truncated and text, got ${keys || 'none'}`);
  if (record.item !== asked) throw fail(`it answered for item ${JSON.stringify(record.item)}`);
  const { length, truncated, text } = record;
  if (typeof text !== 'string') throw fail('"text" is not a string');
  if (typeof truncated !== 'boolean') throw fail('"truncated" is not true or false');
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0)
    throw fail('"length" is not a whole number');
  if (text.length > diagnosticTextLimit)
    throw fail(`the text is longer than the limit of ${diagnosticTextLimit} characters`);
  if (truncated ? length <= text.length : length !== text.length)
    throw fail(`"length" ${length} does not match the text of ${text.length} characters`);
  return { item: asked, length, truncated, text };
}
