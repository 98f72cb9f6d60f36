/**
 * The agent's problem detection (issue 13, section 1): on each pass of the run loop it gathers
 * what the host shows (the node services and their restarts, the kubelet's and kube-proxy's
 * health endpoints, the CNI's HNS network, the clock against the API server's, the system
 * drive's free space, the kubelet's client certificate, the reboot-pending flag, Defender's
 * threats), runs the pure detector (src/node-health/detector.ts) and writes what changed:
 * - the Node conditions, on its own Node's status (a strategic merge patch of
 *   status.conditions, merged by type, so the kubelet's and others' conditions stay), with the
 *   node's own credentials — the Node authorizer and NodeRestriction let a node write only its
 *   own Node's status;
 * - Events about its own Node (the Node authorizer's node rules allow a node to create Events,
 *   as the kubelet does for its own Node).
 *
 * It also tells converge which services not to restart: those in a restart loop.
 *
 * What a check cannot observe (an API call that failed, a probe not made) is left undefined:
 * the detector then changes nothing for it.
 */
import { X509Certificate } from 'node:crypto';
import * as http from 'node:http';
import * as https from 'node:https';
import type * as k8s from '@kubernetes/client-node';
import type { NodeHealthCondition } from '../api/reasons.ts';
import { outsideRequest } from '../kube/winfleet-kube-config.ts';
import { isOkStatus } from '../net/http-status.ts';
import {
  type CheckedService,
  checkedServices,
  detect,
  type HealthCondition,
  type HealthEvent,
  type HealthObservations,
  type HealthSettings,
  type HealthState,
  healthSettingsWith,
  type ProbeResult,
  type ServiceObservation,
  stateFromNode,
} from '../node-health/detector.ts';
import {
  type DecidedEndpoint,
  decideStaleEndpoints,
  emptyStaleEndpointMemory,
  type StaleEndpointMemory,
} from '../node-health/stale-endpoints.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import {
  defaultNodeNetwork,
  kubeProxyNetwork,
  type NodeNetwork,
  ovnHybrid,
  podNetworkName,
  winfleetOwnsNetwork,
} from '../servicesmanifest/node-network.ts';
import type { AgentConfig } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { emptyState, readState, writeState } from './agent-state.ts';

/** The kubelet's client certificate, as it rotates it in the --cert-dir the payload gives it. */
export const kubeletClientCertificatePath = hostPaths.kubeletClientCertificate;
export const kubeletHealthzPort = 10248;
export const kubeProxyHealthzPort = 10256;
/** An Event's message is cut to this many characters. */
export const maxEventMessage = 1024;

export interface NodeHealthSync {
  /** Writes these conditions on the agent's own Node's status (merged by type). */
  patchConditions(conditions: k8s.V1NodeCondition[]): Promise<void>;
  /** Creates an Event about the agent's own Node. */
  createEvent(event: k8s.CoreV1Event): Promise<void>;
  /** The API server's Date header and the local time when it came (ms); undefined if none. */
  serverDate?(): Promise<{ serverDate: number; localTime: number } | undefined>;
  /**
   * The pods on this node (list pods with fieldSelector spec.nodeName=<node>, what the Node
   * authorizer lets a node read). None given: stale endpoints are not decided.
   */
  listNodePods?(): Promise<k8s.V1Pod[]>;
  now?: () => number;
  settings?: HealthSettings;
}

/** What one agent process remembers between checks. */
interface Memory {
  state: HealthState;
  /** Per service: the last PID seen running, and when it (re)started. */
  services: Map<string, { pid?: number; restarts: number[] }>;
  /** The boot in which the CNI's HNS network was seen. */
  hnsSeenInBoot?: string;
  /** Event reasons whose creation failed and were logged. */
  loggedEventFailure: boolean;
  /** What the stale-endpoint checks remember (stale-endpoints.ts). */
  staleEndpoints: StaleEndpointMemory;
  /** The endpoints the last check found stale: what the local repair may remove. */
  removableEndpoints: DecidedEndpoint[];
}

const memories = new WeakMap<AgentContext, Memory>();

