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
  /** Hostname, OS version, free disk on C:, IPv4 addresses, PowerShell version. */
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
   * overwrite one, but lets it be renamed, so the old file moves aside to `<target>.old`.
   */
  'replace-file': { source: string; target: string };
}

export type RemoteScriptName = keyof RemoteScripts;

/** What `host-facts` prints. */
export interface HostFacts {
  hostname: string;
  osVersion: { major: number; minor: number; build: number; ubr: number; productName: string };
  freeBytes: number;
  addresses: string[];
  powerShellVersion: string;
}

const bodies: { [K in RemoteScriptName]: string[] } = {
  'host-facts': [
    "$cv = Get-ItemProperty -Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'",
    "$drive = Get-PSDrive -Name 'C'",
    "$addresses = @(Get-NetIPAddress -AddressFamily IPv4 | Where-Object { $_.IPAddress -ne '127.0.0.1' } | ForEach-Object { $_.IPAddress })",
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
    '  addresses = $addresses',
    '  powerShellVersion = $PSVersionTable.PSVersion.ToString()',
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
    `$old = ${argsVariable}.target + '.old'`,
    'if (Test-Path -LiteralPath $old) {',
    '  Remove-Item -LiteralPath $old -Force -ErrorAction SilentlyContinue',
    '}',
    `if (Test-Path -LiteralPath ${argsVariable}.target) {`,
    `  Move-Item -LiteralPath ${argsVariable}.target -Destination $old -Force`,
    '}',
    `Move-Item -LiteralPath ${argsVariable}.source -Destination ${argsVariable}.target`,
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
