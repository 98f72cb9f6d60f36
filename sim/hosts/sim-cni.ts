/**
 * The pod network of a simulated Windows host: what containerd's CRI, Microsoft's sdnbridge CNI
 * plugin and host-local IPAM do on Windows, against the host's own files. A host whose CNI
 * config is missing, names a plugin it does not have or hands out another node's subnet gets
 * what Windows gives: no pod network, a sandbox that fails, duplicate pod IPs.
 *
 * Modelled on the versions the payload pins:
 * - containerd v2.4.2 (internal/cri/config, plugins/cri/runtime/plugin.go): the CNI directories
 *   come from its config file (version 1, 2 or 3; `bin_dir` of version 1 and 2 becomes
 *   `bin_dirs`), else its Windows defaults under C:\Program Files\containerd\cni.
 * - go-cni v1.1.14 (loadFromConfDir): the first of the .conf, .conflist and .json files in byte
 *   order is the pod network (max_conf_num 1); with none, or an invalid first one, the runtime's
 *   NetworkReady is false with "cni plugin not initialized".
 * - libcni: each plugin of the list runs as <type>.exe found in the bin directories.
 * - sdnbridge (windows-container-networking v0.3.2, common/core/network.go): hands its IPAM
 *   plugin only `type`, `subnet` and `routes` of `ipam` (it re-serializes its IpamConfig), and
 *   creates the HNS L2Bridge network named by the config on first use, with the subnet and the
 *   gateway of routes[0] (else the subnet's first address); an existing network is used as is.
 * - host-local (containernetworking/plugins v1.9.1, plugins/ipam/host-local): one file per
 *   address in C:\var\lib\cni\networks\<network>\ holding "<container id>\r\n<ifname>", the last
 *   address in last_reserved_ip.0, round robin from it, the gateway (the subnet's first address
 *   unless given, and sdnbridge never gives it) never handed out, the range from the first
 *   address to the one before broadcast; released by container id.
 */
import { createHash } from 'node:crypto';
import { parse as parseToml } from 'smol-toml';
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import {
  cidrContains,
  formatIpv4,
  formatIpv4Cidr,
  type Ipv4Cidr,
  lastAddress,
  parseIpv4,
  parseIpv4Cidr,
} from '../../src/net/ipv4-cidr.ts';
import type { SimFileSystem } from './file-system.ts';
import { errorCode } from './file-system-error.ts';
import type { SimMachine } from './machine.ts';
import { formatWindowsPath, windowsPathSegments } from './windows-path.ts';

/** The interface name containerd's CRI gives the first network (prefix "eth", index 0). */
export const podInterfaceName = 'eth0';
/** host-local's data directory on Windows ("/var/lib/cni/networks" on the current drive). */
export const hostLocalDataDir = 'C:\\var\\lib\\cni\\networks';
/** containerd's Windows defaults (%ProgramFiles%\containerd\cni\{conf,bin}). */
export const containerdDefaultCniDirs: CniDirs = {
  confDir: 'C:\\Program Files\\containerd\\cni\\conf',
  binDirs: ['C:\\Program Files\\containerd\\cni\\bin'],
};
/** What containerd's CRI reports while it has no usable CNI config. */
export const cniNotInitialized = 'cni plugin not initialized';

/** Where containerd's CRI looks for CNI configs and plugins. */
export interface CniDirs {
  confDir: string;
  binDirs: string[];
}

/** A CNI network config list, as libcni loads it. */
export interface CniNetwork {
  /** The file it came from. */
  file: string;
  name: string;
  cniVersion: string;
  /** Each plugin's config, with the list's name and cniVersion injected (as libcni does). */
  plugins: Record<string, unknown>[];
}

/** Whether the runtime has a pod network, and which; `detail` says why not. */
export type NetworkStatus =
  | { ready: true; network: CniNetwork }
  | { ready: false; message: string; detail: string };

/** A pod sandbox's address on the pod network. */
export interface SandboxAddress {
  ip: string;
  /** The address with the subnet's prefix length, e.g. 10.244.1.2/24. */
  cidr: string;
  gateway: string;
  /** The HNS network the endpoint is on. */
  network: string;
}

/**
 * The payload's flannel CNI plugin: containernetworking/plugins v0.9.1 plugins/meta/flannel
 * (flannel.go, flannel_windows.go), the last release that has it; flannel-io/cni-plugin, where
 * it moved, is refused by the module proxy. Its defaults, /run/flannel/subnet.env and
 * /var/lib/cni/flannel, are on the current drive (winfleet's config names both).
 */
