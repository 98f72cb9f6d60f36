/**
 * Watches CertificateSigningRequests and approves or denies kubelet CSRs by the winfleet
 * policy (kubelet-csr-policy.ts) and kube-proxy CSRs by kube-proxy-csr-policy.ts. Each
 * decision is logged and recorded as an Event with its reason; CSRs that are not winfleet's
 * are left untouched. A node's pending CSRs are looked at again when its Node changes (it
 * may have just been given its host's identity). A host joining by command has its WindowsHost
 * created and a use of its join token taken before its CSR is approved (pull-join-claim.ts).
 *
 * In controller-runtime's shape: reconcileCsr is one pass over an explicit CsrReconcileState
 * (the CSR cache, the policies' lookup, and the API writes as function fields), testable
 * without watches; createCsrController binds the state and wires the watches (watchCsrs).
 */

import * as k8s from '@kubernetes/client-node';
import { kubeProxySignerName } from '../../api/kube-proxy-identity.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import type { Logger } from '../../log/logger.ts';
import { parseCsrPem } from '../../pki/certificates.ts';
import type { CsrControllerDeps } from './csr-deps.ts';
import { csrLookup, pendingCsrsByRequesterIndex } from './csr-lookup.ts';
import type { CsrDecision, CsrRequest } from './csr-request.ts';
import { decideKubeProxyCsr, isKubeProxyRequest } from './kube-proxy-csr-policy.ts';
import {
  type CsrLookup,
  clientSigner,
  decideKubeletCsr,
  servingSigner,
} from './kubelet-csr-policy.ts';
import { NodeNameReservations } from './node-name-reservations.ts';
import { claimPullJoin } from './pull-join-claim.ts';

export type { CsrControllerDeps } from './csr-deps.ts';

/** Whether the CSR is approved or denied already. */
function decided(csr: k8s.V1CertificateSigningRequest): boolean {
  return csr.status?.conditions?.some((c) => c.type === 'Approved' || c.type === 'Denied') ?? false;
}

/** A CSR not yet decided, filed under its requester (spec.username). */
function pendingRequesterOf(csr: k8s.V1CertificateSigningRequest): string[] {
  return !decided(csr) && csr.spec.username ? [csr.spec.username] : [];
}

/**
 * What one CSR pass works with: the CSR cache, the policies' lookup, and each read or write of
 * the world as a function field (createCsrController binds them to the API).
 * @package
 */
export interface CsrReconcileState {
  csrs: Pick<Informer<k8s.V1CertificateSigningRequest>, 'get' | 'list'>;
  lookup: CsrLookup;
  /** Queues a CSR not yet decided. */
  enqueue: (csr: k8s.V1CertificateSigningRequest) => void;
  /** The CSR as the API server holds it now. */
  readCsr: (name: string) => Promise<k8s.V1CertificateSigningRequest>;
  /** Writes the CSR's approval subresource. */
  writeApproval: (name: string, body: k8s.V1CertificateSigningRequest) => Promise<unknown>;
  /** A pull join's claim (pull-join-claim.ts): the WindowsHost created, a token use taken. */
  claim: (
    claim: Extract<CsrDecision, { action: 'claim' }>['claim'],
    reason: string,
  ) => Promise<Extract<CsrDecision, { action: 'approve' | 'deny' }>>;
  /** Lets go of a node name reserved for a CSR whose claim did not end in approval. */
  release: (nodeName: string, csrUid: string) => void;
  events: EventRecorder;
  log: Logger;
}

/** One pass for CSR `name`: decided by the policies, claimed when a pull join, then written. */
export async function reconcileCsr(
  state: CsrReconcileState,
  name: string,
): Promise<{ requeueAfterMs?: number } | undefined> {
  if (name === everythingKey) {
    // At start (and on leadership), CSRs that arrived before the handlers were attached.
    for (const pending of state.csrs.list()) state.enqueue(pending);
    return undefined;
  }
  const csr = state.csrs.get(name);
  if (!csr || decided(csr)) return undefined;
  const signer = csr.spec.signerName;
  if (signer !== clientSigner && signer !== servingSigner && signer !== kubeProxySignerName)
    return undefined;
  const proposed = await proposeDecision(state.lookup, csrRequestOf(name, csr), csr);
  if (proposed.action === 'ignore') {
    state.log.debug('CSR left alone', { csr: name, reason: proposed.reason });
    return undefined;
  }
  if (proposed.action === 'retry') {
    state.log.debug('CSR not decidable yet', { csr: name, reason: proposed.reason });
    return { requeueAfterMs: 500 };
  }
  const fresh = await state.readCsr(name);
  if (decided(fresh)) return undefined;
  let decision: Extract<CsrDecision, { action: 'approve' | 'deny' }>;
  if (proposed.action === 'claim') {
    const { claim } = proposed;
    decision = await state.claim(claim, proposed.reason);
    if (decision.action !== 'approve') state.release(claim.nodeName, claim.csrUid);
  } else {
    decision = proposed;
  }
  await writeDecision(state, csr, fresh, decision);
  return undefined;
}

