/**
 * `winfleet-agent join`: a host joins the cluster on its own, with only what a join command
 * carries (join-flags.ts), as kubeadm's `join` does:
 * 1. discovery: cluster-info read without trust, verified with the token and pinned by the CA
 *    hash, read again through the pinned CA (join/discovery.ts). A mismatch ends the join
 *    there: nothing is written but join-status.json;
 * 2. with the token and the pinned CA only: winfleet-join, the services manifest it names and
 *    the pull Secret (join-reads.ts);
 * 3. the payload pulled (join-payload.ts), retried with backoff while the registry cannot be
 *    reached;
 * 3b. with `--instance-identity aws`: the EC2 instance identity read from IMDS and filed for the
 *    approver (join-identity.ts); the node is named for the instance unless --node-name says;
 * 4. bootstrap.json written as the operator writes it for SSH-joined hosts (node name: the flag
 *    or the host name lower-cased; node IP by the operator's rule, node-address.ts), then the
 *    existing `bootstrap`: containerd and the kubelet (whose TLS bootstrap uses the token), the
 *    services, the agent service.
 * Each phase and each retry is printed and written to join-status.json (join-status.ts).
 */

import { managedNodeLabel } from '../api/node-annotations.ts';
import { prePullTaint } from '../api/pre-pull.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { usableAddresses } from '../hostaccess/node-address.ts';
import type { TrustedClusterInfo } from '../join/cluster-info.ts';
import { discoverCluster } from '../join/discovery.ts';
import { rfc1123Label } from '../join/join-command-values.ts';
import { type BackoffPolicy, retryWithBackoff } from '../join/retry-with-backoff.ts';
import { type BootstrapConfig, parseBootstrapConfig, paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { bootstrap, step } from './bootstrap.ts';
import type { JoinFlags } from './join-flags.ts';
import { presentInstanceIdentity, readInstanceIdentity } from './join-identity.ts';
import { pullPayload } from './join-payload.ts';
import { type JoinMaterials, joinKubeConfig, readJoinMaterials } from './join-reads.ts';
import { type JoinPhase, writeJoinStatus } from './join-status.ts';

/** How long a join waits and what it pulls with; tests and the simulated hosts shorten waits. */

const defaultPayloadBackoff: BackoffPolicy = {
  initialDelayMs: 2000,
  maxDelayMs: 60_000,
  maxAttempts: 60,
  maxElapsedMs: 30 * 60_000,
};

function reason(error: unknown): string {
  return (error as Error)?.message ?? String(error);
}

/** The node's name: the flag, or the host name lower-cased; refused unless an RFC 1123 label. */
async function nodeNameOf(context: AgentContext, flags: JoinFlags): Promise<string> {
  if (flags.nodeName !== undefined) return flags.nodeName;
  const hostname = await context.hostOS.hostname();
  const name = hostname.toLowerCase();
  if (!rfc1123Label.test(name) || name.length > 63) {
    throw new WinfleetError(
      'WF_FLAG_INVALID',
      `This host's name "${hostname}" lower-cased is not a valid node name (an RFC 1123 label: lower-case letters, digits and hyphens); give one with --node-name`,
    );
  }
  return name;
}

/** The node's address by the operator's rule: the default route's, never APIPA or HNS first. */
async function nodeIPOf(context: AgentContext): Promise<string> {
  const network = await context.hostOS.ipv4Network();
  const [address] = usableAddresses(network);
  if (address === undefined) {
    throw new WinfleetError(
      'WF_TERMINAL',
      `This host has no usable IPv4 address (only ${network.ipAddresses.map((a) => `${a.address} on ${a.interfaceAlias}`).join(', ') || 'none'}): loopback, link-local (APIPA) and unassigned addresses cannot be a node's; check the network adapter`,
    );
  }
  return address;
}

/** bootstrap.json for this host, as the operator writes it for one it joins over SSH. */
export function joinBootstrapConfig(
  flags: JoinFlags,
  trusted: TrustedClusterInfo,
  materials: JoinMaterials,
  identity: { nodeName: string; nodeIP: string; hostname: string },
): BootstrapConfig {
  const { joinInfo } = materials;
  const config: BootstrapConfig = {
    ...identity,
    apiServer: joinInfo.apiServer,
    clusterDNS: joinInfo.clusterDNS,
    clusterDomain: joinInfo.clusterDomain,
    serviceCIDR: joinInfo.serviceCIDR,
    podCIDR: joinInfo.podCIDR,
    labels: { [managedNodeLabel]: 'true' },
    // The pool's pre-pull taint, when its join command says so: a node may set taints on
    // itself only when it registers (NodeRestriction); the operator lifts it (pre-pull-node.ts).
    taints: [{ ...joinInfo.windowsTaint }, ...(flags.prePullTaint ? [{ ...prePullTaint }] : [])],
    kubelet: joinInfo.kubelet,
    operatorNamespace: flags.namespace,
    checkIntervalSeconds: joinInfo.checkIntervalSeconds,
    ...(joinInfo.agentHealth ? { agentHealth: joinInfo.agentHealth } : {}),
    caCertificate: trusted.caPem,
    bootstrapToken: `${flags.token.id}.${flags.token.secret}`,
    manifest: materials.manifest,
    // Its upgrades come from the registry too: the run loop pulls (manifest-payload.ts).
    pullsPayload: true,
  };
  // The agent's own reader checks it as it will read it back.
  parseBootstrapConfig(JSON.stringify(config));
  return config;
}

/**
 * The Containers feature must be installed before a host joins on its own: without it the
 * kubelet registers a node on which no pod ever starts (hcsshim: "The specified module could
 * not be found"), and the join token's use is spent. The SSH join installs it and restarts the
 * host (containers-feature.ts in the host controller); a host joining by command has no one to
 * run it again after a restart, so it stops here, before discovery, saying what to run.
 */
async function requireContainersFeature(context: AgentContext): Promise<void> {
  const state = await context.hostOS.containersFeature();
  if (state === 'Installed') return;
  const fix =
    state === 'InstallPending' || state === 'UninstallPending'
      ? 'restart the host to finish the pending change (Restart-Computer), then run the join command again'
      : state === 'Available'
        ? 'run Install-WindowsFeature -Name Containers -Restart, then run the join command again'
        : 'this is not a Windows Server with the Containers feature (Get-WindowsFeature -Name Containers); use Windows Server 2019, 2022 or 2025, or restore the feature from installation media';
  throw new WinfleetError(
    'WF_HOST_CONTAINERS_MISSING',
    `The Windows Containers feature is ${state}, not Installed, so no pod could run on this node; nothing was changed and the join token was not used: ${fix}`,
  );
}

/** One join as it runs: its inputs and the phase reports name. */
interface JoinRun {
  context: AgentContext;
  flags: JoinFlags;
  host: AgentContext['hostOS'];
  tuning: NonNullable<AgentContext['join']>;
  signal: AbortSignal | undefined;
  phase: JoinPhase;
}

/** Prints a message (unless failed: the command prints that) and writes it to join-status.json. */
async function report(run: JoinRun, message: string, attempt = 1): Promise<void> {
  // A failure is printed once, by the command (run-agent.ts); the file gets it too.
  if (run.phase !== 'failed') run.context.stderr(`winfleet-agent join: ${message}\n`);
  await writeJoinStatus(run.host, { phase: run.phase, message, attempt });
}

/** The onRetry of a retried phase: reports the failure, the attempt and the wait. */
function retrying(run: JoinRun, what: string) {
  return async ({
    error,
    attempt,
    delayMs,
  }: {
    error: unknown;
    attempt: number;
    delayMs: number;
  }) =>
    report(
      run,
      `${what} failed (attempt ${attempt}): ${reason(error)}; retrying in ${Math.round(delayMs / 1000)} s`,
      attempt + 1,
    );
}

/** Runs the join; resolves with what bootstrap reports plus the node's identity. */
export async function join(
  context: AgentContext,
  flags: JoinFlags,
): Promise<Record<string, unknown>> {
  const run: JoinRun = {
    context,
    flags,
    host: context.hostOS,
    tuning: context.join ?? {},
    signal: context.signal,
    phase: 'discovering',
  };
  try {
    // Before anything the join spends (the token's use, at the kubelet's CSR) or writes.
    await step('containers-feature', () => requireContainersFeature(context));
    const trusted = await discover(run);
    const kc = joinKubeConfig(flags.apiServer, trusted.caPem, flags.token);
    const materials = await readMaterials(run, kc);
    const identity = await nodeIdentity(run, kc);
    await pullJoinPayload(run, materials);
    run.phase = 'bootstrapping';
    const config = await step('write-bootstrap-config', async () => {
      const value = joinBootstrapConfig(flags, trusted, materials, identity);
      await run.host.writeFile(paths.bootstrapConfig, `${JSON.stringify(value, null, 2)}\n`);
      return value;
    });
    await report(
      run,
      `configuring this host as node ${config.nodeName} (${config.nodeIP}); the kubelet joins with the token`,
    );
    const result = await bootstrap(context);
    run.phase = 'joined';
    await report(run, `joined: node ${config.nodeName} configured; the kubelet registers it`);
    return { ...result, nodeIP: config.nodeIP, apiServer: config.apiServer };
  } catch (error) {
    const failedIn = run.phase;
    run.phase = 'failed';
    await report(run, `failed while ${failedIn}: ${reason(error)}`).catch(() => {});
    throw error;
  }
}

/** Phase 1: cluster-info read, verified with the token and pinned by the CA hash. */
async function discover(run: JoinRun): Promise<TrustedClusterInfo> {
  const { flags, tuning, signal } = run;
  await report(run, `reading cluster-info from ${flags.apiServer} to pin the cluster CA`);
  return step('discover', () =>
    discoverCluster({
      apiServer: flags.apiServer,
      token: flags.token,
      caCertHash: flags.caCertHash,
      ...(tuning.discoveryBackoff ? { backoff: tuning.discoveryBackoff } : {}),
      ...(signal ? { signal } : {}),
      onRetry: retrying(run, 'Reading cluster-info'),
    }),
  );
}

/** Phase 2: winfleet-join, its services manifest and the pull Secret, with the token. */
async function readMaterials(run: JoinRun, kc: ReturnType<typeof joinKubeConfig>) {
  const { flags, tuning, signal } = run;
  run.phase = 'reading-join-info';
  await report(
    run,
    `cluster CA pinned (${flags.caCertHash}); reading winfleet-join in ${flags.namespace}`,
  );
  return step('read-join-info', () =>
    retryWithBackoff(() => readJoinMaterials(kc, flags.namespace), {
      initialDelayMs: 1000,
      maxDelayMs: 10_000,
      maxElapsedMs: 5 * 60_000,
      ...tuning.discoveryBackoff,
      ...(signal ? { signal } : {}),
      onRetry: retrying(run, 'Reading winfleet-join'),
    }),
  );
}

/** The node's name, address and host name; with instance identity, the instance presented. */
async function nodeIdentity(
  run: JoinRun,
  kc: ReturnType<typeof joinKubeConfig>,
): Promise<{ nodeName: string; nodeIP: string; hostname: string }> {
  const { context, flags, host } = run;
  const instance = flags.instanceIdentity
    ? await step('instance-identity', () => readInstanceIdentity(host))
    : undefined;
  const identity = await step('node-identity', async () => ({
    // With instance identity the node is named for the instance (the approver requires it).
    nodeName:
      flags.nodeName === undefined && instance
        ? instance.facts.instanceId
        : await nodeNameOf(context, flags),
    nodeIP: await nodeIPOf(context),
    hostname: await host.hostname(),
  }));
  if (instance) {
    await report(
      run,
      `presenting instance ${instance.facts.instanceId} (account ${instance.facts.accountId}, ${instance.facts.region}) for node ${identity.nodeName}`,
    );
    await step('instance-identity', () =>
      presentInstanceIdentity(kc, identity.nodeName, instance.identity),
    );
  }
  return identity;
}

/** Phase 3: the payload pulled, retried with backoff while the registry cannot be reached. */
async function pullJoinPayload(run: JoinRun, materials: JoinMaterials): Promise<void> {
  const { host, tuning, signal } = run;
  run.phase = 'pulling-payload';
  const source = materials.joinInfo.payload;
  await report(
    run,
    `pulling payload ${materials.manifest.version}${source ? ` from ${source.repository}@${source.digest}` : ''}`,
  );
  const pull = tuning.pullPayload ?? pullPayload;
  await step('pull-payload', () =>
    retryWithBackoff(
      () =>
        pull(host, materials.manifest, source, materials.pullCredentials, {
          ...(signal ? { signal } : {}),
        }),
      {
        ...defaultPayloadBackoff,
        ...tuning.payloadBackoff,
        ...(signal ? { signal } : {}),
        onRetry: retrying(run, 'Pulling the payload'),
      },
    ),
  );
}
