/**
 * What a joining host reads from the cluster once it trusts it (discovery.ts): with the join
 * token as its bearer credential and the pinned CA as its only trust, the ConfigMap
 * `winfleet-join` of the operator's namespace (join-info.ts), the services manifest it names
 * (checked against the operator's record, published-manifest.ts) and, when it names one, the
 * payload registry's pull Secret. The operator's RBAC lets the token's group read exactly these
 * by name.
 */
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import { type DockerConfigEntry, parseDockerConfig } from '../images/docker-config.ts';
import type { JoinToken } from '../join/join-command-values.ts';
import {
  type JoinInfo,
  joinInfoConfigMapName,
  joinInfoKey,
  parseJoinInfo,
} from '../join/join-info.ts';
import { httpStatus } from '../kube/client.ts';
import { userAgents } from '../kube/user-agent.ts';
import { WinfleetKubeConfig } from '../kube/winfleet-kube-config.ts';
import { isForbiddenStatus, isNotFoundStatus, isUnauthorizedStatus } from '../net/http-status.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { fetchPublishedManifest } from './published-manifest.ts';

/** @package */
export interface JoinMaterials {
  joinInfo: JoinInfo;
  manifest: ServicesManifest;
  /** The pull Secret's credentials, when winfleet-join names one. */
  pullCredentials?: DockerConfigEntry[];
}

/** A client that trusts only the pinned CA and authenticates with the join token. */
export function joinKubeConfig(apiServer: string, caPem: string, token: JoinToken): k8s.KubeConfig {
  const kc = new WinfleetKubeConfig({ userAgent: userAgents.agent });
  kc.loadFromOptions({
    clusters: [
      { name: 'cluster', server: apiServer, caData: Buffer.from(caPem).toString('base64') },
    ],
    users: [{ name: 'join-token', token: `${token.id}.${token.secret}` }],
    contexts: [{ name: 'join', cluster: 'cluster', user: 'join-token' }],
    currentContext: 'join',
  });
  return kc;
}

/** A code Node or undici gives a TLS verification failure, anywhere in the cause chain. */
function certificateErrorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      /CERT|SIGNATURE|ISSUER|ALTNAME|SELF_SIGNED|UNABLE_TO/.test(code)
    ) {
      return code;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The error for a failed read of `what`, saying whether waiting helps and what to fix. */
export function joinReadError(what: string, error: unknown): WinfleetError {
  if (error instanceof WinfleetError) return error;
  const status = httpStatus(error);
  const tls = certificateErrorCode(error);
  if (tls) {
    return new WinfleetError(
      'WF_JOIN_REFUSED',
      `Reading ${what}: the server's certificate is not vouched for by the pinned cluster CA (${tls}); refusing to go on`,
      { cause: error },
    );
  }
  if (isUnauthorizedStatus(status)) {
    return new WinfleetError(
      'WF_TERMINAL',
      `Reading ${what}: the API server does not accept the join token (401): it expired, was used up or revoked; make a new join command`,
    );
  }
  if (isForbiddenStatus(status)) {
    return new WinfleetError(
      'WF_TERMINAL',
      `Reading ${what}: the join token may not read it (403); the winfleet operator grants its group (system:bootstrappers:winfleet) get on it by name: check --namespace and that the operator runs`,
    );
  }
  if (isNotFoundStatus(status)) {
    return new WinfleetError(
      'WF_JOIN_DISCOVERY_PENDING',
      `Reading ${what}: it does not exist (404); the winfleet operator writes it: check --namespace and that the operator runs`,
    );
  }
  return new WinfleetError(
    'WF_CLUSTER_UNREACHABLE',
    `Reading ${what}: ${status ? `HTTP ${status}` : ((error as Error).message ?? String(error))}`,
    { cause: error },
  );
}

async function read<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw joinReadError(what, error);
  }
}

/** Reads winfleet-join, its manifest and pull Secret from `namespace`. */
export async function readJoinMaterials(
  kc: k8s.KubeConfig,
  namespace: string,
): Promise<JoinMaterials> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const joinInfo = await readJoinInfo(core, namespace);
  const manifest = await read(`services manifest ${joinInfo.servicesVersion}`, () =>
    fetchPublishedManifest(
      core,
      namespace,
      joinInfo.servicesVersion,
      `ConfigMap ${namespace}/${joinInfoConfigMapName}`,
    ),
  );
  const pullCredentials = await readPullCredentials(core, namespace, joinInfo);
  return { joinInfo, manifest, ...(pullCredentials ? { pullCredentials } : {}) };
}

/** winfleet-join of `namespace`, parsed strictly. */
export async function readJoinInfo(core: k8s.CoreV1Api, namespace: string): Promise<JoinInfo> {
  const where = `ConfigMap ${namespace}/${joinInfoConfigMapName}`;
  const cm = await read(where, () =>
    core.readNamespacedConfigMap({ name: joinInfoConfigMapName, namespace }),
  );
  return parseJoinInfo(cm.data?.[joinInfoKey] ?? '');
}

/** The credentials of the pull Secret winfleet-join names; undefined when it names none. */
export async function readPullCredentials(
  core: k8s.CoreV1Api,
  namespace: string,
  joinInfo: JoinInfo,
): Promise<DockerConfigEntry[] | undefined> {
  const secretName = joinInfo.payload?.pullSecretName;
  if (secretName === undefined) return undefined;
  const where = `ConfigMap ${namespace}/${joinInfoConfigMapName}`;
  const secretWhere = `Secret ${namespace}/${secretName}`;
  const secret = await read(secretWhere, () =>
    core.readNamespacedSecret({ name: secretName, namespace }),
  );
  return pullSecretCredentials(secret, secretWhere, where);
}

/**
 * The registry credentials of the payload's pull Secret (`secretWhere`, named by `where`);
 * WF_JOIN_INFO_INVALID unless it is a kubernetes.io/dockerconfigjson Secret that parses.
 * @package
 */
export function pullSecretCredentials(
  secret: k8s.V1Secret,
  secretWhere: string,
  where: string,
): DockerConfigEntry[] {
  const encoded = secret.data?.['.dockerconfigjson'];
  if (secret.type !== 'kubernetes.io/dockerconfigjson' || encoded === undefined) {
    throw new WinfleetError(
      'WF_JOIN_INFO_INVALID',
      `${secretWhere}, named by ${where} as the payload's pull Secret, is not of type kubernetes.io/dockerconfigjson with a .dockerconfigjson key`,
    );
  }
  try {
    return parseDockerConfig(Buffer.from(encoded, 'base64'), secretWhere);
  } catch (error) {
    throw new WinfleetError('WF_JOIN_INFO_INVALID', (error as Error).message);
  }
}
