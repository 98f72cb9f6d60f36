/**
 * Bootstrapping a host, the part of joining that happens on the host: reach it, read its
 * facts and refuse what cannot work (an unsupported Windows build, a host that renamed
 * itself, a full disk), hand it a bootstrap token, copy the agent and payload (only what
 * differs) and its config, and run `agent bootstrap`. Each step reports its failure on the
 * host's status under its name.
 */

import type { BootstrapConfig } from '../../agent/agent-config.ts';
import { managedNodeLabel } from '../../api/node-annotations.ts';
import { allowedNodeLabels } from '../../api/node-labels.ts';
import { prePullTaint } from '../../api/pre-pull.ts';
import { ConditionReason, ConditionType, EventReason, JoinStep } from '../../api/reasons.ts';
import { sshHostSpec, type WindowsHost } from '../../api/windows-host.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { nameRefusalFromCaches } from '../../fleet/host-indexes.ts';
import { type HostStatus, writeHostStatus } from '../../fleet/host-status.ts';
import { joinServingAddresses } from '../../fleet/serving-addresses.ts';
import { nodeAddress } from '../../hostaccess/node-address.ts';
import type { HostFacts } from '../../hostaccess/remote-scripts.ts';
import { ensureBootstrapToken } from '../../join/bootstrap-tokens.ts';
import { apiTime } from '../../kube/api-time.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';
import {
  adHostnamePlan,
  checkActiveDirectory,
  domainJoinForBootstrap,
  ensureDomainJoined,
  poolActiveDirectory,
} from './active-directory-join.ts';
import { ensureContainersFeature } from './containers-feature.ts';
import { withHost } from './host-connect.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { type JoinContext, step } from './join-context.ts';
import { copyOperatorFiles, deliverRest, deliveryText } from './payload-delivery.ts';
import { withPoolIsolation } from './pool-isolation.ts';
import { poolPrePull } from './pre-pull-node.ts';
import { clearStaleNode } from './rebuilt-host.ts';

/** Windows Server 2019, the oldest build winfleet supports. */
const minimumBuild = 17763;

/**
 * Stages a new payload on the host before an upgrade, `version` its services version: the
 * agent and shim copied, the rest pulled by the host or pushed (payload-delivery.ts).
 * @package
 */
export async function copyPayload(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  loaded: LoadedPayload,
  version: string = loaded.manifest.version,
): Promise<void> {
  await withHost(ctx, host, hs, (remote) =>
    step(hs, JoinStep.CopyPayload, async () => {
      await copyOperatorFiles(remote, loaded);
      await deliverRest(ctx.events, host, remote, loaded, version);
    }),
  );
}

/**
 * Configures the host and has its agent start the node services; the kubelet then joins.
 * 'restarting' when the host first restarts to finish installing the Containers feature
 * (containers-feature.ts): the join goes on at a later pass.
 * @package
 */
