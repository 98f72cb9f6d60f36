/**
 * The payload of a services manifest the run loop is about to apply, pulled by the agent
 * itself: how a Pull-mode host (which winfleet never reaches over SSH; agent.json's
 * pullsPayload, written by the join) upgrades. Before the agent installs a new manifest's
 * files, every file whose staged copy under C:\k\winfleet\payload is missing or different is
 * pulled from the payload artifact that winfleet-join names (payload-pull.ts: by digest,
 * mirrors first, verified while streaming), with the pull Secret it names, both read with the
 * node's own credentials (the operator's RBAC lets nodes get exactly those by name). With the
 * files come the agent and its service shim of the same artifact, put in place as running
 * executables are replaced where they differ: the run loop then restarts on the new agent.
 *
 * The run loop asks only while a new manifest waits to be applied (its desired version differs
 * from the one applied), never on every pass; what is staged already is not downloaded again.
 */
import type * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import {
  type JoinInfo,
  joinInfoConfigMapName,
  joinInfoKey,
  parseJoinInfo,
} from '../join/join-info.ts';
import { httpStatus } from '../kube/client.ts';
import { isForbiddenStatus, isNotFoundStatus } from '../net/http-status.ts';
import { agentFileName, serviceShimFileName } from '../payload/payload.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { paths } from './agent-config.ts';
import type { HostOS } from './host-os.ts';
import { asDockerConfig } from './join-payload.ts';
import { pullSecretCredentials } from './join-reads.ts';
import { type PayloadPullResult, pullPayload } from './payload-pull.ts';
import { replaceExecutable } from './replace-executable.ts';

/** How a pull may be cut short. */
export interface ManifestPayloadOptions {
  signal?: AbortSignal;
}

/** The manifest's files whose staged copy is missing or has another SHA-256. */
export async function unstagedFiles(host: HostOS, manifest: ServicesManifest): Promise<string[]> {
  const missing: string[] = [];
  for (const file of manifest.files) {
    if ((await host.fileSha256(`${paths.payload}\\${file.payload}`)) !== file.sha256)
      missing.push(file.payload);
  }
  return missing;
}

/** Reads `what` with the node's credentials, saying what a refusal means. */
async function readAsNode<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const status = httpStatus(error);
    if (isForbiddenStatus(status) || isNotFoundStatus(status)) {
      throw new WinfleetError(
        'WF_AGENT_FILE_MISSING',
        `Cannot read ${what} to pull the payload (HTTP ${status}): the winfleet operator writes it and lets nodes read it by name; check that the operator runs with --payload-image`,
      );
    }
    throw error;
  }
}

/** winfleet-join of the operator's namespace, as the node reads it. */
async function readJoinInfo(core: k8s.CoreV1Api, namespace: string): Promise<JoinInfo> {
  const where = `ConfigMap ${namespace}/${joinInfoConfigMapName}`;
  const cm = await readAsNode(where, () =>
    core.readNamespacedConfigMap({ name: joinInfoConfigMapName, namespace }),
  );
  return parseJoinInfo(cm.data?.[joinInfoKey] ?? '');
}

/**
 * Pulls the files of `manifest` that are not staged, and the agent and its shim, and puts the
 * latter in place where they differ; returns what the pull did. Without a registry in
 * winfleet-join, a manifest whose files are all staged passes (nothing to pull), and one that
 * lacks some is refused saying why.
 * @package
 */
export async function pullManifestPayload(
  host: HostOS,
  core: k8s.CoreV1Api,
  namespace: string,
  manifest: ServicesManifest,
  options: ManifestPayloadOptions = {},
): Promise<PayloadPullResult | undefined> {
  const info = await readJoinInfo(core, namespace);
  const source = info.payload;
  if (!source) {
    const missing = await unstagedFiles(host, manifest);
    if (missing.length === 0) return undefined;
    throw new WinfleetError(
      'WF_AGENT_FILE_MISSING',
      `Services manifest ${manifest.version} needs payload files that are not staged (${missing.join(', ')}), and winfleet-join names no payload registry to pull them from (the operator serves its payload from a directory and copies it over SSH, which it never does for a Pull-mode host); run the operator with --payload-image`,
    );
  }
  let pullSecret: ReturnType<typeof asDockerConfig> | undefined;
  if (source.pullSecretName !== undefined) {
    const secretWhere = `Secret ${namespace}/${source.pullSecretName}`;
    const secret = await readAsNode(secretWhere, () =>
      core.readNamespacedSecret({ name: source.pullSecretName!, namespace }),
    );
    const entries = pullSecretCredentials(
      secret,
      secretWhere,
      `ConfigMap ${namespace}/${joinInfoConfigMapName}`,
    );
    if (entries.length > 0) pullSecret = asDockerConfig(entries);
  }
  const pulled = await pullPayload(host, manifest, source, {
    // The shim before the agent: a new agent restarts at once and must find the new shim.
    extraFiles: [serviceShimFileName, agentFileName],
    ...(pullSecret ? { pullSecret } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  await installOwnExecutables(host, pulled);
  return pulled;
}

/** Puts the artifact's shim, then agent, in place where they differ (both may be running). */
async function installOwnExecutables(host: HostOS, pulled: PayloadPullResult): Promise<void> {
  for (const [name, path] of [
    [serviceShimFileName, paths.serviceExe],
    [agentFileName, paths.agentExe],
  ] as const) {
    const file = pulled.payload.files.find((f) => f.name === name);
    if (!file || (await host.fileSha256(path)) === file.sha256) continue;
    const staged = `${paths.payload}\\${name}`;
    await replaceExecutable(host, path, (to) => host.copyFile(staged, to));
  }
}
