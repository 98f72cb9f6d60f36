/**
 * Which HNS cmdlets a Windows Server host has: its built-in HostNetworkingService module
 * exports only Get-HnsEndpoint, Get-HnsNamespace, Get-HnsNetwork, Get-HnsPolicyList,
 * Remove-HnsEndpoint, Remove-HnsNamespace, Remove-HnsNetwork and Remove-HnsPolicyList
 * (learn.microsoft.com/powershell/module/hostnetworkingservice; MicrosoftDocs/
 * windows-powershell-docs#3771). New-HnsNetwork and the rest come only from microsoft/SDN's
 * hns.psm1 / hns.v2.psm1, which nothing installs, and which the scripts never load because the
 * built-in module already provides Get-HnsNetwork. A script that calls another *-Hns* command
 * fails as PowerShell does (CommandNotFoundException).
 */

/** The cmdlets of the built-in HostNetworkingService module (Windows Server 2019, 2022, 2025). */
export const hostNetworkingServiceCmdlets: readonly string[] = [
  'Get-HnsEndpoint',
  'Get-HnsNamespace',
  'Get-HnsNetwork',
  'Get-HnsPolicyList',
  'Remove-HnsEndpoint',
  'Remove-HnsNamespace',
  'Remove-HnsNetwork',
  'Remove-HnsPolicyList',
];

/** PowerShell's message for a command no loaded module provides. */
export function commandNotFoundMessage(name: string): string {
  return `${name} : The term '${name}' is not recognized as the name of a cmdlet, function, script file, or operable program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.`;
}

/**
 * Throws PowerShell's CommandNotFoundException text for the first *-Hns* command `script` calls
 * that the built-in module does not export. Quoted strings are skipped: naming a command
 * (Get-Command -Name '…') is not calling it.
 */
export function assertHnsCmdletsExist(script: string): void {
  const code = script.replace(/'(?:[^']|'')*'/g, "''").replace(/"(?:[^"`]|`.)*"/g, '""');
  const known = new Set(hostNetworkingServiceCmdlets.map((c) => c.toLowerCase()));
  for (const match of code.matchAll(/\b([A-Za-z]+-Hns[A-Za-z]+)\b/g)) {
    if (!known.has(match[1]!.toLowerCase())) throw new Error(commandNotFoundMessage(match[1]!));
  }
}
