/**
 * Which PowerShell commands a simulated Windows Server has: the modules Windows PowerShell 5.1
 * finds in its module path on each release, the cmdlets winfleet's scripts use from each, and
 * the Windows feature a module comes with. A script that calls a command no module provides
 * (and that it does not define itself) fails as PowerShell fails it: CommandNotFoundException,
 * "The term 'X' is not recognized as the name of a cmdlet, function, script file, or operable
 * program. ..." (PowerShell's CommandDiscovery). Module auto-loading (PowerShell 3.0 and later)
 * makes every module of the path available without Import-Module, so "loaded" means "on the
 * host".
 *
 * The lists are the cmdlets of each module that winfleet's scripts use, plus a few neighbours;
 * they are not the modules' full export lists, except HostNetworkingService, whose list is
 * complete because its completeness is the point (it has no New-HnsNetwork). A command not in
 * the table fails here even where Windows has it: add it with its module page as the source
 * (docs/fidelity-ledger.md, "Added for issue 32"). `scriptCommandsByRelease` in the test scans
 * every script winfleet builds against this table, so a new script that calls a command no
 * Windows Server release provides fails CI.
 *
 * Not here on purpose: PSWindowsUpdate (Get-WindowsUpdate, Install-WindowsUpdate; a PowerShell
 * Gallery module no Windows ships: winfleet drives the Windows Update Agent's COM API,
 * Microsoft.Update.Session, instead) and microsoft/SDN's hns.psm1 / hns.v2.psm1 (New-HnsNetwork
 * and the rest; nothing installs them).
 */

/** The Windows Server releases winfleet supports. */
export const windowsServerReleases = ['2019', '2022', '2025'] as const;
export type WindowsServerRelease = (typeof windowsServerReleases)[number];

export interface PowerShellModule {
  readonly name: string;
  /** The module's reference page (its cmdlet list). */
  readonly source: string;
  /** The releases on which Windows ships it. */
  readonly releases: readonly WindowsServerRelease[];
  /** The Windows feature that brings the module; absent: always there. */
  readonly feature?: string;
  readonly cmdlets: readonly string[];
}

const all = windowsServerReleases;

