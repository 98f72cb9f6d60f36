/**
 * What the CSR approver's policies read (CsrLookup, kubelet-csr-policy.ts), bound to the
 * operator's caches and API: every lookup goes through an index, so with 10,000 Nodes a CSR
 * costs a few reads, not a walk.
 */
import type { X509Certificate } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { hostByTokenId, hostsByNode } from '../../fleet/host-indexes.ts';
import { readJoinTokenRecord } from '../../join/join-tokens.ts';
import { readRetiredNodeName } from '../../join/retired-node-names.ts';
import {
  identityDocumentAnnotation,
  identityNodeAnnotation,
  identitySignatureAnnotation,
  instanceIdentitySigner,
  parseIdentityCertificates,
} from '../../pki/instance-identity.ts';
import { apiServerNamesReader } from './api-server-names.ts';
import type { CsrControllerDeps } from './csr-deps.ts';
import type { CsrLookup } from './kubelet-csr-policy.ts';
import { nodeHoldingAddress } from './node-addresses.ts';
import type { NodeNameReservations } from './node-name-reservations.ts';
import type { PullJoinLookup } from './pull-join-policy.ts';

/** The CSR index of pending CSRs by requester (spec.username). */
export const pendingCsrsByRequesterIndex = 'pendingRequester';

/** The lookup the CSR policies decide with, over the deps' caches and API. */
export function csrLookup(
  deps: CsrControllerDeps,
  reservations: NodeNameReservations,
  clock: () => Date,
): CsrLookup {
  const hostOfToken = hostByTokenId(deps.hosts);
  const hostsNaming = hostsByNode(deps.hosts);
  return {
    // The token id is derived from the host's UID: no need to read the token's Secret. A
    // Pull host never had one (the index files none under it).
    hostForToken: async (tokenId: string) => hostOfToken(tokenId),
    hostsForNode: (name: string) =>
      hostsNaming(name).filter((h) => h.status?.nodeName === name && !h.metadata.deletionTimestamp),
    node: (name: string) => deps.nodes.get(name),
    nodeHolding: nodeHoldingAddress(deps.nodes),
    network: () => {
      const { serviceCIDR, podCIDR, clusterDomain, servingDnsSuffixes } = deps.config().hosts;
      return { serviceCIDR, podCIDR, clusterDomain, servingDnsSuffixes };
    },
    apiServerNames:
      deps.apiServerNames ??
      apiServerNamesReader({
        kc: deps.kc,
        ...(deps.clusterInfo ? { clusterInfo: deps.clusterInfo } : {}),
        hostsApiServer: () => deps.config().hosts.apiServer,
      }),
    pullJoin: pullJoinLookup(deps, reservations, clock),
  };
}

/** What the pull-join policy reads: token records, pools, Nodes, hosts, identities. */
function pullJoinLookup(
  deps: CsrControllerDeps,
  reservations: NodeNameReservations,
  clock: () => Date,
): PullJoinLookup {
  return {
    // Read fresh, never from a cache: a revoked or used-up token must be seen at once.
    record: (tokenId) => readJoinTokenRecord(deps.kc, deps.operatorNamespace, tokenId),
    pool: (namespace, name) => deps.pools.get(`${namespace}/${name}`),
    node: (name) => deps.nodes.get(name),
    hosts: () => deps.hosts.list(),
    reserve: (nodeName, csrUid) => reservations.reserve(nodeName, csrUid),
    now: clock,
    ...(deps.network ? { network: deps.network } : {}),
    retired: (nodeName) => readRetiredNodeName(deps.kc, deps.operatorNamespace, nodeName, clock()),
    instanceIdentities: (requester, nodeName) =>
      instanceIdentitiesOf(deps.csrs, requester, nodeName),
    identityTrust: identityTrustReader(deps.config),
  };
}

/**
 * The instance identity documents `requester` carried for `nodeName`. Carrier CSRs stay pending
 * (nothing signs them), so the requester index holds them.
 */
function instanceIdentitiesOf(
  csrs: CsrControllerDeps['csrs'],
  requester: string,
  nodeName: string,
): { document: string; signature: string }[] {
  return csrs
    .byIndex(pendingCsrsByRequesterIndex, requester)
    .filter(
      (c: k8s.V1CertificateSigningRequest) =>
        c.spec.signerName === instanceIdentitySigner &&
        c.spec.username === requester &&
        c.metadata?.annotations?.[identityNodeAnnotation] === nodeName,
    )
    .map((c: k8s.V1CertificateSigningRequest) => ({
      document: c.metadata?.annotations?.[identityDocumentAnnotation] ?? '',
      signature: c.metadata?.annotations?.[identitySignatureAnnotation] ?? '',
    }));
}

/** The AWS instance identity trust of the configuration, its certificates parsed once per PEM. */
function identityTrustReader(config: CsrControllerDeps['config']): PullJoinLookup['identityTrust'] {
  const trustCache: { pem?: string; certificates: X509Certificate[] } = { certificates: [] };
  return () => {
    const { certificates, accountIds } = config().hosts.instanceIdentity.aws;
    if (certificates !== trustCache.pem) {
      trustCache.pem = certificates;
      trustCache.certificates =
        certificates.trim() === ''
          ? []
          : parseIdentityCertificates(certificates, 'hosts.instanceIdentity.aws.certificates')
              .certificates;
    }
    return { certificates: trustCache.certificates, accountIds };
  };
}
