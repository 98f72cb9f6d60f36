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
 * The credentials never enter a script, its command line or a cmdlet's parameters. The operator
 * writes them to the SSH session's standard input as two lines of base64 (credentialsInput);
 * the script reads them with .NET calls only ([Console]::In.ReadLine(),
 * [Convert]::FromBase64String, Encoding.UTF8.GetChars) and builds the SecureString one character
 * at a time (SecureString.AppendChar), then the PSCredential with its constructor. PowerShell
 * module logging (event 4103 in Microsoft-Windows-PowerShell/Operational, a common CIS/STIG
 * policy) records every cmdlet's parameter bindings with their values, so
 * `ConvertTo-SecureString -String <password> -AsPlainText`, or `ConvertFrom-Json` fed the text,
 * would put the password in the log and on to the SIEM; method calls are not recorded there,
 * and script block logging (4104) records only the script's text, which holds no credential.
 * Add-Computer then binds the PSCredential, which the log shows as its type name.
 * powershell.exe runs with -InputFormat None, so it does not consume stdin as pipeline input;
 * [Console]::In is still the process's stdin handle. (Not observed on a real host here: see
 * src/powershell/powershell.ts.)
 *
 * Leaving the domain takes no credentials (`leave-domain`): Remove-Computer always asks the
 * domain to disable the computer account (FUnjoinOptions NETSETUP_ACCT_DELETE), which needs an
 * account of the domain ("You must provide explicit credentials to unjoin the computer from its
 * domain", Remove-Computer, Microsoft.PowerShell.Management 5.1), and a host being removed may be
 * a compromised one. Win32_ComputerSystem.UnjoinDomainOrWorkgroup with no UserName and Password
 * and FUnjoinOptions 0 unjoins locally, as the local administrator winfleet connects as, without
 * a domain controller; the computer account stays enabled for an AD admin to disable.
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

/**
 * Reads the credentials from stdin into $credential, with .NET calls only: no cmdlet is ever
 * bound to the password or to text holding it (module logging records cmdlet bindings).
 */
const readCredentialLines = [
  '$userBytes = [System.Convert]::FromBase64String([Console]::In.ReadLine())',
  '$passwordBytes = [System.Convert]::FromBase64String([Console]::In.ReadLine())',
  '$passwordChars = [System.Text.Encoding]::UTF8.GetChars($passwordBytes)',
  '$password = [System.Security.SecureString]::new()',
  'foreach ($char in $passwordChars) { $password.AppendChar($char) }',
  '$password.MakeReadOnly()',
  '[System.Array]::Clear($passwordChars, 0, $passwordChars.Length)',
  '[System.Array]::Clear($passwordBytes, 0, $passwordBytes.Length)',
  '$credential = [System.Management.Automation.PSCredential]::new([System.Text.Encoding]::UTF8.GetString($userBytes), $password)',
  '$char = $null',
];

/** @package */
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
    // Locally, without credentials and without disabling the computer account (see above).
    "$unjoin = @{ InputObject = $cs; MethodName = 'UnjoinDomainOrWorkgroup'; Arguments = @{ FUnjoinOptions = [uint32]0 } }",
    '$result = Invoke-CimMethod @unjoin',
    "if ($result.ReturnValue -ne 0) { throw ('UnjoinDomainOrWorkgroup failed with ' + [string]$result.ReturnValue) }",
    "ConvertTo-WinfleetJson -InputObject (@{ left = $true; restartNeeded = 'Yes' }) -Depth 4",
  ],
};

/**
 * The stdin text of `join-domain`: two lines, the user name's and the password's UTF-8 in
 * base64. Plain ASCII reads the same in every console code page (Windows PowerShell 5.1 decodes
 * stdin in the console's code page, 437 on an en-US Windows Server, not UTF-8), and the script
 * decodes it with .NET calls only (readCredentialLines).
 */
export function credentialsInput(credentials: DomainCredentialsInput): string {
  const line = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  return `${line(credentials.username)}\n${line(credentials.password)}\n`;
}

/**
 * The account as Add-Computer -Credential takes it: "DOMAIN\user" or "user@domain" as given;
 * a bare user name is qualified with the domain, as the Anthos seed's script does
 * ($username = "$domain\[USERNAME]").
 */
export function qualifiedUsername(username: string, domain: string): string {
  return username.includes('\\') || username.includes('@') ? username : `${domain}\\${username}`;
}
