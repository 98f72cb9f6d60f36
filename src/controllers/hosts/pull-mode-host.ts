/**
 * The host controller's pass for a Pull-mode WindowsHost: one that joined by itself with a join
 * command, whose WindowsHost the operator created when it approved the node's certificate
 * (src/controllers/csr/pull-join-claim.ts), and which winfleet never reaches over SSH. The
 * host's lifecycle goes through its Node, where its agent reads what the operator wants:
 *
 * - the Node named spec.nodeName is followed: adopted once (the identity annotation, as
 *   host-join's annotateNode writes it, so that the node's serving and kube-proxy CSRs pass the
 *   existing rules), labelled with the pool and spec.labels, and given the desired services
 *   version; status.nodeName, the Windows build and version and the addresses are read from it;
 * - an upgrade is only the desired-version annotation (the pool's rollout decides when, as for
 *   SSH hosts: wantedVersion): the agent pulls the new payload from the registry itself
 *   (src/agent/manifest-payload.ts); the operator copies nothing;
 * - Ready once the agent reports the version on a Ready Node that carries the host's identity;
 * - a Node that never registers within hosts.joinTimeoutSeconds is reported (NodeNeverRegistered)
 *   and nothing is deleted: see waitForNode.
 * Reboots and Windows updates are the agent's already (Node annotations the pool's rollout
 * sets); removal is pull-host-removal.ts.
 */

import * as k8s from '@kubernetes/client-node';
import {
  desiredServicesVersionAnnotation,
  hostAnnotation,
  hostIdentity,
  managedNodeLabel,
  poolNodeLabel,
  servicesVersionAnnotation,
} from '../../api/node-annotations.ts';
import { allowedNodeLabels } from '../../api/node-labels.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { nodeIsReady } from '../../controller-runtime/informer-factory.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { commandSigner } from '../../fleet/command-signer.ts';
import { type HostStatus, writeHostStatus } from '../../fleet/host-status.ts';
import { carriesIdentity, type NameRefusal, nameRefusal } from '../../fleet/node-claims.ts';
import { canonicalAddress, joinServingAddresses } from '../../fleet/serving-addresses.ts';
import { apiTime, timeOf } from '../../kube/api-time.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import { windowsBuildLabel } from '../../windows/builds.ts';
import { hyperVIsolationLabel } from '../../windows/isolation.ts';
import { poolActiveDirectory } from './active-directory-join.ts';
import {
  healthyRecheckMs,
  hostPass,
  type JoinContext,
  type PassResult,
  reportReady,
  wantedVersion,
} from './host-join.ts';
import { withPoolIsolation } from './pool-isolation.ts';
import { keepPrePull, recordPrePull } from './pre-pull-node.ts';

export const pullModeMessage =
  'Pull mode: the host joined by itself with a join command; winfleet never connects to it over SSH, and its upgrades, reboots and removal go through its agent';

/** Why a Pull-mode host of an Active Directory pool is not adopted. */
export function pullActiveDirectoryMessage(pool: string, domain: string): string {
  return `Pool ${pool} joins its hosts to Active Directory domain ${domain} (spec.activeDirectory), which winfleet does only for hosts it reaches over SSH, before their kubelet registers; this Pull-mode host joined by itself, so its Node is not adopted. Add the host over SSH (winfleet hosts add), or put it in a pool without spec.activeDirectory`;
}

/** How often a Pull host whose Node is not there, or not Ready, is looked at again. */
const pollMs = 2000;
/** How often a host refused its node name, or whose Node never registered, looks again. */
const refusedRecheckMs = 60_000;

/** One pass for a Pull-mode host that is not being deleted. */
export function reconcilePullHost(ctx: JoinContext, host: WindowsHost): Promise<PassResult> {
  return hostPass(ctx, host, (hs) => pullPass(ctx, host, hs));
}

