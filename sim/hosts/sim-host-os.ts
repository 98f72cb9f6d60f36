/**
 * The simulated implementation of HostOS: the agent's view of a simulated machine. It behaves
 * like WindowsHostOS does on a real host, errors included: service calls that Windows refuses
 * throw the same WF_SERVICE_CONTROL error (same Win32 code, same sc.exe arguments in the message),
 * bad service configurations and environments fail the same validation (sc-commands.ts,
 * service-environment.ts), and file errors carry Node's codes. A HostOS handed to a process stops answering once that process is dead (its
 * pending calls never settle), as nothing runs after a real process died.
 */

import type {
  HostOS,
  InboundFirewallRule,
  InstalledService,
  OsVersion,
  ServiceConfig,
  UpdateInstallResult,
} from '../../src/agent/host-os.ts';
import { kubeletHealthzPort, kubeProxyHealthzPort } from '../../src/agent/node-health.ts';
import {
  type CniAddressRequest,
  reserveCniAddressScript,
} from '../../src/agent/windows/cni-address.ts';
import { serviceCommandLine } from '../../src/agent/windows/command-line.ts';
import { ctrExe } from '../../src/agent/windows/containerd-images.ts';
import {
  type ContainersFeatureState,
  containersFeatureScript,
  parseContainersFeatureOutput,
} from '../../src/agent/windows/containers-feature.ts';
import {
  type DefenderThreatList,
  defenderThreatsScript,
  parseDefenderThreatsOutput,
} from '../../src/agent/windows/defender.ts';
import { deleteAtBootScript } from '../../src/agent/windows/delete-at-boot.ts';
import {
  ensureInboundFirewallRuleScript,
  removeFirewallRuleScript,
} from '../../src/agent/windows/firewall.ts';
import {
  type GmsaHostFacts,
  gmsaHostFactsScript,
} from '../../src/agent/windows/gmsa-host-facts.ts';
import {
  createHnsNetworkScript,
  defaultHnsModulePaths,
  hnsUnavailableError,
  listHnsEndpointsScript,
  listHnsNetworksScript,
  parseHnsEndpointListOutput,
  removeHnsEndpointScript,
  removeHnsNetworkScript,
} from '../../src/agent/windows/hns.ts';
import { ipv4NetworkScript } from '../../src/agent/windows/ipv4-network.ts';
import { longOperationTimeoutsMs } from '../../src/agent/windows/long-operations.ts';
import { getMachineEnvScript, setMachineEnvScript } from '../../src/agent/windows/machine-env.ts';
import { osVersionScript } from '../../src/agent/windows/os-version.ts';
import {
  addRootCertificateScript,
  listRootCertificatesScript,
  pemToDer,
  removeRootCertificateScript,
  type StoredCertificate,
  setWinHttpProxyScript,
  type WinHttpProxy,
} from '../../src/agent/windows/root-certificates.ts';
import {
  checkServiceName,
  scConfigArgs,
  scCreateArgs,
  scDeleteArgs,
  scStartArgs,
  scStopArgs,
} from '../../src/agent/windows/sc-commands.ts';
import { serviceControlError, win32Error } from '../../src/agent/windows/sc-output.ts';
import { serviceEnvironmentEntries } from '../../src/agent/windows/service-environment.ts';
import { serviceFailuresScript } from '../../src/agent/windows/service-failures.ts';
import {
  installUpdatesScript,
  rebootPendingScript,
  searchUpdatesScript,
  wuaError,
} from '../../src/agent/windows/windows-update.ts';
import {
  installedHotfixesScript,
  installWithPayload,
  type PayloadUpdatePrimitives,
  searchWithPayload,
} from '../../src/agent/windows/windows-update-msu.ts';
import type { ReportedUpdate } from '../../src/api/windows-updates.ts';
import { WinfleetError } from '../../src/errors/catalog.ts';
import type { HostNetwork } from '../../src/hostaccess/node-address.ts';
import type { ImdsRequest, ImdsResponse } from '../../src/pki/instance-identity.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import type { HnsEndpoint, HnsNetwork, HnsNetworkSpec } from '../../src/windows/hns-objects.ts';
import { simGmsaHostFacts } from './container-credential-guard.ts';
import { errorCode, fsError } from './file-system-error.ts';
import { ipConfiguration } from './ip-configuration.ts';
import { kubeProxyStatus } from './kube-proxy-standin.ts';
import type { SimMachine } from './machine.ts';
import {
  CommandNotFoundError,
  commandModule,
  machinePowerShellHost,
  missingCommand,
} from './powershell-modules.ts';
import { ScmError, type ScmServiceConfig, scmErrorText } from './service-control-manager.ts';
import { reserveHostLocalAddress } from './sim-cni.ts';