export const flannelSubnetFile = 'C:\\run\\flannel\\subnet.env';
export const flannelDataDir = 'C:\\var\\lib\\cni\\flannel';
/**
 * The CNI spec versions flannel.exe v0.9.1 supports (its CNI library v0.8.1, version.All), as
 * it answers CNI_COMMAND=VERSION under Wine; skel refuses a config of any other before ADD or
 * DEL runs.
 */
export const flannelPluginVersions = ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0'];

/** What flannel's CNI plugin reads from the subnet file flanneld writes (IPv4 only). */
export interface FlannelSubnetEnv {
  network: Ipv4Cidr;
  subnet: Ipv4Cidr;
  mtu: number;
  ipMasq: boolean;
}

/**
 * Reads subnet.env as flannel's CNI plugin v0.9.1 does (loadFlannelSubnetEnv): lines split at
 * the first `=`, neither side trimmed; FLANNEL_NETWORK and FLANNEL_SUBNET through
 * net.ParseCIDR (one CIDR each; 10.244.3.1/24 is the subnet 10.244.3.0/24), FLANNEL_MTU through
 * strconv.ParseUint; a key missing is an error naming the file and every missing key.
 */
export function parseFlannelSubnetEnv(
  text: string,
  file: string = flannelSubnetFile,
): FlannelSubnetEnv {
  let network: Ipv4Cidr | undefined;
  let subnet: Ipv4Cidr | undefined;
  let mtu: number | undefined;
  let ipMasq: boolean | undefined;
  // bufio.ScanLines: lines end at \n, a \r before it dropped.
  for (const line of text.split('\n').map((l) => l.replace(/\r$/, ''))) {
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    const cidr = (text: string) => {
      const parsed = parseIpv4Cidr(text);
      if (!parsed) throw new Error(`invalid CIDR address: ${text}`);
      return { ...parsed, address: parsed.network };
    };
    if (key === 'FLANNEL_NETWORK') network = cidr(value);
    if (key === 'FLANNEL_SUBNET') subnet = cidr(value);
    if (key === 'FLANNEL_MTU') {
      if (!/^[0-9]+$/.test(value) || Number(value) > 0xffffffff)
        throw new Error(`strconv.ParseUint: parsing ${JSON.stringify(value)}: invalid syntax`);
      mtu = Number(value);
    }
    if (key === 'FLANNEL_IPMASQ') ipMasq = value === 'true';
  }
  const missing = [
    ...(network ? [] : ['FLANNEL_NETWORK', 'FLANNEL_IPV6_NETWORK']),
    ...(subnet ? [] : ['FLANNEL_SUBNET', 'FLANNEL_IPV6_SUBNET']),
    ...(mtu === undefined ? ['FLANNEL_MTU'] : []),
    ...(ipMasq === undefined ? ['FLANNEL_IPMASQ'] : []),
  ];
  if (missing.length > 0) throw new Error(`${file} is missing ${missing.join(', ')}`);
  return { network: network!, subnet: subnet!, mtu: mtu!, ipMasq: ipMasq! };
}

/**
 * skel's refusal of a config whose cniVersion flannel.exe does not support, as libcni words a
 * plugin's error (its msg, then "; " and its details).
 */
function flannelVersionError(cniVersion: string): string | undefined {
  if (flannelPluginVersions.includes(cniVersion)) return undefined;
  return `incompatible CNI versions; config is ${JSON.stringify(cniVersion)}, plugin supports [${flannelPluginVersions.map((v) => JSON.stringify(v)).join(' ')}]`;
}

/** A CNI plugin failure, worded as libcni reports it to containerd. */
export class CniPluginError extends Error {}

type Table = Record<string, unknown>;

function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The CNI directories containerd uses with this config file (its text; undefined when there is
 * none, which containerd accepts). Throws, as containerd does at start, for a file it cannot
 * load.
 */
