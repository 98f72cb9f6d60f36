/**
 * winfleet join-command --pool NAME [--ttl 2h] [--uses 1] [--format powershell|aws|azure|
 * cloudbase-init] [--agent-url URL] [-n POOL_NAMESPACE] [--operator-namespace NS]
 * [--ca-cert-hash sha256:HEX | --ca-file PEM]: prints a
 * script that joins a Windows machine to a pool by itself, without SSH (cloud user data, or
 * pasted into PowerShell). Before it makes anything it checks that the pool can take such hosts
 * (pool-join-labels.ts), that the operator publishes winfleet-join with a payload hosts can pull,
 * where the agent comes from and its SHA-256 (agent-download.ts), and the CA hash
 * (join-ca-hash.ts). Then it creates a join token (join-tokens.ts) and checks that the cluster
 * takes it (bootstrap-token-auth.ts): a cluster without bootstrap-token authentication is said
 * so plainly, and the token is deleted. Any failure after the token was made deletes it.
 *
 * The script goes to standard output, what was made to standard error; the token's secret is
 * in the script and nowhere else.
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { compileNodeNamePattern } from '../../api/node-name-pattern.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../../api/windows-node-pool.ts';
import { agentDownload } from '../../join/agent-download.ts';
import { bootstrapTokenAuthentication } from '../../join/bootstrap-token-auth.ts';
import { bootstrapGroup } from '../../join/bootstrap-tokens.ts';
import { clusterInfoName, clusterInfoNamespace } from '../../join/cluster-info.ts';
import { caCertHashRecipe, joinCaHash, verifiedJoinAccess } from '../../join/join-ca-hash.ts';
import { downloadUrlProblem } from '../../join/join-command-values.ts';
import {
  type JoinInfo,
  joinInfoConfigMapName,
  joinInfoKey,
  parseJoinInfo,
} from '../../join/join-info.ts';
import { maxJoinTokenUses } from '../../join/join-token-record.ts';
import { createJoinToken, revokeJoinToken } from '../../join/join-tokens.ts';
import { poolJoinLabels } from '../../join/pool-join-labels.ts';
import {
  type JoinScriptFormat,
  joinScriptFormats,
  renderJoinScript,
} from '../../join/scripts/render-join-script.ts';
import { isNotFound } from '../../kube/client.ts';
import { instanceIdProblem } from '../../pki/instance-identity.ts';
import { parseDuration } from '../../rollout/duration.ts';
import { cliExit, ExitCode } from '../exit-codes.ts';
import {
  defaultHostNamespace,
  type KubeFlags,
  kubeConfigFrom,
  namespaceFrom,
  namespaceName,
  withKubeFlags,
} from '../kube-flags.ts';

interface JoinCommandFlags extends KubeFlags {
  pool: string;
  ttl: number;
  uses: number;
  format: JoinScriptFormat;
  agentUrl?: string;
  operatorNamespace: string;
  caCertHash?: string;
  caFile?: string;
  instanceId?: string;
}

const problem = (message: string) => cliExit(ExitCode.problem, message);

/** How long a token lives: a minute to a week (a token in user data is readable on the VM). */
function ttl(value: string): number {
  try {
    return parseDuration(value, '--ttl', { minMs: 60_000, maxMs: 7 * 24 * 3_600_000 });
  } catch (error) {
    throw new InvalidArgumentError(`${(error as Error).message} (1m to 168h)`);
  }
}

function uses(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > maxJoinTokenUses)
    throw new InvalidArgumentError(
      `"${value}" is not a whole number of uses from 1 to ${maxJoinTokenUses}`,
    );
  return n;
}

/** kubeadm's --discovery-token-ca-cert-hash format: sha256: and 64 hex digits (lower-cased). */
function caCertHash(value: string): string {
  if (!/^sha256:[0-9a-fA-F]{64}$/.test(value))
    throw new InvalidArgumentError(
      `"${value}" is not sha256:<64 hex digits>, the SHA-256 of the CA's SubjectPublicKeyInfo (on a control-plane node: ${caCertHashRecipe})`,
    );
  return value.toLowerCase();
}

