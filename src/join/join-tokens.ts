/**
 * Join tokens: what `winfleet join-command` creates so that hosts can join a pool by themselves,
 * and `winfleet join-tokens list|revoke` shows and removes. A join token is two objects:
 *
 * - a bootstrap token Secret in kube-system (`bootstrap-token-<id>`): authenticates hosts as
 *   system:bootstrap:<id> in winfleet's group system:bootstrappers:winfleet (so only winfleet's
 *   CSR approver acts on their CSRs), and is signing (`usage-bootstrap-signing`), so that the
 *   controller manager's bootstrapsigner signs kube-public/cluster-info for it (the host's
 *   discovery checks that signature before it trusts the cluster CA);
 * - its record, ConfigMap winfleet-join-token-<id> in the operator's namespace
 *   (join-token-record.ts): the pool, the uses left, the expiry, the labels.
 *
 * Revoking deletes both; the record alone already decides (no record: the approver denies).
 * Ids and secrets come from node:crypto. The secret half is returned once, to be printed in the
 * script, and never logged or stored anywhere else.
 */
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import { apiTime } from '../kube/api-time.ts';
import { isAlreadyExists, isNotFound } from '../kube/client.ts';
import {
  bootstrapGroup,
  bootstrapTokenSecret,
  bootstrapTokenSecretName,
  newBootstrapTokenParts,
} from './bootstrap-tokens.ts';
import {
  formatJoinTokenRecord,
  type JoinTokenRecord,
  joinTokenLabel,
  joinTokenRecordKey,
  joinTokenRecordName,
  joinTokenSpent,
  parseJoinTokenRecord,
} from './join-token-record.ts';

const managedBy = { 'app.kubernetes.io/managed-by': 'winfleet' };

export interface NewJoinToken {
  /** The operator's namespace: where the record goes (and winfleet-join is). */
  operatorNamespace: string;
  pool: string;
  /** The pool's namespace. */
  namespace: string;
  uses: number;
  ttlMs: number;
  /** The labels each joining host's WindowsHost gets. */
  labels: Record<string, string>;
  /** The one EC2 instance the token admits (its identity document must name it). */
  instanceId?: string;
}

export interface CreatedJoinToken {
  id: string;
  /** "<id>.<secret>" — print it in the script only; never log it. */
  token: string;
  record: JoinTokenRecord;
}

/**
 * Creates the token's Secret, then its record. An id already taken (another token, or an SSH
 * join's) is never reused: a new id is drawn. A failure after the Secret was made deletes it.
 */
export async function createJoinToken(
  kc: k8s.KubeConfig,
  request: NewJoinToken,
): Promise<CreatedJoinToken> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  // 36^6 ids: a clash is rare; a few draws make it vanish.
  for (let attempt = 0; attempt < 5; attempt++) {
    const { id, secret } = newBootstrapTokenParts();
    const expiresAt = new Date(Date.now() + request.ttlMs);
    const expires = apiTime(expiresAt);
    try {
      await core.createNamespacedSecret({
        namespace: 'kube-system',
        body: bootstrapTokenSecret({
          id,
          secret,
          expires: expiresAt,
          signing: true,
          extraGroups: bootstrapGroup,
          description: `winfleet join-command: joins hosts to WindowsNodePool ${request.namespace}/${request.pool}`,
          labels: { [joinTokenLabel]: id, ...managedBy },
        }),
      });
    } catch (error) {
      if (isAlreadyExists(error)) continue;
      throw error;
    }
    const record: JoinTokenRecord = {
      tokenId: id,
      pool: request.pool,
      namespace: request.namespace,
      uses: request.uses,
      usesLeft: request.uses,
      expires,
      labels: request.labels,
      joined: [],
      ...(request.instanceId ? { instanceId: request.instanceId } : {}),
    };
    try {
      await core.createNamespacedConfigMap({
        namespace: request.operatorNamespace,
        body: {
          metadata: {
            name: joinTokenRecordName(id),
            namespace: request.operatorNamespace,
            labels: { [joinTokenLabel]: id, ...managedBy },
          },
          data: { [joinTokenRecordKey]: formatJoinTokenRecord(record) },
        },
      });
    } catch (error) {
      await deleteJoinTokenSecret(kc, id);
      // A record left by a token whose Secret is gone: draw another id, never adopt it.
      if (isAlreadyExists(error)) continue;
      throw error;
    }
    return { id, token: `${id}.${secret}`, record };
  }
  // Five clashes among 36^6 random ids means the ids are not random.
  throw new WinfleetError(
    'WF_INVARIANT',
    'Drew 5 bootstrap token ids that were all taken; the random source is broken',
  );
}