export function containerdCniDirs(toml: string | undefined, file = 'config.toml'): CniDirs {
  if (toml === undefined) return { ...containerdDefaultCniDirs };
  let config: Table;
  try {
    config = parseToml(toml) as Table;
  } catch (error) {
    throw new Error(`failed to load TOML from ${file}: ${(error as Error).message}`);
  }
  const version = config.version ?? 1;
  if (version !== 1 && version !== 2 && version !== 3) {
    throw new Error(
      `expected containerd config version equal to or less than \`3\`, got \`${String(version)}\``,
    );
  }
  const plugins = isTable(config.plugins) ? config.plugins : {};
  const criName = { 1: 'cri', 2: 'io.containerd.grpc.v1.cri', 3: 'io.containerd.cri.v1.runtime' }[
    version
  ];
  const cri = plugins[criName];
  const cni = isTable(cri) && isTable(cri.cni) ? cri.cni : {};
  const confDir = typeof cni.conf_dir === 'string' ? cni.conf_dir : undefined;
  let binDirs: string[] | undefined;
  if (Array.isArray(cni.bin_dirs) && cni.bin_dirs.every((d) => typeof d === 'string')) {
    binDirs = cni.bin_dirs as string[];
  }
  // Migrated from versions 1 and 2 only when bin_dirs is not set.
  if (version < 3 && !binDirs?.length && typeof cni.bin_dir === 'string') binDirs = [cni.bin_dir];
  return {
    confDir: confDir ?? containerdDefaultCniDirs.confDir,
    binDirs: binDirs?.length ? binDirs : [...containerdDefaultCniDirs.binDirs],
  };
}

/** The value of containerd's --config (or -c) flag in a command line's arguments. */
export function containerdConfigFlag(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    for (const flag of ['--config', '-config', '-c', '--c']) {
      if (arg === flag) return args[i + 1];
      if (arg.startsWith(`${flag}=`)) return arg.slice(flag.length + 1);
    }
  }
  return undefined;
}

const configExtensions = ['.conf', '.conflist', '.json'];

function byteOrder(a: string, b: string): number {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return Buffer.compare(x, y);
}

/**
 * The pod network containerd's CRI would load from `dirs.confDir`: the first config file in
 * byte order, as a config list. Not ready when there is none or it is invalid (go-cni does not
 * go on to the next file).
 */
export async function loadCniNetwork(fs: SimFileSystem, dirs: CniDirs): Promise<NetworkStatus> {
  const notReady = (detail: string): NetworkStatus => ({
    ready: false,
    message: cniNotInitialized,
    detail,
  });
  let names: string[];
  try {
    names = (await fs.list(dirs.confDir))
      .filter((e) => e.kind === 'file')
      .map((e) => e.name)
      .filter((n) => configExtensions.some((ext) => n.toLowerCase().endsWith(ext)));
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
    names = [];
  }
  if (names.length === 0) {
    return notReady(`no network config found in ${dirs.confDir}: ${cniNotInitialized}`);
  }
  const first = names.sort(byteOrder)[0]!;
  const file = formatWindowsPath([...windowsPathSegments(dirs.confDir), first]);
  const text = (await fs.readFile(file)).toString('utf8');
  try {
    return { ready: true, network: parseNetworkConfig(text, file) };
  } catch (error) {
    return notReady(`${(error as Error).message}: invalid cni config`);
  }
}

/** A config list (.conflist) or a single network config (.conf, .json) as a config list. */
export function parseNetworkConfig(text: string, file: string): CniNetwork {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`failed to load CNI config file ${file}: ${(error as Error).message}`);
  }
  if (!isTable(json)) throw new Error(`failed to load CNI config file ${file}: not an object`);
  const cniVersion = typeof json.cniVersion === 'string' ? json.cniVersion : '';
  if (file.toLowerCase().endsWith('.conflist')) {
    if (typeof json.name !== 'string' || json.name === '') {
      throw new Error(
        `failed to load CNI config list file ${file}: error parsing configuration list: no name`,
      );
    }
    if (!Array.isArray(json.plugins)) {
      throw new Error(
        `failed to load CNI config list file ${file}: error parsing configuration list: no 'plugins' key`,
      );
    }
    if (json.plugins.length === 0) {
      throw new Error(`CNI config list in config file ${file} has no networks, skipping`);
    }
    const name = json.name;
    const plugins = json.plugins.map((plugin, i) => {
      if (!isTable(plugin) || typeof plugin.type !== 'string' || plugin.type === '') {
        throw new Error(
          `failed to load CNI config list file ${file}: failed to parse plugin config ${i}: no 'type'`,
        );
      }
      return { ...plugin, name, cniVersion };
    });
    return { file, name, cniVersion, plugins };
  }
  if (typeof json.type !== 'string' || json.type === '') {
    throw new Error(`network type not found in ${file}`);
  }
  const name = typeof json.name === 'string' ? json.name : '';
  return { file, name, cniVersion, plugins: [{ ...json }] };
}

