/**
 * The agent's problem detection (issue 13, section 1), pure: what one check observed on the
 * host, the state the previous checks left and the settings go in; the Node conditions to
 * write, the Events for transient things, the services not to restart, and the next state
 * come out. No I/O and no clock: `now` is an input, so every rule is tested without a host.
 *
 * Rules:
 * - A condition changes status only when the new reading persisted for
 *   `consecutiveChecks` checks in a row (default 2): one failed probe does not flip it, and one
 *   good reading does not clear it.
 * - An observation that could not be made (undefined) changes nothing and resets no streak.
 * - A service restarting more than `restartLoop.count` times within `restartLoop.windowSeconds`
 *   is in a restart loop: it is named in `doNotRestart` at once (the agent stops restarting it
 *   blindly) and FrequentServiceRestart escalates. The loop is over when the service runs and
 *   either its restarts aged out of the window or it has run `restartLoop.stableSeconds`
 *   without one (a repair fixed it).
 * - Events (low disk before the condition, Defender threats) are sent once per episode or per
 *   threat, not on every check.
 */

import {
  NodeHealthCondition,
  NodeHealthEventReason,
  NodeHealthReason,
  nodeHealthConditions,
} from '../api/reasons.ts';
import { type AgentHealthConfig, agentHealthDefaults } from '../config/winfleet-config.ts';
import { apiTime } from '../kube/api-time.ts';
import { defaultStaleEndpointSeconds, type StaleEndpointsObservation } from './stale-endpoints.ts';

/** The node services whose health is checked. */
export const checkedServices = ['kubelet', 'containerd', 'kube-proxy'] as const;
export type CheckedService = (typeof checkedServices)[number];

/** A probe of a health endpoint: it answered 200 "ok", or why not. */
export type ProbeResult = { ok: true } | { ok: false; error: string };

export interface ServiceObservation {
  /** 'missing' when the SCM does not know the service. */
  state: 'missing' | 'stopped' | 'running' | 'pending' | 'paused';
  /** The last exit code the SCM reported, when stopped. */
  exitCode?: number;
  /** When the service (re)started, ms since the epoch, as far back as the gatherer keeps. */
  restarts: number[];
}

/** An active detection Microsoft Defender reports (Get-MpThreatDetection), parsed strictly. */
export interface DefenderThreat {
  /** ThreatID, a decimal number. */
  id: string;
  /** The threat's name ("" when Defender's history has none for it). */
  name: string;
  severity: string;
  /** The detection's ThreatStatusID, by name (Detected, QuarantineFailed, …). */
  status: string;
  /** InitialDetectionTime, ms since the epoch (0: none given). */
  detectedAt: number;
  /** Affected resources (file paths), bounded by the parser. */
  resources: string[];
}

/** What names one detection across agent restarts: its ThreatID and InitialDetectionTime. */
export function defenderDetectionKey(threat: Pick<DefenderThreat, 'id' | 'detectedAt'>): string {
  return `${threat.id}@${threat.detectedAt}`;
}

/** What one check observed. Each field undefined: could not be observed this time. */
export interface HealthObservations {
  services: Partial<Record<CheckedService, ServiceObservation>>;
  /** GET http://127.0.0.1:10248/healthz */
  kubeletHealthz?: ProbeResult;
  /** GET http://127.0.0.1:10256/healthz */
  kubeProxyHealthz?: ProbeResult;
  /**
   * kube-proxy runs and its pod network (this HNS network) does not exist yet: it waits for it,
   * so its health endpoint is not served and was not probed.
   */
  kubeProxyWaitsFor?: string;
  /**
   * The CNI's HNS network: present, and whether it is expected (it existed earlier in this
   * boot: the CNI creates it with the first pod, so a fresh host without it is not a problem).
   */
  hnsNetwork?: { name: string; present: boolean; expected: boolean };
  /**
   * Endpoints on winfleet's own pod network left behind by pods that are gone, and addresses
   * two endpoints hold (stale-endpoints.ts decideStaleEndpoints); undefined in external mode.
   */
  hnsEndpoints?: StaleEndpointsObservation;
  /** The API server's Date header (ms) and the local clock when the answer came (ms). */
  clock?: { serverDate: number; localTime: number };
  systemDrive?: { path: string; freeBytes: number };
  /** The kubelet's client certificate (kubelet-client-current.pem). */
  kubeletCertificate?: { notBefore: number; notAfter: number; path: string };
  rebootPending?: boolean;
  defenderThreats?: DefenderThreat[];
}

