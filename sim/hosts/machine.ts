/**
 * A simulated Windows Server machine: release and build, hostname, IPv4 address, drive C:,
 * machine environment, Windows features, HNS networks, Service Control Manager, processes and
 * power. Files, environment, features and services persist across a simulated reboot;
 * processes, HNS networks and the boot id do not. Services see the machine environment as it
 * was at boot (machine-environment.ts); a feature installed since boot is there after a reboot. The SSH server (ssh-server.ts) is its network face and follows its power
 * state through `onShutdown`/`onBoot`.
 */

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JoinTuning } from '../../src/agent/agent-context.ts';
import type { OsVersion } from '../../src/agent/host-os.ts';
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import { windowsRelease } from '../../src/windows/builds.ts';
import type { SimDomain } from './active-directory.ts';
import { CertificateStore } from './certificate-store.ts';
import { type ConsoleCodePage, defaultConsoleCodePage } from './console-code-page.ts';
import { ContainerCredentialGuard } from './container-credential-guard.ts';
import { SimContainerdImages, type SimContainerdImagesOptions } from './containerd-images.ts';
import { SimDefender } from './defender.ts';
import { SimFileSystem } from './file-system.ts';
import { errorCode, fsError } from './file-system-error.ts';
import { WindowsFirewall } from './firewall.ts';
import { HnsNetworks } from './hns-networks.ts';
import type { SimInstanceMetadata } from './instance-metadata.ts';
import { bindsHostAdapter } from './ip-configuration.ts';
import { type LongOperationTimings, SimLongOperations } from './long-operations.ts';
import {
  EnvironmentVariables,
  MachineEnvironment,
  serviceEnvironment,
} from './machine-environment.ts';
import type { ModuleLogEvent } from './module-logging.ts';
import { MachineNetworkFaults } from './network-faults.ts';
import { defaultPrograms, type ProgramRegistry } from './programs.ts';
import { ScmError, type ScmTimings, ServiceControlManager } from './service-control-manager.ts';
import { SimHostOS } from './sim-host-os.ts';
import { type FileHold, processTerminatedUnexpectedly, SimProcess } from './sim-process.ts';
import { standInHeadBytes } from './stand-in-binary.ts';
import { runUserData, type UserDataRun } from './userdata.ts';
import { type WindowsFeatureStates, WindowsFeatures } from './windows-features.ts';
import { windowsBaseName } from './windows-path.ts';
import { type CatalogUpdate, SimWindowsUpdate } from './windows-update.ts';

/** The Windows Server releases a simulated host can run, with a recent patch level each. */
export const simulatedReleases = {
  '2019': { build: 17763, ubr: 6893, productName: 'Windows Server 2019 Datacenter' },
  '2022': { build: 20348, ubr: 2582, productName: 'Windows Server 2022 Datacenter' },
  '2025': { build: 26100, ubr: 2894, productName: 'Windows Server 2025 Datacenter' },
} as const;

export type SimulatedReleaseName = keyof typeof simulatedReleases;

