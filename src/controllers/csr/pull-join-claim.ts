/**
 * What happens to a join by command that passed every check (pull-join-policy.ts), before its
 * CSR is approved:
 *
 * 1. the WindowsHost is created (name = node name, the pool's namespace, Pull mode): creation
 *    is the claim on the name the API server makes atomic. AlreadyExists means someone else
 *    claimed it first — unless the host is this CSR's own from an earlier pass (its
 *    winfleet.io/join-csr annotation), which then goes on;
 * 2. a use of the token is taken on its record with optimistic concurrency: a conflict reads
 *    the record again; a record that is gone (revoked), expired or used up meanwhile undoes the
 *    claim (the host is deleted) and denies. A use already taken for this CSR (an earlier pass)
 *    is not taken twice. Uses never go below 0; at 0 the token's Secret is deleted.
 *
 * The operator reads only the record; it cannot read kube-system Secrets, and needs not.
 */
import * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import { hostObject } from '../../fleet/host-status.ts';
import {
  formatJoinTokenRecord,
  type JoinTokenRecord,
  joinTokenExpired,
  joinTokenRecordKey,
  joinTokenRecordName,
  parseJoinTokenRecord,
} from '../../join/join-token-record.ts';
import { deleteJoinTokenSecret } from '../../join/join-tokens.ts';
import { apiTime } from '../../kube/api-time.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../../kube/client.ts';
import type { CsrDecision, PullJoinClaim } from './csr-request.ts';
import { denyJoin, type JoinDenial, joinCsrAnnotation } from './pull-join-policy.ts';

/** Conflicting writes to one record before the CSR is retried later. */
const maxRecordAttempts = 8;

export interface ClaimContext {
  kc: k8s.KubeConfig;
  /** The operator's namespace, where the records are. */
  operatorNamespace: string;
  now(): Date;
}

/** Creates the host, takes the use; approve or deny (see the module comment). */
export async function claimPullJoin(
  ctx: ClaimContext,
  claim: PullJoinClaim,
  reason: string,
): Promise<Extract<CsrDecision, { action: 'approve' | 'deny' }>> {
  const host = await createHost(ctx.kc, claim);
  if ('action' in host) return host;
  const taken = await takeUse(ctx, claim);
  if (taken.denied) {
    await deleteHost(ctx.kc, host);
    return { ...taken.denied, host };
  }
  const left = taken.usesLeft;
  return {
    action: 'approve',
    reason: `${reason}; WindowsHost ${host.metadata.namespace}/${host.metadata.name} created in Pull mode; ${left} use${left === 1 ? '' : 's'} left`,
    host,
  };
}

async function createHost(
  kc: k8s.KubeConfig,
  claim: PullJoinClaim,
): Promise<WindowsHost | JoinDenial> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const { group, version, namespace, plural, name } = hostObject(claim.host);
  try {
    return (await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      body: claim.host,
    })) as WindowsHost;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  const existing = (await custom.getNamespacedCustomObject({
    group,
    version,
    namespace,
    plural,
    name,
  })) as WindowsHost;
  if (existing.metadata.annotations?.[joinCsrAnnotation] === claim.csrUid) return existing;
  return denyJoin(
    'name-taken',
    `node name ${claim.nodeName} is taken: WindowsHost ${namespace}/${name} was created by someone else first`,
  );
}

async function deleteHost(kc: k8s.KubeConfig, host: WindowsHost): Promise<void> {
  try {
    await kc.makeApiClient(k8s.CustomObjectsApi).deleteNamespacedCustomObject(hostObject(host));
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** Takes one use of the token for this CSR: the uses left after it, or why not. */
async function takeUse(
  ctx: ClaimContext,
  claim: PullJoinClaim,
): Promise<{ usesLeft: number; denied?: undefined } | { denied: JoinDenial }> {
  const core = ctx.kc.makeApiClient(k8s.CoreV1Api);
  const name = joinTokenRecordName(claim.tokenId);
  const namespace = ctx.operatorNamespace;
  let conflict: unknown;
  for (let attempt = 0; attempt < maxRecordAttempts; attempt++) {
    let configMap: k8s.V1ConfigMap;
    try {
      configMap = await core.readNamespacedConfigMap({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return {
        denied: denyJoin('token', `join token ${claim.tokenId} was revoked while the host joined`),
      };
    }
    let record: JoinTokenRecord;
    try {
      record = parseJoinTokenRecord(name, configMap.data?.[joinTokenRecordKey]);
    } catch (error) {
      // Rewritten by someone meanwhile into something it cannot trust: the claim is undone.
      return { denied: denyJoin('token', (error as Error).message) };
    }
    if (record.joined.some((use) => use.csr === claim.csrUid)) return { usesLeft: record.usesLeft };
    if (joinTokenExpired(record, ctx.now())) {
      return {
        denied: denyJoin('expiry', `join token ${claim.tokenId} expired at ${record.expires}`),
      };
    }
    if (record.usesLeft <= 0) {
      return { denied: denyJoin('uses', `join token ${claim.tokenId} was used up meanwhile`) };
    }
    const next = {
      ...record,
      usesLeft: record.usesLeft - 1,
      joined: [
        ...record.joined,
        { nodeName: claim.nodeName, csr: claim.csrUid, at: apiTime(ctx.now()) },
      ],
    };
    try {
      await core.replaceNamespacedConfigMap({
        name,
        namespace,
        // The resourceVersion read: a write in between answers 409 and this reads again.
        body: {
          ...configMap,
          data: { ...configMap.data, [joinTokenRecordKey]: formatJoinTokenRecord(next) },
        },
      });
    } catch (error) {
      if (!isConflict(error)) throw error;
      conflict = error;
      continue;
    }
    if (next.usesLeft === 0) await deleteJoinTokenSecret(ctx.kc, claim.tokenId);
    return { usesLeft: next.usesLeft };
  }
  // Still changing under us: the CSR is retried later, its host kept (this CSR's own).
  throw conflict;
}
