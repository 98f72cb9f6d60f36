/**
 * Which kubelet client CSRs of hosts joining by command (`winfleet join-command`) winfleet
 * approves. The request comes from system:bootstrap:<id> in group system:bootstrappers:winfleet
 * with no WindowsHost behind the id (SSH joins derive their ids from a host), and is decided on
 * the token's record (join-token-record.ts), read fresh from the API server:
 *
 * - token: a record exists and parses (revoking deletes it; the operator cannot read the
 *   token's Secret in kube-system, so the record is what revocation changes);
 * - expiry: the record's expiry has not passed; uses: it has uses left;
 * - subject, extensions, client-certificate: the kubelet's exact subject and nothing a kubelet
 *   never asks for (kubelet-certificate-rules.ts), the node name taken from the CN;
 * - node-name: a lowercase RFC 1123 label of at most 63 characters (it names the WindowsHost);
 * - pool: the record's pool exists where the operator watches; pool-selector: its selector
 *   still selects the record's labels; active-directory: the pool joins no Active Directory
 *   domain (a Pull host's kubelet registers before any domain join, so such a pool takes no
 *   tokens: refused here, before a certificate, not after); name-pattern: the pool sets
 *   spec.join.nodeNamePattern (required: without one a token could claim any name, including
 *   names of nodes that do not exist yet) and the name matches it;
 * - instance-identity: when the pool sets spec.join.instanceIdentity (or the token was made for
 *   one instance), an identity document filed with this token for this node name (a CSR of the
 *   signer winfleet.io/instance-identity from the same requester) whose AWS signature verifies
 *   with hosts.instanceIdentity.aws.certificates, of an allowed account, naming the instance
 *   the node is named for, and the token's instance when it has one
 *   (pki/instance-identity.ts);
 * - name-retired: the name is not a removed Pull host's whose certificate may still be valid
 *   (join/retired-node-names.ts);
 * - name-taken: the name is fresh: no Node, no WindowsHost of that name in the pool's
 *   namespace, none holding it in spec.nodeName or status.nodeName anywhere, and no other CSR
 *   holding it in the operator's reservation table.
 *
 * The last check reserves the name in the same synchronous stretch as it checks the caches, so
 * of two CSRs racing for one name only one gets past it. What follows (pull-join-claim.ts)
 * creates the WindowsHost — the claim the API server makes atomic — and takes a use.
 */

import type { X509Certificate } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { compileNodeNamePattern } from '../../api/node-name-pattern.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { type JoinTokenRecord, joinTokenExpired } from '../../join/join-token-record.ts';
import { type RetiredNodeName, retiredNodeNamesConfigMap } from '../../join/retired-node-names.ts';
import type { NodeNetworkState } from '../../network/cluster-network-watch.ts';
import { quoteValue } from '../../pki/distinguished-name.ts';
import { type AwsInstanceIdentity, verifyAwsIdentity } from '../../pki/instance-identity.ts';
import { matchesSelector, selectorProblems } from '../../rollout/label-selector.ts';
import type { CsrDecision, CsrRequest } from './csr-request.ts';
import {
  clientCertificateProblem,
  extrasProblem,
  subjectProblem,
} from './kubelet-certificate-rules.ts';

/** Annotation on a WindowsHost created for a join: the UID of the CSR it was created for. */
export const joinCsrAnnotation = 'winfleet.io/join-csr';
/** Annotation on a WindowsHost created for a join: the join token id it used. */
export const joinTokenAnnotation = 'winfleet.io/join-token';

/** What the pull-join policy reads. */
export interface PullJoinLookup {
  /**
   * The token's record, read fresh; undefined when there is none. Throws
   * WF_JOIN_TOKEN_RECORD_INVALID for one that does not parse.
   */
  record(tokenId: string): Promise<(JoinTokenRecord & { resourceVersion?: string }) | undefined>;
  pool(namespace: string, name: string): WindowsNodePool | undefined;
  /** The Node of this name, if there is one. */
  node(nodeName: string): k8s.V1Node | undefined;
  /** Every WindowsHost the operator watches. */
  hosts(): readonly WindowsHost[];
  /**
   * Reserves `nodeName` for the CSR `csrUid`: false when another CSR holds it. Called last,
   * with no await between the cache checks and it.
   */
  reserve(nodeName: string, csrUid: string): boolean;
  now(): Date;
  /**
   * Whether a node may join the cluster's pod network now (cluster-network-watch.ts); a join
   * refused there gets no certificate. Default: allowed.
   */
  network?: () => NodeNetworkState;
  /**
   * The instance identities filed by `requester` (system:bootstrap:<id>) for `nodeName`: the
   * carrier CSRs of pki/instance-identity.ts. Default: none.
   */
  instanceIdentities?: (requester: string, nodeName: string) => AwsInstanceIdentity[];
  /** What verifies them: hosts.instanceIdentity.aws of winfleet-config. Default: nothing. */
  identityTrust?: () => { certificates: readonly X509Certificate[]; accountIds: readonly string[] };
  /**
   * The retirement of `nodeName` in force (a removed Pull host's, join/retired-node-names.ts),
   * read fresh. Default: none.
   */
  retired?: (nodeName: string) => Promise<RetiredNodeName | { problem: string } | undefined>;
}