export interface SimMachineOptions {
  /**
   * Computer name (the DNS host name): 1-63 letters, digits and hyphens, not all digits. Its
   * first 15 characters, upper-cased, are the NetBIOS name (netbiosName).
   */
  hostname: string;
  /**
   * The Active Directory domain the machine is joined to (DNS name); undefined: a
   * workgroup machine (Win32_ComputerSystem.PartOfDomain false, Domain "WORKGROUP").
   */
  domain?: string;
  /**
   * The Active Directory domain controller the machine reaches (active-directory.ts), shared by
   * a fleet; undefined: no domain is reachable.
   */
  activeDirectory?: SimDomain;
  /** CLSIDs of the CCG plug-ins registered (container-credential-guard.ts). Default: none. */
  ccgPlugins?: readonly string[];
  /** "2019", "2022" or "2025". */
  release: string;
  /** Update build revision (patch level). Default: the release's recent one. */
  ubr?: number;
  /** IPv4 address in 127.0.0.0/8 (not 127.0.0.1: that is the cluster's). */
  address: string;
  /** Directory on the real disk for drive C:. */
  rootDir: string;
  diskSizeBytes?: number;
  freeDiskBytes?: number;
  /** Logical processors the kubelet reports. Default 4. */
  cpus?: number;
  /**
   * The console input code page in which Windows PowerShell reads stdin (console-code-page.ts);
   * 437, an en-US Windows Server's OEM code page, by default.
   */
  consoleCodePage?: ConsoleCodePage;
  /** Memory the kubelet reports, bytes. Default 16 GiB. */
  memoryBytes?: number;
  /**
   * Where the machine runs: a VM (its hypervisor present to Windows) or hardware, and whether
   * its processor has virtualization extensions (hardware: VT-x/AMD-V on in firmware; a VM:
   * nested virtualization exposed). Default a VM without them, as most cloud VM sizes.
   */
  virtualization?: { vm: boolean; extensions: boolean };
  /** The programs executables run (default: defaultPrograms()). */
  programs?: ProgramRegistry;
  /**
   * Windows features and their InstallState; default: Containers installed (as on the
   * "with Containers" images). Give `{ Containers: 'Available' }` for a host without it.
   */
  features?: WindowsFeatureStates;
  /** What Windows Update offers this host (windows-update.ts). Default: nothing. */
  windowsUpdates?: readonly CatalogUpdate[];
  timings?: SimMachineTimings;
  /**
   * User data its launch agent runs once at the first boot (userdata.ts: the join script
   * `winfleet join-command` prints, in any of its formats; anything else is refused and logged).
   */
  userData?: string;
  /** Shorter waits for the agent's `join` on this machine (tests); the agent's own otherwise. */
  joinTuning?: JoinTuning;
  /** Its cloud's instance metadata service (an EC2 instance's IMDS); none off a cloud. */
  instanceMetadata?: SimInstanceMetadata;
  /** containerd's images: what the registry has and how fast pulls go (containerd-images.ts). */
  containerdImages?: SimContainerdImagesOptions | SimContainerdImages;
}

export interface SimMachineTimings extends ScmTimings, LongOperationTimings {
  /** How long the machine is down during a reboot (SSH refused). Default 1000 ms. */
  rebootDowntimeMs?: number;
  /** Delay between HostOS.reboot() and the reboot (shutdown.exe /t). Default 500 ms. */
  rebootDelayMs?: number;
}

export type PowerState = 'up' | 'shutting-down' | 'down';

/** What a cleanup test compares before and after. */
export interface MachineSnapshot {
  files: string[];
  env: Record<string, string>;
  services: string[];
  hnsNetworks: string[];
  /** Names of the Windows Firewall rules. */
  firewallRules: string[];
}

export interface SpawnRequest {
  binaryPath: string;
  args: string[];
  /** The command line as given (default: built from binaryPath and args). */
  commandLine?: string;
  serviceName?: string;
  /**
   * The new process's environment block. Default: the machine environment as it is now (a
   * new logon session, as an SSH command gets); a child passes its parent's.
   */
  env?: Readonly<Record<string, string>>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /**
   * The program stops on its own before its first instruction, reporting SERVICE_STOPPED with
   * exit code 0 (holdService): it never runs, so it can do nothing a test holds it back from.
   */
  stopsBeforeStart?: boolean;
}

/** What a held service's process runs instead of its program: nothing, then exit code 0. */
const stoppedBeforeStart = async () => 0;

type Listener<T> = (value: T) => void;
type MachineEvent = 'shutdown' | 'boot' | 'serviceStarted' | 'networkReset';

const gib = 1024 ** 3;

/** A service's standard output and error: the NULL handles a service starts with. */
const discardOutput = (_text: string) => {};