/**
 * The conditions this agent published True (its last check's view): what the local repairs
 * (local-repair.ts) act on, so that one odd reading is never acted on.
 * @package
 */
export function publishedProblems(context: AgentContext): ReadonlySet<NodeHealthCondition> {
  const checks = memories.get(context)?.state.checks ?? {};
  return new Set(
    Object.values(checks)
      .map((check) => check?.condition)
      .filter((c) => c?.status === 'True')
      .map((c) => c!.type),
  );
}

/**
 * The HNS endpoints the last check found left behind on winfleet's own pod network (none in
 * external mode, none when a read failed): what the local repair removes once StaleHNSEndpoints
 * is published True.
 * @package
 */
export function staleEndpointsToRemove(context: AgentContext): readonly DecidedEndpoint[] {
  return memories.get(context)?.removableEndpoints ?? [];
}

/** The services converge must not start or restart now: they are in a restart loop. */
export function servicesNotToRestart(context: AgentContext): ReadonlySet<string> {
  return new Set(memories.get(context)?.state.looping ?? []);
}

function errorText(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).replace(/\s+/g, ' ').slice(0, 200);
}

/**
 * A health endpoint's answer. The kubelet's /healthz says `ok` (200); kube-proxy's answers 200
 * or 503 with a JSON body (lastUpdated, currentTime, nodeEligible), never `ok` (kubernetes
 * v1.36.5 pkg/proxy/healthcheck/proxy_health.go, healthzHandler.ServeHTTP): only its status
 * counts.
 */
async function probe(
  context: AgentContext,
  port: number,
  healthy: (answer: { status: number; body: string }) => boolean,
): Promise<ProbeResult> {
  try {
    const answer = await context.hostOS.getLoopbackHttp(port, '/healthz');
    if (healthy(answer)) return { ok: true };
    return {
      ok: false,
      error: `HTTP ${answer.status} ${JSON.stringify(answer.body.trim().slice(0, 80))}`,
    };
  } catch (error) {
    return { ok: false, error: errorText(error) };
  }
}

/** The host's clock minus this process's (0 when the host's cannot be read). */
async function clockShift(host: AgentContext['hostOS']): Promise<number> {
  const hostNow = await host.localTime().catch(() => undefined);
  return hostNow === undefined ? 0 : hostNow - Date.now();
}

/** What one gather reads and fills: the check's inputs, the agent's memory, the observations. */
interface GatherPass {
  context: AgentContext;
  node: k8s.V1Node;
  memory: Memory;
  sync: NodeHealthSync;
  now: number;
  heldBack: ReadonlySet<string>;
  settings: HealthSettings;
  network: NodeNetwork;
  sourceVip: string | undefined;
  /** What this check observed so far. */
  o: HealthObservations;
}

/** The CNI's HNS networks as this check read them (undefined: not read, or the read failed). */
type HnsNetworks = Awaited<ReturnType<AgentContext['hostOS']['listHnsNetworks']>>;

/** What one check observes on the host (a field left undefined: it could not be observed). */
async function gather(
  context: AgentContext,
  node: k8s.V1Node,
  memory: Memory,
  sync: NodeHealthSync,
  now: number,
  heldBack: ReadonlySet<string>,
  settings: HealthSettings,
  network: NodeNetwork,
  sourceVip: string | undefined,
): Promise<HealthObservations> {
  const o: HealthObservations = { services: {} };
  const pass: GatherPass = {
    context,
    node,
    memory,
    sync,
    now,
    heldBack,
    settings,
    network,
    sourceVip,
    o,
  };
  await observeServices(pass);
  if (o.services.kubelet?.state === 'running')
    o.kubeletHealthz = await probe(
      context,
      kubeletHealthzPort,
      (a) => isOkStatus(a.status) && a.body.trim() === 'ok',
    );
  // The pod network the mode names (none known: an external CNI's, not checked here).
  const networkName = podNetworkName(network);
  const networks = networkName ? await observeHnsNetwork(pass, networkName) : undefined;
  const networkPresent = o.hnsNetwork?.present ?? false;
  await observeStaleEndpoints(pass, networks);
  // kube-proxy serves /healthz only once its network exists (it waits for it before its
  // server starts: cmd/kube-proxy/app/server.go Run after createProxier, winkernel
  // getNetworkInfo): before that a refused probe is the network's problem, not kube-proxy's.
  if (o.services['kube-proxy']?.state === 'running') {
    if (networkPresent || !networkName)
      o.kubeProxyHealthz = await probe(context, kubeProxyHealthzPort, (a) => isOkStatus(a.status));
    else o.kubeProxyWaitsFor = networkName;
  }
  await observeClock(pass);
  await observeHostFacts(pass);
  return o;
}