export interface HealthSettings {
  /** Checks in a row a new reading must persist before a condition changes. Default 2. */
  consecutiveChecks: number;
  /**
   * More than `count` restarts within `windowSeconds` is a loop; a service that has then run
   * `stableSeconds` without a restart is out of it (a repair fixed it), whatever the window.
   */
  restartLoop: { count: number; windowSeconds: number; stableSeconds: number };
  clockSkewSeconds: number;
  /** How long an endpoint without a pod must stay so before it is stale (stale-endpoints.ts). */
  staleEndpointSeconds: number;
  disk: { eventBelowBytes: number; conditionBelowBytes: number };
  /**
   * A certificate is expiring when less than this is left and it is past 90% of its lifetime
   * (the kubelet renews between 70% and 90%: past that it is not renewing).
   */
  certificateExpirySeconds: number;
}

const GiB = 1024 ** 3;

export const defaultHealthSettings: HealthSettings = {
  consecutiveChecks: 2,
  restartLoop: { ...agentHealthDefaults.restartLoop },
  clockSkewSeconds: agentHealthDefaults.clockSkewSeconds,
  staleEndpointSeconds: defaultStaleEndpointSeconds,
  disk: { eventBelowBytes: 10 * GiB, conditionBelowBytes: 5 * GiB },
  certificateExpirySeconds: 7 * 86400,
};

/** The settings an agent checks with: the defaults, with what hosts.agentHealth tunes. */
export function healthSettingsWith(tuning: AgentHealthConfig | undefined): HealthSettings {
  if (!tuning) return defaultHealthSettings;
  return {
    ...defaultHealthSettings,
    restartLoop: { ...tuning.restartLoop },
    clockSkewSeconds: tuning.clockSkewSeconds,
    staleEndpointSeconds: tuning.staleEndpointSeconds ?? defaultHealthSettings.staleEndpointSeconds,
  };
}

export type ConditionStatus = 'True' | 'False';

/** One condition as the agent writes it on its Node. */
export interface HealthCondition {
  type: NodeHealthCondition;
  status: ConditionStatus;
  reason: NodeHealthReason;
  message: string;
  /** When the status last changed (RFC 3339, seconds). */
  lastTransitionTime: string;
}

export interface HealthEvent {
  reason: NodeHealthEventReason;
  type: 'Warning';
  message: string;
}

export interface CheckState {
  /** The published condition (none until a first reading was decided). */
  condition?: HealthCondition;
  /** The reading that differs from the published status, and for how many checks in a row. */
  pending?: { status: ConditionStatus; count: number };
}

export interface HealthState {
  checks: Partial<Record<NodeHealthCondition, CheckState>>;
  /** Services in a restart loop the agent does not restart until the loop is over. */
  looping: string[];
  /** The system drive is below the Event threshold and the Event was sent. */
  diskEventSent: boolean;
  /**
   * Defender detections already sent as Events (defenderDetectionKey; the last
   * maxRememberedThreats), kept in the agent's state file across restarts.
   */
  reportedThreats: string[];
  /** When the last check ran (ms): restarts after it are new (a ServiceRestarted Event). */
  lastCheckAt?: number;
}

export const maxRememberedThreats = 256;

/** @package */
export const emptyHealthState = (): HealthState => ({
  checks: {},
  looping: [],
  diskEventSent: false,
  reportedThreats: [],
});

/**
 * A state whose published conditions are the Node's: what an agent that just started (its
 * per-process state gone) begins from, so a True condition is not cleared by one good reading.
 */
export function stateFromNode(
  conditions: readonly {
    type?: string;
    status?: string;
    reason?: string;
    message?: string;
    lastTransitionTime?: Date | string;
  }[],
): HealthState {
  const state = emptyHealthState();
  for (const c of conditions) {
    const type = nodeHealthConditions.find((t) => t === c.type);
    if (!type || (c.status !== 'True' && c.status !== 'False')) continue;
    const reason = Object.values(NodeHealthReason).find((r) => r === c.reason);
    if (!reason) continue;
    const at = c.lastTransitionTime;
    state.checks[type] = {
      condition: {
        type,
        status: c.status,
        reason,
        message: c.message ?? '',
        lastTransitionTime: at instanceof Date ? rfc3339(at.getTime()) : (at ?? ''),
      },
    };
  }
  return state;
}