export interface SimHostOSOptions {
  /** The process this HostOS belongs to; once it is dead, calls never settle. */
  process?: { readonly alive: boolean };
  /** How long stopService waits for STOPPED. Default 60 s (as WindowsHostOS). */
  stopTimeoutMs?: number;
  /** How long deleteService waits for the service to disappear. Default 30 s. */
  deleteTimeoutMs?: number;
}

const pollMs = 50;

export class SimHostOS implements HostOS {
  readonly #machine: SimMachine;
  readonly #process?: { readonly alive: boolean };
  readonly #stopTimeoutMs: number;
  readonly #deleteTimeoutMs: number;

  constructor(machine: SimMachine, options: SimHostOSOptions = {}) {
    this.#machine = machine;
    this.#process = options.process;
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 60_000;
    this.#deleteTimeoutMs = options.deleteTimeoutMs ?? 30_000;
  }

  /** Runs `operation` unless the owning process is dead; a dead process gets no answer. */
  #live<T>(operation: () => Promise<T> | T): Promise<T> {
    const never = () => new Promise<T>(() => {});
    if (this.#process && !this.#process.alive) return never();
    return (async () => operation())().then(
      (value) => (this.#process && !this.#process.alive ? never() : value),
      (error: unknown) => {
        if (this.#process && !this.#process.alive) return never();
        throw error;
      },
    );
  }

  /**
   * What WindowsHostOS.#runPowerShell reports when `script` calls a command no module on this
   * host provides (powershell-modules.ts): PowerShell's CommandNotFoundException, read from its
   * stderr, as WF_WINDOWS_COMMAND_FAILED. Called with the script the agent would run, before
   * the machine answers it.
   */
  #script(script: string, action: string): void {
    const missing = missingCommand(script, machinePowerShellHost(this.#machine));
    if (missing === undefined) return;
    const error = new CommandNotFoundError(missing);
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot ${action}: PowerShell exited with 1: ${error.message}\nAt line:1 char:1\n    + CategoryInfo          : ObjectNotFound: (${missing}:String) [], CommandNotFoundException\n    + FullyQualifiedErrorId : CommandNotFoundException`,
    );
  }

  /**
   * What the HNS scripts print when neither the built-in HostNetworkingService module (it comes
   * with the Containers feature) nor hns.v2.psm1 provides `command`: {"available":false},
   * which WindowsHostOS turns into WF_HNS_UNAVAILABLE.
   */
  #hnsModule(action: string, command = 'Get-HnsNetwork'): void {
    if (commandModule(command, machinePowerShellHost(this.#machine))) return;
    throw hnsUnavailableError(action, ['HostNetworkingService', ...defaultHnsModulePaths], command);
  }

  // Services.

  queryService(name: string): Promise<InstalledService | undefined> {
    return this.#live(() => {
      checkServiceName(name);
      return this.#machine.scm.query(name);
    });
  }

  createService(config: ServiceConfig): Promise<void> {
    return this.#live(() => {
      const args = scCreateArgs(config);
      serviceEnvironmentEntries(config.name, config.environment);
      scm(`create service "${config.name}"`, args, () =>
        this.#machine.scm.create(storedConfig(config)),
      );
    });
  }

  configureService(config: ServiceConfig): Promise<void> {
    return this.#live(() => {
      const args = scConfigArgs(config);
      serviceEnvironmentEntries(config.name, config.environment);
      scm(`configure service "${config.name}"`, args, () =>
        this.#machine.scm.configure(storedConfig(config)),
      );
    });
  }

  queryServiceEnvironment(name: string): Promise<Record<string, string> | undefined> {
    return this.#live(() => {
      checkServiceName(name);
      const config = this.#machine.scm.config(name);
      return config && { ...config.environment };
    });
  }

  startService(name: string): Promise<void> {
    return this.#live(async () => {
      const args = scStartArgs(name);
      try {
        await this.#machine.scm.start(name);
      } catch (error) {
        if (error instanceof ScmError && error.code === win32Error.serviceAlreadyRunning) return;
        throw translate(`start service "${name}"`, args, error);
      }
    });
  }

  stopService(name: string): Promise<void> {
    return this.#live(async () => {
      const args = scStopArgs(name);
      const deadline = Date.now() + this.#stopTimeoutMs;
      for (;;) {
        const status = this.#machine.scm.query(name);
        if (!status || status.state === 'stopped') return;
        if (status.state === 'running' || status.state === 'paused') {
          try {
            await this.#machine.scm.stop(name);
            return;
          } catch (error) {
            const tolerated: number[] = [
              win32Error.serviceNotActive,
              win32Error.serviceCannotAcceptControl,
            ];
            if (!(error instanceof ScmError) || !tolerated.includes(error.code)) {
              throw translate(`stop service "${name}"`, args, error);
            }
          }
        }
        if (Date.now() >= deadline) {
          const state =
            status.pid === undefined ? status.state : `${status.state}, PID ${status.pid}`;
          throw new Error(
            `Service "${name}" did not stop within ${this.#stopTimeoutMs} ms (still ${state}); end its process (taskkill /F /PID ${status.pid}) or reboot the host`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    });
  }

  deleteServiceWhenStopped(name: string): Promise<void> {
    return this.#live(() => {
      checkServiceName(name);
      try {
        this.#machine.scm.delete(name);
      } catch (error) {
        const tolerated: number[] = [
          win32Error.serviceDoesNotExist,
          win32Error.serviceMarkedForDelete,
        ];
        if (!(error instanceof ScmError) || !tolerated.includes(error.code)) {
          throw translate(`mark service "${name}" for deletion`, scDeleteArgs(name), error);
        }
      }
    });
  }

  deleteService(name: string): Promise<void> {
    return this.#live(async () => {
      checkServiceName(name);
      if (!this.#machine.scm.query(name)) return;
      await this.stopService(name);
      const args = scDeleteArgs(name);
      try {
        this.#machine.scm.delete(name);
      } catch (error) {
        const tolerated: number[] = [
          win32Error.serviceDoesNotExist,
          win32Error.serviceMarkedForDelete,
        ];
        if (!(error instanceof ScmError) || !tolerated.includes(error.code)) {
          throw translate(`delete service "${name}"`, args, error);
        }
      }
      const deadline = Date.now() + this.#deleteTimeoutMs;
      while (this.#machine.scm.query(name)) {
        if (Date.now() >= deadline) {
          throw new Error(
            `Service "${name}" is marked for deletion but still registered after ${this.#deleteTimeoutMs} ms; close programs that hold it open (services.msc, Event Viewer) or reboot the host`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    });
  }

  // Files.

  readFile(path: string): Promise<Buffer | undefined> {
    return this.#live(async () => {
      try {
        return await this.#machine.fs.readFile(path);
      } catch (error) {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      }
    });
  }

  writeFile(path: string, data: Buffer | string): Promise<void> {
    return this.#live(() => this.#machine.fs.writeFileAtomic(path, data));
  }

  writeFileFromStream(path: string, chunks: AsyncIterable<Uint8Array>): Promise<number> {
    return this.#live(() => this.#machine.fs.writeFileAtomicFromStream(path, chunks));
  }

  fileSha256(path: string): Promise<string | undefined> {
    return this.#live(async () => {
      try {
        return await this.#machine.fs.sha256(path);
      } catch (error) {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      }
    });
  }