/** Each checked service's state and restarts (those held back or not winfleet's: not observed). */
async function observeServices(pass: GatherPass): Promise<void> {
  for (const name of checkedServices) {
    // A service the agent holds back on purpose (kube-proxy until its credentials exist) is
    // not a problem: not observed.
    if (pass.heldBack.has(name)) continue;
    // No kube-proxy of winfleet's where the CNI brings its own (external mode): not observed.
    if (name === 'kube-proxy' && kubeProxyNetwork(pass.network) === undefined) continue;
    (pass.o.services as Record<CheckedService, ServiceObservation>)[name] = await observeService(
      pass,
      name,
    );
  }
}

/** The SCM's state of a service mapped to the detector's. */
function observedState(state: string): ServiceObservation['state'] {
  return state === 'running'
    ? 'running'
    : state === 'stopped'
      ? 'stopped'
      : state === 'paused'
        ? 'paused'
        : 'pending';
}

/** One service: its state, and its restarts from the SCM's log or, failing that, new PIDs. */
async function observeService(pass: GatherPass, name: CheckedService): Promise<ServiceObservation> {
  const { memory, now, settings } = pass;
  const host = pass.context.hostOS;
  const status = await host.queryService(name).catch(() => undefined);
  const seen = memory.services.get(name) ?? { restarts: [] };
  memory.services.set(name, seen);
  let state: ServiceObservation['state'] = 'missing';
  if (status) {
    state = observedState(status.state);
    // A new process since the last check is a (re)start; the first one seen is not.
    if (status.state === 'running' && status.pid !== undefined) {
      if (seen.pid !== undefined && seen.pid !== status.pid) seen.restarts.push(now);
      seen.pid = status.pid;
    }
  }
  const windowStart = now - settings.restartLoop.windowSeconds * 1000;
  seen.restarts = seen.restarts.filter((t) => t > windowStart).slice(-1000);
  // The SCM's log of its unexpected ends counts the restarts of a service that dies at once,
  // which a check rarely sees running; new PIDs are the fallback when the log cannot be read.
  // (The log's times are the host's clock: shifted to this process's, as the clock check is.)
  let failures: number[] | undefined;
  if (status) {
    const shift = await clockShift(host);
    failures = await host
      .serviceFailures(name, Math.max(0, Math.floor(windowStart + shift)))
      .then((times) => times.map((t) => t - shift).filter((t) => t > windowStart && t <= now))
      .catch(() => undefined);
  }
  const observation: ServiceObservation = {
    state,
    restarts: failures && failures.length >= seen.restarts.length ? failures : [...seen.restarts],
  };
  if (status?.state === 'stopped' && status.exitCode !== undefined)
    observation.exitCode = status.exitCode;
  return observation;
}

/** The pod network's presence in this boot (o.hnsNetwork); returns the networks read. */
async function observeHnsNetwork(
  pass: GatherPass,
  networkName: string,
): Promise<HnsNetworks | undefined> {
  const { context, memory } = pass;
  let networks: HnsNetworks | undefined;
  try {
    networks = await context.hostOS.listHnsNetworks();
    const networkPresent = networks.some((n) => n.name.toLowerCase() === networkName.toLowerCase());
    const bootId = pass.node.status?.nodeInfo?.bootID ?? '';
    if (networkPresent) memory.hnsSeenInBoot = bootId;
    pass.o.hnsNetwork = {
      name: networkName,
      present: networkPresent,
      expected: memory.hnsSeenInBoot === bootId,
    };
  } catch (error) {
    context.stderr(`health: cannot list the HNS networks: ${errorText(error)}\n`);
  }
  return networks;
}