function poolName(value: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value))
    throw new InvalidArgumentError(`"${value}" is not a WindowsNodePool name (an RFC 1123 label)`);
  return value;
}

/** Where the script may download the agent from (join-command-values.ts: https, or http to loopback). */
function agentUrl(value: string): string {
  const problem = downloadUrlProblem(value);
  if (problem) {
    throw new InvalidArgumentError(
      `"${value}" ${problem}; the script checks the download's SHA-256 either way`,
    );
  }
  return value;
}

async function readPools(kc: k8s.KubeConfig, namespace: string): Promise<WindowsNodePool[]> {
  const [group, version] = windowsNodePoolResource.apiVersion.split('/') as [string, string];
  const list = (await kc.makeApiClient(k8s.CustomObjectsApi).listNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: windowsNodePoolResource.plural,
  })) as { items: WindowsNodePool[] };
  return list.items;
}

/**
 * The labels the pool's joining hosts get and whether it requires instance identity; refuses
 * a pool that cannot take them.
 */
async function poolLabels(
  kc: k8s.KubeConfig,
  namespace: string,
  pool: string,
): Promise<{ labels: Record<string, string>; instanceIdentity: boolean; prePull: boolean }> {
  const pools = await readPools(kc, namespace);
  const target = pools.find((p) => p.metadata.name === pool);
  if (!target) {
    const names = pools.map((p) => p.metadata.name).join(', ') || 'none';
    throw problem(
      `--pool: no WindowsNodePool ${pool} in namespace ${namespace} (there: ${names}); create it first, or give -n NAMESPACE`,
    );
  }
  const ref = `WindowsNodePool ${namespace}/${pool}`;
  const ad = target.spec?.activeDirectory;
  if (ad) {
    throw problem(
      `${ref} joins its hosts to Active Directory domain ${JSON.stringify(String(ad.domain))} (spec.activeDirectory), and a host joining by command registers its Node before any domain join, so the pool takes no join tokens; add its hosts over SSH (winfleet hosts add)`,
    );
  }
  const pattern = target.spec?.join?.nodeNamePattern;
  if (pattern === undefined) {
    throw problem(
      `${ref} sets no spec.join.nodeNamePattern, which a pool must before it takes join tokens (without one a token could claim any node name, names of nodes that will exist later included); set it, e.g. kubectl patch windowsnodepool -n ${namespace} ${pool} --type merge -p '{"spec":{"join":{"nodeNamePattern":"^${pool}-[0-9]{1,4}$"}}}'`,
    );
  }
  const compiled = compileNodeNamePattern(String(pattern));
  if (!compiled.ok) throw problem(`${ref}: ${compiled.problem}`);
  const labels = poolJoinLabels(target, pools);
  if ('problem' in labels) throw problem(labels.problem);
  return {
    labels: labels.labels,
    instanceIdentity: target.spec.join?.instanceIdentity === 'AWS',
    // Its hosts register tainted until their pulls end, like the pool's SSH hosts.
    prePull: target.spec.prePull !== undefined && target.spec.prePull !== null,
  };
}

/** `--instance-id`: an EC2 instance id. */
function instanceId(value: string): string {
  const found = instanceIdProblem(value);
  if (found) throw new InvalidArgumentError(found);
  return value;
}

/** winfleet-join as the operator published it, with a payload source hosts can pull. */
async function publishedJoinInfo(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
): Promise<JoinInfo & Required<Pick<JoinInfo, 'payload'>>> {
  let configMap: k8s.V1ConfigMap;
  try {
    configMap = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ name: joinInfoConfigMapName, namespace: operatorNamespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    throw problem(
      `the operator has not published ConfigMap ${operatorNamespace}/${joinInfoConfigMapName}: it is not running in ${operatorNamespace} (give --operator-namespace), or it runs without a payload; joining by command needs the operator running with --payload-image <registry/repo@sha256:…> (push one with winfleet payload push)`,
    );
  }
  const info = parseJoinInfo(configMap.data?.[joinInfoKey] ?? '');
  if (!info.payload) {
    throw problem(
      `the operator in ${operatorNamespace} serves its payload from a directory (--payload-dir), which hosts cannot pull; joining by command needs it running with --payload-image <registry/repo@sha256:…> (push one with winfleet payload push)`,
    );
  }
  return info as JoinInfo & Required<Pick<JoinInfo, 'payload'>>;
}

