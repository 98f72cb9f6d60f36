/**
 * The shared core of the join scripts `winfleet join-command` prints: one Windows PowerShell
 * 5.1 script that every format wraps (powershell.ts, aws.ts, azure.ts, cloudbase-init.ts).
 * It:
 * 1. allows TLS 1.2 and later only (Windows PowerShell 5.1 may still offer TLS 1.0);
 * 2. creates C:\k and gives it the DACL the operator gives it over SSH (remote-scripts.ts
 *    `protect-directory`: SYSTEM and Administrators only, nothing inherited from C:\, and
 *    whatever was already below it given to Administrators and reset to inherit that), before
 *    the agent, its token and the node's key land under it;
 * 3. downloads winfleet-agent.exe to C:\k\winfleet, checks its SHA-256 against the one embedded
 *    here and stops on a mismatch (the file is removed, never run);
 * 4. runs `winfleet-agent join` with the API server, CA hash, namespace and node name, the token
 *    in the environment variable WINFLEET_JOIN_TOKEN (never on the command line, which process
 *    listings and process-creation audit events record);
 * 5. exits 0 on success and 1 on any failure, with the reason on standard error; either way it
 *    first removes the variable and the script's own file, when it runs from one
 *    ($PSCommandPath: the launch agent's copy of the user data, or a saved .ps1). A
 *    `finally` block runs even when `exit` leaves a `catch` (about_Try_Catch_Finally).
 *
 * Every value enters only as a single-quoted literal (quotePowerShellString: ' doubled, nothing
 * expanded), after a strict check of its shape (WF_JOIN_SCRIPT_INVALID naming the field). The
 * simulated hosts recognise a script by rendering it again from the values they parse out of it
 * (sim/hosts/userdata.ts): keep this output deterministic.
 */
import { WinfleetError } from '../../errors/catalog.ts';
import {
  administratorsSid,
  resetChildrenSecurity,
  systemSid,
} from '../../hostaccess/remote-scripts.ts';
import { quotePowerShellString } from '../../powershell/powershell.ts';
import { hostPaths, kubeDir, winfleetDir } from '../../servicesmanifest/host-paths.ts';
import {
  apiServerProblem,
  caCertHashProblem,
  downloadUrlProblem,
  joinTokenEnv,
  joinTokenProblem,
  labelProblem,
  parseCaCertHash,
} from '../join-command-values.ts';

/** What a join script carries. */
export interface JoinScriptValues {
  /** Where winfleet-agent.exe is downloaded from: https (plain http to loopback only). */
  agentUrl: string;
  /** The agent executable's SHA-256, 64 hex digits. */
  agentSha256: string;
  /** The API server URL (https://…). */
  apiServer: string;
  /** The join token, "<id>.<secret>". */
  token: string;
  /** "sha256:<64 hex>" of the cluster CA's public key. */
  caCertHash: string;
  /** The operator's namespace, where winfleet-join is. */
  namespace: string;
  /** The node's name; default: the host name lower-cased (the instance id with identity). */
  nodeName?: string;
  /** The pool requires instance identity: the agent presents the EC2 instance's. */
  instanceIdentity?: 'aws';
  /**
   * The pool pre-pulls images (spec.prePull): the kubelet registers the Node with the
   * pre-pull taint, which the operator lifts once the pulls end (src/api/pre-pull.ts).
   */
  prePullTaint?: true;
}

/** The values in canonical form; throws WF_JOIN_SCRIPT_INVALID naming the first bad one. */
export function checkJoinScriptValues(values: JoinScriptValues): JoinScriptValues {
  const problems: [string, string | undefined][] = [
    ['agentUrl', downloadUrlProblem(values.agentUrl)],
    [
      'agentSha256',
      /^[0-9a-fA-F]{64}$/.test(values.agentSha256)
        ? undefined
        : `is ${JSON.stringify(values.agentSha256.slice(0, 80))}, not 64 hex digits`,
    ],
    ['apiServer', apiServerProblem(values.apiServer)],
    ['token', joinTokenProblem(values.token)],
    ['caCertHash', caCertHashProblem(values.caCertHash)],
    ['namespace', labelProblem(values.namespace)],
    ['nodeName', values.nodeName === undefined ? undefined : labelProblem(values.nodeName)],
    [
      'instanceIdentity',
      values.instanceIdentity === undefined || values.instanceIdentity === 'aws'
        ? undefined
        : 'is not "aws"',
    ],
    [
      'prePullTaint',
      values.prePullTaint === undefined || values.prePullTaint === true ? undefined : 'is not true',
    ],
  ];
  const found = problems.find(([, problem]) => problem !== undefined);
  if (found) {
    throw new WinfleetError(
      'WF_JOIN_SCRIPT_INVALID',
      `Cannot write a join script: ${found[0]} ${found[1]}`,
    );
  }
  return {
    ...values,
    agentSha256: values.agentSha256.toLowerCase(),
    caCertHash: parseCaCertHash(values.caCertHash)!,
  };
}

