/**
 * `winfleet-agent pull-payload [--services-version V]`: a one-shot the operator runs over SSH
 * on a host that may reach the payload registry, so that the host pulls the payload files
 * itself and the operator sends only the agent, its service shim and the config
 * (src/controllers/hosts/payload-delivery.ts).
 *
 * - While joining (no flag): the services manifest is bootstrap.json's, which the operator has
 *   just written, and the cluster is read with bootstrap.json's token, trusting its CA only —
 *   winfleet's bootstrap group may get winfleet-join and the pull Secret by name.
 * - Before an upgrade (`--services-version V`): the node has joined and its bootstrap token is
 *   gone, so the node's own credentials (C:\k\kubeconfig) read the published manifest of V
 *   (checked against the operator's record, published-manifest.ts), winfleet-join and the pull
 *   Secret — which nodes may get by name too.
 *
 * Either way the files of the manifest that are not staged are pulled as payload-pull.ts pulls
 * them (by digest, mirrors first, verified while streaming) from the artifact winfleet-join
 * names, and the result is printed as JSON: the registry, what was downloaded and the bytes.
 * A registry that cannot be reached fails with WF_PAYLOAD_DOWNLOAD and its reason
 * ("unreachable", "timeout"), which the operator reads to decide on pushing over SFTP instead.
 */
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import { parseJoinToken } from '../join/join-command-values.ts';
import { joinInfoConfigMapName } from '../join/join-info.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { parseAgentConfig, parseBootstrapConfig, paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { asDockerConfig } from './join-payload.ts';
import { joinKubeConfig, joinReadError, readJoinInfo, readPullCredentials } from './join-reads.ts';
import { nodeKubeConfig } from './node-client.ts';
import { pullPayload } from './payload-pull.ts';
import { fetchPublishedManifest } from './published-manifest.ts';

export const pullPayloadUsage = 'Usage: winfleet-agent pull-payload [--services-version <version>]';

/** The services version pattern of winfleet-join and the published manifests. */
const servicesVersionPattern = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,62}$/;

/** Parses the arguments after `pull-payload`; throws WF_FLAG_INVALID naming the problem. */
export function parsePullPayloadFlags(args: readonly string[]): { servicesVersion?: string } {
  const invalid = (message: string) =>
    new WinfleetError(
      'WF_FLAG_INVALID',
      `winfleet-agent pull-payload: ${message}\n${pullPayloadUsage}`,
    );
  if (args.length === 0) return {};
  const [flag, value, ...rest] = args;
  if (flag !== '--services-version')
    throw invalid(
      `unknown argument ${JSON.stringify(flag!.slice(0, 40))}; the only flag is --services-version`,
    );
  if (value === undefined || !servicesVersionPattern.test(value))
    throw invalid(
      '--services-version needs a services version after it (letters, digits, ".", "+", "-"; at most 63)',
    );
  if (rest.length > 0) throw invalid('--services-version is given once, with nothing after it');
  return { servicesVersion: value };
}

/** The cluster client, the operator's namespace and the manifest to stage. */
interface PullTarget {
  kc: k8s.KubeConfig;
  namespace: string;
  manifest: ServicesManifest;
}

async function readText(context: AgentContext, path: string, what: string): Promise<string> {
  const data = await context.hostOS.readFile(path);
  if (!data) throw new WinfleetError('WF_AGENT_FILE_MISSING', `${path} does not exist; ${what}`);
  return data.toString('utf8');
}

/** While joining: bootstrap.json's manifest, read with its token and CA. */
async function joiningTarget(context: AgentContext): Promise<PullTarget> {
  const config = parseBootstrapConfig(
    await readText(context, paths.bootstrapConfig, 'the operator writes it before pull-payload'),
  );
  const token = parseJoinToken(config.bootstrapToken);
  // The schema already shapes it; never quoted, it is a credential.
  if (!token)
    throw new WinfleetError(
      'WF_AGENT_CONFIG_INVALID',
      `${paths.bootstrapConfig}: bootstrapToken is not "<id>.<secret>"; the operator writes it: bootstrap the host again`,
    );
  return {
    kc: joinKubeConfig(config.apiServer, config.caCertificate, token),
    namespace: config.operatorNamespace,
    manifest: config.manifest,
  };
}

/** Before an upgrade: the published manifest of `version`, read with the node's credentials. */
async function upgradeTarget(context: AgentContext, version: string): Promise<PullTarget> {
  const config = parseAgentConfig(
    await readText(context, paths.agentConfig, 'the host has not been bootstrapped'),
  );
  const kc = await nodeKubeConfig(context.hostOS);
  if (!kc)
    throw new WinfleetError(
      'WF_AGENT_FILE_MISSING',
      `${paths.kubeconfig} does not exist: the node has no credentials yet (its kubelet has not joined), so it cannot read services manifest ${version}`,
    );
  const namespace = config.operatorNamespace;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let manifest: ServicesManifest;
  try {
    manifest = await fetchPublishedManifest(
      core,
      namespace,
      version,
      'the operator (winfleet-agent pull-payload --services-version)',
    );
  } catch (error) {
    throw joinReadError(`services manifest ${version}`, error);
  }
  return { kc, namespace, manifest };
}

/** Runs the command; resolves with what it pulled (see the module comment). */
export async function pullPayloadCommand(
  context: AgentContext,
  flags: { servicesVersion?: string },
): Promise<Record<string, unknown>> {
  const target =
    flags.servicesVersion === undefined
      ? await joiningTarget(context)
      : await upgradeTarget(context, flags.servicesVersion);
  const core = target.kc.makeApiClient(k8s.CoreV1Api);
  const joinInfo = await readJoinInfo(core, target.namespace);
  const source = joinInfo.payload;
  if (!source)
    throw new WinfleetError(
      'WF_JOIN_INFO_INVALID',
      `ConfigMap ${target.namespace}/${joinInfoConfigMapName} names no payload registry (the operator serves its payload from a directory), so there is nothing to pull from; the operator pushes the payload over SFTP then`,
    );
  const credentials = await readPullCredentials(core, target.namespace, joinInfo);
  const pulled = await pullPayload(context.hostOS, target.manifest, source, {
    ...(credentials && credentials.length > 0 ? { pullSecret: asDockerConfig(credentials) } : {}),
    ...(context.signal ? { signal: context.signal } : {}),
  });
  return {
    servicesVersion: target.manifest.version,
    registry: `${source.repository}@${source.digest}`,
    downloaded: pulled.downloaded,
    bytes: pulled.bytes,
    staged: target.manifest.files.length,
  };
}
