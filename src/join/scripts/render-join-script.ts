/**
 * PLACEHOLDER, replaced by the joinhost helper's generators (issue 15, section C): the same
 * path and exports (`renderJoinScript`, `JoinScriptFormat`, `joinScriptFormats`,
 * `JoinScriptValues`, `userDataLimitBytes`), so that `winfleet join-command` calls it from one
 * place and the merge keeps theirs. This minimal version downloads the agent, checks its
 * SHA-256 and runs `winfleet-agent join`, every value as a single-quoted literal.
 */
import { quotePowerShellString } from '../../powershell/powershell.ts';

/** What a join script carries. */
export interface JoinScriptValues {
  /** Where winfleet-agent.exe is downloaded from. */
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
  /** The node's name; default: the host name lower-cased. */
  nodeName?: string;
}

export const joinScriptFormats = ['powershell', 'aws', 'azure', 'cloudbase-init'] as const;
export type JoinScriptFormat = (typeof joinScriptFormats)[number];

/** EC2's user-data limit (16 KB before base64); every format stays under it. */
export const userDataLimitBytes = 16 * 1024;

/** The join script in `format`. */
export function renderJoinScript(format: JoinScriptFormat, values: JoinScriptValues): string {
  const q = quotePowerShellString;
  const args = [
    'join',
    '--api-server',
    values.apiServer,
    '--token',
    values.token,
    '--ca-cert-hash',
    values.caCertHash,
    '--namespace',
    values.namespace,
    ...(values.nodeName ? ['--node-name', values.nodeName] : []),
  ];
  const script = [
    "$ErrorActionPreference = 'Stop'",
    "$agent = 'C:\\k\\winfleet\\winfleet-agent.exe'",
    "New-Item -ItemType Directory -Force -Path 'C:\\k\\winfleet' | Out-Null",
    `Invoke-WebRequest -UseBasicParsing -Uri ${q(values.agentUrl)} -OutFile $agent`,
    `if ((Get-FileHash -Algorithm SHA256 -Path $agent).Hash -ne ${q(values.agentSha256.toUpperCase())}) { Remove-Item $agent; exit 1 }`,
    `& $agent ${args.map(q).join(' ')}`,
    'exit $LASTEXITCODE',
    '',
  ].join('\n');
  if (format === 'aws') return `<powershell>\n${script}</powershell>\n`;
  if (format === 'cloudbase-init') return `#ps1_sysnative\n${script}`;
  return script;
}