async function pullPass(ctx: JoinContext, host: WindowsHost, hs: HostStatus): Promise<PassResult> {
  hs.set(ConditionType.Reachable, 'Unknown', ConditionReason.PullMode, pullModeMessage);
  const name = host.spec.nodeName;
  if (!name) {
    // The CRD requires spec.nodeName in Pull mode.
    throw new WinfleetError(
      'WF_INVARIANT',
      `Pull-mode WindowsHost ${host.metadata.namespace}/${host.metadata.name} has no spec.nodeName`,
    );
  }
  // winfleet joins SSH hosts to their pool's domain before the kubelet registers; a Pull host's
  // kubelet registered by itself, so it is refused rather than adopted un-joined.
  const ad = poolActiveDirectory(ctx.pools?.list() ?? [], host);
  if (ad) {
    return refuse(ctx, host, hs, {
      reason: ConditionReason.ActiveDirectoryRefused,
      message: pullActiveDirectoryMessage(ad.pool, ad.spec.domain),
    });
  }
  const node = ctx.nodes.get(name);
  const refusal = pullNameRefusal(host, name, ctx.hosts.list(), node);
  if (refusal) return refuse(ctx, host, hs, refusal);
  if (!node) return waitForNode(ctx, host, hs, name);
  const loaded = await ctx.payload();
  recordNodeFacts(hs, node);
  // The name on record before the Node carries the identity: the node's CSRs are matched to
  // the host by both (kubelet-csr-policy.ts owningHost).
  if (host.status?.nodeName !== name) await writeHostStatus(ctx.kc, host, hs.status);
  hs.set(ConditionType.NodeRegistered, 'True', ConditionReason.NodeExists, `Node ${name}`);
  const version = wantedVersion(host, node, loaded);
  const current = await annotatePullNode(ctx, host, hs, node, loaded, version);
  // The pool's pre-pull list signed on the Node, its taint while the agent pulls (every pass).
  const prePullRecheckMs = await keepPrePull(ctx, host, current);
  recordPrePull(hs, current);
  if (current.metadata?.annotations?.[servicesVersionAnnotation] !== version) {
    hs.status.servicesRequestedAt ??= apiTime();
    return notReadyYet(hs, current, version);
  }
  if (!nodeIsReady(current) || !carriesIdentity(current, host))
    return notReadyYet(hs, current, version);
  reportReady(ctx, host, hs, name, version);
  return { requeueAfterMs: Math.min(healthyRecheckMs, prePullRecheckMs ?? healthyRecheckMs) };
}

/**
 * Whether `node` is the one this host's kubelet registered when it joined, not annotated yet:
 * it has spec.nodeName, winfleet's managed label and no identity, it was created no earlier than
 * the host (the operator creates the host before it approves the node's first certificate, so
 * a Node from before is someone else's), and the host has never been Ready on a Node (a Node
 * that lost the identity afterwards was stripped of it: a node may edit its own Node, and the
 * operator then leaves it to an administrator, as node-claims.ts does for SSH hosts).
 * @package
 */
export function isJoiningPullNode(node: k8s.V1Node, host: WindowsHost): boolean {
  const created = timeOf(node.metadata?.creationTimestamp);
  const hostCreated = timeOf(host.metadata.creationTimestamp);
  return (
    node.metadata?.name === host.spec.nodeName &&
    node.metadata?.annotations?.[hostAnnotation] === undefined &&
    node.metadata?.labels?.[managedNodeLabel] === 'true' &&
    created !== undefined &&
    hostCreated !== undefined &&
    created >= hostCreated &&
    !host.status?.servicesVersion
  );
}

/**
 * Why this Pull host may not have `name` (another WindowsHost holds it, or the Node of that
 * name is not this host's), as node-claims.ts decides for every host, with the joining Node of
 * isJoiningPullNode adoptable.
 * @package
 */
export function pullNameRefusal(
  host: WindowsHost,
  name: string,
  hosts: WindowsHost[],
  node: k8s.V1Node | undefined,
): NameRefusal | undefined {
  if (node && isJoiningPullNode(node, host)) return nameRefusal(host, name, hosts, undefined);
  return nameRefusal(host, name, hosts, node);
}

/** Reports the refusal and does nothing to the Node. */
function refuse(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  {
    reason,
    message,
  }: NameRefusal | { reason: typeof ConditionReason.ActiveDirectoryRefused; message: string },
): PassResult {
  const first = hs.condition(ConditionType.Degraded)?.reason !== reason;
  hs.set(ConditionType.NodeRegistered, 'False', reason, message);
  hs.set(ConditionType.Ready, 'False', reason, message);
  hs.set(ConditionType.Degraded, 'True', reason, message);
  // A name held by another host is dropped from the status: CSRs for it are never matched here.
  if (reason === ConditionReason.NodeNameTaken) delete hs.status.nodeName;
  if (first) ctx.events.record(host, 'Warning', reason, message);
  return { requeueAfterMs: refusedRecheckMs };
}