/** Deletes token `id`'s Secret; a missing one is fine. */
export async function deleteJoinTokenSecret(kc: k8s.KubeConfig, id: string): Promise<boolean> {
  try {
    await kc
      .makeApiClient(k8s.CoreV1Api)
      .deleteNamespacedSecret({ name: bootstrapTokenSecretName(id), namespace: 'kube-system' });
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** What revoking found: whether the Secret and the record existed. */
export interface RevokedJoinToken {
  secret: boolean;
  record: boolean;
}

/** Deletes token `id`'s record, then its Secret (the record decides, so it goes first). */
export async function revokeJoinToken(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
  id: string,
): Promise<RevokedJoinToken> {
  let record = true;
  try {
    await kc
      .makeApiClient(k8s.CoreV1Api)
      .deleteNamespacedConfigMap({ name: joinTokenRecordName(id), namespace: operatorNamespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    record = false;
  }
  return { record, secret: await deleteJoinTokenSecret(kc, id) };
}

/** A token `pruneJoinTokens` deleted (or, dry, would delete), and why. */
export interface PrunedJoinToken {
  id: string;
  why: string;
}

/**
 * Deletes every expired or used-up token (record, then Secret) of the operator's namespace.
 * Records that cannot be read are left for a person to look at (join-tokens list shows them).
 * With `dryRun`, only says which.
 */
export async function pruneJoinTokens(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
  now: Date,
  dryRun = false,
): Promise<PrunedJoinToken[]> {
  const pruned: PrunedJoinToken[] = [];
  for (const token of await listJoinTokens(kc, operatorNamespace)) {
    if (!('record' in token)) continue;
    const why = joinTokenSpent(token.record, now);
    if (!why) continue;
    if (!dryRun) await revokeJoinToken(kc, operatorNamespace, token.id);
    pruned.push({ id: token.id, why });
  }
  return pruned;
}

/** A listed token: its record, or why the record could not be read. */
export type ListedJoinToken =
  | { id: string; record: JoinTokenRecord }
  | { id: string; problem: string };

/** The join tokens of the operator's namespace, by their records, sorted by id. */
export async function listJoinTokens(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
): Promise<ListedJoinToken[]> {
  const list = await kc
    .makeApiClient(k8s.CoreV1Api)
    .listNamespacedConfigMap({ namespace: operatorNamespace, labelSelector: joinTokenLabel });
  return list.items
    .map((configMap): ListedJoinToken => {
      const name = configMap.metadata?.name ?? '';
      const id = configMap.metadata?.labels?.[joinTokenLabel] ?? name;
      try {
        return { id, record: parseJoinTokenRecord(name, configMap.data?.[joinTokenRecordKey]) };
      } catch (error) {
        return { id, problem: (error as Error).message };
      }
    })
    .sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * Token `id`'s record, read from the API server (never a cache: a revoked or used-up token is
 * seen at once); undefined when there is none. Throws WF_JOIN_TOKEN_RECORD_INVALID for one that
 * does not parse.
 */
export async function readJoinTokenRecord(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
  id: string,
): Promise<JoinTokenRecord | undefined> {
  const name = joinTokenRecordName(id);
  let configMap: k8s.V1ConfigMap;
  try {
    configMap = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ name, namespace: operatorNamespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  return parseJoinTokenRecord(name, configMap.data?.[joinTokenRecordKey]);
}