/** The request the policies judge: the CSR's fields, its PEM parsed (or why it could not be). */
export function csrRequestOf(name: string, csr: k8s.V1CertificateSigningRequest): CsrRequest {
  let parsed: CsrRequest['parsed'];
  let parseProblem: string | undefined;
  try {
    parsed = parseCsrPem(Buffer.from(String(csr.spec.request), 'base64').toString('utf8'));
  } catch (error) {
    // A malformed or crafted request is denied with the reason, never retried.
    parseProblem = (error as Error).message;
  }
  return {
    name,
    ...(csr.metadata?.uid ? { uid: csr.metadata.uid } : {}),
    signerName: csr.spec.signerName,
    username: csr.spec.username ?? '',
    groups: csr.spec.groups ?? [],
    usages: csr.spec.usages ?? [],
    ...(csr.spec.expirationSeconds !== undefined
      ? { expirationSeconds: csr.spec.expirationSeconds }
      : {}),
    parsed,
    parseProblem,
  };
}

/** What the kubelet or kube-proxy policy proposes for `request` (any other CSR is ignored). */
async function proposeDecision(
  lookup: CsrLookup,
  request: CsrRequest,
  csr: k8s.V1CertificateSigningRequest,
): Promise<CsrDecision> {
  if (request.signerName !== kubeProxySignerName) return decideKubeletCsr(request, lookup);
  if (isKubeProxyRequest(request, Buffer.from(String(csr.spec.request), 'base64')))
    return decideKubeProxyCsr(request, lookup);
  return { action: 'ignore', reason: 'not a winfleet kube-proxy request' };
}

/** Writes the Approved or Denied condition on `fresh`, then logs it and records its Event. */
async function writeDecision(
  state: CsrReconcileState,
  csr: k8s.V1CertificateSigningRequest,
  fresh: k8s.V1CertificateSigningRequest,
  decision: Extract<CsrDecision, { action: 'approve' | 'deny' }>,
): Promise<void> {
  const name = csr.metadata!.name!;
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
  await state.writeApproval(name, fresh);
  state.log.info(approve ? 'CSR approved' : 'CSR denied', {
    csr: name,
    signer: csr.spec.signerName,
    requester: csr.spec.username,
    ...(decision.action === 'deny' && decision.check ? { check: decision.check } : {}),
    reason: decision.reason,
  });
  const subject = decision.host ?? {
    ...csr,
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
  };
  state.events.record(
    subject,
    approve ? 'Normal' : 'Warning',
    approve ? EventReason.CSRApproved : EventReason.CSRDenied,
    `CSR ${name}: ${decision.reason}`,
  );
}

/** The state reconcileCsr runs with in the operator: every field bound to the real world. */
export function csrReconcileState(
  deps: CsrControllerDeps,
  enqueue: (csr: k8s.V1CertificateSigningRequest) => void,
): CsrReconcileState {
  const certificates = deps.kc.makeApiClient(k8s.CertificatesV1Api);
  const reservations = new NodeNameReservations();
  const clock = () => new Date();
  return {
    csrs: deps.csrs,
    lookup: csrLookup(deps, reservations, clock),
    enqueue,
    readCsr: (name) => certificates.readCertificateSigningRequest({ name }),
    writeApproval: (name, body) =>
      certificates.replaceCertificateSigningRequestApproval({ name, body }),
    claim: (claim, reason) =>
      claimPullJoin(
        { kc: deps.kc, operatorNamespace: deps.operatorNamespace, now: clock },
        claim,
        reason,
      ),
    release: (nodeName, csrUid) => reservations.release(nodeName, csrUid),
    events: deps.events,
    log: deps.log.child({ controller: 'csr-approver' }),
  };
}

export function createCsrController(deps: CsrControllerDeps): Controller {
  const controller: Controller = new Controller({
    name: 'csr-approver',
    concurrency: 4,
    log: deps.log,
    reconcile: (name) => reconcileCsr(state, name),
  });
  const enqueue = (csr: k8s.V1CertificateSigningRequest) => {
    if (!decided(csr)) controller.enqueue(csr.metadata!.name!);
  };
  const state = csrReconcileState(deps, enqueue);
  watchCsrs(deps, enqueue);
  return controller;
}

/** CSR events queue the CSR; a Node event queues that node's pending CSRs (by requester). */
function watchCsrs(
  deps: Pick<CsrControllerDeps, 'csrs' | 'nodes'>,
  enqueue: (csr: k8s.V1CertificateSigningRequest) => void,
): void {
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
}