/** The runtime's pod network: where containerd looks and what it found there. */
export interface RuntimeNetwork {
  status: NetworkStatus;
  dirs: CniDirs;
}

/**
 * The pod network of the containerd running on `machine` (its --config file's CNI directories),
 * or undefined when no containerd runs.
 */
export async function runtimeNetwork(machine: SimMachine): Promise<RuntimeNetwork | undefined> {
  const containerd = machine.processes().find((p) => p.imageName === 'containerd.exe' && p.alive);
  if (!containerd) return undefined;
  const configFile = containerdConfigFlag(splitServiceCommandLine(containerd.commandLine).args);
  let dirs: CniDirs;
  try {
    const text = configFile ? await machine.fs.tryReadFile(configFile) : undefined;
    dirs = containerdCniDirs(text?.toString('utf8'), configFile);
  } catch (error) {
    return {
      status: { ready: false, message: cniNotInitialized, detail: (error as Error).message },
      dirs: { ...containerdDefaultCniDirs },
    };
  }
  return { status: await loadCniNetwork(machine.fs, dirs), dirs };
}

/** The sandbox id the simulated runtime gives a pod: stable, so a restarted kubelet finds it. */
export function sandboxIdFor(podUid: string): string {
  return createHash('sha256').update(`sandbox:${podUid}`).digest('hex');
}

/** What `add` and `del` are asked for. */
export interface SandboxRequest {
  network: CniNetwork;
  dirs: CniDirs;
  containerId: string;
}

interface HostLocalRange {
  subnet: Ipv4Cidr;
  gateway: number;
  start: number;
  end: number;
}

/**
 * The CNI plugins of one simulated host. Calls are serialized, as host-local's file lock does
 * for the plugin processes of one host.
 */
export class SimCni {
  readonly #machine: SimMachine;
  #queue: Promise<unknown> = Promise.resolve();
  /** DELs still to interrupt after the address's release (interruptDels). */
  #interruptedDels = 0;

  /**
   * A fault: the next `times` CNI DELs stop after host-local released the address and before the
   * HNS endpoint is removed, as a host that crashes or reboots mid-teardown leaves them
   * (win-overlay's cmdDel runs ipam.ExecDel before it removes the endpoint:
   * containernetworking/plugins v1.9.1 plugins/main/windows/win-overlay). The DEL reports
   * nothing, as the runtime that never heard back forgets the sandbox: the endpoint stays, with
   * an address host-local may hand out again.
   */
  interruptDels(times = 1): void {
    this.#interruptedDels = Math.max(0, Math.floor(times));
  }

  /** Whether this DEL is one to interrupt (counting it). */
  #interrupting(): boolean {
    if (this.#interruptedDels <= 0) return false;
    this.#interruptedDels--;
    return true;
  }

  constructor(machine: SimMachine) {
    this.#machine = machine;
  }

