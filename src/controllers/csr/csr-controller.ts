/**
 * Watches CertificateSigningRequests and approves or denies kubelet CSRs by the winfleet
 * policy (kubelet-csr-policy.ts) and kube-proxy CSRs by kube-proxy-csr-policy.ts. Each
 * decision is logged and recorded as an Event with its reason; CSRs that are not winfleet's
 * are left untouched. A node's pending CSRs are looked at again when its Node changes (it
 * may have just been given its host's identity). A host joining by command has its WindowsHost
 * created and a use of its join token taken before its CSR is approved (pull-join-claim.ts).
 */

import type { X509Certificate } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { kubeProxySignerName } from '../../api/kube-proxy-identity.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import { hostByTokenId, hostsByNode } from '../../fleet/host-indexes.ts';
import { readJoinTokenRecord } from '../../join/join-tokens.ts';
import { readRetiredNodeName } from '../../join/retired-node-names.ts';
import type { Logger } from '../../log/logger.ts';
import type { NodeNetworkState } from '../../network/cluster-network-watch.ts';
import { parseCsrPem } from '../../pki/certificates.ts';
import {
  identityDocumentAnnotation,
  identityNodeAnnotation,
  identitySignatureAnnotation,
  instanceIdentitySigner,
  parseIdentityCertificates,
} from '../../pki/instance-identity.ts';
import { type ApiServerNames, apiServerNamesReader } from './api-server-names.ts';
import type { CsrDecision, CsrRequest } from './csr-request.ts';
import { decideKubeProxyCsr, isKubeProxyRequest } from './kube-proxy-csr-policy.ts';
import {
  type CsrLookup,
  clientSigner,
  decideKubeletCsr,
  servingSigner,
} from './kubelet-csr-policy.ts';
import { nodeHoldingAddress } from './node-addresses.ts';
import { NodeNameReservations } from './node-name-reservations.ts';
import { claimPullJoin } from './pull-join-claim.ts';

export interface CsrControllerDeps {
  kc: k8s.KubeConfig;
  /** Where the join-token records are (join-token-record.ts). */
  operatorNamespace: string;
  csrs: Informer<k8s.V1CertificateSigningRequest>;
  hosts: Informer<WindowsHost>;
  pools: Informer<WindowsNodePool>;
  nodes: Informer<k8s.V1Node>;
  /** kube-public/cluster-info alone: its server is one of the API server's names. */
  clusterInfo?: Informer<k8s.V1ConfigMap>;
  /** The API server's names (api-server-names.ts); read from the cluster by default. */
  apiServerNames?: () => Promise<ApiServerNames>;
  config: () => WinfleetConfig;
  /** Whether nodes may join the pod network now (pull joins are refused otherwise). */
  network?: () => NodeNetworkState;
  events: EventRecorder;
  log: Logger;
}

function decided(csr: k8s.V1CertificateSigningRequest): boolean {
  return csr.status?.conditions?.some((c) => c.type === 'Approved' || c.type === 'Denied') ?? false;
}

const pendingCsrsByRequesterIndex = 'pendingRequester';

/** A CSR not yet decided, filed under its requester (spec.username). */
function pendingRequesterOf(csr: k8s.V1CertificateSigningRequest): string[] {
  return !decided(csr) && csr.spec.username ? [csr.spec.username] : [];
}