/**
 * Waits briefly for the controller manager's bootstrapsigner to sign cluster-info for the
 * token; only warns when it does not (the host waits for the signature too).
 */
async function signatureWarning(kc: k8s.KubeConfig, id: string): Promise<string | undefined> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const info = await core
      .readNamespacedConfigMap({ name: clusterInfoName, namespace: clusterInfoNamespace })
      .catch(() => undefined);
    if (info?.data?.[`jws-kubeconfig-${id}`]) return undefined;
    await sleep(250);
  }
  return `warning: after 15 s kube-public/cluster-info still has no signature jws-kubeconfig-${id}: kube-controller-manager signs it for signing bootstrap tokens when its bootstrapsigner controller runs (--controllers=*,bootstrapsigner). Hosts wait for the signature before they trust the cluster.\n`;
}

const bootstrapAuthOff = (id: string) =>
  `the cluster does not accept bootstrap tokens: the API server answered 401 to the new join token for 10 s, so it runs without bootstrap-token authentication (kube-apiserver --enable-bootstrap-token-auth), as some managed Kubernetes offerings do. Joining by command needs it: a joining host authenticates with the token until it has a node identity. The token (${id}) and its record were deleted; nothing was left behind. Join hosts over SSH instead (winfleet hosts add), or turn bootstrap tokens on`;

/** Creates the token, checks the cluster takes it, renders the script; undoes it on failure. */
async function makeJoinScript(
  kc: k8s.KubeConfig,
  flags: JoinCommandFlags,
  context: {
    namespace: string;
    labels: Record<string, string>;
    info: JoinInfo;
    instanceIdentity: boolean;
    prePull: boolean;
  },
  agent: { url: string; sha256: string },
  caCertHash: string,
): Promise<{ script: string; id: string; expires: string; warning?: string }> {
  const { id, token, record } = await createJoinToken(kc, {
    operatorNamespace: flags.operatorNamespace,
    pool: flags.pool,
    namespace: context.namespace,
    uses: flags.uses,
    ttlMs: flags.ttl,
    labels: context.labels,
    ...(flags.instanceId ? { instanceId: flags.instanceId } : {}),
  });
  try {
    const auth = await bootstrapTokenAuthentication(kc, token);
    if (auth.outcome === 'refused') throw problem(bootstrapAuthOff(id));
    if (auth.outcome === 'authenticated' && !auth.user.groups?.includes(bootstrapGroup)) {
      throw problem(
        `the cluster authenticated the new join token as ${auth.user.username} in groups [${auth.user.groups?.join(', ')}], without ${bootstrapGroup}: a webhook authenticator in front of the bootstrap tokens? The token was deleted`,
      );
    }
    const warning = await signatureWarning(kc, id);
    const script = renderJoinScript(flags.format, {
      agentUrl: agent.url,
      agentSha256: agent.sha256,
      apiServer: context.info.apiServer,
      token,
      caCertHash,
      namespace: flags.operatorNamespace,
      ...(context.instanceIdentity ? { instanceIdentity: 'aws' as const } : {}),
      ...(context.prePull ? { prePullTaint: true as const } : {}),
    });
    return { script, id, expires: record.expires, ...(warning ? { warning } : {}) };
  } catch (error) {
    await revokeJoinToken(kc, flags.operatorNamespace, id);
    throw error;
  }
}

async function readCaFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw problem(`--ca-file ${path}: ${(error as Error).message}`);
  }
}

