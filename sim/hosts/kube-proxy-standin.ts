/**
 * The kube-proxy stand-in: what kube-proxy.exe (v1.36, kernelspace mode, cmd/kube-proxy/app and
 * pkg/proxy/winkernel) does on a simulated host, against the real API server, so that wrong
 * flags, a wrong environment or wrong credentials give what they give on Windows:
 * 1. parses its flags (parsePflag over the pinned kube-proxy's flags) and validates --proxy-mode and
 *    --cluster-cidr with the real messages;
 * 2. reads its kubeconfig from the simulated disk (none: the in-cluster config, which a Windows
 *    host does not have) and, with exactly those credentials, lists its own Node (the
 *    NodeManager: it waits until that list succeeds, then up to 30 s for the Node's addresses);
 * 3. takes the HNS network's name from --network-name, else KUBE_NETWORK as its process sees
 *    it; neither: exits 1 with "Environment variable KUBE_NETWORK and network-flag not
 *    initialized" (winkernel getNetworkName);
 * 4. removes every HNS load balancer (DeleteAllHnsLoadBalancerPolicy), then polls every second
 *    until the network exists (getNetworkInfo logs each miss);
 * 5. lists and watches Services and discovery.k8s.io/v1 EndpointSlices (without the
 *    service-proxy-name and headless labels) like a reflector: an error (a 403 with a node's
 *    credentials) is logged and retried with backoff, never fatal; it programs nothing until
 *    both are listed (isInitialized);
 * 6. programs one HNS load balancer per Service port and cluster IP (IPv4) to the ready
 *    endpoints' addresses (the serving ones when all terminate; the node's own ones under
 *    internalTrafficPolicy Local), none without endpoints, with winkernel's SourceVIP: on an
 *    Overlay network --source-vip, or the node's IP when an endpoint on another node is that
 *    node's provider address or lies outside every RemoteSubnetRoute (a "public" IP); elsewhere
 *    --source-vip as given (proxier.go syncProxyRules); at most once a second
 *    (--min-sync-period), and again every 30 s (--sync-period); when the network is gone or
 *    was re-created it removes its load balancers and programs them again at the next sync;
 * 7. stops when its service stops (exit 0); every API call is bounded and retried; nothing
 *    escapes the program unhandled.
 * Not modelled (docs/fidelity-ledger.md): NodePort, external and load-balancer IPs, session
 * affinity, DSR, the source VIP's own HNS endpoint and the remote endpoints winkernel creates on
 * an Overlay network (the load balancer names addresses, not HNS endpoint ids), dual stack,
 * health check and metrics servers, Events, the config file (--config).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { httpStatus } from '../../src/kube/client.ts';
import { cidrContains, parseIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import { reflect } from './api-reflector.ts';
import { FlagError, flagLists, type PflagList, parsePflag } from './flag-lists.ts';
import { parseGoBool } from './go-values.ts';
import { type HnsLoadBalancer, hnsProtocol } from './hns-networks.ts';
import {
  callOptions,
  type KubeCredentials,
  kubeConfigFor,
  readKubeconfig,
} from './kubelet-kubeconfig.ts';
import type { SimMachine } from './machine.ts';
import type { ProgramContext, SimProgram } from './sim-process.ts';

export interface KubeProxyStandInOptions {
  /** Each API call's timeout. Default 10 s. */
  apiTimeoutMs?: number;
  /**
   * The server-side timeout of each watch (timeoutSeconds), after which it is resumed. Default
   * 25 s: client-node ends a watch that is quiet for 30 s as failed (client-go uses 5 to 10 min).
   */
  watchTimeoutSeconds?: number;
  /** Reflector backoff after an error: first and longest wait. Default 800 ms and 30 s. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Interval of the HNS network poll. Default 1 s (winkernel getNetworkInfo). */
  networkPollMs?: number;
  /** How long to wait for the Node's addresses. Default 30 s (NodeManager nodeIPsTimeout). */
  nodeIPsTimeoutMs?: number;
  /** --min-sync-period's default: 1 s. */
  minSyncMs?: number;
  /** --sync-period's default: 30 s. */
  syncPeriodMs?: number;
}

