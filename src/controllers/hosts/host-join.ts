/**
 * Joining (and keeping joined) one WindowsHost, level-triggered: every pass looks at what is
 * true now — the Node, its annotations, the host's status — and does only the next missing
 * step. Nothing depends on remembering a previous pass, so the operator can be killed at any
 * moment and pick up where the cluster says it stands:
 *   reach the host (pin its SSH key) → read its facts → copy the agent and payload (only what
 *   differs) → hand it a bootstrap token and config → `agent bootstrap` → wait for the kubelet's
 *   Node → annotate it → wait for Ready and the agent's version → drop the token.
 */
import * as k8s from '@kubernetes/client-node';
import type { BootstrapConfig } from '../../agent/agent-config.ts';
import { paths } from '../../agent/agent-config.ts';
import {
  desiredServicesVersionAnnotation,
  hostAnnotation,
  managedNodeLabel,
  servicesVersionAnnotation,
} from '../../api/node-annotations.ts';
import { trustHostKeyAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { nodeIsReady } from '../../controller/informer-factory.ts';
import { TerminalError } from '../../controller/work-queue.ts';
import { openHostSession } from '../../hostaccess/host-session.ts';
import { RemoteCommandError, RemoteHost } from '../../hostaccess/remote-host.ts';
import { agentExecutable } from '../../hostaccess/remote-scripts.ts';
import { SshError, type SshSession } from '../../hostaccess/ssh-session.ts';
import { readPayloadFile } from '../../payload/payload.ts';
import { windowsBuildLabel } from '../../windows/builds.ts';
import { deleteBootstrapToken, ensureBootstrapToken } from './bootstrap-tokens.ts';
import type { HostControllerDeps, LoadedPayload } from './host-deps.ts';
import { HostStatus, patchHostMetadata, writeHostStatus } from './host-status.ts';
import type { createManifestPublisher } from './manifest-publisher.ts';

/** How often a joined, healthy host is looked at again. */
export const healthyRecheckMs = 5 * 60_000;
/** How often a joining host is polled for its Node. */
const joinPollMs = 1000;
const minimumBuild = 17763;

export interface JoinContext extends HostControllerDeps {
  publish: ReturnType<typeof createManifestPublisher>;
  /** When each host's last bootstrap ran (in this process), for the join timeout. */
  bootstrappedAt: Map<string, number>;
  /** Since when each joined host has been waiting for its agent to apply the services. */
  applyingSince: Map<string, number>;
}

function nodeNameFor(host: WindowsHost, hostname: string): string {
  return host.spec.nodeName ?? hostname.toLowerCase();
}

/** Connects, pinning the host key on first contact (or when the user trusts a new one). */
async function connect(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
): Promise<SshSession> {
  try {
    const session = await openHostSession(deps.kc, deps.config(), host);
    if (hs.status.hostKeyFingerprint !== session.fingerprint) {
      deps.events.record(
        host,
        'Normal',
        'HostKeyPinned',
        `Pinned SSH host key ${session.fingerprint} of ${host.spec.address}`,
      );
      hs.status.hostKeyFingerprint = session.fingerprint;
    }
    hs.set(
      'Reachable',
      'True',
      'Connected',
      `SSH to ${host.spec.username}@${host.spec.address}:${host.spec.port ?? 22}`,
    );
    return session;
  } catch (error) {
    if (error instanceof SshError && error.kind === 'host-key-mismatch') {
      hs.set('Reachable', 'False', 'HostKeyMismatch', error.message);
      hs.set('Degraded', 'True', 'HostKeyMismatch', error.message);
      hs.error('connect', error.message);
      deps.events.record(host, 'Warning', 'HostKeyMismatch', error.message);
      throw new TerminalError(error.message);
    }
    if (error instanceof SshError && error.kind === 'auth') {
      hs.set('Reachable', 'False', 'AuthenticationFailed', error.message);
      hs.set('Degraded', 'True', 'AuthenticationFailed', error.message);
    } else {
      hs.set('Reachable', 'False', 'Unreachable', (error as Error).message);
    }
    hs.error('connect', (error as Error).message);
    throw error;
  }
}

function bootstrapConfig(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  nodeName: string,
  token: string,
  loaded: LoadedPayload,
): BootstrapConfig {
  const config = deps.config();
  const windowsTaint = config.placement.windowsTaint;
  return {
    nodeName,
    nodeIP: hs.status.addresses?.[0] ?? host.spec.address,
    hostname: hs.status.hostname ?? nodeName,
    apiServer: config.hosts.apiServer ?? deps.cluster.apiServer,
    clusterDNS: config.hosts.clusterDNS,
    clusterDomain: config.hosts.clusterDomain,
    serviceCIDR: config.hosts.serviceCIDR,
    podCIDR: config.hosts.podCIDR,
    labels: {
      [managedNodeLabel]: 'true',
      ...(host.spec.pool ? { 'winfleet.io/pool': host.spec.pool } : {}),
      ...host.spec.labels,
    },
    taints: [
      { key: windowsTaint.key, value: windowsTaint.value, effect: windowsTaint.effect },
      ...(host.spec.taints ?? []),
    ],
    kubelet: config.hosts.kubelet,
    operatorNamespace: deps.operatorNamespace,
    checkIntervalSeconds: config.hosts.agentCheckIntervalSeconds,
    caCertificate: deps.cluster.caCertificate,
    bootstrapToken: token,
    manifest: loaded.manifest,
  };
}

/** Copies the agent and the payload files that differ on the host. */
async function syncPayload(remote: RemoteHost, loaded: LoadedPayload): Promise<string[]> {
  await remote.script('ensure-directory', {
    path: paths.payload,
    record: paths.createdDirectories,
  });
  const files = loaded.payload.files.map((file) => {
    const agent = file.name.toLowerCase() === 'winfleet-agent.exe';
    return {
      path: agent ? agentExecutable : `${paths.payload}\\${file.name}`,
      sha256: file.sha256,
      read: () => readPayloadFile(loaded.dir, file),
      mayBeRunning: agent,
    };
  });
  return remote.syncFiles(files);
}

async function patchNode(
  deps: HostControllerDeps,
  name: string,
  metadata: Record<string, unknown>,
): Promise<void> {
  const core = deps.kc.makeApiClient(k8s.CoreV1Api);
  await core.patchNode(
    { name, body: { metadata } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

/** One pass for a host that is not being deleted. */
export async function reconcileJoin(
  ctx: JoinContext,
  host: WindowsHost,
): Promise<{ requeueAfterMs?: number }> {
  const key = `${host.metadata.namespace}/${host.metadata.name}`;
  const hs = new HostStatus(host);
  try {
    return await joinPass(ctx, host, hs, key);
  } finally {
    if (hs.changed()) await writeHostStatus(ctx.kc, host, hs.status);
  }
}

async function joinPass(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  key: string,
): Promise<{ requeueAfterMs?: number }> {
  const loaded = await ctx.payload();
  const version = loaded.manifest.version;
  const existingNode = hs.status.nodeName ? ctx.nodes.get(hs.status.nodeName) : undefined;
  const upToDate =
    existingNode &&
    nodeIsReady(existingNode) &&
    existingNode.metadata?.annotations?.[servicesVersionAnnotation] === version &&
    existingNode.metadata?.annotations?.[desiredServicesVersionAnnotation] === version &&
    hs.status.hostKeyFingerprint &&
    !host.metadata.annotations?.[trustHostKeyAnnotation];

  if (upToDate) {
    hs.set('NodeRegistered', 'True', 'NodeExists', `Node ${existingNode.metadata?.name}`);
    hs.set(
      'Ready',
      'True',
      'NodeReady',
      `Node ${existingNode.metadata?.name} is Ready with services ${version}`,
    );
    hs.set('Degraded', 'False', 'AsExpected', '');
    hs.status.servicesVersion = version;
    if (hs.status.bootstrapTokenId) {
      await deleteBootstrapToken(ctx.kc, host.metadata.uid!);
      delete hs.status.bootstrapTokenId;
    }
    return { requeueAfterMs: healthyRecheckMs };
  }

  // A node that exists but is NotReady is left to its agent (it restarts what died, and a
  // rebooted host comes back by itself) until the join timeout; then winfleet bootstraps again.
  const joinTimeoutMs = ctx.config().hosts.joinTimeoutSeconds * 1000;
  const lastBootstrap = ctx.bootstrappedAt.get(key);
  const waitingForNode = lastBootstrap !== undefined && Date.now() - lastBootstrap < joinTimeoutMs;

  if (
    existingNode &&
    !nodeIsReady(existingNode) &&
    (waitingForNode || lastBootstrap === undefined)
  ) {
    hs.set('NodeRegistered', 'True', 'NodeExists', `Node ${existingNode.metadata?.name}`);
    hs.set('Ready', 'False', 'NodeNotReady', `Node ${existingNode.metadata?.name} is not Ready`);
    if (lastBootstrap === undefined) ctx.bootstrappedAt.set(key, Date.now());
    return { requeueAfterMs: 2000 };
  }

  if (existingNode && nodeIsReady(existingNode)) {
    // Joined: bring its annotations and services version up to date.
    const finished = await finishNode(ctx, host, hs, existingNode, version, key);
    if (finished !== 'rebootstrap') return finished;
    // The agent never reported (e.g. a reboot cut its bootstrap short): bootstrap again.
    ctx.events.record(
      host,
      'Warning',
      'AgentNotReporting',
      `The agent on ${existingNode.metadata?.name} has not applied services ${version}; configuring the host again`,
    );
  }

  if (waitingForNode && hs.status.nodeName) {
    hs.set(
      'NodeRegistered',
      'False',
      'WaitingForNode',
      `Waiting for the kubelet to register Node ${hs.status.nodeName}`,
    );
    return { requeueAfterMs: joinPollMs };
  }

  // Bootstrap (again).
  hs.set(
    'Ready',
    'False',
    'Joining',
    existingNode
      ? `Node ${existingNode.metadata?.name} is not Ready; configuring the host again`
      : 'Configuring the host',
  );
  const session = await connect(ctx, host, hs);
  try {
    const remote = new RemoteHost(session, ctx.config().hosts.commandTimeoutSeconds * 1000);
    const facts = await step(hs, 'host-facts', () => remote.facts());
    hs.status.hostname = facts.hostname;
    hs.status.windowsBuild = `${facts.osVersion.major}.${facts.osVersion.minor}.${facts.osVersion.build}`;
    hs.status.windowsVersion = `${hs.status.windowsBuild}.${facts.osVersion.ubr}`;
    hs.status.addresses = facts.addresses.length > 0 ? facts.addresses : [host.spec.address];
    if (facts.osVersion.build < minimumBuild) {
      const message = `${facts.osVersion.productName} (build ${facts.osVersion.build}) is older than Windows Server 2019 (17763); winfleet supports 2019, 2022 and 2025`;
      hs.set('Degraded', 'True', 'UnsupportedWindows', message);
      throw new TerminalError(message);
    }
    const nodeName = nodeNameFor(host, facts.hostname);
    if (hs.status.nodeName && hs.status.nodeName !== nodeName) {
      const message = `The host now calls itself ${nodeName}, but it joined as ${hs.status.nodeName}; set spec.nodeName: ${hs.status.nodeName} to keep the node, or delete the WindowsHost and add it again`;
      hs.set('Degraded', 'True', 'NodeNameChanged', message);
      throw new TerminalError(message);
    }
    hs.status.nodeName = nodeName;
    // Room for the payload twice over (the copy, then the installed files) plus 1 GiB.
    const needBytes = loaded.totalBytes * 2 + 2 ** 30;
    if (facts.freeBytes < needBytes) {
      const message = `Only ${facts.freeBytes} bytes are free on C: of ${host.spec.address}; winfleet needs ${needBytes} (the payload twice and 1 GiB); free some space`;
      hs.set('Degraded', 'True', 'DiskFull', message);
      hs.error('host-facts', message);
      throw new Error(message);
    }
    const token = await ensureBootstrapToken(
      ctx.kc,
      { uid: host.metadata.uid!, namespace: host.metadata.namespace!, name: host.metadata.name },
      ctx.config().hosts.bootstrapTokenTtlMinutes * 60_000,
    );
    hs.status.bootstrapTokenId = token.id;
    // The node name must be on record before the kubelet asks for a certificate with it.
    await writeHostStatus(ctx.kc, host, hs.status);
    await step(hs, 'publish-manifest', () => ctx.publish(loaded.manifest));
    await step(hs, 'copy-payload', () => syncPayload(remote, loaded));
    const config = bootstrapConfig(ctx, host, hs, nodeName, token.token, loaded);
    await step(hs, 'copy-config', () =>
      session.upload(paths.bootstrapConfig, Buffer.from(JSON.stringify(config))),
    );
    const result = await step(hs, 'agent-bootstrap', () => remote.agent(['bootstrap']));
    ctx.bootstrappedAt.set(key, Date.now());
    hs.set(
      'Bootstrapped',
      'True',
      'AgentBootstrapped',
      `Services ${String(result.version)} configured; started ${JSON.stringify(result.started)}`,
    );
    hs.set('Degraded', 'False', 'AsExpected', '');
    delete hs.status.lastError;
    ctx.events.record(
      host,
      'Normal',
      'Bootstrapped',
      `winfleet agent configured services ${version} on ${host.spec.address}; waiting for Node ${nodeName}`,
    );
  } finally {
    session.close();
  }
  hs.set(
    'NodeRegistered',
    'False',
    'WaitingForNode',
    `Waiting for the kubelet to register Node ${hs.status.nodeName}`,
  );
  return { requeueAfterMs: joinPollMs };
}

async function step<T>(hs: HostStatus, name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const stepName = error instanceof RemoteCommandError ? error.step : name;
    hs.error(stepName, (error as Error).message);
    hs.set('Bootstrapped', 'False', 'StepFailed', `${stepName}: ${(error as Error).message}`);
    throw error;
  }
}

async function finishNode(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node,
  version: string,
  key: string,
): Promise<{ requeueAfterMs?: number } | 'rebootstrap'> {
  const name = node.metadata!.name!;
  const annotations = node.metadata?.annotations ?? {};
  const hostRef = `${host.metadata.namespace}/${host.metadata.name}`;
  hs.set('NodeRegistered', 'True', 'NodeExists', `Node ${name}`);
  if (node.metadata?.labels?.[windowsBuildLabel])
    hs.status.windowsBuild = node.metadata.labels[windowsBuildLabel];
  if (
    annotations[desiredServicesVersionAnnotation] !== version ||
    annotations[hostAnnotation] !== hostRef
  ) {
    // The new payload must be on the host before the agent is told to use it.
    if (
      annotations[desiredServicesVersionAnnotation] &&
      annotations[desiredServicesVersionAnnotation] !== version
    ) {
      const loaded = await ctx.payload();
      await ctx.publish(loaded.manifest);
      const session = await connect(ctx, host, hs);
      try {
        await step(hs, 'copy-payload', () =>
          syncPayload(
            new RemoteHost(session, ctx.config().hosts.commandTimeoutSeconds * 1000),
            loaded,
          ),
        );
      } finally {
        session.close();
      }
      ctx.events.record(
        host,
        'Normal',
        'Upgrading',
        `Rolling services ${annotations[desiredServicesVersionAnnotation]} → ${version} out to Node ${name}`,
      );
    } else {
      await ctx.publish((await ctx.payload()).manifest);
    }
    await patchNode(ctx, name, {
      annotations: { [desiredServicesVersionAnnotation]: version, [hostAnnotation]: hostRef },
    });
  }
  if (annotations[servicesVersionAnnotation] !== version) {
    const since = ctx.applyingSince.get(key) ?? Date.now();
    ctx.applyingSince.set(key, since);
    const patienceMs = Math.max(30_000, ctx.config().hosts.agentCheckIntervalSeconds * 5000);
    const bootstrapFailed =
      hs.status.conditions?.find((c) => c.type === 'Bootstrapped')?.status === 'False';
    if (bootstrapFailed || Date.now() - since > patienceMs) {
      ctx.applyingSince.delete(key);
      return 'rebootstrap';
    }
    hs.set(
      'Ready',
      'False',
      'ApplyingServices',
      `Waiting for the agent on ${name} to apply services ${version}`,
    );
    return { requeueAfterMs: joinPollMs };
  }
  ctx.applyingSince.delete(key);
  // Finish the join before reporting Ready: the token goes, a consumed trust annotation goes.
  await deleteBootstrapToken(ctx.kc, host.metadata.uid!);
  delete hs.status.bootstrapTokenId;
  if (host.metadata.annotations?.[trustHostKeyAnnotation]) {
    await patchHostMetadata(
      ctx.kc,
      host,
      { annotations: { [trustHostKeyAnnotation]: null } },
      false,
    );
  }
  const firstReady = hs.status.conditions?.find((c) => c.type === 'Ready')?.status !== 'True';
  hs.set('Ready', 'True', 'NodeReady', `Node ${name} is Ready with services ${version}`);
  hs.set('Degraded', 'False', 'AsExpected', '');
  hs.status.servicesVersion = version;
  delete hs.status.lastError;
  if (firstReady)
    ctx.events.record(
      host,
      'Normal',
      'NodeReady',
      `Node ${name} is Ready with services ${version}`,
    );
  return { requeueAfterMs: healthyRecheckMs };
}