  copyFile(from: string, to: string): Promise<void> {
    return this.#live(async () => {
      await this.#machine.fs.writeFileAtomicFromStream(to, this.#machine.fs.readChunks(from));
    });
  }

  removePath(path: string): Promise<void> {
    return this.#live(() => this.#machine.fs.remove(path, { recursive: true, missingOk: true }));
  }

  renamePath(from: string, to: string): Promise<void> {
    return this.#live(() => this.#machine.fs.rename(from, to));
  }

  removeFileIfUnused(path: string): Promise<boolean> {
    return this.#live(async () => {
      if ((await this.#machine.fs.stat(path))?.kind === 'directory')
        throw fsError('EISDIR', 'delete', path);
      try {
        await this.#machine.fs.remove(path, { missingOk: true });
        return true;
      } catch (error) {
        const code = errorCode(error);
        if (code === 'EPERM' || code === 'EBUSY') return false;
        throw error;
      }
    });
  }

  deleteAtBoot(path: string): Promise<void> {
    return this.#live(() => {
      this.#script(deleteAtBootScript(path), `delete "${path}" at the next boot`);
      return this.#machine.deleteAtBoot(path);
    });
  }

  ensureDirectory(path: string): Promise<void> {
    return this.#live(() => this.#machine.fs.mkdir(path, { recursive: true }));
  }

  listDirectory(path: string): Promise<string[] | undefined> {
    return this.#live(async () => {
      try {
        return (await this.#machine.fs.list(path)).map((e) => e.name).sort();
      } catch (error) {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      }
    });
  }

  // Machine environment.

  getMachineEnv(name: string): Promise<string | undefined> {
    return this.#live(() => {
      this.#script(getMachineEnvScript(name), `read machine variable ${name}`);
      return this.#machine.env.get(name);
    });
  }

  setMachineEnv(name: string, value: string | undefined): Promise<void> {
    return this.#live(() => {
      this.#script(setMachineEnvScript(name, value), `set machine variable ${name}`);
      return this.#machine.env.set(name, value);
    });
  }

  // Root certificates and the WinHTTP proxy.

  listRootCertificates(): Promise<StoredCertificate[]> {
    return this.#live(() => {
      this.#script(listRootCertificatesScript(), 'list the Root certificates');
      return this.#machine.rootCertificates
        .list()
        .map((c) => ({ thumbprint: c.thumbprint, subject: c.subject }));
    });
  }

  /** What addRootCertificateScript does: the DER bytes into the store, its thumbprint back. */
  addRootCertificate(pem: string): Promise<string> {
    return this.#live(() => {
      this.#script(addRootCertificateScript(pem), 'add a Root certificate'); // refuses what it refuses
      return this.#machine.rootCertificates.add(pemToDer(pem));
    });
  }

  removeRootCertificate(thumbprint: string): Promise<void> {
    return this.#live(() => {
      this.#script(removeRootCertificateScript(thumbprint), 'remove a Root certificate');
      this.#machine.rootCertificates.remove(thumbprint);
    });
  }

  setWinHttpProxy(proxy: WinHttpProxy | undefined): Promise<void> {
    return this.#live(() => {
      this.#script(setWinHttpProxyScript(proxy), 'set the WinHTTP proxy');
      this.#machine.winHttpProxy = proxy && { ...proxy };
    });
  }

  // Host Network Service.

  listHnsNetworks(): Promise<HnsNetwork[]> {
    return this.#live(() => {
      this.#script(listHnsNetworksScript(), 'list HNS networks');
      this.#hnsModule('list HNS networks');
      return this.#machine.hns.list();
    });
  }

  removeHnsNetwork(id: string): Promise<void> {
    return this.#live(() => {
      const action = `remove HNS network "${id}"`;
      this.#script(removeHnsNetworkScript(id), action);
      this.#hnsModule(action);
      // Through the machine: removing a network that bound the adapter resets it.
      this.#machine.removeHnsNetwork(id);
    });
  }

  /**
   * What listHnsEndpointsScript prints, read by its own parser: Get-HnsEndpoint's v1 objects
   * (the model's getHnsEndpoint) mapped to the script's flat shape as the script maps them.
   */
  listHnsEndpoints(): Promise<HnsEndpoint[]> {
    return this.#live(() => {
      this.#script(listHnsEndpointsScript(), 'list HNS endpoints');
      this.#hnsModule('list HNS endpoints', 'Get-HnsEndpoint');
      const endpoints = this.#machine.hns.getHnsEndpoint().map((e) => ({
        Id: String(e.ID),
        Name: String(e.Name ?? ''),
        NetworkId: String(e.VirtualNetwork ?? ''),
        IpAddress: String(e.IPAddress ?? ''),
        Remote: e.IsRemoteEndpoint === true,
      }));
      const result = parseHnsEndpointListOutput(JSON.stringify({ available: true, endpoints }));
      return result.available ? result.endpoints : [];
    });
  }

  /** What removeHnsEndpointScript does: the endpoint with that id, while it has that address. */
  removeHnsEndpoint(id: string, ipAddress: string): Promise<boolean> {
    return this.#live(() => {
      const action = `remove HNS endpoint "${id}" (${ipAddress})`;
      this.#script(removeHnsEndpointScript(id, ipAddress), action); // refuses what it refuses
      this.#hnsModule(action, 'Get-HnsEndpoint');
      const endpoint = this.#machine.hns
        .endpoints()
        .find((e) => e.id.toLowerCase() === id.toLowerCase() && e.ip === ipAddress);
      return endpoint ? this.#machine.hns.removeEndpoint(endpoint.id) : false;
    });
  }

  /** What createHnsNetworkScript does: the network of that name, created when missing. */
  createHnsNetwork(spec: HnsNetworkSpec): Promise<HnsNetwork> {
    return this.#live(() => {
      // Refuses what the script refuses, and a command no module of the host provides.
      const action = `create HNS network "${spec.name}"`;
      this.#script(createHnsNetworkScript(spec), action);
      this.#hnsModule(action);
      return this.#machine.hns.ensure(spec.name, spec.type, [
        { addressPrefix: spec.addressPrefix, gateway: spec.gateway },
      ]);
    });
  }

  /**
   * What reserveCniAddressScript does: host-local ADD for the id on the network's store, or
   * the address the id holds (its duplicate-allocation error), after host-local.exe is found.
   */
  reserveCniAddress(request: CniAddressRequest): Promise<string> {
    return this.#live(async () => {
      this.#script(reserveCniAddressScript(request), 'reserve a pod address'); // refuses what it refuses
      const exe = `${request.binDir.replace(/\\$/, '')}\\host-local.exe`;
      if ((await this.#machine.fs.stat(exe))?.kind !== 'file')
        throw new Error(
          `The term '${exe}' is not recognized as the name of a cmdlet, function, script file, or operable program.`,
        );
      return reserveHostLocalAddress(this.#machine.fs, request);
    });
  }

  // Windows Firewall.

  ensureInboundFirewallRule(rule: InboundFirewallRule): Promise<void> {
    return this.#live(() => {
      // What ensureInboundFirewallRuleScript does: Get-NetFirewallRule -Name, then
      // New-NetFirewallRule or Set-NetFirewallRule with the same settings.
      this.#script(ensureInboundFirewallRuleScript(rule), `ensure firewall rule "${rule.name}"`);
      const settings = {
        displayName: rule.displayName,
        description: rule.description,
        direction: 'Inbound' as const,
        action: 'Allow' as const,
        protocol: rule.protocol,
        localPorts: [rule.localPort],
        enabled: true,
      };
      if (this.#machine.firewall.rule(rule.name)) this.#machine.firewall.set(rule.name, settings);
      else this.#machine.firewall.add({ name: rule.name, ...settings });
    });
  }

  removeFirewallRule(name: string): Promise<void> {
    return this.#live(() => {
      this.#script(removeFirewallRuleScript(name), `remove firewall rule "${name}"`);
      this.#machine.firewall.remove(name);
    });
  }

  // The machine.

  hostname(): Promise<string> {
    return this.#live(() => this.#machine.hostname);
  }

  instanceMetadata(request: ImdsRequest): Promise<ImdsResponse> {
    return this.#live(() => {
      const imds = this.#machine.instanceMetadata;
      // Off EC2 nothing answers on 169.254.169.254: the connect times out.
      if (!imds) throw new Error('connect ETIMEDOUT 169.254.169.254:80');
      return imds.answer(request);
    });
  }

  containersFeature(): Promise<ContainersFeatureState> {
    return this.#live(() => {
      this.#script(containersFeatureScript(), "read the Containers feature's state");
      // Get-WindowsFeature's InstallState, read back through the agent's own parser.
      const state = this.#machine.features.get('Containers')?.state ?? 'Unknown';
      return parseContainersFeatureOutput(JSON.stringify({ state }));
    });
  }

  ipv4Network(): Promise<HostNetwork> {
    return this.#live(() => {
      this.#script(ipv4NetworkScript(), "read the host's IPv4 addresses and routes");
      return ipConfiguration(this.#machine);
    });
  }

  osVersion(): Promise<OsVersion> {
    return this.#live(() => {
      this.#script(osVersionScript(), 'read the Windows version');
      return { ...this.#machine.osVersion };
    });
  }

  hasImage(reference: string): Promise<boolean> {
    return this.#live(async () => {
      await this.#ctrInstalled();
      return this.#machine.containerdImages.has(reference);
    });
  }

  /** ctr's pull against the machine's image store: containerd's error when it fails. */
  pullImage(reference: string, signal: AbortSignal): Promise<void> {
    return this.#live(async () => {
      await this.#ctrInstalled();
      try {
        await this.#machine.containerdImages.pull(reference, signal);
      } catch (error) {
        if (signal.aborted) throw error;
        throw new WinfleetError(
          'WF_WINDOWS_COMMAND_FAILED',
          `Cannot pull image "${reference}": ${(error as Error).message}`,
        );
      }
    });
  }

  /**
   * ctr.exe is run from the payload's install path: without it, Node's spawn fails as it does
   * on Windows (libuv maps ERROR_FILE_NOT_FOUND to ENOENT: "spawn <path> ENOENT").
   */
  async #ctrInstalled(): Promise<void> {
    if ((await this.#machine.fs.stat(ctrExe))?.kind === 'file') return;
    throw Object.assign(new Error(`spawn ${ctrExe} ENOENT`), { code: 'ENOENT' });
  }

  freeDiskBytes(_path: string): Promise<number> {
    return this.#live(() => this.#machine.fs.freeBytes());
  }

  /** The machine's clock, which a clock-skew fault puts off (machine.clockOffsetMs). */
  localTime(): Promise<number> {
    return this.#live(() => this.#machine.localTime());
  }

  /**
   * What WindowsHostOS.resyncClock runs: W32Time started when stopped (a disabled one cannot
   * be: sc.exe's 1058), then w32tm /resync /force, which sets the clock from its source.
   */
  resyncClock(): Promise<void> {
    return this.#live(() => {
      if (this.#machine.timeService === 'disabled') {
        throw translate(
          'start service "W32Time"',
          scStartArgs('W32Time'),
          new ScmError('StartService', 1058, 'W32Time'),
        );
      }
      this.#machine.timeService = 'running';
      try {
        this.#machine.resyncClock();
      } catch (error) {
        throw new Error(
          `Cannot resync the clock: w32tm /resync /force failed: ${(error as Error).message}`,
        );
      }
    });
  }

  /** Schedules the reboot (as shutdown.exe /r /t does) and returns. */
  reboot(reason: string): Promise<void> {
    return this.#live(() => this.#machine.scheduleReboot(reason));
  }

  // Windows Update (windows-update.ts); the agent's service runs it locally.

  searchUpdates(): Promise<ReportedUpdate[]> {
    return this.#live(() => searchWithPayload(this.#updatePrimitives()));
  }

  installUpdates(kbs: string[]): Promise<UpdateInstallResult> {
    return this.#live(() => installWithPayload(this.#updatePrimitives(), kbs));
  }

  /**
   * What WindowsHostOS runs, as the machine answers it (the routing is the product's). The
   * search, the install, wusa /extract and DISM take simulated minutes and run with the
   * timeouts WindowsHostOS gives them (long-operations.ts), killed as its runner kills them.
   */
  #updatePrimitives(): PayloadUpdatePrimitives {
    const wu = this.#machine.windowsUpdate;
    const ops = this.#machine.longOperations;
    const timings = ops.timings;
    const timeouts = longOperationTimeoutsMs;
    return {
      listPayload: async () => {
        try {
          return (await this.#machine.fs.list(hostPaths.payload)).map((e) => e.name);
        } catch (error) {
          if (errorCode(error) === 'ENOENT') return [];
          throw error;
        }
      },
      searchOnline: () => {
        this.#script(searchUpdatesScript(), 'search for Windows updates');
        return ops.run(
          'powershell.exe',
          ['search for Windows updates'],
          { timeoutMs: timeouts.updateSearch },
          timings.updateSearchMs,
          () => {
            if (!wu.online) throw wuaError('search for Windows updates', 'search', '0x8024402C');
            return wu.search();
          },
        );
      },
      installedKbs: async () => {
        this.#script(installedHotfixesScript(), 'list the installed hotfixes');
        return wu.installed();
      },
      installOnline: (kbs) => {
        this.#script(installUpdatesScript(kbs), 'install Windows updates');
        const installed = new Set(wu.installed());
        const durationMs = kbs.reduce((sum, kb) => {
          const update = wu.catalogUpdate(kb);
          if (!update || installed.has(kb)) return sum;
          return (
            sum +
            (update.rebootRequired ? timings.cumulativeUpdateInstallMs : timings.updateInstallMs)
          );
        }, 0);
        return ops.run(
          'powershell.exe',
          ['install Windows updates', ...kbs],
          { timeoutMs: timeouts.updateInstall },
          durationMs,
          () => wu.install(kbs, 'local'),
        );
      },
      installMsu: async (msu) => {
        const data = await this.#machine.fs.readFile(`${hostPaths.payload}\\${msu.name}`);
        await ops.run(
          'wusa.exe',
          [msu.name, '/extract'],
          { timeoutMs: timeouts.msuExtract },
          timings.msuExtractMs,
          () => {},
        );
        return ops.run(
          'Dism.exe',
          ['/online', '/add-package', msu.kb],
          { timeoutMs: timeouts.dismAddPackage },
          timings.dismAddPackageMs,
          () => wu.installMsu(msu.name, data),
        );
      },
    };
  }

  rebootPending(): Promise<boolean> {
    return this.#live(() => {
      this.#script(rebootPendingScript(), 'read the reboot-pending registry entries');
      return this.#machine.windowsUpdate.rebootPending();
    });
  }

  /**
   * The health endpoints of the node services, as the machine answers them: the kubelet's
   * :10248/healthz and kube-proxy's :10256/healthz answer "ok" while their service runs;
   * anything else is refused, as a port nothing listens on.
   */
  /**
   * The health endpoints as the programs serve them: the kubelet's /healthz says `ok` while it
   * runs; kube-proxy's serves only once its proxier runs (after its HNS network was found:
   * before that its server has not started, so the port refuses) and answers 200 with a JSON
   * body (kubernetes v1.36.5 pkg/proxy/healthcheck/proxy_health.go healthzHandler: lastUpdated,
   * currentTime, nodeEligible, healthy, status per IP family), never `ok`.
   */
  getLoopbackHttp(port: number, path: string): Promise<{ status: number; body: string }> {
    return this.#live(() => {
      const service = healthzServices[port];
      const running = service && this.#machine.scm.query(service)?.state === 'running';
      if (path === '/healthz' && running && port === kubeletHealthzPort)
        return { status: 200, body: 'ok' };
      if (path === '/healthz' && running && port === kubeProxyHealthzPort) {
        const status = kubeProxyStatus(this.#machine);
        if (status?.phase === 'running') {
          const now = new Date().toISOString();
          return {
            status: 200,
            body: JSON.stringify({
              lastUpdated: now,
              currentTime: now,
              nodeEligible: true,
              healthy: true,
              status: { IPv4: { lastUpdated: now, healthy: true } },
            }),
          };
        }
      }
      throw Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:${port}`), {
        code: 'ECONNREFUSED',
      });
    });
  }

  /** The SCM's record of the service's unexpected ends (its 7031/7034 events). */
  serviceFailures(name: string, sinceMs: number): Promise<number[]> {
    return this.#live(() => {
      this.#script(serviceFailuresScript(name, sinceMs), `read the failures of service "${name}"`);
      if (!this.#machine.scm.query(name))
        throw new SyntaxError(
          `Cannot read the failures of service "${name}": service ${name} does not exist`,
        );
      return this.#machine.scm.failureTimes(name, sinceMs);
    });
  }

  /** The active detections, read as the agent reads Windows' (SimDefender, defender.ts). */
  defenderThreats(): Promise<DefenderThreatList> {
    return this.#live(() => {
      this.#script(defenderThreatsScript(), 'list the Microsoft Defender threats');
      return parseDefenderThreatsOutput(this.#machine.defender.answerThreatsScript());
    });
  }

  gmsaHostFacts(): Promise<GmsaHostFacts> {
    return this.#live(() => {
      this.#script(gmsaHostFactsScript(), 'read the host’s gMSA facts');
      return simGmsaHostFacts(this.#machine);
    });
  }
}

/** The services behind the loopback health endpoints getLoopbackHttp answers. */
const healthzServices: Readonly<Record<number, string>> = {
  [kubeletHealthzPort]: 'kubelet',
  [kubeProxyHealthzPort]: 'kube-proxy',
};

/** The SCM's record of a HostOS service configuration. */
function storedConfig(config: ServiceConfig): ScmServiceConfig {
  const stored: ScmServiceConfig = {
    name: config.name,
    displayName: config.displayName,
    commandLine: serviceCommandLine(config.binaryPath, config.args),
    startType: config.startType,
    dependencies: [...config.dependencies],
    recovery: {
      restartDelaysMs: [...config.recovery.restartDelaysMs],
      resetPeriodSeconds: config.recovery.resetPeriodSeconds,
    },
  };
  if (config.description !== undefined) stored.description = config.description;
  if (config.environment && Object.keys(config.environment).length > 0)
    stored.environment = { ...config.environment };
  return stored;
}

function scm(action: string, args: string[], call: () => void): void {
  try {
    call();
  } catch (error) {
    throw translate(action, args, error);
  }
}

/** An ScmError as WindowsHostOS reports the same sc.exe failure. */
function translate(action: string, args: string[], error: unknown): unknown {
  if (!(error instanceof ScmError)) return error;
  return serviceControlError(action, args, {
    operation: error.operation,
    code: error.code,
    message: scmErrorText[error.code] ?? '',
  });
}