/** @package */
export type JoinDenial = Extract<CsrDecision, { action: 'deny' }>;

/** A denial naming the check that failed. */
export function denyJoin(check: string, reason: string, host?: WindowsHost): JoinDenial {
  const decision = {
    action: 'deny' as const,
    check,
    reason: `join by command refused (${check}): ${reason}`,
  };
  return host ? { ...decision, host } : decision;
}

/** The node name a kubelet's subject names (O=system:nodes, CN=system:node:<name>), if any. */
function subjectNodeName(request: CsrRequest): string | undefined {
  const rdns = request.parsed?.subject ?? [];
  const cn = rdns.length === 2 && rdns[1]!.length === 1 ? rdns[1]![0]! : undefined;
  if (cn?.label !== 'CN' || !cn.value.startsWith('system:node:')) return undefined;
  return cn.value.slice('system:node:'.length);
}

const labelName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The first reason `nodeName` is not fresh, or undefined. */
function takenProblem(
  nodeName: string,
  record: JoinTokenRecord,
  csrUid: string,
  lookup: PullJoinLookup,
): string | undefined {
  if (lookup.node(nodeName)) return `Node ${nodeName} already exists`;
  for (const host of lookup.hosts()) {
    // The host this very CSR created in an earlier pass (that pass failed after it).
    if (host.metadata.annotations?.[joinCsrAnnotation] === csrUid) continue;
    const ref = `WindowsHost ${host.metadata.namespace}/${host.metadata.name}`;
    if (host.spec.nodeName === nodeName) return `${ref} holds it in spec.nodeName`;
    if (host.status?.nodeName === nodeName) return `${ref} holds it in status.nodeName`;
    if (host.metadata.namespace === record.namespace && host.metadata.name === nodeName) {
      return `${ref} exists`;
    }
  }
  if (!lookup.reserve(nodeName, csrUid)) return 'another CSR is joining with it right now';
  return undefined;
}

/** The checks of the module comment, in order; `claim` when all pass. */
export async function decidePullJoin(
  request: CsrRequest,
  tokenId: string,
  lookup: PullJoinLookup,
): Promise<CsrDecision> {
  const token = await usableRecord(tokenId, lookup);
  if ('denied' in token) return token.denied;
  const { record } = token;
  const named = requestedNodeName(request);
  if ('denied' in named) return named.denied;
  const { nodeName } = named;
  const pool = lookup.pool(record.namespace, record.pool);
  if (!pool) {
    return denyJoin(
      'pool',
      `WindowsNodePool ${record.namespace}/${record.pool} of join token ${tokenId} does not exist, or is in a namespace the operator does not watch (hosts.namespaces)`,
    );
  }
  const poolProblem = poolJoinProblem(pool, record, nodeName);
  if (poolProblem) return denyJoin(poolProblem[0], poolProblem[1]);
  if (pool.spec.join?.instanceIdentity === 'AWS' || record.instanceId !== undefined) {
    const problem = identityProblem(request.username, tokenId, nodeName, record, lookup);
    if (problem) return denyJoin('instance-identity', problem);
  }
  const retired = await retiredDenial(nodeName, lookup);
  if (retired) return retired;
  const csrUid = request.uid ?? request.name;
  const taken = takenProblem(nodeName, record, csrUid, lookup);
  if (taken) return denyJoin('name-taken', `node name ${nodeName} is taken: ${taken}`);
  return {
    action: 'claim',
    reason: `kubelet client certificate for new Node ${nodeName} joining WindowsNodePool ${record.namespace}/${record.pool} with join token ${tokenId}`,
    claim: {
      tokenId,
      csrUid,
      nodeName,
      record,
      host: joinedHost(record, nodeName, tokenId, csrUid),
    },
  };
}