/** @package */
export interface HealthResult {
  /** Every condition type with its current status (changed or not). */
  conditions: HealthCondition[];
  /** The condition types whose status, reason or message changed in this check. */
  changed: NodeHealthCondition[];
  events: HealthEvent[];
  /** Services the agent must not start or restart: they are in a restart loop. */
  doNotRestart: string[];
  state: HealthState;
}

/** A reading of one check: the status it indicates and, when True, why. */
export interface Reading {
  status: ConditionStatus;
  reason: NodeHealthReason;
  message: string;
}

const rfc3339 = (ms: number) => apiTime(new Date(ms));

function formatBytes(bytes: number): string {
  if (bytes >= GiB) return `${(bytes / GiB).toFixed(1)} GiB`;
  return `${Math.round(bytes / 1024 ** 2)} MiB`;
}

function formatSeconds(seconds: number): string {
  const s = Math.round(Math.abs(seconds));
  if (s >= 86400) return `${(s / 86400).toFixed(1)} days`;
  if (s >= 3600) return `${(s / 3600).toFixed(1)} hours`;
  if (s >= 60) return `${(s / 60).toFixed(1)} minutes`;
  return `${s} s`;
}

/** The Node condition the agent sets for each node service it checks. */
export const serviceCondition: Record<CheckedService, NodeHealthCondition> = {
  kubelet: NodeHealthCondition.KubeletUnhealthy,
  containerd: NodeHealthCondition.ContainerRuntimeUnhealthy,
  'kube-proxy': NodeHealthCondition.KubeProxyUnhealthy,
};

function serviceReading(
  name: CheckedService,
  service: ServiceObservation | undefined,
  probe: ProbeResult | undefined,
  endpoint: string | undefined,
  looping: boolean,
): Reading | undefined {
  if (!service) return undefined;
  if (service.state === 'missing') {
    return {
      status: 'True',
      reason: NodeHealthReason.ServiceMissing,
      message: `Service ${name} is not registered on this host; the winfleet agent registers it from its services manifest: check the agent log (C:\\k\\winfleet\\logs), or re-bootstrap the host`,
    };
  }
  if (service.state !== 'running') {
    const code = service.exitCode === undefined ? '' : ` (last exit code ${service.exitCode})`;
    const fix = looping
      ? 'it is in a restart loop, so winfleet no longer restarts it: read its log under C:\\k\\logs and fix the cause'
      : 'the winfleet agent starts it again; if it does not stay up, read its log under C:\\k\\logs';
    return {
      status: 'True',
      reason: NodeHealthReason.ServiceNotRunning,
      message: `Service ${name} is ${service.state}${code}; ${fix}`,
    };
  }
  if (endpoint && probe && !probe.ok) {
    return {
      status: 'True',
      reason: NodeHealthReason.HealthzFailed,
      message: `Service ${name} runs but its health endpoint ${endpoint} fails: ${probe.error}; read its log under C:\\k\\logs (restarting the service is the first repair)`,
    };
  }
  // Running, and the endpoint answered (or there is none, or it was not probed this time).
  if (endpoint && !probe) return undefined;
  return {
    status: 'False',
    reason: NodeHealthReason.ServiceHealthy,
    message: endpoint ? `Service ${name} runs and ${endpoint} answers ok` : `Service ${name} runs`,
  };
}

/** At most this many addresses are named in a StaleHNSEndpoints message. */
export const maxNamedAddresses = 5;

function someAddresses(ips: readonly string[]): string {
  const named = ips.slice(0, maxNamedAddresses).join(', ');
  return ips.length > maxNamedAddresses
    ? `${named} and ${ips.length - maxNamedAddresses} more`
    : named;
}

