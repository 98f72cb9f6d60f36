/**
 * The command line of `winfleet-agent join`, parsed strictly: exactly the flags below, each
 * once, each as `--flag value`, nothing else. The token comes from the environment variable
 * WINFLEET_JOIN_TOKEN, never from the command line (process listings and process-creation audit
 * logs record command lines); `--token` is refused. A problem names the flag and the fix and
 * never quotes a value that might be the token (a mistyped flag name may be followed by it).
 *
 *   $env:WINFLEET_JOIN_TOKEN = 'abcdef.0123456789abcdef'
 *   winfleet-agent join --api-server https://10.0.0.1:6443 \
 *     --ca-cert-hash sha256:<64 hex> --namespace winfleet-system [--node-name win-a]
 *     [--instance-identity aws] [--pre-pull-taint true]
 */
import { WinfleetError } from '../errors/catalog.ts';
import {
  apiServerProblem,
  caCertHashProblem,
  type JoinToken,
  joinTokenEnv,
  joinTokenProblem,
  labelProblem,
  parseCaCertHash,
  parseJoinToken,
} from '../join/join-command-values.ts';

/** @package */
export interface JoinFlags {
  apiServer: string;
  token: JoinToken;
  /** Canonical "sha256:<lower-case hex>". */
  caCertHash: string;
  namespace: string;
  nodeName?: string;
  /**
   * `--instance-identity aws`: read the EC2 instance identity document and its signature from
   * IMDS and hand them to the approver (pki/instance-identity.ts); the node name is then the
   * instance id unless --node-name gives one.
   */
  instanceIdentity?: 'aws';
  /**
   * `--pre-pull-taint true`: register the Node with the pre-pull taint (its pool pre-pulls
   * images; the operator lifts the taint once the pulls end). A node may only add taints to
   * itself at registration, so this restricts no one but the node.
   */
  prePullTaint?: true;
}

export const joinUsage = `Usage: (token in the environment variable ${joinTokenEnv}=<id>.<secret>) winfleet-agent join --api-server https://<host>:<port> --ca-cert-hash sha256:<hex> --namespace <operator namespace> [--node-name <name>] [--instance-identity aws] [--pre-pull-taint true]`;

const flagNames = [
  '--api-server',
  '--ca-cert-hash',
  '--namespace',
  '--node-name',
  '--instance-identity',
  '--pre-pull-taint',
] as const;
type FlagName = (typeof flagNames)[number];

function invalid(message: string): WinfleetError {
  return new WinfleetError('WF_FLAG_INVALID', `winfleet-agent join: ${message}\n${joinUsage}`);
}

/**
 * Parses the arguments after `join` and the token from `env` (WINFLEET_JOIN_TOKEN); throws
 * WF_FLAG_INVALID naming the flag or the variable.
 * @package
 */
export function parseJoinFlags(
  args: readonly string[],
  env: (name: string) => string | undefined,
): JoinFlags {
  const values = new Map<FlagName, string>();
  for (let i = 0; i < args.length; i += 2) {
    const flag = args[i]!;
    if (flag === '--token' || flag.startsWith('--token=')) {
      throw invalid(
        `--token is not taken on the command line, where process listings and audit logs would show it; put the token in the environment variable ${joinTokenEnv} (the script winfleet join-command prints does)`,
      );
    }
    if (!(flagNames as readonly string[]).includes(flag)) {
      throw invalid(
        flag.startsWith('-')
          ? `unknown flag ${JSON.stringify(flag.split('=')[0]!.slice(0, 40))}${flag.includes('=') ? ' (write "--flag value", without "=")' : ''}; the flags are ${flagNames.join(', ')}`
          : `unexpected argument at position ${i + 1}: give each value after its flag`,
      );
    }
    const name = flag as FlagName;
    if (values.has(name)) throw invalid(`${name} is given twice; give it once`);
    const value = args[i + 1];
    if (value === undefined || value === '' || value.startsWith('--')) {
      throw invalid(`${name} needs a value after it`);
    }
    values.set(name, value);
  }
  for (const required of ['--api-server', '--ca-cert-hash', '--namespace'] as const) {
    if (!values.has(required)) throw invalid(`${required} is missing`);
  }
  const tokenText = env(joinTokenEnv);
  if (tokenText === undefined || tokenText === '') {
    throw invalid(`the environment variable ${joinTokenEnv} is not set: put the join token in it`);
  }
  const apiServer = values.get('--api-server')!;
  const hashText = values.get('--ca-cert-hash')!;
  const namespace = values.get('--namespace')!;
  const nodeName = values.get('--node-name');
  const instanceIdentity = values.get('--instance-identity');
  const prePullTaint = values.get('--pre-pull-taint');
  const problems: [string, string | undefined][] = [
    ['--api-server', apiServerProblem(apiServer)],
    [joinTokenEnv, joinTokenProblem(tokenText)],
    ['--ca-cert-hash', caCertHashProblem(hashText)],
    ['--namespace', labelProblem(namespace)],
    ['--node-name', nodeName === undefined ? undefined : labelProblem(nodeName)],
    [
      '--instance-identity',
      instanceIdentity === undefined || instanceIdentity === 'aws'
        ? undefined
        : `is ${JSON.stringify(instanceIdentity.slice(0, 20))}; the only kind is "aws"`,
    ],
    [
      '--pre-pull-taint',
      prePullTaint === undefined || prePullTaint === 'true'
        ? undefined
        : `is ${JSON.stringify(prePullTaint.slice(0, 20))}; write "true" or leave the flag out`,
    ],
  ];
  const found = problems.find(([, problem]) => problem !== undefined);
  if (found) throw invalid(`${found[0]} ${found[1]}`);
  return {
    apiServer,
    token: parseJoinToken(tokenText)!,
    caCertHash: parseCaCertHash(hashText)!,
    namespace,
    ...(nodeName === undefined ? {} : { nodeName }),
    ...(instanceIdentity === undefined ? {} : { instanceIdentity: 'aws' as const }),
    ...(prePullTaint === undefined ? {} : { prePullTaint: true as const }),
  };
}