/** The token's record (read fresh) if it may be used now: token, network, expiry and uses. */
async function usableRecord(
  tokenId: string,
  lookup: PullJoinLookup,
): Promise<{ record: JoinTokenRecord & { resourceVersion?: string } } | { denied: JoinDenial }> {
  let record: Awaited<ReturnType<PullJoinLookup['record']>>;
  try {
    record = await lookup.record(tokenId);
  } catch (error) {
    return { denied: denyJoin('token', (error as Error).message) };
  }
  if (!record) {
    return {
      denied: denyJoin(
        'token',
        `bootstrap token ${tokenId} belongs to no known WindowsHost and has no join-token record: it was revoked (winfleet join-tokens revoke) or never issued by winfleet join-command`,
      ),
    };
  }
  const network = lookup.network?.();
  if (network && !network.ok)
    return {
      denied: denyJoin('network', `no node joins the pod network now: ${network.message}`),
    };
  if (joinTokenExpired(record, lookup.now())) {
    return { denied: denyJoin('expiry', `join token ${tokenId} expired at ${record.expires}`) };
  }
  if (record.usesLeft <= 0) {
    return { denied: denyJoin('uses', `join token ${tokenId} is used up (${record.uses} uses)`) };
  }
  return { record };
}

/**
 * The node name the request's kubelet subject names, once the request passes the subject,
 * extensions, client-certificate and node-name checks.
 */
function requestedNodeName(request: CsrRequest): { nodeName: string } | { denied: JoinDenial } {
  if (!request.parsed) {
    const why = request.parseProblem ? `: ${request.parseProblem}` : '';
    return { denied: denyJoin('subject', `the request is not a valid PKCS#10 CSR${why}`) };
  }
  const nodeName = subjectNodeName(request);
  if (nodeName === undefined) {
    return {
      denied: denyJoin(
        'subject',
        `the subject names no node; a kubelet's subject is exactly O=system:nodes, CN=system:node:<node name>`,
      ),
    };
  }
  const checks: [string, () => string | undefined][] = [
    ['subject', () => subjectProblem(request.parsed!, nodeName)],
    ['extensions', () => extrasProblem(request.parsed!)],
    ['client-certificate', () => clientCertificateProblem(request.usages, request.parsed!)],
    [
      'node-name',
      () =>
        nodeName.length <= 63 && labelName.test(nodeName)
          ? undefined
          : `node name ${quoteValue(nodeName)} is not a lowercase RFC 1123 label (a-z, 0-9 and '-', at most 63 characters), which a WindowsHost's name and spec.nodeName must be`,
    ],
  ];
  for (const [check, problem] of checks) {
    const found = problem();
    if (found) return { denied: denyJoin(check, found) };
  }
  return { nodeName };
}

/** The name-retired denial when `nodeName` is a removed Pull host's (or unreadable), else undefined. */
async function retiredDenial(
  nodeName: string,
  lookup: PullJoinLookup,
): Promise<JoinDenial | undefined> {
  let retired: Awaited<ReturnType<NonNullable<PullJoinLookup['retired']>>>;
  try {
    retired = await lookup.retired?.(nodeName);
  } catch (error) {
    return denyJoin(
      'name-retired',
      `cannot read the retired node names: ${(error as Error).message}`,
    );
  }
  if (!retired) return undefined;
  const free = `remove the key ${nodeName} from ConfigMap ${retiredNodeNamesConfigMap} in the operator's namespace only if that certificate is known to be gone`;
  return denyJoin(
    'name-retired',
    'problem' in retired
      ? `node name ${nodeName} has an entry in ${retiredNodeNamesConfigMap} that does not parse (${retired.problem}); ${free}`
      : `node name ${nodeName} belonged to WindowsHost ${retired.host}, removed; the node certificate it was given may be valid until ${retired.until} (Kubernetes cannot revoke it), so the name is not issued again before then: join under another name, or ${free}`,
  );
}

/**
 * Why no instance identity admits `nodeName`: none filed, none verifies, or the one that does
 * names another instance or account; undefined when one passes every check.
 */