/** Endpoints left behind on winfleet's own pod network (never a CNI's: external mode). */
async function observeStaleEndpoints(
  pass: GatherPass,
  networks: HnsNetworks | undefined,
): Promise<void> {
  const { context, memory, network, node } = pass;
  if (!winfleetOwnsNetwork(network)) {
    memory.staleEndpoints = emptyStaleEndpointMemory();
    memory.removableEndpoints = [];
    return;
  }
  const endpoints = networks
    ? await context.hostOS.listHnsEndpoints().catch((error: unknown) => {
        context.stderr(`health: cannot list the HNS endpoints: ${errorText(error)}\n`);
        return undefined;
      })
    : undefined;
  const podIPs = await nodePodIPs(context, pass.sync);
  const decision = decideStaleEndpoints(
    {
      network,
      networks,
      endpoints,
      podIPs,
      // The node's pod subnet: ovn-hybrid's is the hybrid overlay annotation, not spec.podCIDR.
      podCIDR:
        network.mode === 'ovn-hybrid'
          ? node.metadata?.annotations?.[ovnHybrid.subnetAnnotation]
          : node.spec?.podCIDR,
      sourceVip: pass.sourceVip,
    },
    memory.staleEndpoints,
    pass.now,
    pass.settings.staleEndpointSeconds,
  );
  memory.staleEndpoints = decision.memory;
  // A check that decided nothing leaves nothing to remove.
  memory.removableEndpoints = decision.removable;
  if (decision.observation) pass.o.hnsEndpoints = decision.observation;
}

/** The addresses of the pods on this node (undefined: no lister, or the list failed). */
async function nodePodIPs(
  context: AgentContext,
  sync: NodeHealthSync,
): Promise<Set<string> | undefined> {
  if (!sync.listNodePods) return undefined;
  return sync
    .listNodePods()
    .then((pods) => {
      const ips = new Set<string>();
      for (const pod of pods) {
        if (pod.status?.podIP) ips.add(pod.status.podIP);
        for (const p of pod.status?.podIPs ?? []) if (p.ip) ips.add(p.ip);
      }
      return ips;
    })
    .catch((error: unknown) => {
      context.stderr(`health: cannot list the pods on this node: ${errorText(error)}\n`);
      return undefined;
    });
}

/** The host's clock against the API server's Date header (o.clock). */
async function observeClock(pass: GatherPass): Promise<void> {
  const { sync } = pass;
  if (!sync.serverDate) return;
  const answer = await sync.serverDate().catch(() => undefined);
  // The host's clock, not this process's: the agent runs on the host (WindowsHostOS reads
  // the same system time), but a HostOS may answer for another machine (the simulated
  // hosts, whose clock a fault puts off). Its offset from this process's clock is added.
  const hostNow = answer && (await pass.context.hostOS.localTime().catch(() => undefined));
  if (answer && hostNow !== undefined)
    pass.o.clock = { ...answer, localTime: answer.localTime + (hostNow - Date.now()) };
}

/** The system drive, the kubelet's certificate, the reboot-pending flag and Defender's threats. */
async function observeHostFacts(pass: GatherPass): Promise<void> {
  const { context, o } = pass;
  const host = context.hostOS;
  try {
    o.systemDrive = { path: 'C:\\', freeBytes: await host.freeDiskBytes('C:\\') };
  } catch (error) {
    context.stderr(`health: cannot read the system drive's free space: ${errorText(error)}\n`);
  }
  const certificate = await observeKubeletCertificate(context);
  if (certificate) o.kubeletCertificate = certificate;
  try {
    o.rebootPending = await host.rebootPending();
  } catch (error) {
    context.stderr(`health: cannot read the reboot-pending entries: ${errorText(error)}\n`);
  }
  try {
    o.defenderThreats = (await host.defenderThreats()).threats;
  } catch (error) {
    context.stderr(`health: ${errorText(error)}\n`);
  }
}