/**
 * No Node of spec.nodeName. The operator created the host when it approved the node's client
 * certificate, and the kubelet registers its Node right after it gets it, so a Node missing for
 * hosts.joinTimeoutSeconds since then means the machine is stuck or gone: NodeNeverRegistered
 * on NodeRegistered, Ready and Degraded, and one Warning Event with the command that removes
 * the host. Nothing is deleted: the WindowsHost is the record that a machine holds valid
 * credentials for this node name (deleting it would free the name for the next join while
 * that machine could still register the Node), and only a person knows whether the machine
 * comes back. A Node that registered and then went (deleted by hand) is waited for likewise.
 */
function waitForNode(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  name: string,
): PassResult {
  const timeoutMs = ctx.config().hosts.joinTimeoutSeconds * 1000;
  const created = timeOf(host.metadata.creationTimestamp) ?? Date.now();
  const waitedMs = Date.now() - created;
  if (hs.status.nodeName || waitedMs < timeoutMs) {
    const message = hs.status.nodeName
      ? `Node ${name} is gone; waiting for the host's kubelet to register it again`
      : `Waiting for the kubelet of the host that joined by itself to register Node ${name}`;
    hs.set(ConditionType.NodeRegistered, 'False', ConditionReason.WaitingForNode, message);
    hs.set(ConditionType.Ready, 'False', ConditionReason.WaitingForNode, message);
    // A Node that comes enqueues the host; the deadline is looked at on time.
    return { requeueAfterMs: Math.max(pollMs, Math.min(timeoutMs - waitedMs, refusedRecheckMs)) };
  }
  const message = `Node ${name} has not registered in ${Math.round(waitedMs / 1000)}s since the operator approved its certificate and created this WindowsHost (hosts.joinTimeoutSeconds ${ctx.config().hosts.joinTimeoutSeconds}): the machine's kubelet has credentials for ${name} but never registered; look at C:\\k\\winfleet\\join-status.json and the kubelet log on the machine. winfleet deletes nothing (this WindowsHost records that a machine holds credentials for ${name}); if the machine is gone, remove it: kubectl delete windowshost ${host.metadata.name} -n ${host.metadata.namespace}`;
  const first =
    hs.condition(ConditionType.Degraded)?.reason !== ConditionReason.NodeNeverRegistered;
  hs.set(ConditionType.NodeRegistered, 'False', ConditionReason.NodeNeverRegistered, message);
  hs.set(ConditionType.Ready, 'False', ConditionReason.NodeNeverRegistered, message);
  hs.set(ConditionType.Degraded, 'True', ConditionReason.NodeNeverRegistered, message);
  if (first) ctx.events.record(host, 'Warning', EventReason.NodeNeverRegistered, message);
  return { requeueAfterMs: refusedRecheckMs };
}

/**
 * What the Node tells of the host, into its status: the node name, the Windows build (its
 * label) and full version (the kernel version a Windows kubelet reports), its addresses (the
 * InternalIP first) and host name. The serving addresses are pinned from the first addresses
 * the Node reports, and never from a later report: the trust-on-first-use equivalent of an SSH
 * host's facts, which the host reports itself at its first join; its IPs only, never the
 * Hostname address, a DNS name the machine chose (serving-addresses.ts: a DNS name is the node
 * name or an admin's). Both come from the machine
 * the administrator let join (by its join token here); neither is believed again afterwards,
 * so a node that later adds an address to its Node (a Service IP, another node's address) gets
 * no certificate for it. Only the allow-serving-addresses annotation changes the pin.
 */