function identityProblem(
  requester: string,
  tokenId: string,
  nodeName: string,
  record: JoinTokenRecord,
  lookup: PullJoinLookup,
): string | undefined {
  const trust = lookup.identityTrust?.() ?? { certificates: [], accountIds: [] };
  const ref = `WindowsNodePool ${record.namespace}/${record.pool}`;
  if (trust.certificates.length === 0) {
    return `${ref} requires instance identity, but hosts.instanceIdentity.aws.certificates in winfleet-config holds no certificate to verify it with; paste the AWS RSA public certificate of each Region your instances run in (docs.aws.amazon.com/AWSEC2/latest/UserGuide/regions-certs.html)`;
  }
  const presented = lookup.instanceIdentities?.(requester, nodeName) ?? [];
  if (presented.length === 0) {
    return `no instance identity was presented with join token ${tokenId} for node ${nodeName}: ${ref} admits only an EC2 instance that presents its AWS-signed identity document (winfleet-agent join --instance-identity aws, as the script winfleet join-command prints for it does)`;
  }
  let last = '';
  for (const identity of presented) {
    const verified = verifyAwsIdentity(identity, trust.certificates);
    if ('problem' in verified) {
      last = verified.problem;
      continue;
    }
    const { instanceId, accountId } = verified.facts;
    if (trust.accountIds.length > 0 && !trust.accountIds.includes(accountId)) {
      last = `instance ${instanceId} belongs to AWS account ${accountId}, which is not in hosts.instanceIdentity.aws.accountIds`;
    } else if (record.instanceId !== undefined && record.instanceId !== instanceId) {
      last = `the identity document names instance ${instanceId}, but join token ${tokenId} was made for instance ${record.instanceId} (winfleet join-command --instance-id): the token's user data was replayed on another instance`;
    } else if (instanceId !== nodeName) {
      last = `node name ${nodeName} is not the instance id ${instanceId} the identity document names: with instance identity a node is named for its instance, so a replayed document buys only the name its own instance holds`;
    } else return undefined;
  }
  return last;
}

/** Why the pool refuses `nodeName` or the record's labels: [check, reason], or undefined. */
function poolJoinProblem(
  pool: WindowsNodePool,
  record: JoinTokenRecord,
  nodeName: string,
): [string, string] | undefined {
  const ref = `WindowsNodePool ${record.namespace}/${record.pool}`;
  const selector = pool.spec?.selector;
  const selectorIssues = selector ? selectorProblems(selector, 'spec.selector') : ['no selector'];
  if (selectorIssues.length > 0 || !matchesSelector(selector!, record.labels)) {
    return [
      'pool-selector',
      `${ref}'s selector no longer selects the labels the token gives its hosts (${JSON.stringify(record.labels)}); make a new join token for the pool`,
    ];
  }
  const ad = pool.spec.activeDirectory;
  if (ad) {
    return [
      'active-directory',
      `${ref} joins its hosts to Active Directory domain ${quoteValue(String(ad.domain))}, and a host joining by command registers its Node before any domain join; add such hosts over SSH (winfleet hosts add), or join by command to a pool without spec.activeDirectory`,
    ];
  }
  const source = pool.spec.join?.nodeNamePattern;
  if (source === undefined) {
    return [
      'name-pattern',
      `${ref} sets no spec.join.nodeNamePattern, which a pool that takes join tokens must: without it a token could claim any node name, names of nodes that will exist later included. Set it, e.g. kubectl patch windowsnodepool -n ${record.namespace} ${record.pool} --type merge -p '{"spec":{"join":{"nodeNamePattern":"^${record.pool}-[0-9]{1,4}$"}}}'`,
    ];
  }
  const pattern = compileNodeNamePattern(String(source));
  if (!pattern.ok) return ['name-pattern', `${ref}: ${pattern.problem}`];
  if (!pattern.matches(nodeName)) {
    return [
      'name-pattern',
      `node name ${nodeName} does not match ${ref}'s spec.join.nodeNamePattern ${quoteValue(pattern.source)}`,
    ];
  }
  return undefined;
}

/** The WindowsHost a join creates: named for the node, in the pool's namespace, Pull mode. */
function joinedHost(
  record: JoinTokenRecord,
  nodeName: string,
  tokenId: string,
  csrUid: string,
): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: {
      name: nodeName,
      namespace: record.namespace,
      labels: { ...record.labels },
      annotations: { [joinTokenAnnotation]: tokenId, [joinCsrAnnotation]: csrUid },
    },
    spec: { mode: 'Pull', pool: record.pool, nodeName },
  };
}