/** The kubelet's client certificate's validity (undefined: no file, or none readable in it). */
async function observeKubeletCertificate(
  context: AgentContext,
): Promise<HealthObservations['kubeletCertificate']> {
  const pem = await context.hostOS.readFile(kubeletClientCertificatePath).catch(() => undefined);
  // The kubelet's file holds the certificate, then its key (client-go certificate_store).
  const block = pem
    ? /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/.exec(
        pem.toString('latin1'),
      )
    : undefined;
  if (pem && !block)
    context.stderr(
      `health: cannot read ${kubeletClientCertificatePath}: it holds no PEM certificate\n`,
    );
  if (!block) return undefined;
  try {
    const cert = new X509Certificate(block[0]);
    return {
      path: kubeletClientCertificatePath,
      notBefore: Date.parse(cert.validFrom),
      notAfter: Date.parse(cert.validTo),
    };
  } catch (error) {
    context.stderr(`health: cannot read ${kubeletClientCertificatePath}: ${errorText(error)}\n`);
    return undefined;
  }
}

/** The Node's condition of that type, if any. */
function nodeCondition(node: k8s.V1Node, type: string): k8s.V1NodeCondition | undefined {
  return node.status?.conditions?.find((c) => c.type === type);
}

function asNodeCondition(c: HealthCondition, now: number): k8s.V1NodeCondition {
  return {
    type: c.type,
    status: c.status,
    reason: c.reason,
    message: c.message,
    lastTransitionTime: new Date(c.lastTransitionTime),
    lastHeartbeatTime: new Date(Math.floor(now / 1000) * 1000),
  };
}

function asEvent(e: HealthEvent, nodeName: string, now: number): k8s.CoreV1Event {
  const at = new Date(Math.floor(now / 1000) * 1000);
  return {
    metadata: { generateName: `${nodeName}.`, namespace: 'default' },
    // The kubelet names its own Node in Events the same way (uid = the node name).
    involvedObject: { kind: 'Node', name: nodeName, uid: nodeName, apiVersion: 'v1' },
    reason: e.reason,
    message:
      e.message.length > maxEventMessage
        ? `${e.message.slice(0, maxEventMessage - 1)}…`
        : e.message,
    type: e.type,
    source: { component: 'winfleet-agent', host: nodeName },
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
    reportingComponent: 'winfleet.io/agent',
    reportingInstance: nodeName,
  };
}

/** @package */
export interface NodeHealthOptions {
  /** Services the agent holds back this pass (not observed). */
  heldBack?: ReadonlySet<string>;
  /** The node's pod network (its services manifest's); default routed. */
  network?: NodeNetwork;
  /**
   * kube-proxy's source VIP reserved this pass (source-vip.ts), on a network that needs one: its
   * endpoint is never stale; unknown there, stale endpoints are not decided.
   */
  sourceVip?: string;
}

/**
 * One check: gather, detect, write the changed conditions and the Events. Returns the
 * services converge must not restart. Errors writing are logged; the next check tries again
 * (the conditions are compared with the Node's, so a lost write is written again).
 * @package
 */
export async function checkNodeHealth(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
  sync: NodeHealthSync,
  options: NodeHealthOptions = {},
): Promise<ReadonlySet<string>> {
  const now = (sync.now ?? Date.now)();
  const settings = sync.settings ?? healthSettingsWith(config.agentHealth);
  const memory = await memoryOf(context, node);
  const observations = await gather(
    context,
    node,
    memory,
    sync,
    now,
    options.heldBack ?? new Set(),
    settings,
    options.network ?? defaultNodeNetwork,
    options.sourceVip,
  );
  const announced = memory.state.reportedThreats;
  const result = detect(observations, memory.state, settings, now);
  memory.state = result.state;
  if (result.state.reportedThreats.some((key) => !announced.includes(key))) {
    // Recorded before the Events go out: a restart between the two loses an Event rather than
    // repeating every one.
    await writeState(context.hostOS, {
      ...emptyState(),
      reportedThreats: result.state.reportedThreats,
    }).catch((error: unknown) =>
      context.stderr(
        `health: cannot record the announced Defender detections: ${errorText(error)}\n`,
      ),
    );
  }
  await writeConditions(context, config, node, sync, result.conditions, now);
  await createEvents(context, config, memory, sync, result.events, now);
  return new Set(result.doNotRestart);
}