export async function bootstrapHost(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  loaded: LoadedPayload,
): Promise<'bootstrapped' | 'restarting'> {
  return withHost(ctx, host, hs, async (remote) => {
    const facts = await step(hs, JoinStep.HostFacts, () => remote.facts());
    // A pool with spec.activeDirectory decides the hostname (and so the node name) first, and
    // refuses what cannot be joined before anything changes (active-directory-join.ts).
    const { ad, skipped } = domainJoinForBootstrap(
      poolActiveDirectory(ctx.pools?.list() ?? [], host),
      facts,
      hs.status.bootstrappedAt,
    );
    if (skipped) ctx.events.record(host, 'Warning', EventReason.DomainJoinSkipped, skipped);
    const hostname = ad
      ? checkActiveDirectory(hs, facts, ad, adHostnamePlan(host, facts, ad))
      : facts.hostname;
    refuseTakenName(ctx, host, hs, host.spec.nodeName ?? hostname.toLowerCase(), facts);
    const nodeName = acceptFacts(host, hs, facts, loaded, hostname);
    if (
      ad &&
      (await ensureDomainJoined(ctx, host, hs, remote, facts, ad, hostname)) === 'restarting'
    )
      return 'restarting';
    if ((await ensureContainersFeature(ctx, host, hs, remote, facts)) === 'restarting')
      return 'restarting';
    await clearStaleNode(ctx, host, hs, remote, nodeName);
    const token = await ensureBootstrapToken(
      ctx.kc,
      { uid: host.metadata.uid!, namespace: host.metadata.namespace!, name: host.metadata.name },
      ctx.config().hosts.bootstrapTokenTtlMinutes * 60_000,
    );
    hs.status.bootstrapTokenId = token.id;
    // The node name must be on record before the kubelet asks for a certificate with it.
    await writeHostStatus(ctx.kc, host, hs.status);
    await step(hs, JoinStep.PublishManifest, () => ctx.publish(loaded.manifest));
    // C:\k is locked down before anything lands, the config (with the token) included.
    await step(hs, JoinStep.CopyPayload, () => copyOperatorFiles(remote, loaded));
    const config = bootstrapConfig(ctx, host, hs, nodeName, token.token, loaded);
    await step(hs, JoinStep.CopyConfig, () =>
      remote.upload(hostPaths.bootstrapConfig, Buffer.from(JSON.stringify(config))),
    );
    // The agent pulls with bootstrap.json's token, so the config goes first.
    const delivery = await step(hs, JoinStep.CopyPayload, () =>
      deliverRest(ctx.events, host, remote, loaded),
    );
    const result = await step(hs, JoinStep.AgentBootstrap, () => remote.agent(['bootstrap']));
    hs.status.bootstrappedAt = apiTime();
    hs.set(
      ConditionType.Bootstrapped,
      'True',
      ConditionReason.AgentBootstrapped,
      `Services ${String(result.version)} configured; started ${JSON.stringify(result.started)}; ${deliveryText(delivery)}`,
    );
    hs.set(ConditionType.Degraded, 'False', ConditionReason.AsExpected, '');
    delete hs.status.lastError;
    ctx.events.record(
      host,
      'Normal',
      EventReason.Bootstrapped,
      `winfleet agent configured services ${loaded.manifest.version} on ${host.spec.address}; waiting for Node ${nodeName}`,
    );
    return 'bootstrapped';
  });
}

/**
 * Refuses a node name another WindowsHost holds (WF_HOST_NODE_NAME_TAKEN) or whose Node is
 * not this host's (WF_HOST_NODE_NOT_OWNED), before the name goes on record. The hostname is
 * recorded, so the claim shows.
 * @package
 */
export function refuseTakenName(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  name: string,
  facts: HostFacts,
): void {
  const refusal = nameRefusalFromCaches(ctx, host, name);
  if (!refusal) return;
  hs.status.hostname = facts.hostname;
  hs.set(ConditionType.NodeRegistered, 'False', refusal.reason, refusal.message);
  // Ready, Degraded and the Warning Event come with the error (join-failure.ts).
  const code =
    refusal.reason === ConditionReason.NodeNameTaken
      ? 'WF_HOST_NODE_NAME_TAKEN'
      : 'WF_HOST_NODE_NOT_OWNED';
  throw new WinfleetError(code, refusal.message);
}

/**
 * Records the host's facts and returns its node name; refuses a build older than 2019
 * (WF_HOST_UNSUPPORTED), a host whose name no longer matches its node
 * (WF_HOST_NODE_NAME_CHANGED) and one without room for the payload (WF_HOST_DISK_FULL, which
 * heals when space is freed).
 * @package
 */