/** The table: module, source, releases, feature, cmdlets. */
export const powerShellModules: readonly PowerShellModule[] = [
  {
    name: 'Microsoft.PowerShell.Core',
    source:
      'https://learn.microsoft.com/powershell/module/microsoft.powershell.core/?view=powershell-5.1',
    releases: all,
    cmdlets: [
      'ForEach-Object',
      'Get-Command',
      'Get-Module',
      'Import-Module',
      'Out-Default',
      'Out-Host',
      'Out-Null',
      'Where-Object',
    ],
  },
  {
    name: 'Microsoft.PowerShell.Management',
    source:
      'https://learn.microsoft.com/powershell/module/microsoft.powershell.management/?view=powershell-5.1',
    releases: all,
    cmdlets: [
      'Add-Computer',
      'Add-Content',
      'Copy-Item',
      'Get-ChildItem',
      'Get-Content',
      'Get-HotFix',
      'Get-Item',
      'Get-ItemProperty',
      'Get-Location',
      'Get-Process',
      'Get-PSDrive',
      'Get-Service',
      'Get-WmiObject',
      'Join-Path',
      'Move-Item',
      'New-Item',
      'New-ItemProperty',
      'Remove-Computer',
      'Remove-Item',
      'Remove-ItemProperty',
      'Rename-Computer',
      'Rename-Item',
      'Resolve-Path',
      'Restart-Computer',
      'Restart-Service',
      'Set-Content',
      'Set-ItemProperty',
      'Set-Location',
      'Split-Path',
      'Start-Service',
      'Stop-Process',
      'Stop-Service',
      'Test-Path',
    ],
  },
  {
    name: 'Microsoft.PowerShell.Utility',
    source:
      'https://learn.microsoft.com/powershell/module/microsoft.powershell.utility/?view=powershell-5.1',
    releases: all,
    cmdlets: [
      'Add-Type',
      'ConvertFrom-Json',
      'ConvertTo-Json',
      'Format-List',
      'Format-Table',
      'Get-Date',
      'Get-FileHash',
      'Get-Member',
      'Invoke-RestMethod',
      'Invoke-WebRequest',
      'Measure-Object',
      'New-Object',
      'Out-File',
      'Out-String',
      'Remove-Variable',
      'Select-Object',
      'Sort-Object',
      'Start-Sleep',
      'Write-Error',
      'Write-Host',
      'Write-Output',
      'Write-Warning',
    ],
  },
  {
    name: 'Microsoft.PowerShell.Security',
    source:
      'https://learn.microsoft.com/powershell/module/microsoft.powershell.security/?view=powershell-5.1',
    releases: all,
    cmdlets: ['ConvertFrom-SecureString', 'ConvertTo-SecureString', 'Get-Acl', 'Set-Acl'],
  },
  {
    name: 'Microsoft.PowerShell.Diagnostics',
    source:
      'https://learn.microsoft.com/powershell/module/microsoft.powershell.diagnostics/?view=powershell-5.1',
    releases: all,
    cmdlets: ['Get-Counter', 'Get-WinEvent'],
  },
  {
    name: 'CimCmdlets',
    source: 'https://learn.microsoft.com/powershell/module/cimcmdlets/?view=powershell-5.1',
    releases: all,
    cmdlets: ['Get-CimInstance', 'Invoke-CimMethod'],
  },
  {
    name: 'NetSecurity',
    source: 'https://learn.microsoft.com/powershell/module/netsecurity/',
    releases: all,
    cmdlets: [
      'Disable-NetFirewallRule',
      'Enable-NetFirewallRule',
      'Get-NetFirewallPortFilter',
      'Get-NetFirewallRule',
      'New-NetFirewallRule',
      'Remove-NetFirewallRule',
      'Set-NetFirewallRule',
    ],
  },
  {
    name: 'NetTCPIP',
    source: 'https://learn.microsoft.com/powershell/module/nettcpip/',
    releases: all,
    cmdlets: [
      'Get-NetIPAddress',
      'Get-NetIPConfiguration',
      'Get-NetIPInterface',
      'Get-NetRoute',
      'Get-NetTCPConnection',
    ],
  },
  {
    // Server Manager's cmdlets exist on Windows Server only (Server Core included), not on
    // client Windows (there: Dism's *-WindowsOptionalFeature).
    name: 'ServerManager',
    source: 'https://learn.microsoft.com/powershell/module/servermanager/',
    releases: all,
    cmdlets: ['Get-WindowsFeature', 'Install-WindowsFeature', 'Uninstall-WindowsFeature'],
  },
  {
    name: 'Dism',
    source: 'https://learn.microsoft.com/powershell/module/dism/',
    releases: all,
    cmdlets: [
      'Add-WindowsPackage',
      'Disable-WindowsOptionalFeature',
      'Enable-WindowsOptionalFeature',
      'Get-WindowsOptionalFeature',
      'Get-WindowsPackage',
      'Remove-WindowsPackage',
    ],
  },
  {
    // Microsoft Defender Antivirus is installed and on by default on Windows Server 2016 and
    // later (learn.microsoft.com/defender-endpoint/microsoft-defender-antivirus-on-windows-server);
    // newer builds list the same cmdlets under ConfigDefender too.
    name: 'Defender',
    source: 'https://learn.microsoft.com/powershell/module/defender/',
    releases: all,
    cmdlets: [
      'Get-MpComputerStatus',
      'Get-MpPreference',
      'Get-MpThreat',
      'Get-MpThreatDetection',
      'Remove-MpThreat',
      'Update-MpSignature',
    ],
  },
  {
    // Windows' own WindowsUpdate module has only Get-WindowsUpdateLog; searching and
    // installing is the Windows Update Agent's COM API (Microsoft.Update.Session).
    name: 'WindowsUpdate',
    source: 'https://learn.microsoft.com/powershell/module/windowsupdate/',
    releases: all,
    cmdlets: ['Get-WindowsUpdateLog'],
  },
  {
    // The whole module: Get-/Remove- only (MicrosoftDocs/windows-powershell-docs#3771). It
    // comes with the Host Network Service, i.e. with the Containers feature; on a host without
    // it "Get-HNSNetwork is not recognized" (projectcalico/calico#6843).
    name: 'HostNetworkingService',
    source: 'https://learn.microsoft.com/powershell/module/hostnetworkingservice/',
    releases: all,
    feature: 'Containers',
    cmdlets: [
      'Get-HnsEndpoint',
      'Get-HnsEndpointAddresses',
      'Get-HnsEndpointStats',
      'Get-HnsNamespace',
      'Get-HnsNetwork',
      'Get-HnsPolicyList',
      'Remove-HnsEndpoint',
      'Remove-HnsNamespace',
      'Remove-HnsNetwork',
      'Remove-HnsPolicyList',
    ],
  },
  {
    // Remote Server Administration Tools: not on a host until the RSAT-AD-PowerShell feature
    // is installed. winfleet's scripts do not use it (the domain join is Add-Computer).
    name: 'ActiveDirectory',
    source: 'https://learn.microsoft.com/powershell/module/activedirectory/',
    releases: all,
    feature: 'RSAT-AD-PowerShell',
    cmdlets: [
      // Named in the advice to an AD administrator when a removed host's account stays enabled.
      'Disable-ADAccount',
      'Get-ADComputer',
      'Get-ADServiceAccount',
      'Install-ADServiceAccount',
      'Remove-ADComputer',
      'Test-ADServiceAccount',
    ],
  },
];