function staleEndpointsReading(o: StaleEndpointsObservation): Reading {
  const after = formatSeconds(o.staleAfterSeconds);
  if (o.duplicates.length > 0) {
    const stale =
      o.stale.length > 0
        ? `; also ${o.stale.length} endpoint(s) whose address no pod has (${someAddresses(o.stale.map((e) => e.ip))}), which the winfleet agent removes`
        : '';
    return {
      status: 'True',
      reason: NodeHealthReason.DuplicateEndpointIP,
      message: `${o.duplicates.length} address(es) on HNS network ${o.network} are each held by more than one endpoint while a pod on this node has them (${someAddresses(o.duplicates.map((d) => `${d.ip} ×${d.ids.length}`))}): one is left behind from a pod that is gone, and the pod may be unreachable. The agent removes neither (it cannot tell which one the pod uses): delete that pod (kubectl delete pod); its CNI DEL removes its own endpoint, and the agent then removes the one left behind${stale}`,
    };
  }
  if (o.stale.length > 0) {
    return {
      status: 'True',
      reason: NodeHealthReason.EndpointsLeftBehind,
      message: `${o.stale.length} HNS endpoint(s) on network ${o.network} hold an address no pod on this node has had for ${after} or more (${someAddresses(o.stale.map((e) => e.ip))}): left behind by a CNI DEL that did not finish (a crash, a reboot mid-teardown); host-local may hand the address to a new pod, which would then be unreachable. The winfleet agent removes them (Remove-HnsEndpoint)`,
    };
  }
  return {
    status: 'False',
    reason: NodeHealthReason.NoStaleEndpoints,
    message: `Every pod endpoint on HNS network ${o.network} belongs to a pod on this node`,
  };
}

/** What one check's rules read and write: its inputs, the next state, and what they found. */
interface DetectPass {
  observations: HealthObservations;
  previous: HealthState;
  settings: HealthSettings;
  now: number;
  /** The next state (a copy of `previous`; the rules update it). */
  state: HealthState;
  events: HealthEvent[];
  /** The reading per condition, in the order the rules decide them. */
  readings: Map<NodeHealthCondition, Reading>;
}

/**
 * One check. `previous` is the state the last check returned (emptyHealthState() or
 * stateFromNode(...) at first); it is not modified.
 */
export function detect(
  observations: HealthObservations,
  previous: HealthState,
  settings: HealthSettings,
  now: number,
): HealthResult {
  const pass: DetectPass = {
    observations,
    previous,
    settings,
    now,
    state: {
      checks: { ...previous.checks },
      looping: [...previous.looping],
      diskEventSent: previous.diskEventSent,
      reportedThreats: [...previous.reportedThreats],
      lastCheckAt: now,
    },
    events: [],
    readings: new Map<NodeHealthCondition, Reading>(),
  };
  // Restart loops: decided first, since a looping service's message says it is not restarted.
  restartLoopRule(pass);
  serviceRules(pass);
  hnsNetworkRule(pass);
  if (observations.hnsEndpoints)
    pass.readings.set(
      NodeHealthCondition.StaleHNSEndpoints,
      staleEndpointsReading(observations.hnsEndpoints),
    );
  clockRule(pass);
  diskRule(pass);
  certificateRule(pass);
  rebootPendingRule(pass);
  defenderRule(pass);
  const changed = persistReadings(pass);
  const { state, events } = pass;
  const conditions = nodeHealthConditions.flatMap((t) => {
    const c = state.checks[t]?.condition;
    return c ? [c] : [];
  });
  return { conditions, changed, events, doNotRestart: [...state.looping], state };
}

/** A service that restarted more than the loop count within the window (and did not settle). */
interface LoopingService {
  name: string;
  count: number;
}

/**
 * Restart loops and restarts: the services looping now, a ServiceRestarted Event per service
 * that restarted since the last check (outside a loop), the held services in `state.looping`,
 * and the FrequentServiceRestart reading when any service was observed.
 */
function restartLoopRule(pass: DetectPass): void {
  const { observations, settings, state } = pass;
  const loopingNow: LoopingService[] = [];
  let anyServiceObserved = false;
  for (const name of checkedServices) {
    const service = observations.services[name];
    if (!service) continue;
    anyServiceObserved = true;
    const loop = serviceRestartsRule(pass, name, service);
    if (loop) loopingNow.push(loop);
  }
  // A loop is over when its restarts aged out and the service runs again (a person started it,
  // or a repair did); a stopped looping service stays held, for the repair to deal with.
  const stillHeld = state.looping.filter((name) => {
    if (loopingNow.some((l) => l.name === name)) return true;
    return observations.services[name as CheckedService]?.state !== 'running';
  });
  state.looping = [...new Set([...stillHeld, ...loopingNow.map((l) => l.name)])].sort();
  if (anyServiceObserved) {
    pass.readings.set(
      NodeHealthCondition.FrequentServiceRestart,
      restartLoopReading(state.looping, loopingNow, settings),
    );
  }
}