function recordNodeFacts(hs: HostStatus, node: k8s.V1Node): void {
  const status = hs.status;
  status.nodeName = node.metadata!.name!;
  const build = node.metadata?.labels?.[windowsBuildLabel];
  if (build) status.windowsBuild = build;
  const kernel = node.status?.nodeInfo?.kernelVersion;
  if (kernel && /^\d+\.\d+\.\d+\.\d+$/.test(kernel)) status.windowsVersion = kernel;
  const reported = node.status?.addresses ?? [];
  const ips = [
    ...reported.filter((a) => a.type === 'InternalIP'),
    ...reported.filter((a) => a.type === 'ExternalIP'),
  ].map((a) => canonicalAddress(a.address));
  const hostname = reported.find((a) => a.type === 'Hostname')?.address;
  if (hostname) status.hostname = hostname;
  if (ips.length === 0) return;
  status.addresses = [...new Set(ips)];
  // The Hostname address is whatever the joining machine wrote: never pinned (a kubelet names
  // itself by its node name, which is always allowed; any other DNS name needs an admin).
  status.servingAddresses ??= joinServingAddresses(status.addresses);
}

/**
 * Brings the Node's identity, pool label, spec.labels and desired services version up to
 * date in one patch; returns the Node as the API server has it afterwards. A new version is
 * published before the agent is told to use it, and counts as an upgrade when the Node had
 * another: the agent pulls its payload itself.
 */
async function annotatePullNode(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node,
  loaded: LoadedPayload,
  version: string,
): Promise<k8s.V1Node> {
  const name = node.metadata!.name!;
  const annotations = node.metadata?.annotations ?? {};
  const labels = node.metadata?.labels ?? {};
  // The operator's credentials are not limited by NodeRestriction: only the labels a kubelet
  // may set on its own Node are applied (node-labels.ts), whatever a stored host says.
  const { labels: specLabels, refused } = allowedNodeLabels(host.spec.labels);
  if (refused.length > 0) {
    ctx.events.record(
      host,
      'Warning',
      EventReason.NodeLabelsRefused,
      `spec.labels left off Node ${name}: ${refused.join('; ')}`,
    );
  }
  const wantedLabels: Record<string, string> = {
    ...(host.spec.pool ? { [poolNodeLabel]: host.spec.pool } : {}),
    // The pool, not spec.labels, decides the Hyper-V label (pool-isolation.ts).
    ...withPoolIsolation(specLabels, ctx.pools?.list() ?? [], host),
  };
  const labelPatch: Record<string, string | null> = Object.fromEntries(
    Object.entries(wantedLabels).filter(([key, value]) => labels[key] !== value),
  );
  // A pool that no longer allows Hyper-V isolation (or a label the node set itself) takes it off.
  if (labels[hyperVIsolationLabel] !== undefined && !(hyperVIsolationLabel in wantedLabels))
    labelPatch[hyperVIsolationLabel] = null;
  const annotationPatch: Record<string, string | null> = {};
  const identity = hostIdentity(host);
  if (annotations[hostAnnotation] !== identity) annotationPatch[hostAnnotation] = identity;
  const desired = annotations[desiredServicesVersionAnnotation];
  const signer = commandSigner(ctx.kc);
  if (!signer.holds(node, desiredServicesVersionAnnotation, version)) {
    // Signed for this Node: the agent obeys no desired version a patch-nodes principal wrote.
    Object.assign(
      annotationPatch,
      signer.annotations(node, desiredServicesVersionAnnotation, version),
    );
  }
  if (desired !== version) {
    await ctx.publish(loaded.manifest);
    if (desired) {
      ctx.events.record(
        host,
        'Normal',
        EventReason.Upgrading,
        `Rolling services ${desired} → ${version} out to Node ${name}; its agent pulls the payload itself`,
      );
      // The agent's patience counts from when it was asked for this version.
      hs.status.servicesRequestedAt = apiTime();
    }
  }
  if (Object.keys(labelPatch).length === 0 && Object.keys(annotationPatch).length === 0)
    return node;
  const core = ctx.kc.makeApiClient(k8s.CoreV1Api);
  return core.patchNode(
    { name, body: { metadata: { labels: labelPatch, annotations: annotationPatch } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

/** The Node is there but not Ready on the version yet: the agent's to do, nothing to run here. */
function notReadyYet(hs: HostStatus, node: k8s.V1Node, version: string): PassResult {
  const name = node.metadata?.name;
  if (!nodeIsReady(node)) {
    hs.set(ConditionType.Ready, 'False', ConditionReason.NodeNotReady, `Node ${name} is not Ready`);
  } else {
    hs.set(
      ConditionType.Ready,
      'False',
      ConditionReason.ApplyingServices,
      `Waiting for the agent on ${name} to pull and apply services ${version}`,
    );
  }
  return { requeueAfterMs: pollMs };
}