/** What kube-proxy reads from its command line. */
export interface KubeProxyFlags {
  networkName?: string;
  kubeconfig?: string;
  hostnameOverride?: string;
  clusterCidr?: string;
  proxyMode?: string;
  /** --source-vip: required on an Overlay network (winkernel NewProxier). */
  sourceVip?: string;
  windowsService: boolean;
  verbosity: number;
  /** pflag's warnings for deprecated flags given. */
  warnings: string[];
}

/**
 * Parses kube-proxy's command line with parsePflag over the pinned kube-proxy's flags
 * (flag-lists.ts) and reads the flags the stand-in acts on. Throws FlagError with the real
 * message: pflag's for an unknown flag or a bad boolean, klog's Level (strconv.ParseInt) for
 * a bad --v, cobra's for a positional argument.
 */
export function readKubeProxyFlags(
  argv: readonly string[],
  list: PflagList = flagLists()['kube-proxy'],
): KubeProxyFlags {
  const parsed = parsePflag(list, argv);
  if (parsed.positional.length > 0) {
    throw new FlagError(
      `"kube-proxy" does not take any arguments, got [${parsed.positional.map((a) => JSON.stringify(a)).join(' ')}]`,
    );
  }
  const value = (name: string) => parsed.values.get(name);
  const level = value('v') ?? '0';
  if (!/^[+-]?\d+$/.test(level)) {
    throw new FlagError(
      `invalid argument "${level}" for "-v, --v" flag: strconv.ParseInt: parsing "${level}": invalid syntax`,
    );
  }
  return {
    networkName: value('network-name'),
    kubeconfig: value('kubeconfig'),
    hostnameOverride: value('hostname-override'),
    clusterCidr: value('cluster-cidr'),
    proxyMode: value('proxy-mode'),
    sourceVip: value('source-vip'),
    // parsePflag has refused any value ParseBool refuses.
    windowsService: parseGoBool(value('windows-service') ?? 'false') === true,
    verbosity: Number(level),
    warnings: parsed.warnings,
  };
}

/**
 * netutils.ParseCIDRSloppy (k8s.io/utils/net/parse.go, the Go 1.16 parser kept for old
 * configs): an IPv4 octet or the prefix length is any run of decimal digits (dtoi), so leading
 * zeros are accepted ("010.244.0.0/016" is 10.244.0.0/16), each octet at most 255 and the
 * prefix at most 32. IPv6 is checked by its shape only.
 */
function isCidr(value: string): boolean {
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(value);
  if (v4) {
    const numbers = v4.slice(1).map((part) => Number(part));
    return numbers.slice(0, 4).every((n) => n <= 255) && numbers[4]! <= 32;
  }
  return /^[0-9a-fA-F:]+:[0-9a-fA-F:]*\/(12[0-8]|1[01]\d|\d?\d)$/.test(value);
}

/** The validation errors kube-proxy gives these flags on Windows (pkg/proxy/apis/config/validation). */
export function validateKubeProxyFlags(flags: KubeProxyFlags): string[] {
  const errors: string[] = [];
  const mode = flags.proxyMode ?? '';
  if (mode !== '' && mode !== 'kernelspace') {
    errors.push(
      `KubeProxyConfiguration.Mode.ProxyMode: Invalid value: "${mode}": must be kernelspace or blank (blank means the most-available proxy [currently 'kernelspace'])`,
    );
  }
  if (flags.clusterCidr !== undefined && flags.clusterCidr !== '') {
    const cidrs = flags.clusterCidr.split(',');
    const path = 'KubeProxyConfiguration.DetectLocalConfiguration.ClusterCIDRs';
    if (cidrs.length > 2) {
      errors.push(
        `${path}: Invalid value: []string{${cidrs.map((c) => `"${c}"`).join(', ')}}: must be a either a single CIDR or dual-stack pair of CIDRs (e.g. [10.100.0.0/16, fde4:8dba:82e1::/48]`,
      );
    } else {
      cidrs.forEach((cidr, i) => {
        if (!isCidr(cidr)) {
          errors.push(
            `${path}[${i}]: Invalid value: "${cidr}": must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)`,
          );
        }
      });
    }
  }
  return errors;
}