/**
 * Throws unless `name` is a valid Windows computer name: a DNS label of 1 to 63 letters,
 * digits and hyphens, not all digits. Windows takes a name longer than 15 characters (System
 * Properties and Rename-Computer warn that the NetBIOS name is cut to 15); Active Directory
 * joins then use the cut name (netbiosName).
 */
export function checkHostname(name: string): void {
  if (!/^[A-Za-z0-9-]{1,63}$/.test(name) || /^[0-9]+$/.test(name) || name.startsWith('-')) {
    throw new RangeError(
      `Cannot use hostname "${name}": a Windows computer name has 1 to 63 letters, digits and hyphens, does not start with a hyphen and is not all digits`,
    );
  }
}

/** The NetBIOS name Windows derives from a computer name: its first 15 characters, upper case. */
export function netbiosName(hostname: string): string {
  return hostname.slice(0, 15).toUpperCase();
}

/** A TCP listener a test puts on a host (a program other than the kubelet holding a port). */
export interface TcpListener {
  port: number;
  localAddress: string;
  owningProcess: number;
  /** Get-Process's ProcessName: the image name without ".exe". */
  processName: string;
}

/** netsh winhttp set proxy: the machine's WinHTTP proxy and bypass list. */
export interface WinHttpProxy {
  proxyServer: string;
  bypassList?: string;
}

/** Throws unless `address` is an IPv4 loopback address a simulated host may use. */
export function checkLoopbackAddress(address: string): void {
  const octets = address.split('.').map(Number);
  const valid =
    octets.length === 4 &&
    octets.every(
      (o, i) => Number.isInteger(o) && o >= 0 && o <= 255 && String(o) === address.split('.')[i],
    ) &&
    octets[0] === 127;
  if (!valid || address === '127.0.0.0' || address === '127.255.255.255') {
    throw new RangeError(
      `Cannot use address "${address}" for a simulated host; use an IPv4 loopback address such as 127.0.0.10`,
    );
  }
  if (address === '127.0.0.1') {
    throw new RangeError(
      'Cannot use address "127.0.0.1" for a simulated host: Windows reports it as loopback, not as the host\'s address; use 127.0.0.2 or above',
    );
  }
}