/**
 * One observed service's restarts: whether it loops now (returned), and a ServiceRestarted
 * Event when it ended and was started again since the last check without being in a loop.
 */
function serviceRestartsRule(
  pass: DetectPass,
  name: CheckedService,
  service: ServiceObservation,
): LoopingService | undefined {
  const { previous, settings, now } = pass;
  const windowStart = now - settings.restartLoop.windowSeconds * 1000;
  const recent = service.restarts.filter((t) => t > windowStart && t <= now);
  // Running for stableSeconds since its last restart: the loop is over (a re-bootstrap or a
  // person fixed the cause), without waiting for the window to age out.
  const settled =
    service.state === 'running' &&
    recent.length > 0 &&
    now - Math.max(...recent) >= settings.restartLoop.stableSeconds * 1000;
  const count = settled ? 0 : recent.length;
  // A transient problem: the service ended and was started again (by its recovery actions or
  // by the agent) since the last check. An Event, not a condition; a loop is the condition's.
  const since = previous.lastCheckAt;
  const fresh = since === undefined ? 0 : recent.filter((t) => t > since).length;
  if (fresh > 0 && count <= settings.restartLoop.count && !previous.looping.includes(name)) {
    pass.events.push({
      reason: NodeHealthEventReason.ServiceRestarted,
      type: 'Warning',
      message: `${name} ended and was started again${fresh > 1 ? ` (${fresh} times)` : ''} since the check ${formatSeconds(Math.round((now - since!) / 1000))} ago; ${recent.length} restart(s) in ${formatSeconds(settings.restartLoop.windowSeconds)}, more than ${settings.restartLoop.count} is a restart loop`,
    });
  }
  return count > settings.restartLoop.count ? { name, count } : undefined;
}

/** The FrequentServiceRestart reading for the held services (`looping`) and those looping now. */
function restartLoopReading(
  looping: readonly string[],
  loopingNow: readonly LoopingService[],
  settings: HealthSettings,
): Reading {
  const window = formatSeconds(settings.restartLoop.windowSeconds);
  return looping.length > 0
    ? {
        status: 'True',
        reason: NodeHealthReason.RestartLoop,
        message: `${looping
          .map((name) => {
            const loop = loopingNow.find((l) => l.name === name);
            return loop
              ? `${name} restarted ${loop.count} times in ${window}`
              : `${name} was in a restart loop and is not running`;
          })
          .join(
            '; ',
          )} (more than ${settings.restartLoop.count} is a loop); winfleet stopped restarting it: read its log under C:\\k\\logs and fix the cause, then start the service (Start-Service) or re-bootstrap the host`,
      }
    : {
        status: 'False',
        reason: NodeHealthReason.NoRestartLoop,
        message: `No node service restarted more than ${settings.restartLoop.count} times in ${window}`,
      };
}

/** The per-service conditions (state and health endpoint), and kube-proxy waiting for its network. */
function serviceRules(pass: DetectPass): void {
  const { observations, state, readings } = pass;
  const endpoints: Record<CheckedService, [ProbeResult | undefined, string | undefined]> = {
    kubelet: [observations.kubeletHealthz, 'http://127.0.0.1:10248/healthz'],
    containerd: [undefined, undefined],
    'kube-proxy': [observations.kubeProxyHealthz, 'http://127.0.0.1:10256/healthz'],
  };
  for (const name of checkedServices) {
    const [probe, endpoint] = endpoints[name];
    const reading = serviceReading(
      name,
      observations.services[name],
      probe,
      endpoint,
      state.looping.includes(name),
    );
    if (reading) readings.set(serviceCondition[name], reading);
  }
  if (observations.kubeProxyWaitsFor && observations.services['kube-proxy']?.state === 'running') {
    readings.set(NodeHealthCondition.KubeProxyUnhealthy, {
      status: 'False',
      reason: NodeHealthReason.WaitingForPodNetwork,
      message: `Service kube-proxy runs and waits for the pod network ${observations.kubeProxyWaitsFor}; it serves http://127.0.0.1:10256/healthz once that network exists`,
    });
  }
}

