/**
 * Bootstrap tokens, one per joining host: a Secret in kube-system of type
 * bootstrap.kubernetes.io/token, valid for a short time, in winfleet's own group so that only
 * winfleet's CSR approver acts on it (the controller manager's auto-approver does not), and
 * deleted once the node has joined. The token id is derived from the host's UID, so each host
 * has one token at a time and the CSR approver finds the host behind a token id from its cache.
 *
 * The operator only creates and deletes these Secrets, never reads them: kube-system holds
 * other credentials, so its RBAC there is `create` and `delete` on Secrets and nothing else.
 * A token already there (an earlier pass, or a restarted operator) is replaced, never reused.
 */
import { createHash, randomInt } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { apiTime } from '../kube/api-time.ts';
import { isAlreadyExists, isNotFound } from '../kube/client.ts';

export const bootstrapGroup = 'system:bootstrappers:winfleet';
export const tokenHostLabel = 'winfleet.io/host';
/** @package */
export const tokenHostUidLabel = 'winfleet.io/host-uid';
const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';

export interface BootstrapToken {
  id: string;
  /** "<id>.<secret>" — never log it. */
  token: string;
  expires: Date;
}

/** The token id for a host: 6 characters of [a-z0-9] derived from its UID. */
export function tokenIdFor(hostUid: string): string {
  const digest = createHash('sha256').update(hostUid).digest();
  return Array.from(digest.subarray(0, 6), (b) => alphabet[b % alphabet.length]).join('');
}

/**
 * `length` random characters of [a-z0-9] (node:crypto), as bootstrap token ids and secrets are:
 * each character one uniform draw over the 36 (randomInt rejects the remainder, so no
 * character is likelier than another, unlike `byte % 36`).
 * @package
 */
export function randomTokenPart(length: number): string {
  return Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('');
}

/** A new random bootstrap token: a 6-character id and a 16-character secret (kubeadm's shape). */
export function newBootstrapTokenParts(): { id: string; secret: string } {
  return { id: randomTokenPart(6), secret: randomTokenPart(16) };
}

/** What one bootstrap token Secret says; each caller states the usages and groups it needs. */
export interface BootstrapTokenSecretSpec {
  id: string;
  /** The secret half: never log it. */
  secret: string;
  expires: Date;
  /**
   * usage-bootstrap-signing: true lets the bootstrapsigner sign cluster-info for the token
   * (join tokens); false writes "false"; left out, the key is not written.
   */
  signing?: boolean;
  /** auth-extra-groups; left out, the token is only in system:bootstrappers. */
  extraGroups?: string;
  description: string;
  labels: Record<string, string>;
}

/**
 * The one builder of a bootstrap token Secret (kube-system/bootstrap-token-<id>, type
 * bootstrap.kubernetes.io/token), with the keys kubeadm writes (token-id, token-secret,
 * expiration, usage-bootstrap-*, auth-extra-groups, description).
 */
export function bootstrapTokenSecret(spec: BootstrapTokenSecretSpec): k8s.V1Secret {
  return {
    metadata: {
      name: bootstrapTokenSecretName(spec.id),
      namespace: 'kube-system',
      labels: spec.labels,
    },
    type: 'bootstrap.kubernetes.io/token',
    stringData: {
      'token-id': spec.id,
      'token-secret': spec.secret,
      expiration: apiTime(spec.expires),
      'usage-bootstrap-authentication': 'true',
      ...(spec.signing === undefined ? {} : { 'usage-bootstrap-signing': String(spec.signing) }),
      ...(spec.extraGroups === undefined ? {} : { 'auth-extra-groups': spec.extraGroups }),
      description: spec.description,
    },
  };
}

/** The kube-system Secret of bootstrap token `id`. */
export function bootstrapTokenSecretName(id: string): string {
  return `bootstrap-token-${id}`;
}

/**
 * Creates the host's token. A token of this host already there (from an earlier bootstrap
 * pass or a restarted operator) is deleted and made again: its secret cannot be read back, and
 * the bootstrap that asks for a token always hands the host the new one.
 */
export async function ensureBootstrapToken(
  kc: k8s.KubeConfig,
  host: { uid: string; namespace: string; name: string },
  ttlMs = 60 * 60_000,
): Promise<BootstrapToken> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const id = tokenIdFor(host.uid);
  const secret = randomTokenPart(16);
  const expires = new Date(Date.now() + ttlMs);
  const body = bootstrapTokenSecret({
    id,
    secret,
    expires,
    signing: false,
    extraGroups: bootstrapGroup,
    description: `winfleet: joins WindowsHost ${host.namespace}/${host.name}`,
    labels: {
      [tokenHostLabel]: `${host.namespace}.${host.name}`.slice(0, 63),
      [tokenHostUidLabel]: host.uid,
    },
  });
  const create = () => core.createNamespacedSecret({ namespace: 'kube-system', body });
  try {
    await create();
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    await deleteBootstrapToken(kc, host.uid);
    await create();
  }
  return { id, token: `${id}.${secret}`, expires };
}

/** Deletes the host's token; a missing token is fine. */
export async function deleteBootstrapToken(kc: k8s.KubeConfig, hostUid: string): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.deleteNamespacedSecret({
      name: bootstrapTokenSecretName(tokenIdFor(hostUid)),
      namespace: 'kube-system',
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/**
 * The bootstrap token id that belongs to a host: the one derived from its UID. A host being
 * deleted has none (its removal deletes the token). The host cache is indexed by it
 * (host-indexes.ts), so a bootstrap CSR finds its host without a walk.
 */
export function ownTokenId(host: {
  metadata: { uid?: string; deletionTimestamp?: unknown };
}): string | undefined {
  const { uid, deletionTimestamp } = host.metadata;
  return uid && !deletionTimestamp ? tokenIdFor(uid) : undefined;
}