/** What decides which modules a host has. */
export interface PowerShellHost {
  readonly release: WindowsServerRelease;
  /** Whether a Windows feature is Installed (not pending). */
  featureInstalled(name: string): boolean;
}

const byCmdlet = new Map<string, PowerShellModule[]>();
for (const module of powerShellModules) {
  for (const cmdlet of module.cmdlets) {
    const key = cmdlet.toLowerCase();
    byCmdlet.set(key, [...(byCmdlet.get(key) ?? []), module]);
  }
}

/**
 * The module that provides `command` on `host` (PowerShell command names are case-insensitive),
 * or undefined. Without a host: the module that provides it on some release with its feature.
 */
export function commandModule(
  command: string,
  host?: PowerShellHost,
): PowerShellModule | undefined {
  return byCmdlet
    .get(command.toLowerCase())
    ?.find(
      (m) =>
        !host ||
        (m.releases.includes(host.release) &&
          (m.feature === undefined || host.featureInstalled(m.feature))),
    );
}

/** The verbs a command name starts with: PowerShell's approved verbs (Get-Verb) and the
 * unapproved ones of the Object cmdlets and of microsoft/SDN's hns.psm1. */
const verbs = new Set(
  [
    'Add Clear Close Copy Enter Exit Find Format Get Hide Join Lock Move New Open Optimize Pop',
    'Push Redo Remove Rename Reset Resize Search Select Set Show Skip Split Step Switch Undo',
    'Unlock Watch Connect Disconnect Read Receive Send Write Backup Checkpoint Compare Compress',
    'Convert ConvertFrom ConvertTo Dismount Edit Expand Export Group Import Initialize Limit',
    'Merge Mount Out Publish Restore Save Sync Unpublish Update Debug Measure Ping Repair',
    'Resolve Test Trace Approve Assert Build Complete Confirm Deny Deploy Disable Enable',
    'Install Invoke Register Request Restart Resume Start Stop Submit Suspend Uninstall',
    'Unregister Wait Block Grant Protect Revoke Unblock Unprotect Use',
    'ForEach Where Sort Tee Modify Attach Detach',
  ]
    .join(' ')
    .toLowerCase()
    .split(' '),
);

/** Whether `name` has a command's Verb-Noun shape with a known verb. */
export function isCommandName(name: string): boolean {
  const match = /^([A-Za-z]+)-([A-Za-z][A-Za-z0-9]*)$/.exec(name);
  return match !== null && verbs.has(match[1]!.toLowerCase());
}

/** `Verb-Noun` words not part of a longer word, path, variable, parameter or member name. */
const commandWord = /(?<![\w$.\-\\/:@])([A-Za-z]+-[A-Za-z][A-Za-z0-9]*)(?![\w\-\\/:.])/g;

/**
 * The commands `script` calls, by name as written: Verb-Noun words outside strings and
 * comments, less the functions the script defines and the commands it first looks up with
 * `Get-Command -Name '<name>'`, and the other commands of that command's module (a script
 * that checks for a module's command handles the module's absence; the loaders in hns.ts,
 * defender.ts and containers-feature.ts do). A statement-level view, not a
 * parser: naming a command in a string is not calling it; `& $command` is not seen.
 */
