/**
 * The catalog scripts of an Active Directory join (remote-scripts.ts holds the catalog):
 * rename the computer, join the domain, leave it. Each is followed by `restart-host`: a rename
 * and a join take effect at the next boot (Rename-Computer: "the new name takes effect after
 * the computer is restarted"; Add-Computer: "you must restart the computer to apply the
 * change"; learn.microsoft.com, Microsoft.PowerShell.Management 5.1). winfleet renames, restarts,
 * then joins and restarts again, rather than Add-Computer -NewName in one go: each step is
 * then checked on its own by the next pass's facts (the hostname, then the membership), and a
 * wrong password leaves the host renamed but in its workgroup, never half-joined.
 *
 * The credentials never enter a script or its command line. The operator writes them, as one
 * line of ASCII JSON ({"username": …, "password": …}, credentialsInput), to the SSH session's
 * standard input, and the
 * script reads them from [Console]::In into a SecureString and a PSCredential. powershell.exe
 * runs with -InputFormat None, so it does not consume stdin as pipeline input; [Console]::In
 * is still the process's stdin handle. (Not observed on a real host here: see
 * src/powershell/powershell.ts.)
 *
 * The domain and OU reach the script only inside $winfleetArgs, the one single-quoted JSON
 * literal every catalog script starts with, and are passed to the cmdlets as values
 * (splatting), never as script text: a crafted value cannot become code.
 */

/** The workgroup a host leaving its domain goes to. */
export const leaveWorkgroup = 'WORKGROUP';

/** What `join-domain` and `leave-domain` read from stdin. */
export interface DomainCredentialsInput {
  username: string;
  password: string;
}

/** Reads the credentials from stdin into $credential (never echoed, never kept in a file). */
const readCredentialLines = [
  '$secret = [Console]::In.ReadToEnd() | ConvertFrom-Json',
  '$password = ConvertTo-SecureString -String ([string]$secret.password) -AsPlainText -Force',
  '$credential = New-Object -TypeName System.Management.Automation.PSCredential -ArgumentList ([string]$secret.username), $password',
  'Remove-Variable -Name secret',
];

export const domainScriptBodies: Record<
  'rename-computer' | 'join-domain' | 'leave-domain',
  string[]
> = {
  'rename-computer': [
    '$rename = @{ NewName = [string]$winfleetArgs.newName; Force = $true }',
    'Rename-Computer @rename',
    "ConvertTo-WinfleetJson -InputObject (@{ renamed = $true; restartNeeded = 'Yes' }) -Depth 4",
  ],
  'join-domain': [
    ...readCredentialLines,
    '$join = @{ DomainName = [string]$winfleetArgs.domain; Credential = $credential; Force = $true }',
    'if ($winfleetArgs.organizationalUnit) { $join.OUPath = [string]$winfleetArgs.organizationalUnit }',
    'Add-Computer @join',
    "ConvertTo-WinfleetJson -InputObject (@{ joined = $true; restartNeeded = 'Yes' }) -Depth 4",
  ],
  'leave-domain': [
    // Only the pool's domain: a host that moved to another one is not taken out of it.
    "$cs = Get-CimInstance -ClassName 'Win32_ComputerSystem'",
    'if (-not $cs.PartOfDomain -or [string]$cs.Domain -ne [string]$winfleetArgs.domain) {',
    "  throw ('The host is not in domain ' + [string]$winfleetArgs.domain + ' but in ' + [string]$cs.Domain + '; it is left as it is')",
    '}',
    ...readCredentialLines,
    `$leave = @{ UnjoinDomainCredential = $credential; WorkgroupName = '${leaveWorkgroup}'; Force = $true }`,
    'Remove-Computer @leave',
    "ConvertTo-WinfleetJson -InputObject (@{ left = $true; restartNeeded = 'Yes' }) -Depth 4",
  ],
};

/**
 * The stdin text of `join-domain`/`leave-domain`: one line of JSON in plain ASCII, every other
 * character written as a \uXXXX escape (UTF-16 code units, as JSON allows), which
 * ConvertFrom-Json turns back into the character. Windows PowerShell 5.1 decodes stdin in the
 * console's code page (Console.InputEncoding = GetConsoleCP(): 437 on an en-US Windows Server,
 * 850 or 1252 elsewhere), not UTF-8, so "Pässword" sent as UTF-8 would arrive as "P├ñssword";
 * ASCII reads the same in every code page.
 */
export function credentialsInput(credentials: DomainCredentialsInput): string {
  const json = JSON.stringify({ username: credentials.username, password: credentials.password });
  return `${json.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

/**
 * The account as Add-Computer -Credential takes it: "DOMAIN\user" or "user@domain" as given;
 * a bare user name is qualified with the domain, as the Anthos seed's script does
 * ($username = "$domain\[USERNAME]").
 */
export function qualifiedUsername(username: string, domain: string): string {
  return username.includes('\\') || username.includes('@') ? username : `${domain}\\${username}`;
}
