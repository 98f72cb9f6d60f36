/**
 * Joining (and keeping joined) one WindowsHost, level-triggered: every pass reads where the
 * host stands from the API — its Node (Ready, annotations, when it last went NotReady) and its
 * status (conditions, when the agent last bootstrapped it, since when its services version
 * was asked for) — and does only the next missing step. Nothing is remembered in memory
 * between passes, so the operator can be killed at any moment and pick up where the cluster
 * says it stands:
 *   reach the host (pin its SSH key) → read its facts → copy the agent and payload (only what
 *   differs) → hand it a bootstrap token and config → `agent bootstrap` → wait for the kubelet's
 *   Node → annotate it → wait for Ready and the agent's version → drop the token.
 */

import * as k8s from '@kubernetes/client-node';
import {
  desiredServicesVersionAnnotation,
  hostAnnotation,
  hostIdentity,
  servicesVersionAnnotation,
} from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import { trustHostKeyAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { nodeIsReady } from '../../controller-runtime/informer-factory.ts';
import { commandSigner } from '../../fleet/command-signer.ts';
import { nameRefusalFromCaches } from '../../fleet/host-indexes.ts';
import { HostStatus, writeHostStatus } from '../../fleet/host-status.ts';
import { carriesIdentity, claimedNodeName, type NameRefusal } from '../../fleet/node-claims.ts';
import { deleteBootstrapToken } from '../../join/bootstrap-tokens.ts';
import { apiTime, timeOf } from '../../kube/api-time.ts';
import type { NodeNetworkState } from '../../network/cluster-network-watch.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import { checkKubeletSkew } from '../../rollout/kubelet-skew.ts';
import { windowsBuildLabel } from '../../windows/builds.ts';
import { featureRestartRecheckMs } from './containers-feature.ts';
import { bootstrapHost, copyPayload } from './host-bootstrap.ts';
import { connectHost } from './host-connect.ts';
import {
  leftToRemediation,
  rebootstrapRequest,
  reportRemediationFailure,
  reportSetAside,
} from './host-remediation.ts';
import type { JoinContext } from './join-context.ts';
import { reportFailure } from './join-failure.ts';
import { hyperVLabelPatch } from './pool-isolation.ts';
import { keepPrePull, recordPrePull } from './pre-pull-node.ts';

export type { JoinContext } from './join-context.ts';

/** How often a joined, healthy host is looked at again. */
export const healthyRecheckMs = 5 * 60_000;
/** How often a joining host is polled for its Node. */
const joinPollMs = 1000;
/** How often a node that exists but is NotReady is looked at while its agent is left to it. */
const notReadyPollMs = 2000;
/** How often a host refused its node name looks again (the holder may have gone). */
const refusedRecheckMs = 60_000;

/** @package */
export interface PassResult {
  requeueAfterMs?: number;
}

/** What looking after a Ready node came to: a result for this pass, or bootstrap it again. */
type ReadyNodeOutcome = { kind: 'done'; result: PassResult } | { kind: 'bootstrap-again' };

/** One pass for a host that is not being deleted. */
export function reconcileJoin(ctx: JoinContext, host: WindowsHost): Promise<PassResult> {
  return hostPass(ctx, host, (hs) => joinPass(ctx, host, hs));
}

/**
 * Runs `pass` on the host's status (an SSH host's join pass, a Pull host's): a failure is
 * reported on it and thrown for the queue's backoff, and the status is written once at the
 * end if it changed.
 * @package
 */
export async function hostPass(
  ctx: JoinContext,
  host: WindowsHost,
  pass: (hs: HostStatus) => Promise<PassResult>,
): Promise<PassResult> {
  const hs = new HostStatus(host);
  try {
    return await pass(hs);
  } catch (error) {
    // A host whose own Node is Ready stays Ready when, say, copying an upgrade fails: the
    // Node still serves; Reachable, Degraded and the Event tell the failure.
    const ready = hs.condition(ConditionType.Ready)?.status !== 'True';
    reportFailure(ctx.events, host, hs, error, { ready });
    throw error;
  } finally {
    reportRemediationFailure(host, hs);
    reportSetAside(host, hs);
    if (hs.changed()) {
      await (ctx.writeStatus ?? ((h, status) => writeHostStatus(ctx.kc, h, status)))(
        host,
        hs.status,
      );
    }
  }
}

async function joinPass(ctx: JoinContext, host: WindowsHost, hs: HostStatus): Promise<PassResult> {
  const loaded = await ctx.payload();
  const claimed = claimedNodeName(host);
  const refusal = claimed && nameRefusalFromCaches(ctx, host, claimed);
  if (refusal) return refuseNodeName(ctx, host, hs, refusal);
  if (host.metadata.annotations?.[trustHostKeyAnnotation]) {
    // Connecting with the trusted key pins it and consumes the annotation (connectHost).
    (await connectHost(ctx, host, hs)).close();
  }
  const node = hs.status.nodeName ? ctx.nodes.get(hs.status.nodeName) : undefined;
  const timing = joinTiming(hs, node, ctx.config().hosts.joinTimeoutSeconds * 1000);
  const version = wantedVersion(host, node, loaded);
  // Remediation's rung Rebootstrap: the bootstrap runs again whatever the Node shows.
  const repair = rebootstrapRequest(host);

  if (repair) {
    ctx.events.record(
      host,
      'Normal',
      EventReason.RemediationRebootstrap,
      `Remediation asked at ${repair} to configure the host again: running the agent bootstrap over SSH`,
    );
  } else if (node && isUpToDate(ctx, host, hs, node, version)) {
    return keepJoined(ctx, host, hs, node, version);
  } else if (node && !nodeIsReady(node) && (timing.leaveToAgent || leftToRemediation(host))) {
    return waitForNodeReady(hs, node);
  } else if (node && nodeIsReady(node)) {
    const outcome = await finishNode(ctx, host, hs, node, loaded, version);
    if (outcome.kind === 'done') return outcome.result;
    if (timing.recentlyBootstrapped) return waitForAgent(hs, node, version);
    ctx.events.record(
      host,
      'Warning',
      EventReason.AgentNotReporting,
      `The agent on ${node.metadata?.name} has not applied services ${version}; configuring the host again`,
    );
  } else if (timing.waitingForNode && hs.status.nodeName) {
    return waitForNode(hs);
  }
  // A payload whose kubelet the API server must not serve never reaches a host, joining or not.
  const skew = checkKubeletSkew(loaded.payload.kubernetesVersion, await ctx.apiServerVersion());
  if (!skew.ok) return refuseSkewedPayload(ctx, host, hs, skew.message);
  // Nor to a pod network the mode does not join (the cluster runs another CNI, or one Windows
  // cannot join as configured): nothing is installed on the host.
  const network = ctx.network?.();
  if (network && !network.ok) return refuseNetwork(ctx, host, hs, network);
  hs.set(
    ConditionType.Ready,
    'False',
    ConditionReason.Joining,
    node
      ? `Node ${node.metadata?.name} is not Ready; configuring the host again`
      : 'Configuring the host',
  );
  if ((await bootstrapHost(ctx, host, hs, loaded)) === 'restarting')
    return { requeueAfterMs: featureRestartRecheckMs };
  delete hs.status.servicesRequestedAt;
  return waitForNode(hs);
}

/**
 * The services version this host should run. A host whose Node was never given one (it is
 * joining) gets the payload's. A joined host changes version only through its pool's rollout
 * (src/controllers/pools): once its recorded change is past Cordon and Drain and brings the
 * payload's version. Otherwise it keeps the version its Node was given, so a new payload never
 * reaches every host at once.
 * @package
 */
export function wantedVersion(
  host: WindowsHost,
  node: k8s.V1Node | undefined,
  loaded: LoadedPayload,
): string {
  const payloadVersion = loaded.manifest.version;
  const desired = node?.metadata?.annotations?.[desiredServicesVersionAnnotation];
  if (!desired || !carriesIdentity(node!, host)) return payloadVersion;
  const change = host.status?.rollout?.current;
  const applying =
    change !== undefined &&
    change.step !== 'Cordon' &&
    change.step !== 'Drain' &&
    change.target.servicesVersion === payloadVersion;
  return applying ? payloadVersion : desired;
}

/**
 * A payload whose kubelet is outside the skew policy (`message`, checkKubeletSkew's): nothing
 * is done on the host; Ready and Degraded say why, and a Warning Event once.
 * @package
 */
export function refuseSkewedPayload(
  ctx: Pick<JoinContext, 'events'>,
  host: WindowsHost,
  hs: HostStatus,
  message: string,
): PassResult {
  const first = hs.condition(ConditionType.Degraded)?.reason !== ConditionReason.KubeletVersionSkew;
  const text = `Not configuring the host: ${message}`;
  hs.set(ConditionType.Ready, 'False', ConditionReason.KubeletVersionSkew, text);
  hs.set(ConditionType.Degraded, 'True', ConditionReason.KubeletVersionSkew, text);
  if (first) ctx.events.record(host, 'Warning', ConditionReason.KubeletVersionSkew, text);
  return { requeueAfterMs: refusedRecheckMs };
}

/**
 * A pod network no node may join now (network.mode against the cluster, `state`'s reason and
 * message): nothing is done on the host; Ready and Degraded say why, and a Warning Event once.
 * @package
 */
export function refuseNetwork(
  ctx: Pick<JoinContext, 'events'>,
  host: WindowsHost,
  hs: HostStatus,
  state: Extract<NodeNetworkState, { ok: false }>,
): PassResult {
  const reason = state.reason as ConditionReason;
  const first = hs.condition(ConditionType.Degraded)?.reason !== reason;
  const text = `Not configuring the host: ${state.message}`;
  hs.set(ConditionType.Ready, 'False', reason, text);
  hs.set(ConditionType.Degraded, 'True', reason, text);
  if (first) ctx.events.record(host, 'Warning', reason as EventReason, text);
  return { requeueAfterMs: refusedRecheckMs };
}

/**
 * Reports the refusal and does nothing on the host or the Node. A name held by another
 * WindowsHost is dropped from the status (so CSRs for it are never matched to this host), and
 * a bootstrap token out is withdrawn.
 */
async function refuseNodeName(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  refusal: NameRefusal,
): Promise<PassResult> {
  const { reason, message } = refusal;
  const first = hs.condition(ConditionType.Degraded)?.reason !== reason;
  hs.set(ConditionType.NodeRegistered, 'False', reason, message);
  hs.set(ConditionType.Ready, 'False', reason, message);
  hs.set(ConditionType.Degraded, 'True', reason, message);
  if (reason === ConditionReason.NodeNameTaken) delete hs.status.nodeName;
  if (hs.status.bootstrapTokenId) {
    await deleteBootstrapToken(ctx.kc, host.metadata.uid!);
    delete hs.status.bootstrapTokenId;
  }
  if (first) ctx.events.record(host, 'Warning', reason, message);
  return { requeueAfterMs: refusedRecheckMs };
}

/**
 * Where the host stands in time, from the API. Within the join timeout of the last bootstrap
 * the host is not bootstrapped again (`recentlyBootstrapped`), and while no Node has registered
 * since that bootstrap it is waited for (`waitingForNode`; a Node that registered and was then
 * deleted is not waited for). A NotReady Node is left to its agent — it restarts what died,
 * and a rebooted host comes back by itself — for the join timeout from the later of the last
 * bootstrap and the node going NotReady (`leaveToAgent`), unless the last bootstrap failed:
 * then the agent may never have been given its services, and waiting for it would only let
 * the join time out, so the host is configured again (the failure's requeue backs off).
 * @package
 */
export function joinTiming(
  hs: HostStatus,
  node: k8s.V1Node | undefined,
  joinTimeoutMs: number,
  now: number = Date.now(),
): { recentlyBootstrapped: boolean; waitingForNode: boolean; leaveToAgent: boolean } {
  const lastBootstrap = timeOf(hs.status.bootstrappedAt);
  const ready = node?.status?.conditions?.find((c) => c.type === 'Ready');
  const notReadySince =
    timeOf(ready?.lastTransitionTime) ?? timeOf(node?.metadata?.creationTimestamp);
  const since = Math.max(lastBootstrap ?? 0, notReadySince ?? now);
  const recentlyBootstrapped = lastBootstrap !== undefined && now - lastBootstrap < joinTimeoutMs;
  const registered = hs.condition(ConditionType.NodeRegistered)?.status === 'True';
  return {
    recentlyBootstrapped,
    waitingForNode: recentlyBootstrapped && !registered,
    leaveToAgent: node !== undefined && !bootstrapFailed(hs) && now - since < joinTimeoutMs,
  };
}

/**
 * A joined host with nothing left to do: its Node Ready with the wanted version, this host's
 * identity and the Hyper-V label its pool decides (a pool that opted in or out after the join,
 * or a label the kubelet set itself, takes the pass to annotateNode, which corrects it).
 * @package
 */
export function isUpToDate(
  ctx: Pick<JoinContext, 'pools'>,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node,
  version: string,
): boolean {
  const annotations = node.metadata?.annotations ?? {};
  return (
    nodeIsReady(node) &&
    annotations[servicesVersionAnnotation] === version &&
    annotations[desiredServicesVersionAnnotation] === version &&
    annotations[hostAnnotation] === hostIdentity(host) &&
    Boolean(hs.status.hostKeyFingerprint) &&
    hyperVLabelPatch(ctx.pools?.list() ?? [], host, node.metadata?.labels) === undefined
  );
}

/**
 * A joined host with nothing else to do: its pool's pre-pull list and taint kept current (its
 * agent pulls after an upgrade or a reboot too), reported Ready, a leftover bootstrap token
 * dropped.
 */
async function keepJoined(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node,
  version: string,
): Promise<PassResult> {
  const name = node.metadata!.name!;
  hs.set(ConditionType.NodeRegistered, 'True', ConditionReason.NodeExists, `Node ${name}`);
  const prePullRecheckMs = await keepPrePull(ctx, host, node);
  recordPrePull(hs, node);
  if (hs.status.bootstrapTokenId) {
    await deleteBootstrapToken(ctx.kc, host.metadata.uid!);
    delete hs.status.bootstrapTokenId;
  }
  reportReady(ctx, host, hs, name, version);
  return { requeueAfterMs: Math.min(healthyRecheckMs, prePullRecheckMs ?? healthyRecheckMs) };
}

/**
 * Ready=True, for a Node the caller verified is this host's and Ready: the last error is
 * cleared, and becoming Ready is an Event (whichever pass sees it first).
 * @package
 */
export function reportReady(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  name: string,
  version: string,
): void {
  const firstReady = hs.condition(ConditionType.Ready)?.status !== 'True';
  const message = `Node ${name} is Ready with services ${version}`;
  hs.set(ConditionType.Ready, 'True', ConditionReason.NodeReady, message);
  hs.set(ConditionType.Degraded, 'False', ConditionReason.AsExpected, '');
  hs.status.servicesVersion = version;
  delete hs.status.servicesRequestedAt;
  delete hs.status.lastError;
  if (firstReady) ctx.events.record(host, 'Normal', EventReason.NodeReady, message);
}

function waitForNodeReady(hs: HostStatus, node: k8s.V1Node): PassResult {
  const name = node.metadata?.name;
  hs.set(ConditionType.NodeRegistered, 'True', ConditionReason.NodeExists, `Node ${name}`);
  hs.set(ConditionType.Ready, 'False', ConditionReason.NodeNotReady, `Node ${name} is not Ready`);
  return { requeueAfterMs: notReadyPollMs };
}

/** No Node (yet, or any more): NodeRegistered and Ready both say so — Ready never outlives it. */
function waitForNode(hs: HostStatus): PassResult {
  const message = `Waiting for the kubelet to register Node ${hs.status.nodeName}`;
  hs.set(ConditionType.NodeRegistered, 'False', ConditionReason.WaitingForNode, message);
  hs.set(ConditionType.Ready, 'False', ConditionReason.WaitingForNode, message);
  return { requeueAfterMs: joinPollMs };
}

function waitForAgent(hs: HostStatus, node: k8s.V1Node, version: string): PassResult {
  hs.set(
    ConditionType.Ready,
    'False',
    ConditionReason.ApplyingServices,
    `Waiting for the agent on ${node.metadata?.name} to apply services ${version}`,
  );
  return { requeueAfterMs: joinPollMs };
}

/**
 * A Ready node: bring its annotations up to date (a new payload goes to the host before the
 * agent is told to use it), wait for the agent to apply the version — or have the host
 * bootstrapped again when its bootstrap failed or the agent is out of patience — and finish
 * the join.
 */
async function finishNode(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node,
  loaded: LoadedPayload,
  version: string,
): Promise<ReadyNodeOutcome> {
  const name = node.metadata!.name!;
  hs.set(ConditionType.NodeRegistered, 'True', ConditionReason.NodeExists, `Node ${name}`);
  const build = node.metadata?.labels?.[windowsBuildLabel];
  if (build) hs.status.windowsBuild = build;
  const current = await annotateNode(ctx, host, hs, node, loaded, version);
  // The pool's pre-pull list signed on the Node, its taint while the agent pulls (every pass).
  const prePullRecheckMs = await keepPrePull(ctx, host, current);
  recordPrePull(hs, current);
  if (node.metadata?.annotations?.[servicesVersionAnnotation] !== version) {
    hs.status.servicesRequestedAt ??= apiTime();
    if (bootstrapFailed(hs) || agentOutOfPatience(ctx, hs)) return { kind: 'bootstrap-again' };
    return { kind: 'done', result: waitForAgent(hs, node, version) };
  }
  // Ready is claimed only for a Ready Node that carries this host's identity, as the API
  // server returned it — never for a Node that merely has the host's name.
  if (!nodeIsReady(current) || !carriesIdentity(current, host)) {
    return { kind: 'done', result: waitForAgent(hs, node, version) };
  }
  await completeJoin(ctx, host, hs, name, version);
  return {
    kind: 'done',
    result: { requeueAfterMs: Math.min(healthyRecheckMs, prePullRecheckMs ?? healthyRecheckMs) },
  };
}

/**
 * Points the node at its host and the wanted services version, copying a new payload first.
 * Returns the Node as the API server has it afterwards.
 */
async function annotateNode(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node,
  loaded: LoadedPayload,
  version: string,
): Promise<k8s.V1Node> {
  const name = node.metadata!.name!;
  const annotations = node.metadata?.annotations ?? {};
  const identity = hostIdentity(host);
  const desired = annotations[desiredServicesVersionAnnotation];
  const signer = commandSigner(ctx.kc);
  const signed = signer.holds(node, desiredServicesVersionAnnotation, version);
  // The pool decides the Hyper-V label, also after the join (pool-isolation.ts).
  const labels = hyperVLabelPatch(ctx.pools?.list() ?? [], host, node.metadata?.labels);
  if (signed && annotations[hostAnnotation] === identity) {
    return labels ? patchNodeAnnotations(ctx, name, {}, labels) : node;
  }
  await ctx.publish(loaded.manifest);
  if (desired && desired !== version) {
    // Staged before the agent is told to use it: pulled by the host (or pushed, its fallback).
    await copyPayload(ctx, host, hs, loaded, version);
    ctx.events.record(
      host,
      'Normal',
      EventReason.Upgrading,
      `Rolling services ${desired} → ${version} out to Node ${name}`,
    );
    // The agent's patience counts from when it was asked for this version.
    hs.status.servicesRequestedAt = apiTime();
  }
  // Signed for this Node: the agent obeys no desired version a patch-nodes principal wrote.
  return patchNodeAnnotations(
    ctx,
    name,
    {
      ...(signed ? {} : signer.annotations(node, desiredServicesVersionAnnotation, version)),
      [hostAnnotation]: identity,
    },
    labels,
  );
}

function bootstrapFailed(hs: HostStatus): boolean {
  return hs.condition(ConditionType.Bootstrapped)?.status === 'False';
}

/** True when the agent has had the services version asked of it for longer than it should take. */
function agentOutOfPatience(ctx: JoinContext, hs: HostStatus): boolean {
  const patienceMs = Math.max(30_000, ctx.config().hosts.agentCheckIntervalSeconds * 5000);
  const since = timeOf(hs.status.servicesRequestedAt) ?? Date.now();
  return Date.now() - since > patienceMs;
}

/** The agent applied the version: drop the token, then Ready. */
async function completeJoin(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  name: string,
  version: string,
): Promise<void> {
  delete hs.status.servicesRequestedAt;
  await deleteBootstrapToken(ctx.kc, host.metadata.uid!);
  delete hs.status.bootstrapTokenId;
  reportReady(ctx, host, hs, name, version);
}

async function patchNodeAnnotations(
  ctx: JoinContext,
  name: string,
  annotations: Record<string, string | null>,
  labels?: Record<string, string | null>,
): Promise<k8s.V1Node> {
  const core = ctx.kc.makeApiClient(k8s.CoreV1Api);
  return core.patchNode(
    { name, body: { metadata: { annotations, ...(labels ? { labels } : {}) } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}