export function calledCommands(script: string): string[] {
  const guarded = new Set(
    [...script.matchAll(/Get-Command\s+(?:-Name\s+)?'([^']+)'/gi)].map((m) => m[1]!.toLowerCase()),
  );
  const code = withoutStringsAndComments(script);
  const defined = new Set(
    [...code.matchAll(/\bfunction\s+([A-Za-z]+-[A-Za-z][A-Za-z0-9]*)/gi)].map((m) =>
      m[1]!.toLowerCase(),
    ),
  );
  // A check for one command of a module stands for the module (Get-HnsNetwork, then
  // Remove-HnsNetwork).
  const guardedModules = new Set(
    [...guarded].flatMap((c) => (byCmdlet.get(c) ?? []).map((m) => m.name)),
  );
  const called: string[] = [];
  for (const match of code.matchAll(commandWord)) {
    const name = match[1]!;
    const key = name.toLowerCase();
    if (!isCommandName(name) || defined.has(key) || guarded.has(key)) continue;
    if (byCmdlet.get(key)?.some((m) => guardedModules.has(m.name))) continue;
    if (!called.some((c) => c.toLowerCase() === key)) called.push(name);
  }
  return called;
}

/**
 * `script` with its comments removed and its strings emptied, in one pass as PowerShell's
 * tokenizer reads them: `#` to the end of the line and `<# … #>` outside strings; '…' (with ''
 * inside), "…" (with `x and "" inside) and the here-strings @'…'@ and @"…"@.
 */
export function withoutStringsAndComments(script: string): string {
  let out = '';
  let i = 0;
  const n = script.length;
  const skipTo = (end: string, from: number): number => {
    const at = script.indexOf(end, from);
    return at < 0 ? n : at + end.length;
  };
  while (i < n) {
    const c = script[i]!;
    const next = script[i + 1];
    if (c === '<' && next === '#') {
      i = skipTo('#>', i + 2);
      out += ' ';
    } else if (c === '#') {
      i = skipTo('\n', i + 1);
      out += '\n';
    } else if (
      c === '@' &&
      (next === "'" || next === '"') &&
      /^\r?\n/.test(script.slice(i + 2, i + 4))
    ) {
      i = skipTo(`\n${next}@`, i + 2);
      out += `${next}${next}`;
    } else if (c === "'") {
      let j = i + 1;
      for (;;) {
        if (j >= n) break;
        if (script[j] === "'") {
          if (script[j + 1] === "'") j += 2;
          else break;
        } else j++;
      }
      i = j + 1;
      out += "''";
    } else if (c === '"') {
      let j = i + 1;
      for (;;) {
        if (j >= n) break;
        if (script[j] === '`') j += 2;
        else if (script[j] === '"') {
          if (script[j + 1] === '"') j += 2;
          else break;
        } else j++;
      }
      i = j + 1;
      out += '""';
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** PowerShell's message for a command no module provides. */
export function commandNotFoundMessage(name: string): string {
  return `The term '${name}' is not recognized as the name of a cmdlet, function, script file, or operable program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.`;
}

/** PowerShell's CommandNotFoundException for a script's first command the host lacks. */
export class CommandNotFoundError extends Error {
  readonly command: string;
  constructor(command: string) {
    super(`${command} : ${commandNotFoundMessage(command)}`);
    this.name = 'CommandNotFoundException';
    this.command = command;
  }
}

/** The first command `script` calls that no module on `host` provides, or undefined. */
export function missingCommand(script: string, host: PowerShellHost): string | undefined {
  return calledCommands(script).find((c) => !commandModule(c, host));
}

/** Throws CommandNotFoundError when `script` calls a command `host` does not have. */
export function assertCommandsExist(script: string, host: PowerShellHost): void {
  const missing = missingCommand(script, host);
  if (missing !== undefined) throw new CommandNotFoundError(missing);
}

/** A simulated machine as the table sees it: its release and its installed features. */
export function machinePowerShellHost(machine: {
  readonly release: string;
  readonly features: { isInstalled(name: string): boolean };
}): PowerShellHost {
  if (!(windowsServerReleases as readonly string[]).includes(machine.release)) {
    throw new RangeError(
      `Windows Server ${machine.release} is not in the PowerShell module table; use one of ${windowsServerReleases.join(', ')}`,
    );
  }
  return {
    release: machine.release as WindowsServerRelease,
    featureInstalled: (name) => machine.features.isInstalled(name),
  };
}
