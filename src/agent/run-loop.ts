/**
 * `winfleet-agent run`: the agent as a Windows service. Every check (each interval, and when
 * the operator changes the node's desired services version) it fetches a new manifest if one
 * is wanted (only one the operator published: published-manifest.ts), converges the services
 * (restarting any that died), removes the bootstrap files once the node's own credentials
 * work, keeps the CNI config in line with the Node's pod CIDR (cni-config.ts), reports whether
 * the host can run gMSA pods (gmsa-readiness.ts), and — only once the node is Ready — records
 * the applied version on its Node. It acts with the node's own credentials.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import type { DeconfigureReport } from '../api/deconfigure-report.ts';
import { formatDeconfigureReport } from '../api/deconfigure-report.ts';
import {
  deconfiguredAnnotation,
  deconfigureRequestAnnotation,
  desiredServicesVersionAnnotation,
  servicesVersionAnnotation,
} from '../api/node-annotations.ts';
import { commandAnnotations, signatureAnnotation } from '../api/node-commands.ts';
import { hasCode, WinfleetError } from '../errors/catalog.ts';
import { agentEnvironmentVariables } from '../hostsettings/node-host-settings.ts';
import { httpStatus, isNotFound } from '../kube/client.ts';
import { quietWatch, watchTimeoutSeconds } from '../kube/watch.ts';
import { isForbiddenStatus, isNotFoundStatus } from '../net/http-status.ts';
import { defaultNodeNetwork } from '../servicesmanifest/node-network.ts';
import {
  parseServicesManifest,
  type ServicesManifest,
  servicesUsing,
} from '../servicesmanifest/services-manifest.ts';
import { type AgentConfig, parseAgentConfig, paths, winfleetDir } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { readState, writeState } from './agent-state.ts';
import { syncBridgeEndpointAddress } from './bridge-endpoint.ts';
import { syncCniConfig } from './cni-config.ts';
import { commandView, operatorKeyReader } from './command-check.ts';
import {
  agentServiceName,
  convergeServices,
  installPayloadFiles,
  servicesRunning,
} from './converge.ts';
import { deconfigureRequest, deconfigureSelf, readDeconfigureRecord } from './deconfigure-self.ts';
import { flanneldHoldBack } from './flanneld-access.ts';
import { syncGmsaReadiness } from './gmsa-readiness.ts';
import { applyHostSettings } from './host-settings.ts';
import { ensureKubeProxyCredentials } from './kube-proxy-credentials.ts';
import { syncEncapsulationRule } from './kubelet-firewall.ts';
import { repairLocally } from './local-repair.ts';
import { pullManifestPayload } from './manifest-payload.ts';
import { nodeKubeConfig } from './node-client.ts';
import { hyperVLabelled, nodeVariableValues } from './node-files.ts';
import {
  apiServerDate,
  checkNodeHealth,
  publishedProblems,
  servicesNotToRestart,
} from './node-health.ts';
import { syncPrePull } from './pre-pull.ts';
import { fetchPublishedManifest } from './published-manifest.ts';
import { removeStaleCopiesOf } from './replace-executable.ts';
import { syncSourceVip } from './source-vip.ts';
import { stopOnStdinEofVariable } from './windows/service-shim.ts';
import { installRunning, syncWindowsUpdates, windowsUpdateWatchKey } from './windows-updates.ts';

const manifestPath = `${winfleetDir}\\services.json`;
/** The run loop's exit code when a new agent executable replaced it (the SCM restarts it). */
export const agentReplacedExitCode = 3;

async function loadLocalManifest(context: AgentContext): Promise<ServicesManifest> {
  const data = await context.hostOS.readFile(manifestPath);
  if (!data) {
    throw new WinfleetError(
      'WF_AGENT_FILE_MISSING',
      `${manifestPath} is missing; run bootstrap first`,
    );
  }
  return parseServicesManifest(data.toString('utf8'));
}