export function createCsrController(deps: CsrControllerDeps): Controller {
  const certificates = deps.kc.makeApiClient(k8s.CertificatesV1Api);
  // Every lookup goes through an index: with 10,000 Nodes, a CSR costs a few reads, not a walk.
  const hostOfToken = hostByTokenId(deps.hosts);
  const hostsNaming = hostsByNode(deps.hosts);
  const reservations = new NodeNameReservations();
  const clock = () => new Date();
  const trustCache: { pem?: string; certificates: X509Certificate[] } = { certificates: [] };
  const lookup: CsrLookup = {
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
    pullJoin: {
      // Read fresh, never from a cache: a revoked or used-up token must be seen at once.
      record: (tokenId) => readJoinTokenRecord(deps.kc, deps.operatorNamespace, tokenId),
      pool: (namespace, name) => deps.pools.get(`${namespace}/${name}`),
      node: (name) => deps.nodes.get(name),
      hosts: () => deps.hosts.list(),
      reserve: (nodeName, csrUid) => reservations.reserve(nodeName, csrUid),
      now: clock,
      ...(deps.network ? { network: deps.network } : {}),
      retired: (nodeName) =>
        readRetiredNodeName(deps.kc, deps.operatorNamespace, nodeName, clock()),
      // Carrier CSRs stay pending (nothing signs them), so the requester index holds them.
      instanceIdentities: (requester, nodeName) =>
        deps.csrs
          .byIndex(pendingCsrsByRequesterIndex, requester)
          .filter(
            (c) =>
              c.spec.signerName === instanceIdentitySigner &&
              c.spec.username === requester &&
              c.metadata?.annotations?.[identityNodeAnnotation] === nodeName,
          )
          .map((c) => ({
            document: c.metadata?.annotations?.[identityDocumentAnnotation] ?? '',
            signature: c.metadata?.annotations?.[identitySignatureAnnotation] ?? '',
          })),
      identityTrust: () => {
        const { certificates, accountIds } = deps.config().hosts.instanceIdentity.aws;
        if (certificates !== trustCache.pem) {
          trustCache.pem = certificates;
          trustCache.certificates =
            certificates.trim() === ''
              ? []
              : parseIdentityCertificates(certificates, 'hosts.instanceIdentity.aws.certificates')
                  .certificates;
        }
        return { certificates: trustCache.certificates, accountIds };
      },
    },
  };
  const log = deps.log.child({ controller: 'csr-approver' });

  const controller = new Controller({
    name: 'csr-approver',
    concurrency: 4,
    log: deps.log,
    async reconcile(name) {
      if (name === everythingKey) {
        // At start (and on leadership), CSRs that arrived before the handlers were attached.
        for (const pending of deps.csrs.list()) enqueue(pending);
        return undefined;
      }
      const csr = deps.csrs.get(name);
      if (!csr || decided(csr)) return undefined;
      const signer = csr.spec.signerName;
      if (signer !== clientSigner && signer !== servingSigner && signer !== kubeProxySignerName)
        return undefined;
      let parsed: CsrRequest['parsed'];
      let parseProblem: string | undefined;
      try {
        parsed = parseCsrPem(Buffer.from(String(csr.spec.request), 'base64').toString('utf8'));
      } catch (error) {
        // A malformed or crafted request is denied with the reason, never retried.
        parseProblem = (error as Error).message;
      }
      const request: CsrRequest = {
        name,
        ...(csr.metadata?.uid ? { uid: csr.metadata.uid } : {}),
        signerName: signer,
        username: csr.spec.username ?? '',
        groups: csr.spec.groups ?? [],
        usages: csr.spec.usages ?? [],
        ...(csr.spec.expirationSeconds !== undefined
          ? { expirationSeconds: csr.spec.expirationSeconds }
          : {}),
        parsed,
        parseProblem,
      };
      let proposed: CsrDecision;
      if (signer !== kubeProxySignerName) proposed = await decideKubeletCsr(request, lookup);
      else if (isKubeProxyRequest(request, Buffer.from(String(csr.spec.request), 'base64')))
        proposed = decideKubeProxyCsr(request, lookup);
      else proposed = { action: 'ignore', reason: 'not a winfleet kube-proxy request' };
      if (proposed.action === 'ignore') {
        log.debug('CSR left alone', { csr: name, reason: proposed.reason });
        return undefined;
      }
      if (proposed.action === 'retry') {
        log.debug('CSR not decidable yet', { csr: name, reason: proposed.reason });
        return { requeueAfterMs: 500 };
      }
      const fresh = await certificates.readCertificateSigningRequest({ name });
      if (decided(fresh)) return undefined;
      let decision: Extract<CsrDecision, { action: 'approve' | 'deny' }>;
      if (proposed.action === 'claim') {
        const { claim } = proposed;
        const context = { kc: deps.kc, operatorNamespace: deps.operatorNamespace, now: clock };
        decision = await claimPullJoin(context, claim, proposed.reason);
        if (decision.action !== 'approve') reservations.release(claim.nodeName, claim.csrUid);
      } else {
        decision = proposed;
      }
      const approve = decision.action === 'approve';
      const now = new Date();
      fresh.status = {
        ...fresh.status,
        conditions: [
          ...(fresh.status?.conditions ?? []),
          {
            type: approve ? 'Approved' : 'Denied',
            status: 'True',
            reason: approve ? ConditionReason.WinfleetApproved : ConditionReason.WinfleetDenied,
            message: decision.reason,
            lastUpdateTime: now,
            lastTransitionTime: now,
          },
        ],
      };
      await certificates.replaceCertificateSigningRequestApproval({ name, body: fresh });
      log.info(approve ? 'CSR approved' : 'CSR denied', {
        csr: name,
        signer,
        requester: csr.spec.username,
        ...(decision.action === 'deny' && decision.check ? { check: decision.check } : {}),
        reason: decision.reason,
      });
      const subject = decision.host ?? {
        ...csr,
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
      };
      deps.events.record(
        subject,
        approve ? 'Normal' : 'Warning',
        approve ? EventReason.CSRApproved : EventReason.CSRDenied,
        `CSR ${name}: ${decision.reason}`,
      );
      return undefined;
    },
  });
  const enqueue = (csr: k8s.V1CertificateSigningRequest) => {
    if (!decided(csr)) controller.enqueue(csr.metadata!.name!);
  };
  deps.csrs.on('add', enqueue).on('update', enqueue);
  // A node's pending CSRs by requester: a Node event reads its own, not every CSR.
  deps.csrs.addIndex(pendingCsrsByRequesterIndex, pendingRequesterOf);
  const enqueueNodeCsrs = (node: k8s.V1Node) => {
    const requester = `system:node:${node.metadata?.name}`;
    for (const csr of deps.csrs.byIndex(pendingCsrsByRequesterIndex, requester)) enqueue(csr);
  };
  deps.nodes.on('add', enqueueNodeCsrs).on('update', (node, old) => {
    if (JSON.stringify(node.metadata?.annotations) !== JSON.stringify(old.metadata?.annotations)) {
      enqueueNodeCsrs(node);
    }
  });
  return controller;
}