/** Whether `ip` lies in `prefix` (both IPv4; false for anything else). */
function cidrContainsAddress(prefix: string, ip: string): boolean {
  const cidr = parseIpv4Cidr(prefix);
  const address = parseIpv4(ip);
  return cidr !== undefined && address !== undefined && cidrContains(cidr, address);
}

/** What the stand-in on a machine is doing, for tests: read with kubeProxyStatus(machine). */
export interface KubeProxyStatus {
  /** The pid of the kube-proxy that wrote this. */
  pid: number;
  phase: 'starting' | 'waiting-for-node' | 'waiting-for-network' | 'running' | 'exited';
  servicesSynced: boolean;
  endpointSlicesSynced: boolean;
  /** Completed syncs that programmed HNS. */
  syncs: number;
  /** Failed list or watch attempts, by resource ("services", "endpointslices", "nodes"). */
  failures: Record<string, number>;
  /** The last such failure's message, by resource. */
  lastFailure: Record<string, string>;
}

const statusKey = 'kube-proxy-status';

/** The status of the last kube-proxy started on `machine` (undefined before any). */
export function kubeProxyStatus(machine: SimMachine): KubeProxyStatus | undefined {
  const holder = machine.state<{ status?: KubeProxyStatus }>(statusKey, () => ({}));
  return holder.status && structuredClone(holder.status);
}

/** The exit code of a failed kube-proxy (cli.Run). */
const failedExitCode = 1;

/** A kube-proxy program with the given options. */
export function createKubeProxyStandIn(options: KubeProxyStandInOptions = {}): SimProgram {
  const settings: Settings = {
    apiTimeoutMs: options.apiTimeoutMs ?? 10_000,
    watchTimeoutSeconds: options.watchTimeoutSeconds ?? 25,
    retryMinMs: options.retryMinMs ?? 800,
    retryMaxMs: options.retryMaxMs ?? 30_000,
    networkPollMs: options.networkPollMs ?? 1000,
    nodeIPsTimeoutMs: options.nodeIPsTimeoutMs ?? 30_000,
    minSyncMs: options.minSyncMs ?? 1000,
    syncPeriodMs: options.syncPeriodMs ?? 30_000,
  };
  return async function kubeProxy(context: ProgramContext): Promise<number> {
    return new KubeProxyRun(context, settings).main();
  };
}

type Settings = Required<KubeProxyStandInOptions>;

/** One Service port's load balancer as desired: everything but the HNS ids. */
type DesiredLoadBalancer = Omit<HnsLoadBalancer, 'id' | 'networkId'>;

class KubeProxyRun {
  readonly #context: ProgramContext;
  readonly #options: Settings;
  readonly #machine: SimMachine;
  readonly #status: KubeProxyStatus;
  #nodeName = '';
  /** The Node's InternalIP and ExternalIP addresses, as the NodeManager read them. */
  #nodeIPs: string[] = [];
  /** --source-vip. */
  #sourceVip: string | undefined;
  #network?: { id: string; name: string };
  #kc!: k8s.KubeConfig;
  readonly #services = new Map<string, k8s.V1Service>();
  readonly #slices = new Map<string, k8s.V1EndpointSlice>();
  /** What this kube-proxy programmed: load balancer key → HNS id and what it holds. */
  readonly #programmed = new Map<string, { id: string; desired: DesiredLoadBalancer }>();
  #syncTimer?: NodeJS.Timeout;
  #lastSyncAt = 0;
  /** Past flag validation: errors now come from running the proxy server. */
  #serverStarted = false;