export function acceptFacts(
  host: WindowsHost,
  hs: HostStatus,
  facts: HostFacts,
  loaded: LoadedPayload,
  /** The hostname the host joins with: its own, or the one an AD join renames it to. */
  hostname: string = facts.hostname,
): string {
  const { osVersion } = facts;
  // The node's address first (node-address.ts): bootstrapConfig gives it to the kubelet.
  const { address } = sshHostSpec(host);
  const nodeIP = nodeAddress(address, facts) ?? address;
  // Pinned at the first join: the node's address and name only, never the host's other
  // addresses (HNS's NAT adapter, APIPA), which the kubelet never serves on. A host that joined
  // before pinning keeps the report before this one. Only the admin's
  // allow-serving-addresses annotation changes it afterwards.
  hs.status.servingAddresses ??= joinServingAddresses(
    hs.status.addresses ?? [nodeIP],
    hs.status.hostname ?? hostname,
  );
  hs.status.hostname = facts.hostname;
  hs.status.windowsBuild = `${osVersion.major}.${osVersion.minor}.${osVersion.build}`;
  hs.status.windowsVersion = `${hs.status.windowsBuild}.${osVersion.ubr}`;
  hs.status.addresses = [nodeIP, ...facts.addresses.filter((a) => a !== nodeIP)];
  if (osVersion.build < minimumBuild) {
    const message = `${osVersion.productName} (build ${osVersion.build}) is older than Windows Server 2019 (${minimumBuild}); winfleet supports 2019, 2022 and 2025`;
    hs.set(ConditionType.Degraded, 'True', ConditionReason.UnsupportedWindows, message);
    throw new WinfleetError('WF_HOST_UNSUPPORTED', message);
  }
  const nodeName = host.spec.nodeName ?? hostname.toLowerCase();
  if (hs.status.nodeName && hs.status.nodeName !== nodeName) {
    const message = `The host now calls itself ${nodeName}, but it joined as ${hs.status.nodeName}; set spec.nodeName: ${hs.status.nodeName} to keep the node, or delete the WindowsHost and add it again`;
    hs.set(ConditionType.Degraded, 'True', ConditionReason.NodeNameChanged, message);
    throw new WinfleetError('WF_HOST_NODE_NAME_CHANGED', message);
  }
  hs.status.nodeName = nodeName;
  // Room for the payload twice over (the copy, then the installed files) plus 1 GiB.
  const needBytes = loaded.totalBytes * 2 + 2 ** 30;
  if (facts.freeBytes < needBytes) {
    const message = `Only ${facts.freeBytes} bytes are free on C: of ${host.spec.address}; winfleet needs ${needBytes} (the payload twice and 1 GiB); free some space`;
    hs.set(ConditionType.Degraded, 'True', ConditionReason.DiskFull, message);
    hs.error(JoinStep.HostFacts, message);
    throw new WinfleetError('WF_HOST_DISK_FULL', message, {
      details: { freeBytes: facts.freeBytes, needBytes },
    });
  }
  return nodeName;
}

/**
 * The host's spec.labels a kubelet may set on its own Node (node-labels.ts); the others (a
 * WindowsHost stored before the CRD refused them) are left off with a Warning Event, rather
 * than failing the kubelet's registration.
 */
function nodeLabelsOf(deps: HostControllerDeps, host: WindowsHost): Record<string, string> {
  const { labels, refused } = allowedNodeLabels(host.spec.labels);
  if (refused.length > 0) {
    deps.events.record(
      host,
      'Warning',
      EventReason.NodeLabelsRefused,
      `spec.labels left off the Node: ${refused.join('; ')}`,
    );
  }
  return labels;
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
    nodeIP: hs.status.addresses?.[0] ?? sshHostSpec(host).address,
    hostname: hs.status.hostname ?? nodeName,
    apiServer: config.hosts.apiServer ?? deps.cluster.apiServer,
    clusterDNS: config.hosts.clusterDNS,
    clusterDomain: config.hosts.clusterDomain,
    serviceCIDR: config.hosts.serviceCIDR,
    podCIDR: config.hosts.podCIDR,
    labels: {
      [managedNodeLabel]: 'true',
      ...(host.spec.pool ? { 'winfleet.io/pool': host.spec.pool } : {}),
      // The pool, not spec.labels, decides the Hyper-V label (pool-isolation.ts).
      ...withPoolIsolation(nodeLabelsOf(deps, host), deps.pools?.list() ?? [], host),
    },
    taints: [
      { key: windowsTaint.key, value: windowsTaint.value, effect: windowsTaint.effect },
      ...(host.spec.taints ?? []),
      // No pods before the pool's images: the kubelet registers the Node with the pre-pull
      // taint (NodeRestriction lets a node set taints only then); the operator lifts it once
      // the agent's pulls ended or the wait passed (pre-pull-node.ts).
      ...(poolPrePull(deps.pools?.list() ?? [], host) ? [{ ...prePullTaint }] : []),
    ],
    kubelet: config.hosts.kubelet,
    operatorNamespace: deps.operatorNamespace,
    checkIntervalSeconds: config.hosts.agentCheckIntervalSeconds,
    agentHealth: config.hosts.agentHealth,
    caCertificate: deps.cluster.caCertificate,
    bootstrapToken: token,
    manifest: loaded.manifest,
  };
}