/**
 * This process's memory for the context; a new process starts from what the Node shows, so a
 * True condition is not cleared by one good reading, and from the Defender detections earlier
 * processes announced.
 */
async function memoryOf(context: AgentContext, node: k8s.V1Node): Promise<Memory> {
  const known = memories.get(context);
  if (known) return known;
  const state = stateFromNode(node.status?.conditions ?? []);
  state.reportedThreats = await readState(context.hostOS)
    .then((s) => s.reportedThreats ?? [])
    .catch(() => []);
  const memory: Memory = {
    state,
    services: new Map(),
    loggedEventFailure: false,
    staleEndpoints: emptyStaleEndpointMemory(),
    removableEndpoints: [],
  };
  memories.set(context, memory);
  return memory;
}

/** Writes each condition that differs from the Node's (status, reason or message), logging changes. */
async function writeConditions(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
  sync: NodeHealthSync,
  conditions: readonly HealthCondition[],
  now: number,
): Promise<void> {
  const write = conditions.filter((c) => {
    const current = nodeCondition(node, c.type);
    return (
      current?.status !== c.status || current.reason !== c.reason || current.message !== c.message
    );
  });
  if (write.length === 0) return;
  for (const c of write) {
    if (nodeCondition(node, c.type)?.status !== c.status && c.status === 'True')
      context.stderr(`health: ${c.type} (${c.reason}): ${c.message}\n`);
    else if (nodeCondition(node, c.type)?.status === 'True' && c.status === 'False')
      context.stderr(`health: ${c.type} cleared: ${c.message}\n`);
  }
  try {
    await sync.patchConditions(write.map((c) => asNodeCondition(c, now)));
  } catch (error) {
    context.stderr(
      `health: cannot write the conditions ${write.map((c) => c.type).join(', ')} on Node ${config.nodeName}: ${errorText(error)}\n`,
    );
  }
}

/** Creates the check's Events about the Node; the first failure is logged, once per process. */
async function createEvents(
  context: AgentContext,
  config: AgentConfig,
  memory: Memory,
  sync: NodeHealthSync,
  events: readonly HealthEvent[],
  now: number,
): Promise<void> {
  for (const event of events) {
    try {
      await sync.createEvent(asEvent(event, config.nodeName, now));
    } catch (error) {
      if (!memory.loggedEventFailure) {
        memory.loggedEventFailure = true;
        context.stderr(
          `health: cannot create Event ${event.reason} about Node ${config.nodeName}: ${errorText(error)} (logged once): ${event.message}\n`,
        );
      }
    }
  }
}

/**
 * The API server's clock: its Date header on GET /version with the node's credentials, and
 * the local time when the answer came. Undefined when it does not answer.
 * @package
 */
export async function apiServerDate(
  kc: k8s.KubeConfig,
  timeoutMs = 10_000,
): Promise<{ serverDate: number; localTime: number } | undefined> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) return undefined;
  const url = new URL('/version', server);
  const options: https.RequestOptions = { method: 'GET', timeout: timeoutMs, agent: false };
  await kc.applyToHTTPSOptions(options);
  const outside = outsideRequest(kc, 'GET', '/version');
  options.headers = { ...options.headers, ...outside.headers };
  return new Promise((resolve) => {
    const req = (url.protocol === 'https:' ? https.request : http.request)(url, options, (res) => {
      outside.done(res.statusCode);
      const localTime = Date.now();
      const date = Date.parse(String(res.headers.date ?? ''));
      res.resume();
      resolve(Number.isNaN(date) ? undefined : { serverDate: date, localTime });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      outside.done(undefined);
      resolve(undefined);
    });
    req.end();
  });
}