/** `winfleet join-command`: a verified connection, the pool, a new token, then the script. */
async function joinCommand(flags: JoinCommandFlags): Promise<void> {
  // Nothing is sent over a connection that proves nothing (join-ca-hash.ts).
  const access = await verifiedJoinAccess(kubeConfigFrom(flags), {
    ...(flags.caCertHash ? { caCertHash: flags.caCertHash } : {}),
    ...(flags.caFile !== undefined ? { caPem: await readCaFile(flags.caFile) } : {}),
  });
  if ('problem' in access) throw problem(access.problem);
  const { kc } = access;
  const namespace = namespaceFrom(flags, kc)!;
  const pool = await poolLabels(kc, namespace, flags.pool);
  if (flags.instanceId && flags.uses !== 1) {
    throw problem(
      `--uses ${flags.uses} with --instance-id: a token for one instance has one use; leave --uses out`,
    );
  }
  const labels = pool.labels;
  const info = await publishedJoinInfo(kc, flags.operatorNamespace);
  const pin = await joinCaHash(kc);
  if ('problem' in pin) throw problem(pin.problem);
  const agent = await agentDownload(info.payload, {
    ...(flags.agentUrl ? { agentUrl: flags.agentUrl } : {}),
  }).catch((error: Error) => {
    throw problem(error.message);
  });
  const made = await makeJoinScript(
    kc,
    flags,
    // A token for one instance asks for its identity whatever the pool says.
    {
      namespace,
      labels,
      info,
      instanceIdentity: pool.instanceIdentity || !!flags.instanceId,
      prePull: pool.prePull,
    },
    agent,
    pin.hash,
  );
  process.stdout.write(made.script);
  process.stderr.write(
    `join token ${made.id}: ${flags.uses} host${flags.uses === 1 ? '' : 's'} may join WindowsNodePool ${namespace}/${flags.pool} until ${made.expires}; revoke it with: winfleet join-tokens revoke ${made.id}${flags.operatorNamespace === defaultHostNamespace ? '' : ` -n ${flags.operatorNamespace}`}\n`,
  );
  if (pin.from === 'cluster-info') {
    process.stderr.write(
      'note: your kubeconfig names no CA, so the script pins the CA of kube-public/cluster-info as the API server served it over a connection your system’s roots verified\n',
    );
  }
  if (made.warning) process.stderr.write(made.warning);
}

export function registerJoinCommand(program: Command): void {
  const command = program
    .command('join-command')
    .description(
      'print a script that joins a Windows machine to a pool by itself (user data or PowerShell, no SSH), with a new join token',
    );
  withKubeFlags(command, false)
    .option(
      '-n, --namespace <name>',
      `the pool's namespace (default: the context's, else ${defaultHostNamespace})`,
      namespaceName,
    )
    .requiredOption('--pool <name>', 'the WindowsNodePool the hosts join', poolName)
    .addOption(
      new Option('--ttl <duration>', 'how long the token works, 1m to 168h')
        .argParser(ttl)
        .default(2 * 3_600_000, '2h'),
    )
    .addOption(
      new Option('--uses <n>', `how many hosts may join with it, 1 to ${maxJoinTokenUses}`)
        .argParser(uses)
        .default(1),
    )
    .addOption(
      new Option('--format <format>', 'the script: plain PowerShell, or user data of a cloud')
        .choices(joinScriptFormats)
        .default('powershell'),
    )
    .option(
      '--agent-url <url>',
      'download winfleet-agent.exe from here instead of the payload registry (its SHA-256 is still the payload’s)',
      agentUrl,
    )
    .option(
      '--instance-id <id>',
      'the one EC2 instance the token admits (its AWS-signed identity document must name it; one use)',
      instanceId,
    )
    .option(
      '--operator-namespace <name>',
      `where the operator runs (winfleet-join, the token records)`,
      namespaceName,
      defaultHostNamespace,
    )
    .option(
      '--ca-cert-hash <sha256:hex>',
      'the cluster CA by the SHA-256 of its public key (kubeadm’s format), checked against cluster-info before anything is sent; needed when the kubeconfig skips TLS verification',
      caCertHash,
    )
    .option(
      '--ca-file <path>',
      'the cluster CA (PEM) to verify the API server with; needed when the kubeconfig skips TLS verification (or --ca-cert-hash)',
    )
    .action(joinCommand);
}