/** HNSNetworkMissing: the CNI's network existed in this boot and is gone. */
function hnsNetworkRule(pass: DetectPass): void {
  const hns = pass.observations.hnsNetwork;
  if (!hns) return;
  pass.readings.set(
    NodeHealthCondition.HNSNetworkMissing,
    hns.expected && !hns.present
      ? {
          status: 'True',
          reason: NodeHealthReason.NetworkMissing,
          message: `HNS network ${hns.name} existed in this boot and is gone (Get-HnsNetwork); pods on this node have no network: the winfleet agent creates it again from its CNI config; pods that were on it stay without network until they are recreated (delete them), and if it stays missing, reboot the host`,
        }
      : {
          status: 'False',
          reason: NodeHealthReason.NetworkPresent,
          message: hns.present
            ? `HNS network ${hns.name} exists`
            : `HNS network ${hns.name} is not created yet (the CNI plugin creates it with the first pod)`,
        },
  );
}

/** ClockSkew: the local clock against the API server's Date header. */
function clockRule(pass: DetectPass): void {
  const { settings } = pass;
  const clock = pass.observations.clock;
  if (!clock) return;
  // The Date header has whole seconds: a second of skew is within its precision.
  const skewSeconds = (clock.localTime - clock.serverDate) / 1000;
  const allowed = settings.clockSkewSeconds + 1;
  pass.readings.set(
    NodeHealthCondition.ClockSkew,
    Math.abs(skewSeconds) > allowed
      ? {
          status: 'True',
          reason: NodeHealthReason.ClockSkewed,
          message: `This host's clock is ${formatSeconds(skewSeconds)} ${skewSeconds > 0 ? 'ahead of' : 'behind'} the API server's (its Date header), more than ${settings.clockSkewSeconds} s; certificates and tokens fail past a few minutes: the winfleet agent asks the Windows Time service to resync (w32tm /resync /force); if it stays off, fix the time source (w32tm /query /status)`,
        }
      : {
          status: 'False',
          reason: NodeHealthReason.ClockInSync,
          message: `This host's clock is within ${settings.clockSkewSeconds} s of the API server's`,
        },
  );
}

/** SystemDiskLow, and the SystemDiskLow Event once per episode below the Event threshold. */
function diskRule(pass: DetectPass): void {
  const { settings, state } = pass;
  const disk = pass.observations.systemDrive;
  if (!disk) return;
  const low = disk.freeBytes < settings.disk.conditionBelowBytes;
  pass.readings.set(
    NodeHealthCondition.SystemDiskLow,
    low
      ? {
          status: 'True',
          reason: NodeHealthReason.FreeSpaceLow,
          message: `System drive ${disk.path} has ${formatBytes(disk.freeBytes)} free, below ${formatBytes(settings.disk.conditionBelowBytes)}; free space (container images: crictl rmi --prune; C:\\k\\logs; Windows\\SoftwareDistribution\\Download) or grow the volume`,
        }
      : {
          status: 'False',
          reason: NodeHealthReason.FreeSpaceSufficient,
          message: `System drive ${disk.path} has ${formatBytes(disk.freeBytes)} free`,
        },
  );
  if (disk.freeBytes < settings.disk.eventBelowBytes) {
    if (!state.diskEventSent) {
      state.diskEventSent = true;
      pass.events.push({
        reason: NodeHealthEventReason.SystemDiskLow,
        type: 'Warning',
        message: `System drive ${disk.path} has ${formatBytes(disk.freeBytes)} free, below ${formatBytes(settings.disk.eventBelowBytes)}; below ${formatBytes(settings.disk.conditionBelowBytes)} the Node gets condition ${NodeHealthCondition.SystemDiskLow}: free space or grow the volume`,
      });
    }
  } else {
    state.diskEventSent = false;
  }
}