  /** The per-machine instance. */
  static of(machine: SimMachine): SimCni {
    return machine.state('sim-cni', () => new SimCni(machine));
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work);
    this.#queue = run.catch(() => {});
    return run;
  }

  /** CNI ADD for a pod sandbox: its address on the network. Throws CniPluginError. */
  add(request: SandboxRequest): Promise<SandboxAddress> {
    return this.#serialized(async () => {
      const [plugin] = request.network.plugins;
      if (plugin?.type === 'flannel') return this.#flannelAdd(request, plugin);
      const sdnbridge = await this.#sdnbridge(request, plugin!, 'add');
      return sdnbridge.add();
    });
  }

  /** CNI DEL for a pod sandbox: releases its address. Throws CniPluginError. */
  del(request: SandboxRequest): Promise<void> {
    return this.#serialized(async () => {
      const [plugin] = request.network.plugins;
      if (plugin?.type === 'flannel') return this.#flannelDel(request, plugin);
      const sdnbridge = await this.#sdnbridge(request, plugin!, 'delete');
      await sdnbridge.del();
    });
  }

  /**
   * flannel's CNI plugin on Windows (containernetworking/plugins v0.9.1 plugins/meta/flannel:
   * skel's version check, cmdAdd, flannel_windows.go doCmdAdd): a config of a spec version it
   * does not support refused; the subnet file's subnet as host-local's, the delegate named after
   * the network (win-bridge unless it says) with the subnet file's ipMasq, the network as
   * ipMasqNetwork and the config's cniVersion (0.2.0 without one), its config kept in the data
   * directory for DEL; then win-overlay (containernetworking/plugins
   * v1.9.1 plugins/main/windows/win-overlay cmdHnsAdd/cmdHcnAdd): the HNS network of that name
   * must exist and be Overlay; host-local hands out the address; the endpoint (MAC 0E-2A-<the
   * address's bytes>) gets the network's gateway and the ProviderAddress policy of the
   * network's management IP. Or win-bridge (v1.9.1 plugins/main/windows/win-bridge cmdHnsAdd/
   * cmdHcnAdd): the network must be L2Bridge or L2Tunnel; host-local hands out the address; the
   * endpoint's gateway is the address's network plus 2 (flannel host-gw's bridge endpoint).
   * Neither plugin's endpoint policies are modelled (docs/fidelity-ledger.md).
   */
  async #flannelAdd(request: SandboxRequest, plugin: Table): Promise<SandboxAddress> {
    const { network, dirs, containerId } = request;
    const fail = (type: string, message: string): never => {
      throw new CniPluginError(
        `plugin type=${JSON.stringify(type)} name=${JSON.stringify(network.name)} failed (add): ${message}`,
      );
    };
    if (network.plugins.length !== 1)
      fail(
        'flannel',
        `the simulated host models a config list of one plugin; ${network.file} has ${network.plugins.length}`,
      );
    if (!(await this.#findPlugin('flannel', dirs.binDirs)))
      fail('flannel', `failed to find plugin "flannel" in path [${dirs.binDirs.join(' ')}]`);
    const incompatible = flannelVersionError(network.cniVersion);
    if (incompatible) fail('flannel', incompatible);
    const subnetFile =
      typeof plugin.subnetFile === 'string' ? plugin.subnetFile : flannelSubnetFile;
    const text = await this.#machine.fs.tryReadFile(subnetFile);
    let env: FlannelSubnetEnv;
    try {
      if (!text) {
        // os.Open's error as Windows words it: the file, or a directory on its way, missing.
        const parent = formatWindowsPath(windowsPathSegments(subnetFile).slice(0, -1));
        const missing =
          (await this.#machine.fs.stat(parent))?.kind === 'directory' ? 'file' : 'path';
        throw new Error(`open ${subnetFile}: The system cannot find the ${missing} specified.`);
      }
      env = parseFlannelSubnetEnv(text.toString('utf8'), subnetFile);
    } catch (error) {
      // v0.9.1 returns loadFlannelSubnetEnv's error as it is.
      return fail('flannel', (error as Error).message);
    }
    const delegate = isTable(plugin.delegate) ? { ...plugin.delegate } : {};
    if ('name' in delegate)
      fail('flannel', "'delegate' dictionary must not have 'name' field, it'll be set by flannel");
    if ('ipam' in delegate)
      fail('flannel', "'delegate' dictionary must not have 'ipam' field, it'll be set by flannel");
    const type = typeof delegate.type === 'string' ? delegate.type : 'win-bridge';
    if (!(await this.#findPlugin(type, dirs.binDirs)))
      fail(
        type,
        `failed to find plugin ${JSON.stringify(type)} in path [${dirs.binDirs.join(' ')}]`,
      );
    if (type !== 'win-overlay' && type !== 'win-bridge')
      fail(
        type,
        `the simulated host models flannel with win-overlay and win-bridge only, not ${JSON.stringify(type)}`,
      );
    const dataDir = typeof plugin.dataDir === 'string' ? plugin.dataDir : flannelDataDir;
    await this.#machine.fs.mkdir(dataDir, { recursive: true });
    await this.#machine.fs.writeFile(
      formatWindowsPath([...windowsPathSegments(dataDir), containerId]),
      JSON.stringify({
        ...delegate,
        ...(isTable(plugin.runtimeConfig) ? { runtimeConfig: plugin.runtimeConfig } : {}),
        name: network.name,
        type,
        ipMasq: env.ipMasq,
        ipMasqNetwork: formatIpv4Cidr(env.network),
        cniVersion: network.cniVersion || '0.2.0',
        ipam: { type: 'host-local', subnet: formatIpv4Cidr(env.subnet) },
      }),
    );
    const hnsNetwork = this.#machine.hns.find(network.name);
    if (!hnsNetwork)
      fail(
        type,
        `error while GETHNSNewtorkByName(${network.name}): Network name "${network.name}" not found`,
      );
    const hnsType = hnsNetwork!.type.toLowerCase();
    if (
      type === 'win-overlay'
        ? hnsType !== 'overlay'
        : hnsType !== 'l2bridge' && hnsType !== 'l2tunnel'
    )
      fail(type, `network ${network.name} is of an unexpected type: ${hnsNetwork!.type}`);
    if (!(await this.#findPlugin('host-local', dirs.binDirs)))
      fail(
        type,
        `error while ipam.ExecAdd: failed to find plugin "host-local" in path [${dirs.binDirs.join(' ')}]`,
      );
    const subnet = env.subnet;
    const range: HostLocalRange = {
      subnet,
      gateway: subnet.network + 1,
      start: subnet.network + 1,
      end: lastAddress(subnet) - 1,
    };
    const ip = await new HostLocalStore(this.#machine.fs, network.name)
      .allocate(containerId, podInterfaceName, range)
      .catch((error: unknown) =>
        fail(type, `error while ipam.ExecAdd: ${(error as Error).message}`),
      );
    this.#machine.hns.ensureEndpoint(hnsNetwork!.id, containerId, formatIpv4(ip));
    // win-overlay: the network's gateway; win-bridge: the address's network plus 2, the host's
    // bridge endpoint (win-bridge_windows.go processEndpointArgs: "needs to be x.2").
    const gateway =
      type === 'win-bridge'
        ? formatIpv4(subnet.network + 2)
        : (this.#machine.hns.subnets(hnsNetwork!.id)[0]?.gateway ?? formatIpv4(subnet.network + 1));
    return {
      ip: formatIpv4(ip),
      cidr: `${formatIpv4(ip)}/${subnet.prefix}`,
      gateway,
      network: network.name,
    };
  }

  /** DEL: the delegate's config from the data directory (none: nothing to do, per the spec). */
  async #flannelDel(request: SandboxRequest, plugin: Table): Promise<void> {
    const { network, containerId } = request;
    const incompatible = flannelVersionError(network.cniVersion);
    if (incompatible)
      throw new CniPluginError(
        `plugin type="flannel" name=${JSON.stringify(network.name)} failed (delete): ${incompatible}`,
      );
    const dataDir = typeof plugin.dataDir === 'string' ? plugin.dataDir : flannelDataDir;
    const scratch = formatWindowsPath([...windowsPathSegments(dataDir), containerId]);
    if (!(await this.#machine.fs.stat(scratch))) return;
    // win-overlay's cmdDel: the address is released first, then the endpoint removed.
    await new HostLocalStore(this.#machine.fs, network.name).release(containerId, podInterfaceName);
    if (this.#interrupting()) return;
    this.#machine.hns.removeEndpointsOf(containerId);
    await this.#machine.fs.remove(scratch, { missingOk: true });
  }

  async #findPlugin(type: string, binDirs: string[]): Promise<string | undefined> {
    for (const dir of binDirs) {
      const path = formatWindowsPath([...windowsPathSegments(dir), `${type}.exe`]);
      if ((await this.#machine.fs.stat(path))?.kind === 'file') return path;
    }
    return undefined;
  }

  async #sdnbridge(request: SandboxRequest, plugin: Table, verb: 'add' | 'delete') {
    const { network, dirs, containerId } = request;
    const type = String(plugin.type);
    const fail = (message: string): never => {
      throw new CniPluginError(
        `plugin type=${JSON.stringify(type)} name=${JSON.stringify(network.name)} failed (${verb}): ${message}`,
      );
    };
    if (network.plugins.length !== 1) {
      fail(
        `the simulated host models a config list of one plugin (sdnbridge); ${network.file} has ${network.plugins.length}`,
      );
    }
    if (!(await this.#findPlugin(type, dirs.binDirs))) {
      fail(`failed to find plugin ${JSON.stringify(type)} in path [${dirs.binDirs.join(' ')}]`);
    }
    if (type !== 'sdnbridge') {
      fail(`the simulated host models the sdnbridge plugin only, not ${JSON.stringify(type)}`);
    }
    const ipam = isTable(plugin.ipam) ? plugin.ipam : {};
    const ipamType = typeof ipam.type === 'string' ? ipam.type : '';
    if (ipamType === '') {
      fail('the simulated host models sdnbridge with an IPAM plugin (ipam.type) only');
    }
    if (!(await this.#findPlugin(ipamType, dirs.binDirs))) {
      fail(`failed to find plugin ${JSON.stringify(ipamType)} in path [${dirs.binDirs.join(' ')}]`);
    }
    if (ipamType !== 'host-local') {
      fail(`the simulated host models host-local IPAM only, not ${JSON.stringify(ipamType)}`);
    }
    // What sdnbridge (non-dual-stack) hands host-local: its own IpamConfig, re-serialized.
    const subnetText = typeof ipam.subnet === 'string' ? ipam.subnet : '';
    const routes = Array.isArray(ipam.routes) ? ipam.routes.filter(isTable) : [];
    const flags = isTable(plugin.optionalFlags) ? plugin.optionalFlags : {};
    const range = (): HostLocalRange => {
      if (subnetText === '') fail('no IP ranges specified');
      const subnet = parseIpv4Cidr(subnetText);
      if (!subnet) fail(`invalid CIDR address: ${subnetText}`);
      if (subnet!.prefix > 30) {
        fail(`Network ${formatIpv4Cidr(subnet!)} too small to allocate from`);
      }
      if (subnet!.address !== subnet!.network) {
        fail(
          `Network has host bits set. For a subnet mask of length ${subnet!.prefix} the network address is ${formatIpv4(subnet!.network)}`,
        );
      }
      return {
        subnet: subnet!,
        gateway: subnet!.network + 1,
        start: subnet!.network + 1,
        end: lastAddress(subnet!) - 1,
      };
    };
    const store = new HostLocalStore(this.#machine.fs, network.name);
    return {
      add: async (): Promise<SandboxAddress> => {
        const r = range();
        const ip = await store
          .allocate(containerId, podInterfaceName, r)
          .catch((error: unknown) => fail((error as Error).message));
        // getOrCreateNetwork: the gateway from routes[0], else the subnet's first address.
        const routeGateway = parseIpv4(String(routes[0]?.gw ?? routes[0]?.GW ?? ''));
        const hnsNetwork = this.#machine.hns.ensure(network.name, 'L2Bridge', [
          {
            addressPrefix: formatIpv4Cidr(r.subnet),
            gateway: formatIpv4(routeGateway ?? r.subnet.network + 1),
          },
        ]);
        // The sandbox's endpoint on it (its vNIC); it goes with the network.
        this.#machine.hns.ensureEndpoint(hnsNetwork.id, containerId, formatIpv4(ip));
        const gateway = flags.forceBridgeGateway === true ? r.subnet.network + 2 : r.gateway;
        return {
          ip: formatIpv4(ip),
          cidr: `${formatIpv4(ip)}/${r.subnet.prefix}`,
          gateway: formatIpv4(gateway),
          network: network.name,
        };
      },
      del: async (): Promise<void> => {
        if (this.#interrupting()) {
          // Interrupted mid-teardown (interruptDels): the address released, the endpoint left.
          await store.release(containerId, podInterfaceName);
          return;
        }
        this.#machine.hns.removeEndpointsOf(containerId);
        await store.release(containerId, podInterfaceName);
      },
    };
  }
}

/** host-local's disk store for one network (backend/disk/backend.go). */
class HostLocalStore {
  readonly #fs: SimFileSystem;
  readonly #dir: string;

  constructor(fs: SimFileSystem, network: string) {
    this.#fs = fs;
    this.#dir = formatWindowsPath([...windowsPathSegments(hostLocalDataDir), network]);
  }

  #path(name: string): string {
    return formatWindowsPath([...windowsPathSegments(this.#dir), name]);
  }

  async #open(): Promise<void> {
    await this.#fs.mkdir(this.#dir, { recursive: true });
    // NewFileLock: the lock file host-local holds while it works.
    if (!(await this.#fs.stat(this.#path('lock'))))
      await this.#fs.writeFile(this.#path('lock'), '');
  }

  /** Address files (named by their address) and what each holds. */
  async #reservations(): Promise<Map<number, string>> {
    const reservations = new Map<number, string>();
    for (const entry of await this.#fs.list(this.#dir)) {
      const ip = parseIpv4(entry.name);
      if (entry.kind !== 'file' || ip === undefined) continue;
      const text = await this.#fs.tryReadFile(this.#path(entry.name));
      if (text) reservations.set(ip, text.toString('utf8').trim());
    }
    return reservations;
  }

  async allocate(id: string, ifname: string, range: HostLocalRange): Promise<number> {
    await this.#open();
    const key = `${id.trim()}\r\n${ifname}`;
    const reservations = await this.#reservations();
    for (const [ip, holder] of reservations) {
      if ((holder === key || holder === id.trim()) && cidrContains(range.subnet, ip)) {
        throw new Error(
          `${formatIpv4(ip)} has been allocated to ${id}, duplicate allocation is not allowed`,
        );
      }
    }
    const lastText = await this.#fs.tryReadFile(this.#path('last_reserved_ip.0'));
    const last = lastText ? parseIpv4(lastText.toString('utf8').trim()) : undefined;
    const size = range.end - range.start + 1;
    // Round robin: from the address after the last reserved one (when in range), else the start.
    let next =
      last !== undefined && last >= range.start && last <= range.end ? last + 1 : range.start;
    for (let tried = 0; tried < size; tried++, next++) {
      if (next > range.end) next = range.start;
      if (next === range.gateway || reservations.has(next)) continue;
      const file = this.#path(formatIpv4(next));
      try {
        const handle = await this.#fs.open(file, { create: true, exclusive: true, write: true });
        try {
          await handle.write(0, Buffer.from(key));
        } finally {
          await handle.close();
        }
      } catch (error) {
        if (errorCode(error) === 'EEXIST') continue;
        throw error;
      }
      await this.#fs.writeFile(this.#path('last_reserved_ip.0'), formatIpv4(next));
      return next;
    }
    throw new Error(
      `no IP addresses available in range set: ${formatIpv4(range.start)}-${formatIpv4(range.end)}`,
    );
  }

  /** ReleaseByID: removes the files of this container and interface (or of the id alone). */
  async release(id: string, ifname: string): Promise<void> {
    if (!(await this.#fs.stat(this.#dir))) return;
    const key = `${id.trim()}\r\n${ifname}`;
    const reservations = await this.#reservations();
    let found = false;
    for (const [ip, holder] of reservations) {
      if (holder !== key) continue;
      await this.#fs.remove(this.#path(formatIpv4(ip)), { missingOk: true });
      found = true;
    }
    if (found) return;
    for (const [ip, holder] of reservations) {
      if (holder === id.trim())
        await this.#fs.remove(this.#path(formatIpv4(ip)), { missingOk: true });
    }
  }

  /** The address held for this container id and interface, if any. */
  async addressOf(id: string, ifname: string): Promise<number | undefined> {
    if (!(await this.#fs.stat(this.#dir))) return undefined;
    const key = `${id.trim()}\r\n${ifname}`;
    for (const [ip, holder] of await this.#reservations()) if (holder === key) return ip;
    return undefined;
  }

  /** Every container id holding an address. */
  async holders(): Promise<Set<string>> {
    if (!(await this.#fs.stat(this.#dir))) return new Set();
    return new Set(
      [...(await this.#reservations()).values()].map((holder) => holder.split('\r\n')[0]!),
    );
  }
}

/**
 * host-local ADD for a reservation (cni-address.ts's request): an address from the subnet (or
 * exactly the one asked for: a range of one) in the network's store, or, when the id holds one already, that one (host-local refuses the
 * second ADD as a duplicate, which the agent reads as the address held).
 */
export async function reserveHostLocalAddress(
  fs: SimFileSystem,
  request: { network: string; subnet: string; containerId: string; address?: string },
): Promise<string> {
  const subnet = parseIpv4Cidr(request.subnet);
  if (!subnet) throw new Error(`invalid CIDR address: ${request.subnet}`);
  const store = new HostLocalStore(fs, request.network);
  const held = await store.addressOf(request.containerId, podInterfaceName);
  const exact = request.address === undefined ? undefined : parseIpv4(request.address);
  if (held !== undefined && cidrContains(subnet, held) && (exact === undefined || held === exact))
    return formatIpv4(held);
  // rangeStart = rangeEnd = the address, when one is asked for.
  const ip = await store.allocate(request.containerId, podInterfaceName, {
    subnet,
    gateway: subnet.network + 1,
    start: exact ?? subnet.network + 1,
    end: exact ?? lastAddress(subnet) - 1,
  });
  return formatIpv4(ip);
}

/** The container ids holding an address on `network` (host-local's files). */
export function hostLocalHolders(fs: SimFileSystem, network: string): Promise<Set<string>> {
  return new HostLocalStore(fs, network).holders();
}

/** The address `containerId` holds on `network`, if any. */
export async function hostLocalAddress(
  fs: SimFileSystem,
  network: string,
  containerId: string,
): Promise<string | undefined> {
  const ip = await new HostLocalStore(fs, network).addressOf(containerId, podInterfaceName);
  return ip === undefined ? undefined : formatIpv4(ip);
}