const q = quotePowerShellString;

/** The arguments of `winfleet-agent join`, in the order the script passes them (no token). */
export function joinArguments(values: JoinScriptValues): string[] {
  return [
    'join',
    '--api-server',
    values.apiServer,
    '--ca-cert-hash',
    values.caCertHash,
    '--namespace',
    values.namespace,
    ...(values.nodeName === undefined ? [] : ['--node-name', values.nodeName]),
    ...(values.instanceIdentity === undefined
      ? []
      : ['--instance-identity', values.instanceIdentity]),
    ...(values.prePullTaint ? ['--pre-pull-taint', 'true'] : []),
  ];
}

/** The script's lines (LF-joined by the formats), values checked and quoted. */
export function joinScriptLines(input: JoinScriptValues): string[] {
  const values = checkJoinScriptValues(input);
  const [command, ...flags] = joinArguments(values);
  // Flags are bare words, values quoted: `--namespace 'winfleet-system'`.
  const args = flags.map((arg, i) => (i % 2 === 0 ? arg : q(arg)));
  return [
    '# winfleet: joins this Windows host to a Kubernetes cluster as a node (winfleet join-command).',
    '# It holds a join token: keep it as secret as a password until the token expires.',
    "$ErrorActionPreference = 'Stop'",
    "$ProgressPreference = 'SilentlyContinue'",
    `$agentUrl = ${q(values.agentUrl)}`,
    `$agentSha256 = ${q(values.agentSha256)}`,
    `$agent = ${q(hostPaths.agentExe)}`,
    'try {',
    '  $tls = [Net.SecurityProtocolType]::Tls12',
    // TLS 1.3 only where SChannel has it (Windows Server 2022, build 20348, and later): on
    // 2019 the enum may have Tls13 (.NET Framework 4.8) while SChannel does not.
    "  if ([Environment]::OSVersion.Version.Build -ge 20348 -and [Enum]::GetNames([Net.SecurityProtocolType]) -contains 'Tls13') { $tls = $tls -bor [Net.SecurityProtocolType]::Tls13 }",
    '  [Net.ServicePointManager]::SecurityProtocol = $tls',
    `  New-Item -ItemType Directory -Force -Path ${q(kubeDir)} | Out-Null`,
    '  $acl = New-Object -TypeName System.Security.AccessControl.DirectorySecurity',
    '  $acl.SetAccessRuleProtection($true, $false)',
    `  $acl.SetOwner((New-Object -TypeName System.Security.Principal.SecurityIdentifier -ArgumentList ${q(administratorsSid)}))`,
    `  foreach ($sid in @(${q(systemSid)}, ${q(administratorsSid)})) {`,
    '    $identity = New-Object -TypeName System.Security.Principal.SecurityIdentifier -ArgumentList $sid',
    "    $rule = New-Object -TypeName System.Security.AccessControl.FileSystemAccessRule -ArgumentList $identity, 'FullControl', 'ContainerInherit, ObjectInherit', 'None', 'Allow'",
    '    $acl.AddAccessRule($rule)',
    '  }',
    `  Set-Acl -LiteralPath ${q(kubeDir)} -AclObject $acl`,
    // What a local user or the image put in C:\k before goes to Administrators, reset to inherit.
    ...resetChildrenSecurity(q(kubeDir), '  '),
    `  New-Item -ItemType Directory -Force -Path ${q(winfleetDir)} | Out-Null`,
    "  $download = $agent + '.download'",
    '  Invoke-WebRequest -UseBasicParsing -Uri $agentUrl -OutFile $download',
    '  $actual = (Get-FileHash -LiteralPath $download -Algorithm SHA256).Hash.ToLowerInvariant()',
    '  if ($actual -ne $agentSha256) {',
    '    Remove-Item -LiteralPath $download -Force',
    "    throw ('winfleet-agent.exe from ' + $agentUrl + ' has SHA-256 ' + $actual + ', not ' + $agentSha256 + '; it was not run')",
    '  }',
    '  Move-Item -LiteralPath $download -Destination $agent -Force',
    `  $env:${joinTokenEnv} = ${q(values.token)}`,
    `  & $agent ${command} ${args.join(' ')}`,
    "  if ($LASTEXITCODE -ne 0) { throw ('winfleet-agent join exited with code ' + $LASTEXITCODE) }",
    '} catch {',
    "  [Console]::Error.WriteLine('winfleet join failed: ' + $_)",
    '  exit 1',
    '} finally {',
    `  Remove-Item -LiteralPath Env:${joinTokenEnv} -ErrorAction SilentlyContinue`,
    '  if ($PSCommandPath) { Remove-Item -LiteralPath $PSCommandPath -Force -ErrorAction SilentlyContinue }',
    '}',
    'exit 0',
  ];
}