export class SimMachine {
  #hostname: string;
  /** Rename-Computer's new name, taken at the next boot (active-directory.ts). */
  #pendingHostname: string | undefined;
  /** The domain controller it reaches; undefined: none. */
  readonly activeDirectory: SimDomain | undefined;
  readonly address: string;
  readonly release: SimulatedReleaseName;
  readonly osVersion: OsVersion;
  /** The console input code page Windows PowerShell decodes stdin with. */
  readonly consoleCodePage: ConsoleCodePage;
  readonly cpus: number;
  readonly memoryBytes: number;
  readonly virtualization: { vm: boolean; extensions: boolean };
  /** The AD domain it is joined to; undefined: a workgroup machine. */
  domain: string | undefined;
  /** The WinHTTP proxy (netsh winhttp set proxy); undefined: direct access. */
  winHttpProxy: WinHttpProxy | undefined;
  /**
   * TCP listeners of programs the simulation does not run (a test's "something else holds
   * 10250"); a running kubelet's own listener is derived from its process (remote-commands.ts).
   */
  readonly extraTcpListeners: TcpListener[] = [];
  readonly fs: SimFileSystem;
  readonly env = new MachineEnvironment();
  readonly features: WindowsFeatures;
  /** Container Credential Guard and its plug-ins (gMSA without a domain join). */
  readonly ccg: ContainerCredentialGuard;
  /** Its patch catalog, installed updates and reboot-pending registry entries. */
  readonly windowsUpdate: SimWindowsUpdate;
  /** Update searches and installs, .msu unpacking, DISM: minutes on a clock tests speed up. */
  readonly longOperations: SimLongOperations;
  /**
   * PowerShell module logging's 4103 events of the domain scripts run on it, as a host with the
   * Turn on Module Logging policy would keep them (module-logging.ts).
   */
  readonly powerShellModuleLog: ModuleLogEvent[] = [];
  /** Microsoft Defender: its threat history and detections (defender.ts). */
  readonly defender = new SimDefender();
  readonly hns = new HnsNetworks();
  /** Its rules persist across reboots; only the kubelet's port is filtered (firewall.ts). */
  readonly firewall = new WindowsFirewall();
  /** LocalMachine\Root (certificate-store.ts); it persists across reboots. */
  readonly rootCertificates = new CertificateStore();
  /**
   * Destinations its programs cannot connect to (network-faults.ts): "this host cannot reach
   * the registry". They outlast reboots, as the firewall or route that causes them would.
   */
  readonly network = new MachineNetworkFaults();
  readonly scm: ServiceControlManager;
  readonly programs: ProgramRegistry;
  readonly timings: Required<Pick<SimMachineTimings, 'rebootDowntimeMs' | 'rebootDelayMs'>>;
  readonly #joinTuning: JoinTuning | undefined;
  #bootId = randomUUID();
  #bootedAt = new Date();
  /** The machine environment as services.exe read it at boot. */
  #bootEnvironment: Record<string, string>;
  #power: PowerState = 'up';
  readonly #poweringOff = new AbortController();
  /** Services held back by holdService (lower-case name → how many holds). */
  readonly #heldServices = new Map<string, number>();
  /** While set, a shutdown does not boot again until it is released (holdPowerOff). */
  #held?: { released: Promise<void>; release: () => void };
  /**
   * How far the machine's clock is off the real time, ms (positive: ahead). The clock the
   * HostOS reads (localTime) is Date.now() plus this; the Windows Time service's resync sets it
   * back to 0.
   */
  clockOffsetMs = 0;
  /**
   * The Windows Time service (W32Time), which w32tm /resync needs: running (as on a host that
   * syncs its time), stopped (a standalone host's trigger-start service, idle) or disabled.
   */
  timeService: 'running' | 'stopped' | 'disabled' = 'running';
  #rebooting?: Promise<void>;
  #rebootTimer?: NodeJS.Timeout;
  #nextPid = 1000 + 4 * Math.floor(Math.random() * 500);
  readonly #processes = new Set<SimProcess>();
  readonly #state = new Map<string, unknown>();
  readonly #listeners = {
    shutdown: new Set<Listener<string>>(),
    boot: new Set<Listener<string>>(),
    serviceStarted: new Set<Listener<string>>(),
    networkReset: new Set<Listener<string>>(),
  };

  private constructor(options: SimMachineOptions, fs: SimFileSystem) {
    this.#hostname = options.hostname;
    this.activeDirectory = options.activeDirectory;
    this.address = options.address;
    this.release = options.release as SimulatedReleaseName;
    const release = simulatedReleases[this.release];
    this.osVersion = {
      major: 10,
      minor: 0,
      build: release.build,
      ubr: options.ubr ?? release.ubr,
      productName: release.productName,
    };
    this.cpus = options.cpus ?? 4;
    this.consoleCodePage = options.consoleCodePage ?? defaultConsoleCodePage;
    this.memoryBytes = options.memoryBytes ?? 16 * gib;
    this.virtualization = options.virtualization ?? { vm: true, extensions: false };
    this.domain = options.domain;
    this.#joinTuning = options.joinTuning;
    this.instanceMetadata = options.instanceMetadata;
    this.containerdImages =
      options.containerdImages instanceof SimContainerdImages
        ? options.containerdImages
        : new SimContainerdImages(options.containerdImages);
    this.winHttpProxy = undefined;
    this.fs = fs;
    this.programs = options.programs ?? defaultPrograms();
    this.features = new WindowsFeatures(options.features);
    this.ccg = new ContainerCredentialGuard(this.features, options.ccgPlugins);
    this.windowsUpdate = new SimWindowsUpdate(this.osVersion, options.windowsUpdates);
    this.longOperations = new SimLongOperations(options.timings);
    this.#bootEnvironment = this.env.entries();
    this.timings = {
      rebootDowntimeMs: options.timings?.rebootDowntimeMs ?? 1000,
      rebootDelayMs: options.timings?.rebootDelayMs ?? 500,
    };
    fs.heldAs = (identity) => {
      let hold: FileHold | undefined;
      for (const process of this.#processes) {
        const how = process.holds(identity);
        if (how === 'image') return how;
        hold ??= how;
      }
      return hold;
    };
    this.scm = new ServiceControlManager(
      {
        isUp: () => this.#power === 'up',
        // A process the SCM starts has no console: what it writes to standard output or error
        // is lost, so its logs exist only where it writes a file.
        spawnService: async (config) => {
          if (this.#power !== 'up') throw new ScmError('StartService', 1115, config.name);
          const { binaryPath, args } = splitServiceCommandLine(config.commandLine);
          let process: SimProcess;
          try {
            process = await this.spawn({
              binaryPath,
              args,
              commandLine: config.commandLine,
              serviceName: config.name,
              env: serviceEnvironment(this.#bootEnvironment, config.environment).entries(),
              stdout: discardOutput,
              stderr: discardOutput,
              stopsBeforeStart: this.#heldServices.has(config.name.toLowerCase()),
            });
          } catch (error) {
            const code = errorCode(error);
            if (code === 'ENOENT' || code === 'EINVAL' || code === 'EISDIR') {
              throw new ScmError('StartService', 2, config.name);
            }
            throw error;
          }
          return { process, serviceAware: this.programs.reportsToScm(process.imageName, args) };
        },
        serviceStarted: (name) => this.#emit('serviceStarted', name),
      },
      options.timings,
    );
  }

  /** Creates a machine whose drive C: lives in `rootDir` (kept if it already holds one). */
  static async create(options: SimMachineOptions): Promise<SimMachine> {
    checkHostname(options.hostname);
    checkLoopbackAddress(options.address);
    if (!(options.release in simulatedReleases)) {
      windowsRelease(options.release); // throws naming the known releases
      throw new RangeError(`Cannot simulate Windows Server ${options.release}`);
    }
    if (options.ubr !== undefined && (!Number.isInteger(options.ubr) || options.ubr < 0)) {
      throw new RangeError(`Cannot use UBR ${options.ubr}; give a whole number from 0`);
    }
    const fs = await SimFileSystem.create({
      root: options.rootDir,
      diskSizeBytes: options.diskSizeBytes,
      freeBytes: options.freeDiskBytes,
    });
    for (const dir of [
      'C:\\Windows\\System32',
      'C:\\Windows\\Temp',
      'C:\\Program Files',
      'C:\\ProgramData',
      'C:\\Users\\Administrator',
    ]) {
      await fs.mkdir(dir, { recursive: true });
    }
    const machine = new SimMachine(options, fs);
    if (options.userData !== undefined) machine.userData = runUserData(machine, options.userData);
    return machine;
  }

  /** The run of its user data at the first boot, when it was given some. */
  userData: UserDataRun | undefined;
  /** What answers on 169.254.169.254 (SimMachineOptions.instanceMetadata). */
  readonly instanceMetadata: SimInstanceMetadata | undefined;
  /** containerd's image store and the registry it pulls from (containerd-images.ts). */
  readonly containerdImages: SimContainerdImages;
  /** What the agent's `join` waits on this machine (SimMachineOptions.joinTuning). */
  get joinTuning(): JoinTuning | undefined {
    return this.#joinTuning;
  }

  /** "10.0.20348.2582": the kernel version a Windows node reports. */
  get kernelVersion(): string {
    const v = this.osVersion;
    return `${v.major}.${v.minor}.${v.build}.${v.ubr}`;
  }

  get bootId(): string {
    return this.#bootId;
  }

  /** The computer name now (the DNS host name). */
  get hostname(): string {
    return this.#hostname;
  }

  /** The name the machine takes at its next boot; its hostname when no rename is pending. */
  get pendingHostname(): string {
    return this.#pendingHostname ?? this.#hostname;
  }

  /** Rename-Computer's part: the name changes at the next boot. */
  setPendingHostname(name: string): void {
    checkHostname(name);
    this.#pendingHostname = name;
  }

  get bootedAt(): Date {
    return this.#bootedAt;
  }

  get powerState(): PowerState {
    return this.#power;
  }

  /** A reboot is scheduled (scheduleReboot) or under way. */
  get rebootScheduled(): boolean {
    return this.#rebootTimer !== undefined || this.#rebooting !== undefined;
  }

  /** The machine environment as it was at the last boot: what services start with. */
  get bootEnvironment(): Record<string, string> {
    return { ...this.#bootEnvironment };
  }

  /** Running processes (services and commands run over SSH). */
  processes(): SimProcess[] {
    return [...this.#processes];
  }

  /** Per-machine state a program keeps across its runs (e.g. the kubelet's Node link). */
  state<T>(key: string, create: () => T): T {
    if (!this.#state.has(key)) this.#state.set(key, create());
    return this.#state.get(key) as T;
  }

  /** Starts a process running the program its executable's name selects. */
  async spawn(request: SpawnRequest): Promise<SimProcess> {
    if (this.#power !== 'up') {
      throw new Error(`Cannot start "${request.binaryPath}": ${this.hostname} is not up`);
    }
    const binaryPath = await this.fs.realPath(request.binaryPath);
    const stats = binaryPath && (await this.fs.stat(binaryPath));
    if (!binaryPath || !stats) throw fsError('ENOENT', 'start', request.binaryPath);
    if (stats.kind !== 'file') throw fsError('EISDIR', 'start', request.binaryPath);
    const binary = await this.fs.readHead(binaryPath, standInHeadBytes);
    const imageName = windowsBaseName(binaryPath);
    const env = new EnvironmentVariables(request.env ?? this.env.entries());
    const process = new SimProcess({
      pid: this.#allocatePid(),
      imageName,
      binaryPath,
      hostBinaryPath: await this.fs.hostPath(binaryPath),
      commandLine: request.commandLine ?? [`"${binaryPath}"`, ...request.args].join(' '),
      environment: env.entries(),
    });
    process.hold(await this.fs.fileIdentity(binaryPath), 'image');
    this.#processes.add(process);
    process.exited.then(() => this.#processes.delete(process));
    const context = {
      argv: request.args,
      commandLine: process.commandLine,
      binaryPath,
      binary,
      env,
      machine: this,
      hostOS: new SimHostOS(this, { process }),
      stdout: request.stdout,
      stderr: request.stderr,
    };
    process.run(
      request.stopsBeforeStart ? stoppedBeforeStart : this.programs.lookup(imageName).run,
      request.serviceName === undefined
        ? context
        : { ...context, serviceName: request.serviceName },
    );
    return process;
  }

  #allocatePid(): number {
    const pid = this.#nextPid;
    this.#nextPid += 4;
    if (this.#nextPid > 60_000) this.#nextPid = 1000;
    return pid;
  }

  // Power.

  /**
   * Reboots now: services get their stop control (then are killed), every other process is
   * killed, SSH connections drop and new ones are refused for `downtimeMs`; then the machine
   * boots with a new boot id and starts its auto services. Resolves once booted.
   */
  reboot(options: { reason?: string; downtimeMs?: number } = {}): Promise<void> {
    clearTimeout(this.#rebootTimer);
    this.#rebootTimer = undefined;
    this.#rebooting ??= this.#reboot(
      options.reason ?? 'reboot',
      options.downtimeMs ?? this.timings.rebootDowntimeMs,
    ).finally(() => {
      this.#rebooting = undefined;
    });
    return this.#rebooting;
  }

  async #reboot(reason: string, downtimeMs: number): Promise<void> {
    this.#power = 'shutting-down';
    this.#emit('shutdown', reason);
    await this.scm.shutdown();
    for (const process of this.#processes) process.kill(processTerminatedUnexpectedly, 'reboot');
    this.hns.clear();
    this.#power = 'down';
    // powerOff cuts a long downtime short (a host that does not come back, for one): the
    // machine then stays off.
    const off = await sleep(downtimeMs, false, { signal: this.#poweringOff.signal }).catch(
      () => true,
    );
    if (off) return;
    // Held off (holdPowerOff): stays down until released or powered off for good.
    if (this.#held) {
      const aborted = new Promise<boolean>((resolve) =>
        this.#poweringOff.signal.addEventListener('abort', () => resolve(true), { once: true }),
      );
      if (await Promise.race([this.#held.released.then(() => false), aborted])) return;
    }
    this.#bootId = randomUUID();
    this.#bootedAt = new Date();
    this.#bootEnvironment = this.env.entries();
    // A pending rename takes effect at boot (Rename-Computer: "after the computer is restarted").
    if (this.#pendingHostname !== undefined) {
      this.#hostname = this.#pendingHostname;
      this.#pendingHostname = undefined;
    }
    this.features.boot();
    // Session Manager's pending deletions run before servicing and before any service.
    await this.#deletePendingAtBoot();
    // Servicing finishes during the boot: updates waiting for it raise the UBR.
    this.windowsUpdate.boot();
    this.#power = 'up';
    this.#emit('boot', this.#bootId);
    await this.scm.boot();
  }

  /**
   * Shuts the machine down and keeps it down until `releasePowerOff()` (a host switched off,
   * or cut off the network for good: nothing it runs reaches anyone, SSH is refused). Resolves
   * once it is down. Released, it boots as after a reboot (new boot id, auto services).
   */
  async holdPowerOff(reason = 'power off'): Promise<void> {
    if (!this.#held) {
      let release = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      this.#held = { released, release };
    }
    const booted = this.reboot({ reason, downtimeMs: 0 });
    booted.catch(() => {});
    // Bounded: the shutdown waits at most for the services' stop timeouts.
    for (let i = 0; i < 12_000 && this.#power !== 'down'; i++) await sleep(5);
  }

  /** Ends holdPowerOff: the machine boots; resolves once it is up. */
  async releasePowerOff(): Promise<void> {
    const held = this.#held;
    if (!held) return;
    this.#held = undefined;
    held.release();
    if (this.#rebooting) await this.#rebooting;
  }

  /** Whether holdPowerOff keeps the machine down. */
  get poweredOffHeld(): boolean {
    return this.#held !== undefined;
  }

  /** The machine's clock now (Date.now() plus clockOffsetMs). */
  localTime(): number {
    return Date.now() + this.clockOffsetMs;
  }

  /**
   * What `w32tm /resync /force` does on this machine: with W32Time running, the clock is set
   * from the time source (the real time: the offset goes to 0); without it, w32tm fails with
   * "The service has not been started. (0x80070426)".
   */
  resyncClock(): void {
    if (this.timeService !== 'running') {
      throw Object.assign(
        new Error('The following error occurred: The service has not been started. (0x80070426)'),
        { hresult: 0x80070426 },
      );
    }
    this.clockOffsetMs = 0;
  }

  /** Schedules a reboot in `delayMs` (what `shutdown /r /t` does); one at a time. */
  scheduleReboot(reason: string, delayMs = this.timings.rebootDelayMs): void {
    if (this.#rebootTimer || this.#rebooting) return;
    this.#rebootTimer = setTimeout(() => {
      this.#rebootTimer = undefined;
      this.reboot({ reason }).catch(() => {});
    }, delayMs);
  }

  /**
   * What MoveFileEx(path, NULL, MOVEFILE_DELAY_UNTIL_REBOOT) does: a pair ("\\??\\<path>", "")
   * in Session Manager's PendingFileRenameOperations; the path is deleted at the next boot
   * (deletePendingAtBoot).
   */
  deleteAtBoot(path: string): void {
    this.windowsUpdate.registry.pendingFileRenameOperations.push(`\\??\\${path}`, '');
  }

  /**
   * The Session Manager's pass at boot: each pending deletion, in order — a file, or a directory
   * only when it is empty by then (MoveFileEx's rule); one that cannot be done is skipped, as
   * Windows skips it. Renames (a pair with a destination) are not simulated.
   */
  async #deletePendingAtBoot(): Promise<void> {
    const pending = this.windowsUpdate.registry.pendingFileRenameOperations;
    for (let i = 0; i + 1 < pending.length; i += 2) {
      if (pending[i + 1] !== '') continue;
      const path = pending[i]!.replace(/^\\\?\?\\/, '');
      await this.fs.remove(path, { missingOk: true }).catch(() => {});
    }
  }

  /** Stops everything for good (the fleet's stop): services, processes, timers. */
  async powerOff(): Promise<void> {
    clearTimeout(this.#rebootTimer);
    this.#poweringOff.abort();
    if (this.#rebooting) await this.#rebooting.catch(() => {});
    if (this.#power === 'down') return;
    this.#power = 'shutting-down';
    this.#emit('shutdown', 'power off');
    await this.scm.shutdown();
    for (const process of this.#processes) process.kill(processTerminatedUnexpectedly, 'power off');
    this.#power = 'down';
  }

  onShutdown(listener: Listener<string>): () => void {
    return this.#on('shutdown', listener);
  }

  onBoot(listener: Listener<string>): () => void {
    return this.#on('boot', listener);
  }

  /**
   * Removes an HNS network by id; false when there was none. Removing one that bound the host's
   * adapter to a virtual switch (L2Bridge, Overlay) moves the host's address back to the
   * adapter: the address is gone for a moment and its TCP connections (SSH included) drop, which
   * `onNetworkReset` listeners (the SSH server) do.
   */
  removeHnsNetwork(id: string): boolean {
    const network = this.hns.list().find((n) => n.id.toLowerCase() === id.toLowerCase());
    const removed = this.hns.remove(id);
    if (removed && network && bindsHostAdapter(network)) this.#emit('networkReset', network.name);
    return removed;
  }

  /** Called with the network's name when removing it resets the host's adapter. */
  onNetworkReset(listener: Listener<string>): () => void {
    return this.#on('networkReset', listener);
  }

  /**
   * Holds service `name` back until the returned release is called: each start of it in the
   * meantime runs none of its program (it stops on its own, exit code 0, before its first
   * instruction, so the SCM never reports it running and the recovery actions do not apply).
   * A process already running is left alone. Unlike stopping a service once it has started,
   * this leaves no moment in which the program could act (a kubelet registering its Node).
   */
  holdService(name: string): () => void {
    const key = name.toLowerCase();
    this.#heldServices.set(key, (this.#heldServices.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#heldServices.get(key) ?? 1) - 1;
      if (left > 0) this.#heldServices.set(key, left);
      else this.#heldServices.delete(key);
    };
  }

  onServiceStarted(listener: Listener<string>): () => void {
    return this.#on('serviceStarted', listener);
  }

  #on(event: MachineEvent, listener: Listener<string>): () => void {
    const set = this.#listeners[event];
    set.add(listener);
    return () => set.delete(listener);
  }

  #emit(event: MachineEvent, value: string): void {
    for (const listener of [...this.#listeners[event]]) {
      try {
        listener(value);
      } catch {
        // A listener's failure must not stop the machine.
      }
    }
  }

  /** Files, environment, services and HNS networks, for before/after comparisons. */
  async snapshot(): Promise<MachineSnapshot> {
    return {
      files: await this.fs.allPaths(),
      env: this.env.entries(),
      services: this.scm.names(),
      hnsNetworks: this.hns.list().map((n) => n.name),
      firewallRules: this.firewall.rules().map((r) => r.name),
    };
  }
}
