/**
 * Bootstrap tokens, one per joining host: a Secret in kube-system of type
 * bootstrap.kubernetes.io/token, valid for a short time, in winfleet's own group so that only
 * winfleet's CSR approver acts on it (the controller manager's auto-approver does not), and
 * deleted once the node has joined. The token id is derived from the host's UID, so a restarted
 * operator finds and reuses the token it made instead of leaving a second one behind.
 */
import { createHash, randomInt } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.ts';

export const bootstrapGroup = 'system:bootstrappers:winfleet';
export const tokenHostLabel = 'winfleet.io/host';
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

function randomSecret(): string {
  return Array.from({ length: 16 }, () => alphabet[randomInt(alphabet.length)]).join('');
}

const decode = (s: k8s.V1Secret, key: string) =>
  Buffer.from(s.data?.[key] ?? '', 'base64').toString('utf8');

/** Returns the host's token, creating it (or replacing an expired one) as needed. */
export async function ensureBootstrapToken(
  kc: k8s.KubeConfig,
  host: { uid: string; namespace: string; name: string },
  ttlMs = 60 * 60_000,
): Promise<BootstrapToken> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const id = tokenIdFor(host.uid);
  const name = `bootstrap-token-${id}`;
  try {
    const existing = await core.readNamespacedSecret({ name, namespace: 'kube-system' });
    const expires = new Date(decode(existing, 'expiration'));
    // Keep a token with at least ten minutes left; a join takes far less.
    if (expires.getTime() - Date.now() > Math.min(10 * 60_000, ttlMs / 2)) {
      return { id, token: `${id}.${decode(existing, 'token-secret')}`, expires };
    }
    await core.deleteNamespacedSecret({ name, namespace: 'kube-system' });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const secret = randomSecret();
  const expires = new Date(Date.now() + ttlMs);
  const stringData = {
    'token-id': id,
    'token-secret': secret,
    expiration: expires.toISOString().replace(/\.\d+Z$/, 'Z'),
    'usage-bootstrap-authentication': 'true',
    'usage-bootstrap-signing': 'false',
    'auth-extra-groups': bootstrapGroup,
    description: `winfleet: joins WindowsHost ${host.namespace}/${host.name}`,
  };
  await core.createNamespacedSecret({
    namespace: 'kube-system',
    body: {
      metadata: {
        name,
        namespace: 'kube-system',
        labels: {
          [tokenHostLabel]: `${host.namespace}.${host.name}`.slice(0, 63),
          [tokenHostUidLabel]: host.uid,
        },
      },
      type: 'bootstrap.kubernetes.io/token',
      stringData,
    },
  });
  return { id, token: `${id}.${secret}`, expires };
}

/** Deletes the host's token; a missing token is fine. */
export async function deleteBootstrapToken(kc: k8s.KubeConfig, hostUid: string): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.deleteNamespacedSecret({
      name: `bootstrap-token-${tokenIdFor(hostUid)}`,
      namespace: 'kube-system',
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** The WindowsHost UID behind a bootstrap token id, if the token is winfleet's. */
export async function hostUidForToken(
  kc: k8s.KubeConfig,
  tokenId: string,
): Promise<string | undefined> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    const secret = await core.readNamespacedSecret({
      name: `bootstrap-token-${tokenId}`,
      namespace: 'kube-system',
    });
    if (decode(secret, 'auth-extra-groups').split(',').includes(bootstrapGroup)) {
      return secret.metadata?.labels?.[tokenHostUidLabel];
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return undefined;
}