function isReady(node: k8s.V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** The last desired version refused, per agent, so that a refusal is logged once. */
const refusedVersions = new WeakMap<AgentContext, string>();

/**
 * The manifest the Node's annotation names, when the operator published it; otherwise logs
 * why once and returns undefined, and the agent keeps its current manifest and services.
 */
async function acceptedManifest(
  context: AgentContext,
  core: k8s.CoreV1Api,
  config: AgentConfig,
  desired: string,
): Promise<ServicesManifest | undefined> {
  try {
    const next = await fetchPublishedManifest(core, config.operatorNamespace, desired);
    refusedVersions.delete(context);
    return next;
  } catch (error) {
    // 403: nodes may read only the published ConfigMaps; 404: there is no such ConfigMap.
    const status = httpStatus(error);
    const refused =
      hasCode(error, 'WF_MANIFEST_UNPUBLISHED') ||
      isForbiddenStatus(status) ||
      isNotFoundStatus(status);
    if (!refused && !hasCode(error, 'WF_MANIFEST_INVALID')) throw error;
    if (refusedVersions.get(context) !== desired) {
      refusedVersions.set(context, desired);
      const why =
        refused && !hasCode(error, 'WF_MANIFEST_UNPUBLISHED')
          ? `Refusing services manifest ${desired}, named by this Node's desired-version annotation: this node cannot read its ConfigMap (HTTP ${status}), so the operator did not publish it; no service was changed`
          : (error as Error).message;
      context.stderr(`${why}\n`);
    }
    return undefined;
  }
}

/** Removes bootstrap.json (with its token) and the bootstrap kubeconfig, if still there. */
async function removeBootstrapFiles(host: AgentContext['hostOS']): Promise<void> {
  for (const path of [paths.bootstrapConfig, paths.bootstrapKubeconfig])
    if (await host.readFile(path)) await host.removePath(path);
}

/** What one pass of the loop reads and carries from step to step. */
interface Pass {
  context: AgentContext;
  config: AgentConfig;
  host: AgentContext['hostOS'];
  /** The node's own kubeconfig, when its credentials exist. */
  kc: k8s.KubeConfig | undefined;
  core: k8s.CoreV1Api | undefined;
  /** The agent's Node as the operator's signed commands leave it (undefined: not read). */
  node: k8s.V1Node | undefined;
  state: Awaited<ReturnType<typeof readState>>;
  /** The services manifest the pass applies (a newly accepted one replaces it). */
  manifest: ServicesManifest;
  /** Services held back this pass (their credentials or the source VIP do not exist yet). */
  heldBack: ReadonlySet<string>;
  /** kube-proxy's source VIP this pass (an overlay's): problem detection never calls its endpoint stale. */
  sourceVip: string | undefined;
}

/**
 * One pass of the loop. Exported for tests. `wake` is called when a Windows Update search or
 * install that outlasted the pass ends (windows-updates.ts), so the loop looks again at once.
 * @package
 */
export async function checkOnce(
  context: AgentContext,
  config: AgentConfig,
  wake?: () => void,
): Promise<string> {
  const host = context.hostOS;
  const manifest = await loadLocalManifest(context);
  const state = await readState(host);
  const kc = await nodeKubeConfig(host).catch(() => undefined);
  let node: k8s.V1Node | undefined;
  const core = kc?.makeApiClient(k8s.CoreV1Api);
  if (core) node = await core.readNode({ name: config.nodeName }).catch(() => undefined);
  // Only the operator's signed commands stay in the view the rest of the pass acts on.
  if (core && node)
    node = await commandView(context, operatorKeyReader(core, config), config, node);
  const desired = node?.metadata?.annotations?.[desiredServicesVersionAnnotation];
  // Windows Update and the rollout's reboot requests run even when a step before them failed:
  // a reboot the rollout asks for may be what mends a host whose services do not start.
  const pass: Pass = {
    context,
    config,
    host,
    kc,
    core,
    node,
    state,
    manifest,
    heldBack: new Set(),
    sourceVip: undefined,
  };
  try {
    const restart = new Set<string>();
    if (core && desired && desired !== manifest.version)
      await applyDesiredManifest(pass, core, desired, restart);
    await syncNodeNetwork(pass, restart);
    await convergeAndRecord(pass, restart);
  } finally {
    // Problem detection runs even when a step failed: a failing host is what it is for.
    if (core && node && kc) await checkHealth(pass, core, node, kc);
    if (core && node) await reportReadinessAndUpdates(pass, core, node, wake);
    // The pool's images, once per boot and services version, in the background (pre-pull.ts).
    if (core && node) await startPrePull(pass, core, node, wake);
  }
  return pass.manifest.version;
}

/** Starts the pool's pre-pull when the Node's signed command asks for it; a failure is logged. */
async function startPrePull(
  pass: Pass,
  core: k8s.CoreV1Api,
  node: k8s.V1Node,
  wake: (() => void) | undefined,
): Promise<void> {
  const { context, config } = pass;
  await syncPrePull({
    context,
    nodeName: config.nodeName,
    core,
    node,
    servicesVersion: pass.manifest.version,
    ...(wake ? { wake } : {}),
  }).catch((error: unknown) => {
    context.stderr(`pre-pull failed: ${(error as Error).message}\n`);
  });
}

/** Takes the manifest the Node's annotation names, when published: its payload, then the manifest. */
async function applyDesiredManifest(
  pass: Pass,
  core: k8s.CoreV1Api,
  desired: string,
  restart: Set<string>,
): Promise<void> {
  const { context, config, host } = pass;
  const next = await acceptedManifest(context, core, config, desired);
  if (!next) return;
  // A host that pulls (it joined by command) takes the new payload from the registry.
  const pulled = config.pullsPayload
    ? await pullManifestPayload(host, core, config.operatorNamespace, next, {
        ...(context.signal ? { signal: context.signal } : {}),
      })
    : undefined;
  if (pulled) {
    context.stderr(
      `pulled ${pulled.downloaded.length} payload files (${pulled.bytes} bytes) for services manifest ${next.version}\n`,
    );
  }
  const changed = await installPayloadFiles(host, next, pass.state);
  for (const name of servicesRunning(next, changed)) restart.add(name);
  await host.writeFile(manifestPath, `${JSON.stringify(next, null, 2)}\n`);
  context.stderr(`applying services manifest ${next.version} (was ${pass.manifest.version})\n`);
  pass.manifest = next;
}

/**
 * The node's network side (bootstrap files, firewall rule, bridge endpoint, CNI config, source
 * VIP) and kube-proxy's and flanneld's credentials: sets what this pass holds back.
 */
async function syncNodeNetwork(pass: Pass, restart: Set<string>): Promise<void> {
  const { context, config, host, node, kc, manifest, state } = pass;
  // The node's own credentials work: the bootstrap token and its kubeconfig are no longer
  // needed (a re-bootstrap gets fresh ones from the operator).
  if (node) await removeBootstrapFiles(host);
  // The pod network follows the mode and the Node's spec.podCIDR (cni-config.ts).
  const network = manifest.network ?? defaultNodeNetwork;
  // A new manifest may bring another mode: its firewall rule follows (kubelet-firewall.ts).
  if (state.version !== manifest.version) await syncEncapsulationRule(host, network);
  // flannel-host-gw: the bridge endpoint's .2 kept from pods first (bridge-endpoint.ts).
  await syncBridgeEndpointAddress(context, node, network);
  if (node) await syncCniConfig(context, config, node, network);
  // kube-proxy's source VIP on an overlay (source-vip.ts).
  pass.sourceVip = await syncSourceVip(context, config, node, network);
  // kube-proxy's own certificate, asked for with the node's (kube-proxy-credentials.ts).
  const nodeClient = node ? kc : undefined;
  const proxy = await ensureKubeProxyCredentials(context, manifest, config.nodeName, nodeClient);
  for (const name of proxy.restart) restart.add(name);
  // A service whose arguments use {{sourceVip}} waits until it is reserved.
  pass.heldBack = pass.sourceVip
    ? proxy.holdBack
    : new Set([...proxy.holdBack, ...servicesUsing(manifest, 'sourceVip')]);
  // flanneld once this node may list Nodes (flanneld-access.ts).
  const flanneld = await flanneldHoldBack(context, manifest, nodeClient);
  if (flanneld.size > 0) pass.heldBack = new Set([...pass.heldBack, ...flanneld]);
}

/**
 * Host settings, the services converged, old executables removed, the applied version in the
 * state file and — on a Ready node — on the Node.
 */
async function convergeAndRecord(pass: Pass, restart: Set<string>): Promise<void> {
  const { context, config, host, core, node, manifest, state } = pass;
  // Trusted CAs, registry hosts, the WinHTTP proxy, the agent's own environment.
  const settings = await applyHostSettings(host, manifest, state, {
    agentService: true,
    machineEnvironment: state.version !== manifest.version,
    // The Node's label, which the operator keeps as the host's pool says (Hyper-V isolation).
    hyperV: node ? hyperVLabelled(node.metadata?.labels) : undefined,
  });
  for (const name of settings.restart) restart.add(name);
  const sourceVip = pass.sourceVip;
  await convergeServices(host, manifest, nodeVariableValues(config, { sourceVip }), state, {
    start: 'all',
    restart,
    holdBack: pass.heldBack,
    // Services in a restart loop are not restarted blindly (node-health.ts).
    doNotRestart: servicesNotToRestart(context),
  });
  // Old executables moved aside by an upgrade go once nothing runs them (replace-executable.ts).
  await removeStaleCopiesOf(host, [
    ...manifest.files.map((f) => f.path),
    paths.agentExe,
    paths.serviceExe,
  ]);
  state.version = manifest.version;
  await writeState(host, state);
  if (
    core &&
    node &&
    isReady(node) &&
    node.metadata?.annotations?.[servicesVersionAnnotation] !== manifest.version
  ) {
    await core.patchNode(
      {
        name: config.nodeName,
        body: { metadata: { annotations: { [servicesVersionAnnotation]: manifest.version } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }
}

/** Problem detection, then rung 1 of the remediation ladder; a failure is logged. */
async function checkHealth(
  pass: Pass,
  core: k8s.CoreV1Api,
  node: k8s.V1Node,
  kc: k8s.KubeConfig,
): Promise<void> {
  const { context, config, manifest } = pass;
  try {
    await checkNodeHealth(
      context,
      config,
      node,
      {
        patchConditions: async (conditions) => {
          await core.patchNodeStatus(
            { name: config.nodeName, body: { status: { conditions } } },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
          );
        },
        createEvent: async (event) => {
          await core.createNamespacedEvent({ namespace: 'default', body: event });
        },
        serverDate: () => apiServerDate(kc),
        // The pods on this node, as the Node authorizer lets a node list them.
        listNodePods: async () =>
          (
            await core.listPodForAllNamespaces({
              fieldSelector: `spec.nodeName=${config.nodeName}`,
            })
          ).items,
      },
      {
        heldBack: pass.heldBack,
        network: manifest.network ?? defaultNodeNetwork,
        sourceVip: pass.sourceVip,
      },
    );
    // Rung 1 of the remediation ladder: the agent's own repairs (local-repair.ts).
    await repairLocally(
      context,
      config,
      node,
      publishedProblems(context),
      manifest.network ?? defaultNodeNetwork,
    );
  } catch (error) {
    context.stderr(`health check failed: ${(error as Error).message}\n`);
  }
}

/** The gMSA readiness label (a failure logged), then Windows Update and reboot requests. */
async function reportReadinessAndUpdates(
  pass: Pass,
  core: k8s.CoreV1Api,
  node: k8s.V1Node,
  wake: (() => void) | undefined,
): Promise<void> {
  const { context, config } = pass;
  // Whether the host can run gMSA pods: a label and its reason on the Node.
  try {
    await syncGmsaReadiness(context, node, {
      patchMetadata: async (metadata) => {
        await core.patchNode(
          { name: config.nodeName, body: { metadata } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
      },
    });
  } catch (error) {
    context.stderr(`gMSA readiness report failed: ${(error as Error).message}\n`);
  }
  await syncWindowsUpdates(context, config, node, {
    ...(wake ? { wake } : {}),
    // Proxy variables only a reboot takes from the services (staleOwnEnvironment).
    rebootPendingBesides: () => environmentAwaitingReboot(context).length > 0,
    patchAnnotations: async (annotations) => {
      await core.patchNode(
        { name: config.nodeName, body: { metadata: { annotations } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
  });
}

/** A deconfigure recorded before agent.json went: tried every two seconds until it is done. */
async function finishDeconfigure(context: AgentContext, signal: AbortSignal): Promise<number> {
  while (!signal.aborted) {
    try {
      if ((await deconfigurePass(context, undefined)) === 'done') return 0;
    } catch (error) {
      context.stderr(`deconfiguring failed: ${(error as Error).message}\n`);
    }
    await sleep(2000, undefined, { signal }).catch(() => {});
  }
  return 0;
}

/** The SHA-256 of the agent and of its service shim, as installed (undefined when missing). */
async function ownExecutables(
  context: AgentContext,
): Promise<{ 'winfleet-agent'?: string; 'winfleet-service'?: string }> {
  const hash = (path: string) => context.hostOS.fileSha256(path).catch(() => undefined);
  return {
    'winfleet-agent': await hash(paths.agentExe),
    'winfleet-service': await hash(paths.serviceExe),
  };
}

/**
 * The proxy variables whose value in the agent's service configuration (applyHostSettings
 * writes the manifest's there) is not this process's: a process never reads its environment
 * block again, so the loop exits with agentReplacedExitCode and the recovery action starts the
 * agent with the service's environment. Only under winfleet-service.exe (which sets
 * WINFLEET_STOP_ON_STDIN_EOF=1): a run by hand never exits for its environment. Compared with
 * the service's configuration, not the manifest, so a host whose configuration could not be
 * written does not restart over and over for nothing.
 *
 * Once per configuration: the configuration a restart was for is recorded first, and a process
 * that still differs from that same configuration started with it. What differs then is a
 * variable the configuration no longer has, which the SCM took from the machine environment
 * services.exe read at boot (KB 821761: a LocalSystem service sees a machine-level change only
 * after a restart of the computer), and a service's Environment value cannot unset it. No
 * restart can take it away: the loop does not restart, and reports a pending reboot instead
 * (environmentAwaitingReboot), which the pool's rollout carries out.
 */
async function staleOwnEnvironment(
  context: AgentContext,
): Promise<{ restart: string[]; awaitingReboot: string[] }> {
  const none = { restart: [], awaitingReboot: [] };
  const env = context.env;
  if (env?.(stopOnStdinEofVariable) !== '1') return none;
  const configured = await context.hostOS
    .queryServiceEnvironment(agentServiceName)
    .catch(() => undefined);
  if (!configured) return none;
  const lookup = new Map(Object.entries(configured).map(([k, v]) => [k.toLowerCase(), v]));
  const wanted = (name: string) => lookup.get(name.toLowerCase()) ?? '';
  const stale = agentEnvironmentVariables.filter((name) => wanted(name) !== (env(name) ?? ''));
  if (stale.length === 0) return none;
  const key = JSON.stringify(agentEnvironmentVariables.map(wanted));
  const restartedFor = (
    await context.hostOS.readFile(environmentRestartPath).catch(() => undefined)
  )
    ?.toString('utf8')
    .trim();
  if (restartedFor !== key) {
    await context.hostOS.writeFile(environmentRestartPath, `${key}\n`);
    return { restart: stale, awaitingReboot: [] };
  }
  return { restart: [], awaitingReboot: stale.filter((name) => wanted(name) === '') };
}

/** Where the loop records the service configuration it last restarted for. */
const environmentRestartPath = `${winfleetDir}\\agent-environment-restart.json`;

/** Per agent: the variables only a reboot can take from the services (staleOwnEnvironment). */
const awaitingReboot = new WeakMap<AgentContext, string[]>();

/** The variables the services keep from the boot-time machine environment until a reboot. */
export function environmentAwaitingReboot(context: AgentContext): string[] {
  return awaitingReboot.get(context) ?? [];
}

/**
 * Which of the agent and its shim the operator replaced since the loop started: the loop then
 * exits with agentReplacedExitCode, the shim exits with it, and the service's recovery action
 * starts the new ones. A file that was missing at the start (a run by hand) does not count.
 */
function replacedExecutables(
  before: Awaited<ReturnType<typeof ownExecutables>>,
  now: Awaited<ReturnType<typeof ownExecutables>>,
): string[] {
  return (['winfleet-agent', 'winfleet-service'] as const).filter(
    (name) => before[name] && now[name] && before[name] !== now[name],
  );
}

/**
 * Makes `stop` abort when `input` (the process's standard input) ends, closes or fails, if
 * `env` says so: winfleet-service.exe sets WINFLEET_STOP_ON_STDIN_EOF=1 for its child and
 * closes the child's standard input to ask it to stop. Without the variable nothing watches
 * the input, so an interactive run or one with stdin at NUL is not affected. Returns whether it
 * watches; throws on a value other than 1 or empty.
 * @package
 */
export function stopWhenInputEnds(
  input: Pick<NodeJS.ReadableStream, 'on' | 'resume'>,
  env: Record<string, string | undefined>,
  stop: AbortController,
): boolean {
  const value = env[stopOnStdinEofVariable];
  if (value === undefined || value === '') return false;
  if (value !== '1') {
    throw new WinfleetError(
      'WF_AGENT_CONFIG_INVALID',
      `${stopOnStdinEofVariable} is "${value}"; set it to 1 to stop when the standard input closes (winfleet-service.exe does), or leave it unset`,
    );
  }
  for (const event of ['end', 'close', 'error']) input.on(event, () => stop.abort());
  input.resume();
  return true;
}

/** The last malformed deconfigure request logged, per agent, so that it is logged once. */
const refusedRequests = new WeakMap<AgentContext, string>();

/**
 * Deconfigures this host when the operator asked for it on the Node (a Pull-mode host's
 * removal), or goes on with one under way (deconfigure-self.ts): 'done' once it is, 'none'
 * when nothing is asked. The report is written on the Node while the node's credentials exist.
 * @package
 */
export async function deconfigurePass(
  context: AgentContext,
  config: AgentConfig | undefined,
): Promise<'done' | 'none'> {
  const host = context.hostOS;
  const recorded = await readDeconfigureRecord(host);
  const name = recorded?.nodeName ?? config?.nodeName;
  if (!name) return 'none';
  const kc = await nodeKubeConfig(host).catch(() => undefined);
  const core = kc?.makeApiClient(k8s.CoreV1Api);
  let start: { request: string; nodeName: string } | undefined;
  if (!recorded) {
    if (!core || !config) return 'none';
    const raw = await core.readNode({ name }).catch(() => undefined);
    // A request the operator did not sign for this Node, or an SSH host's, is not one.
    const node = raw
      ? await commandView(context, operatorKeyReader(core, config), config, raw)
      : undefined;
    const request = deconfigureRequest(node, (value) => {
      if (refusedRequests.get(context) === value) return;
      refusedRequests.set(context, value);
      context.stderr(
        `Ignoring ${deconfigureRequestAnnotation}="${value}" on this Node: not a request token the operator writes\n`,
      );
    });
    if (!request) return 'none';
    start = { request, nodeName: name };
  }
  const report = core
    ? async (result: DeconfigureReport) => {
        try {
          await core.patchNode(
            {
              name,
              body: {
                metadata: {
                  annotations: { [deconfiguredAnnotation]: formatDeconfigureReport(result) },
                },
              },
            },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          );
        } catch (error) {
          // The Node is gone (deleted by hand): nobody is left to read the report.
          if (!isNotFound(error)) throw error;
        }
      }
    : undefined;
  await deconfigureSelf(context, start, report);
  return 'done';
}

/** What the run loop keeps between passes: its watch, its waker and what the watch last saw. */
export interface LoopState {
  context: AgentContext;
  config: AgentConfig;
  signal: AbortSignal;
  watch: AbortController | undefined;
  /** Ends the current wait (undefined: not waiting yet). */
  wake: (() => void) | undefined;
  /**
   * A watch event that arrives while a check runs must not be lost: it is remembered, and the
   * next wait ends at once (the check had read the Node before the change).
   */
  pending: boolean;
  /** The Node's fields last seen by the watch (a change of any starts a pass). */
  last: {
    desired: string | undefined;
    ready: boolean | undefined;
    podCIDR: string | undefined;
    updateKey: string | undefined;
  };
}

/** Asks for a pass now: remembered when a check runs, and the wait ends. */
function poke(loop: LoopState): void {
  loop.pending = true;
  loop.wake?.();
}

/** Starts the watch of the agent's own Node, once the node's credentials exist. */
async function startWatch(loop: LoopState): Promise<void> {
  const kc = await nodeKubeConfig(loop.context.hostOS).catch(() => undefined);
  if (!kc || loop.signal.aborted) return;
  try {
    loop.watch = await quietWatch(kc).watch(
      '/api/v1/nodes',
      {
        fieldSelector: `metadata.name=${loop.config.nodeName}`,
        timeoutSeconds: watchTimeoutSeconds,
      },
      (_type: string, node: k8s.V1Node) => onNodeEvent(loop, node),
      () => {
        // The watch ended (the API server closes watches now and then): start it again now,
        // not after a whole check interval in which changes would go unseen.
        loop.watch = undefined;
        loop.wake?.();
      },
    );
  } catch {
    loop.watch = undefined;
  }
}

/** The Node's fields whose change starts a pass (compared field by field). Exported for tests. */
export function watchedFields(node: k8s.V1Node): LoopState['last'] {
  // Look again when the operator wants another version, when the node turns Ready
  // (the applied version is recorded only on a Ready node), or when its pod CIDR comes
  // or changes (the CNI config follows it).
  const desired = node.metadata?.annotations?.[desiredServicesVersionAnnotation];
  const ready = isReady(node);
  const podCIDR = node.spec?.podCIDR;
  // And when the rollout asks for updates or a reboot, or the node rebooted, or its
  // removal asks the agent to deconfigure the host.
  // (And when the operator signs a command again.)
  const updateKey = JSON.stringify([
    windowsUpdateWatchKey(node),
    ...commandAnnotations.map((a) => [
      node.metadata?.annotations?.[a] ?? null,
      node.metadata?.annotations?.[signatureAnnotation(a)] ?? null,
    ]),
  ]);
  return { desired, ready, podCIDR, updateKey };
}

/** A watch event about the Node: a pass when a field the agent acts on changed. */
function onNodeEvent(loop: LoopState, node: k8s.V1Node): void {
  const seen = watchedFields(node);
  const last = loop.last;
  if (
    seen.desired !== last.desired ||
    seen.ready !== last.ready ||
    seen.podCIDR !== last.podCIDR ||
    seen.updateKey !== last.updateKey
  ) {
    loop.last = seen;
    poke(loop);
  }
}

/** `winfleet-agent run`: passes until stopped (or an exit is due); returns the exit code. */
export async function runLoop(context: AgentContext): Promise<number> {
  const signal = context.signal ?? new AbortController().signal;
  const data = await context.hostOS.readFile(paths.agentConfig);
  if (!data) {
    // A deconfigure under way may have removed agent.json already: it goes on without it.
    if (await readDeconfigureRecord(context.hostOS)) return finishDeconfigure(context, signal);
    context.stderr(`${paths.agentConfig} is missing; run bootstrap first\n`);
    return 1;
  }
  const config = parseAgentConfig(data.toString('utf8'));
  const loop: LoopState = {
    context,
    config,
    signal,
    watch: undefined,
    wake: undefined,
    pending: false,
    last: { desired: undefined, ready: undefined, podCIDR: undefined, updateKey: undefined },
  };
  signal.addEventListener('abort', () => {
    loop.watch?.abort();
    loop.wake?.();
  });
  const startedAs = await ownExecutables(context);
  while (!signal.aborted) {
    loop.pending = false;
    const exit = await onePass(loop, startedAs);
    if (exit !== undefined) {
      loop.watch?.abort();
      return exit;
    }
    if (!loop.watch) await startWatch(loop);
    await waitForNextPass(loop);
  }
  loop.watch?.abort();
  return 0;
}

/**
 * A pass of the loop: a requested deconfigure, else a check; then whether the agent must exit to
 * run new executables or take its service environment. Returns the exit code, if it must.
 */
async function onePass(
  loop: LoopState,
  startedAs: Awaited<ReturnType<typeof ownExecutables>>,
): Promise<number | undefined> {
  const { context, config } = loop;
  // A removal's request comes before any other work: converging would bring back what it
  // removes. A failed deconfigure is tried again at the next pass, never left for a check.
  let deconfigure: 'done' | 'none' | 'failed';
  try {
    deconfigure = await deconfigurePass(context, config);
  } catch (error) {
    context.stderr(`deconfiguring failed: ${(error as Error).message}\n`);
    deconfigure = 'failed';
  }
  if (deconfigure === 'done') return 0;
  try {
    if (deconfigure === 'none') await checkOnce(context, config, () => poke(loop));
  } catch (error) {
    context.stderr(`check failed: ${(error as Error).message}\n`);
  }
  // A restart would stop a Windows update install half-way: it waits for the install to end.
  const replaced = installRunning(context)
    ? []
    : replacedExecutables(startedAs, await ownExecutables(context));
  if (replaced.length > 0) {
    context.stderr(
      `a new ${replaced.join(' and ')} executable is installed; restarting to run it\n`,
    );
    return agentReplacedExitCode;
  }
  return environmentPass(loop);
}

/**
 * The agent's service environment against this process's: the exit code when a restart takes
 * it; otherwise what only a reboot takes is recorded (and logged when it changed).
 */
async function environmentPass(loop: LoopState): Promise<number | undefined> {
  const { context } = loop;
  const environment = installRunning(context)
    ? { restart: [], awaitingReboot: environmentAwaitingReboot(context) }
    : await staleOwnEnvironment(context).catch((error: unknown) => {
        context.stderr(`cannot compare the agent's environment: ${(error as Error).message}\n`);
        return { restart: [], awaitingReboot: environmentAwaitingReboot(context) };
      });
  if (environment.restart.length > 0) {
    context.stderr(
      `the agent's service environment changed (${environment.restart.join(', ')}); restarting to take it\n`,
    );
    return agentReplacedExitCode;
  }
  const before = environmentAwaitingReboot(context).join(', ');
  awaitingReboot.set(context, environment.awaitingReboot);
  if (environment.awaitingReboot.length > 0 && environment.awaitingReboot.join(', ') !== before) {
    context.stderr(
      `${environment.awaitingReboot.join(', ')} left the configuration, but the services keep the value Windows read at boot until the host restarts (KB 821761); reported as a pending reboot for the pool's rollout\n`,
    );
    // The report says so now, not at the next interval.
    loop.pending = true;
  }
  return undefined;
}

/** Waits for the interval, a poke or the stop, whichever comes first. */
async function waitForNextPass(loop: LoopState): Promise<void> {
  const { config, signal } = loop;
  // Until the node's credentials exist and the watch runs, look again every two seconds.
  const waitMs = loop.watch
    ? config.checkIntervalSeconds * 1000
    : Math.min(config.checkIntervalSeconds * 1000, 2000);
  await new Promise<void>((resolve) => {
    if (loop.pending) {
      resolve();
      return;
    }
    loop.wake = resolve;
    sleep(waitMs, undefined, { signal }).then(resolve, resolve);
  });
}