  constructor(context: ProgramContext, options: Settings) {
    this.#context = context;
    this.#options = options;
    this.#machine = context.machine;
    this.#status = {
      pid: context.pid,
      phase: 'starting',
      servicesSynced: false,
      endpointSlicesSynced: false,
      syncs: 0,
      failures: {},
      lastFailure: {},
    };
    this.#machine.state<{ status?: KubeProxyStatus }>(statusKey, () => ({})).status = this.#status;
  }

  #log(severity: 'I' | 'W' | 'E', source: string, message: string): void {
    const now = new Date();
    const stamp = `${String(now.getMonth() + 1).padStart(2, '0')}${String(now.getDate()).padStart(2, '0')} ${now.toISOString().slice(11, 23)}`;
    const line = `${severity}${stamp} ${String(this.#context.pid).padStart(7)} ${source}] ${message}\n`;
    if (severity === 'I') this.#context.stdout(line);
    else this.#context.stderr(line);
  }

  get #signal(): AbortSignal {
    return this.#context.signal;
  }

  async main(): Promise<number> {
    try {
      return await this.#run();
    } catch (error) {
      if (this.#signal.aborted) return 0;
      const message = (error as Error).message;
      if (this.#serverStarted) {
        this.#log('E', 'server.go:137', `"Error running ProxyServer" err="${message}"`);
      }
      this.#log('E', 'run.go:72', `"command failed" err="${message}"`);
      return failedExitCode;
    } finally {
      clearTimeout(this.#syncTimer);
      this.#status.phase = 'exited';
    }
  }

  async #run(): Promise<number> {
    const argv = this.#context.argv;
    let flags: KubeProxyFlags;
    try {
      flags = readKubeProxyFlags(argv);
    } catch (error) {
      if (!(error instanceof FlagError)) throw error;
      // A flag error comes before logging is set up: cobra's plain "Error:" line.
      this.#context.stderr(`Error: ${error.message}\n`);
      return failedExitCode;
    }
    for (const warning of flags.warnings) this.#context.stderr(`${warning}\n`);
    const invalid = validateKubeProxyFlags(flags);
    if (invalid.length > 0) throw new Error(`failed validate: ${invalid.join(', ')}`);
    this.#serverStarted = true;
    this.#nodeName = (flags.hostnameOverride?.trim() || this.#machine.hostname).toLowerCase();
    const credentials = await this.#credentials(flags.kubeconfig);
    this.#kc = kubeConfigFor(credentials);
    this.#log('I', 'server.go', `"Starting kube-proxy" node="${this.#nodeName}"`);
    await this.#waitForNode();
    const networkName = this.#networkName(flags.networkName);
    this.#log('I', 'proxier.go', '"Cleaning up old HNS policy lists"');
    this.#machine.hns.removeAllLoadBalancers();
    await this.#waitForNetwork(networkName);
    // winkernel NewProxier: an Overlay network needs --source-vip (v1.36.5 proxier.go).
    const network = this.#machine.hns.find(networkName);
    if (network?.type.toLowerCase() === 'overlay' && !flags.sourceVip)
      throw new Error('unable to create proxier: source-vip flag not set');
    this.#sourceVip = flags.sourceVip;
    this.#status.phase = 'running';
    this.#log('I', 'server.go', '"Starting endpoint slice config controller"');
    const services = this.#reflect<k8s.V1Service>(
      'services',
      '*v1.Service',
      '/api/v1/services',
      this.#services,
      (core, query) =>
        core.makeApiClient(k8s.CoreV1Api).listServiceForAllNamespaces(query, this.#call()),
      () => {
        this.#status.servicesSynced = true;
      },
    );
    const slices = this.#reflect<k8s.V1EndpointSlice>(
      'endpointslices',
      '*v1.EndpointSlice',
      '/apis/discovery.k8s.io/v1/endpointslices',
      this.#slices,
      (kc, query) =>
        kc.makeApiClient(k8s.DiscoveryV1Api).listEndpointSliceForAllNamespaces(query, this.#call()),
      () => {
        this.#status.endpointSlicesSynced = true;
      },
    );
    const periodic = setInterval(() => this.#requestSync(), this.#options.syncPeriodMs);
    try {
      await Promise.all([services, slices]);
    } finally {
      clearInterval(periodic);
    }
    this.#log('I', 'server.go', '"Stopping kube-proxy"');
    return 0;
  }

  #call(): k8s.ConfigurationOptions {
    return callOptions(this.#signal, this.#options.apiTimeoutMs);
  }

  // 2. Credentials and the Node.

  async #credentials(path: string | undefined): Promise<KubeCredentials> {
    if (!path) {
      this.#log(
        'I',
        'server.go',
        '"Neither kubeconfig file nor master URL was specified, falling back to in-cluster config"',
      );
      throw new Error(
        'unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
      );
    }
    if (!(await this.#machine.fs.stat(path))) {
      throw new Error(`GetFileAttributesEx ${path}: The system cannot find the file specified.`);
    }
    return readKubeconfig(this.#machine.fs, path);
  }

  /** NodeManager: its Node listed (retried until allowed), then its addresses awaited. */
  async #waitForNode(): Promise<void> {
    this.#status.phase = 'waiting-for-node';
    const core = this.#kc.makeApiClient(k8s.CoreV1Api);
    const fieldSelector = `metadata.name=${this.#nodeName}`;
    let backoff = this.#options.retryMinMs;
    let node: k8s.V1Node | undefined;
    for (;;) {
      this.#signal.throwIfAborted();
      try {
        node = (await core.listNode({ fieldSelector }, this.#call())).items[0];
        break;
      } catch (error) {
        this.#failed('nodes', '*v1.Node', error);
        backoff = await this.#backoff(backoff);
      }
    }
    const deadline = Date.now() + this.#options.nodeIPsTimeoutMs;
    while (!node?.status?.addresses?.length && Date.now() < deadline) {
      await sleep(this.#options.networkPollMs, undefined, { signal: this.#signal });
      try {
        node = (await core.listNode({ fieldSelector }, this.#call())).items[0];
      } catch (error) {
        this.#failed('nodes', '*v1.Node', error);
      }
    }
    if (!node) {
      this.#log(
        'E',
        'node.go:121',
        `"Timed out waiting for node to exist" node="${this.#nodeName}"`,
      );
    } else if (!node.status?.addresses?.length) {
      this.#log(
        'E',
        'node.go:123',
        `"Timed out waiting for node to be assigned IPs" node="${this.#nodeName}"`,
      );
    } else {
      const ips = node.status.addresses
        .filter((a) => a.type === 'InternalIP' || a.type === 'ExternalIP')
        .map((a) => a.address);
      this.#nodeIPs = ips;
      this.#log('I', 'server.go', `"Successfully retrieved NodeIPs" NodeIPs=[${ips.join(' ')}]`);
    }
  }

  // 3 and 4. The HNS network.

  #networkName(flag: string | undefined): string {
    if (flag) return flag;
    const fromEnvironment = this.#context.env.get('KUBE_NETWORK');
    if (fromEnvironment) return fromEnvironment;
    throw new Error(
      'unable to create proxier: Environment variable KUBE_NETWORK and network-flag not initialized',
    );
  }

  async #waitForNetwork(name: string): Promise<void> {
    this.#status.phase = 'waiting-for-network';
    for (;;) {
      const network = this.#machine.hns.find(name);
      if (network) {
        this.#network = { id: network.id, name: network.name };
        this.#log(
          'I',
          'proxier.go',
          `"Hns Network loaded" name="${network.name}" type="${network.type}"`,
        );
        return;
      }
      this.#log(
        'E',
        'proxier.go:231',
        `"Unable to find HNS Network specified, please check network name and CNI deployment" err="Network name not found" hnsNetworkName="${name}"`,
      );
      await sleep(this.#options.networkPollMs, undefined, { signal: this.#signal });
    }
  }

  // 5. Reflectors.

  /** How a list or watch failure reads in kube-proxy's log: the API server's message. */
  #failed(resource: string, type: string, error: unknown): void {
    if (this.#signal.aborted) return;
    const status = httpStatus(error);
    const body = (error as { body?: unknown }).body;
    let detail = (error as Error).message;
    try {
      const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: string };
      if (parsed?.message) detail = parsed.message;
    } catch {
      // Not JSON: keep the client's message.
    }
    const message = `failed to list ${type}: ${detail}`;
    this.#status.failures[resource] = (this.#status.failures[resource] ?? 0) + 1;
    this.#status.lastFailure[resource] = message;
    this.#log(
      'E',
      'reflector.go:205',
      `"Failed to watch" err="${message}" logger="UnhandledError" type="${type}" status=${status ?? 'none'}`,
    );
  }

  async #backoff(current: number): Promise<number> {
    await sleep(current, undefined, { signal: this.#signal });
    return Math.min(current * 2, this.#options.retryMaxMs);
  }

  /**
   * Lists then watches `path` into `store` until the process stops (api-reflector.ts); each
   * error is logged and the list is tried again after a backoff. `synced` is called after each
   * successful list.
   */
  #reflect<T extends k8s.KubernetesObject>(
    resource: string,
    type: string,
    path: string,
    store: Map<string, T>,
    list: (
      kc: k8s.KubeConfig,
      query: { labelSelector?: string },
    ) => Promise<{ items: T[]; metadata?: k8s.V1ListMeta }>,
    synced: () => void,
  ): Promise<void> {
    return reflect<T>({
      kc: this.#kc,
      path,
      labelSelector: '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless',
      list: (query) => list(this.#kc, query),
      store,
      signal: this.#signal,
      watchTimeoutSeconds: this.#options.watchTimeoutSeconds,
      retryMinMs: this.#options.retryMinMs,
      retryMaxMs: this.#options.retryMaxMs,
      onSynced: synced,
      onChange: () => this.#requestSync(),
      onFailure: (error) => this.#failed(resource, type, error),
    });
  }

  // 6. Programming HNS.

  /** Schedules a sync no sooner than --min-sync-period after the last one. */
  #requestSync(): void {
    if (this.#syncTimer || this.#signal.aborted) return;
    const wait = Math.max(0, this.#lastSyncAt + this.#options.minSyncMs - Date.now());
    this.#syncTimer = setTimeout(() => {
      this.#syncTimer = undefined;
      this.#lastSyncAt = Date.now();
      try {
        this.#sync();
      } catch (error) {
        this.#log(
          'E',
          'proxier.go',
          `"Failed to sync proxy rules" err="${(error as Error).message}"`,
        );
      }
    }, wait);
  }

  #sync(): void {
    if (!this.#status.servicesSynced || !this.#status.endpointSlicesSynced) {
      this.#log(
        'I',
        'proxier.go:1133',
        '"Not syncing hns until Services and Endpoints have been received from master"',
      );
      return;
    }
    const network = this.#network!;
    const current = this.#machine.hns.find(network.name);
    if (!current || current.id !== network.id) {
      this.#log(
        'I',
        'proxier.go:1156',
        `"The HNS network is not present or has changed since the last sync, please check the CNI deployment" hnsNetworkName="${network.name}"`,
      );
      for (const { id } of this.#programmed.values()) this.#machine.hns.removeLoadBalancer(id);
      this.#programmed.clear();
      if (current) this.#network = { id: current.id, name: current.name };
      return;
    }
    const desired = this.#desiredLoadBalancers();
    for (const [key, { id, desired: was }] of this.#programmed) {
      const want = desired.get(key);
      if (!want || JSON.stringify(want) !== JSON.stringify(was)) {
        this.#machine.hns.removeLoadBalancer(id);
        this.#programmed.delete(key);
      }
    }
    for (const [key, want] of desired) {
      if (this.#programmed.has(key)) continue;
      const lb = this.#machine.hns.createLoadBalancer({ ...want, networkId: network.id });
      this.#programmed.set(key, { id: lb.id, desired: want });
      this.#log(
        'I',
        'proxier.go:1482',
        `"Hns LoadBalancer resource created for cluster ip resources" clusterIP="${want.frontendVips[0]}" port=${want.externalPort} endpoints=[${want.endpoints.join(' ')}] hnsID="${lb.id}"`,
      );
    }
    this.#status.syncs++;
  }

  /** One load balancer per Service port and IPv4 cluster IP that has endpoints to send to. */
  #desiredLoadBalancers(): Map<string, DesiredLoadBalancer> {
    const desired = new Map<string, DesiredLoadBalancer>();
    for (const service of this.#services.values()) {
      const spec = service.spec;
      if (!spec || spec.type === 'ExternalName') continue;
      const clusterIPs = (spec.clusterIPs ?? (spec.clusterIP ? [spec.clusterIP] : [])).filter(
        (ip) => ip !== 'None' && /^\d+\.\d+\.\d+\.\d+$/.test(ip),
      );
      const slices = [...this.#slices.values()].filter(
        (s) =>
          s.metadata?.namespace === service.metadata?.namespace &&
          s.metadata?.labels?.['kubernetes.io/service-name'] === service.metadata?.name &&
          s.addressType === 'IPv4',
      );
      for (const port of spec.ports ?? []) {
        const protocol = port.protocol ?? 'TCP';
        const number = hnsProtocol[protocol as keyof typeof hnsProtocol];
        if (number === undefined) continue;
        const backends = this.#endpointsFor(
          slices,
          port.name ?? '',
          protocol,
          spec.internalTrafficPolicy,
        );
        if (backends.addresses.length === 0) continue;
        const sourceVip = this.#sourceVipFor(backends.remote);
        for (const ip of clusterIPs) {
          desired.set(`${protocol}/${ip}:${port.port}`, {
            frontendVips: [ip],
            protocol: number,
            externalPort: port.port,
            internalPort: backends.port,
            endpoints: backends.addresses,
            ...(sourceVip ? { sourceVip } : {}),
          });
        }
      }
    }
    return desired;
  }

  /**
   * The load balancer's SourceVIP as winkernel chooses it for endpoints on other nodes
   * (`remote`): on an Overlay network --source-vip, unless one of them is a remote node's
   * provider address or in no RemoteSubnetRoute's prefix (findRemoteSubnetProviderAddress),
   * then the node's IP; on other networks --source-vip as given.
   */
  #sourceVipFor(remote: string[]): string | undefined {
    const network = this.#network && this.#machine.hns.find(this.#network.name);
    if (network?.type.toLowerCase() !== 'overlay') return this.#sourceVip;
    const routes = this.#machine.hns
      .policies(network.id)
      .flatMap((p) => (p.Type === 'RemoteSubnetRoute' ? [p.Settings] : []));
    const nodeOrPublic = remote.some((ip) => {
      const route = routes.find(
        (r) => r.ProviderAddress === ip || cidrContainsAddress(r.DestinationPrefix, ip),
      );
      return !route || route.ProviderAddress === ip;
    });
    return nodeOrPublic ? (this.#nodeIPs[0] ?? this.#sourceVip) : this.#sourceVip;
  }

  /** The endpoints a Service port sends to, as winkernel picks them. */
  #endpointsFor(
    slices: k8s.V1EndpointSlice[],
    portName: string,
    protocol: string,
    internalTrafficPolicy: string | undefined,
  ): { port: number; addresses: string[]; remote: string[] } {
    const candidates: {
      address: string;
      local: boolean;
      port: number;
      ready: boolean;
      serving: boolean;
      terminating: boolean;
    }[] = [];
    for (const slice of slices) {
      const port = slice.ports?.find(
        (p) => (p.name ?? '') === portName && (p.protocol ?? 'TCP') === protocol,
      );
      if (port?.port === undefined) continue;
      for (const endpoint of slice.endpoints ?? []) {
        const address = endpoint.addresses[0];
        if (!address) continue;
        if (internalTrafficPolicy === 'Local' && endpoint.nodeName !== this.#nodeName) continue;
        const terminating = endpoint.conditions?.terminating ?? false;
        const ready = (endpoint.conditions?.ready ?? true) && !terminating;
        const serving = endpoint.conditions?.serving ?? endpoint.conditions?.ready ?? true;
        const local = endpoint.nodeName === this.#nodeName;
        candidates.push({ address, local, port: port.port, ready, serving, terminating });
      }
    }
    let chosen = candidates.filter((c) => c.ready);
    // All endpoints terminating: send to the ones still serving (winkernel's allEndpointsTerminating).
    if (chosen.length === 0 && candidates.length > 0 && candidates.every((c) => c.terminating)) {
      chosen = candidates.filter((c) => c.serving);
    }
    const addresses = [...new Set(chosen.map((c) => c.address))].sort();
    const remote = [...new Set(chosen.filter((c) => !c.local).map((c) => c.address))].sort();
    return { port: chosen[0]?.port ?? 0, addresses, remote };
  }
}