/** KubeletCertificateExpiring: little time left and past 90% of its lifetime (not renewing). */
function certificateRule(pass: DetectPass): void {
  const { settings, now } = pass;
  const cert = pass.observations.kubeletCertificate;
  if (!cert) return;
  const left = (cert.notAfter - now) / 1000;
  const lifetime = (cert.notAfter - cert.notBefore) / 1000;
  const expiring = left < settings.certificateExpirySeconds && left < lifetime * 0.1;
  pass.readings.set(
    NodeHealthCondition.KubeletCertificateExpiring,
    expiring
      ? {
          status: 'True',
          reason: NodeHealthReason.CertificateExpiring,
          message: `The kubelet's client certificate ${cert.path} ${left > 0 ? `expires in ${formatSeconds(left)}` : 'has expired'} (notAfter ${rfc3339(cert.notAfter)}) and was not renewed; check that the kubelet runs with certificate rotation and that its CSRs (signer kubernetes.io/kube-apiserver-client-kubelet) are approved: kubectl get csr`,
        }
      : {
          status: 'False',
          reason: NodeHealthReason.CertificateValid,
          message: `The kubelet's client certificate is valid until ${rfc3339(cert.notAfter)}`,
        },
  );
}

/** RebootPending: Windows servicing waits for a reboot. */
function rebootPendingRule(pass: DetectPass): void {
  const { observations } = pass;
  if (observations.rebootPending === undefined) return;
  pass.readings.set(
    NodeHealthCondition.RebootPending,
    observations.rebootPending
      ? {
          status: 'True',
          reason: NodeHealthReason.RebootRequired,
          message:
            'Windows servicing waits for a reboot (Component Based Servicing\\RebootPending or WindowsUpdate\\Auto Update\\RebootRequired); the pool reboots it safely in its maintenance window, or drain and reboot it',
        }
      : {
          status: 'False',
          reason: NodeHealthReason.NoRebootPending,
          message: 'Windows does not wait for a reboot',
        },
  );
}

/** A DefenderThreatDetected Event per detection not reported before (remembered in the state). */
function defenderRule(pass: DetectPass): void {
  const { state } = pass;
  for (const threat of pass.observations.defenderThreats ?? []) {
    const key = defenderDetectionKey(threat);
    if (state.reportedThreats.includes(key)) continue;
    state.reportedThreats = [...state.reportedThreats, key].slice(-maxRememberedThreats);
    const where = threat.resources.length > 0 ? ` in ${threat.resources.join(', ')}` : '';
    const when = threat.detectedAt > 0 ? `, detected ${rfc3339(threat.detectedAt)}` : '';
    pass.events.push({
      reason: NodeHealthEventReason.DefenderThreatDetected,
      type: 'Warning',
      message: `Microsoft Defender reports active threat ${threat.name || 'without a name'} (ThreatID ${threat.id}, severity ${threat.severity}, status ${threat.status}${when})${where}; investigate the host (Get-MpThreatDetection) and drain it if it is compromised`,
    });
  }
}

/**
 * Persistence: a reading that differs from the published status must be seen
 * consecutiveChecks times in a row; one of the same status resets the streak. Updates
 * `state.checks` and returns the condition types whose published status, reason or message changed.
 */
function persistReadings(pass: DetectPass): NodeHealthCondition[] {
  const { state } = pass;
  const changed: NodeHealthCondition[] = [];
  const at = rfc3339(pass.now);
  const needed = Math.max(1, Math.floor(pass.settings.consecutiveChecks));
  for (const [type, reading] of pass.readings) {
    const check = state.checks[type];
    const published = check?.condition;
    const next = nextCheckState(type, reading, check, needed, at);
    const after = next.condition;
    if (
      after &&
      (!published ||
        published.status !== after.status ||
        published.reason !== after.reason ||
        published.message !== after.message)
    )
      changed.push(type);
    state.checks[type] = next;
  }
  return changed;
}

/** One condition's next check state from its reading, given the streak `needed` to change. */
export function nextCheckState(
  type: NodeHealthCondition,
  reading: Reading,
  check: CheckState | undefined,
  needed: number,
  at: string,
): CheckState {
  const published = check?.condition;
  if (published && reading.status === published.status) {
    return { condition: { ...published, reason: reading.reason, message: reading.message } };
  }
  // Never published yet: healthy is published at once; a problem must persist like any
  // change (and nothing is published for the type meanwhile).
  const count = check?.pending?.status === reading.status ? check.pending.count + 1 : 1;
  return count >= needed || (!published && reading.status === 'False')
    ? { condition: { type, ...reading, lastTransitionTime: at } }
    : {
        ...(published ? { condition: published } : {}),
        pending: { status: reading.status, count },
      };
}
