/**
 * The Windows implementation of HostOS, used by the agent on the host itself: services through
 * sc.exe, environment variables, HNS networks, firewall rules and the OS version through
 * generated PowerShell, files through node:fs, reboot through shutdown.exe. Every program runs
 * through the injected CommandRunner, so the tests replay recorded sc.exe/PowerShell outputs
 * (./fixtures) and assert each exact argv, and every generated script is parsed by a
 * PowerShell grammar.
 *
 * What the tests here cannot prove, and only a real Windows host can: that sc.exe and
 * powershell.exe accept these argument vectors and behave as documented (exit codes equal to
 * the Win32 error, state transitions and their timing, deletion pending while a handle is open),
 * that a file in use cannot be replaced (the rename retries assume Windows' sharing rules), and
 * that statfs reports the volume's free space (libuv uses GetDiskFreeSpaceW). The file
 * operations themselves run in the tests against a temporary directory.
 */

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import {
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  statfs,
  unlink,
} from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { dirname, join, parse as parsePath, win32 } from 'node:path';
import type { ReportedUpdate } from '../../api/windows-updates.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import type { HostNetwork } from '../../hostaccess/node-address.ts';
import type { ImdsRequest, ImdsResponse } from '../../pki/instance-identity.ts';
import { powerShellArgs, powerShellErrorText } from '../../powershell/powershell.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';
import type { HnsEndpoint, HnsNetwork, HnsNetworkSpec } from '../../windows/hns-objects.ts';
import type {
  HostOS,
  InboundFirewallRule,
  InstalledService,
  OsVersion,
  ServiceConfig,
  UpdateInstallResult,
} from '../host-os.ts';
import { loopbackHttpGet } from '../node-health-http.ts';
import {
  type CniAddressRequest,
  parseCniAddressOutput,
  reserveCniAddressScript,
} from './cni-address.ts';
import { type CommandOptions, type CommandRunner, childProcessRunner } from './command-runner.ts';
import {
  ctrError,
  ctrExe,
  imageListArgs,
  imagePullArgs,
  parseImageListOutput,
} from './containerd-images.ts';
import {
  type ContainersFeatureState,
  containersFeatureScript,
  parseContainersFeatureOutput,
} from './containers-feature.ts';
import {
  type DefenderThreatList,
  defenderThreatsScript,
  parseDefenderThreatsOutput,
} from './defender.ts';
import { deleteAtBootScript } from './delete-at-boot.ts';
import {
  ensureInboundFirewallRuleScript,
  parseEnsureFirewallRuleOutput,
  parseRemoveFirewallRuleOutput,
  removeFirewallRuleScript,
} from './firewall.ts';
import {
  type GmsaHostFacts,
  gmsaHostFactsScript,
  parseGmsaHostFactsOutput,
} from './gmsa-host-facts.ts';
import {
  createHnsNetworkScript,
  defaultHnsModulePaths,
  hnsUnavailableError,
  listHnsEndpointsScript,
  listHnsNetworksScript,
  parseHnsCreateOutput,
  parseHnsEndpointListOutput,
  parseHnsEndpointRemoveOutput,
  parseHnsListOutput,
  parseHnsRemoveOutput,
  removeHnsEndpointScript,
  removeHnsNetworkScript,
} from './hns.ts';
import { ipv4NetworkScript, parseIpv4NetworkOutput } from './ipv4-network.ts';
import { longOperationTimeoutsMs } from './long-operations.ts';
import { getMachineEnvScript, parseMachineEnvOutput, setMachineEnvScript } from './machine-env.ts';
import { osVersionScript, parseOsVersionOutput } from './os-version.ts';
import {
  addRootCertificateScript,
  listRootCertificatesScript,
  parseAddRootCertificateOutput,
  parseRemoveRootCertificateOutput,
  parseRootCertificatesOutput,
  parseSetWinHttpProxyOutput,
  removeRootCertificateScript,
  type StoredCertificate,
  setWinHttpProxyScript,
  type WinHttpProxy,
} from './root-certificates.ts';
import {
  checkServiceName,
  scConfigArgs,
  scCreateArgs,
  scDeleteArgs,
  scDescriptionArgs,
  scFailureArgs,
  scFailureFlagArgs,
  scQcArgs,
  scQueryExArgs,
  scStartArgs,
  scStopArgs,
} from './sc-commands.ts';
import {
  parseScConfig,
  parseScFailure,
  parseScStatus,
  type ScFailure,
  type ScStatus,
  serviceControlError,
  win32Error,
} from './sc-output.ts';
import {
  getServiceEnvironmentScript,
  parseServiceEnvironmentOutput,
  serviceEnvironmentEntries,
  setServiceEnvironmentScript,
} from './service-environment.ts';
import { parseServiceFailuresOutput, serviceFailuresScript } from './service-failures.ts';
import {
  describeHresult,
  installUpdatesScript,
  parseInstallUpdatesOutput,
  parseRebootPendingOutput,
  parseSearchUpdatesOutput,
  rebootPendingScript,
  reportedUpdates,
  searchUpdatesScript,
} from './windows-update.ts';
import {
  dismAddPackageArgs,
  dismFailedText,
  dismOutcome,
  exitCodeHresult,
  installedHotfixesScript,
  installWithPayload,
  msuWithoutCabText,
  type PayloadMsu,
  type PayloadUpdatePrimitives,
  packageCabs,
  parseInstalledHotfixes,
  searchWithPayload,
  wusaExtractArgs,
} from './windows-update-msu.ts';

/** @package */
export interface WindowsHostOSOptions {
  /** Runs sc.exe, powershell.exe and shutdown.exe. Default: `childProcessRunner()`. */
  run?: CommandRunner;
  /** Where System32 lives. Default: %SystemRoot%, else C:\Windows. */
  systemRoot?: string;
  /** Where hns.psm1 is looked for on hosts without the HostNetworkingService module. */
  hnsModulePaths?: readonly string[];
  /** How long stopService waits for STOPPED, in ms. Default: 60000. */
  stopTimeoutMs?: number;
  /** How long deleteService waits for the service to disappear, in ms. Default: 30000. */
  deleteTimeoutMs?: number;
  /** Pause between status polls, in ms. Default: 500. */
  pollIntervalMs?: number;
  /** Attempts to replace a file that another process holds open. Default: 10. */
  renameAttempts?: number;
  /** Where the payload's files are (its .msu files install offline). Default C:\k\winfleet\payload. */
  payloadDir?: string;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  hostname?: () => string;
}

/** The Windows Time service, which w32tm /resync asks to set the clock. */
const timeServiceName = 'W32Time';

/** The delay shutdown.exe is given, so the agent can report before the host goes down. */
const rebootDelaySeconds = 5;
/** shutdown.exe's limit for the /c comment. */
/** How long resyncClock waits for a W32Time it started to be RUNNING. */
const timeServiceStartTimeoutMs = 30_000;

const maxRebootReasonLength = 512;

export class WindowsHostOS implements HostOS {
  readonly #run: CommandRunner;
  readonly #sc: string;
  readonly #powerShell: string;
  readonly #shutdown: string;
  readonly #wusa: string;
  readonly #dism: string;
  readonly #w32tm: string;
  readonly #payloadDir: string;
  readonly #hnsModulePaths: readonly string[];
  readonly #stopTimeoutMs: number;
  readonly #deleteTimeoutMs: number;
  readonly #pollIntervalMs: number;
  readonly #renameAttempts: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #now: () => number;
  readonly #hostname: () => string;

  constructor(options: WindowsHostOSOptions = {}) {
    this.#run = options.run ?? childProcessRunner();
    const system32 = win32.join(
      options.systemRoot ?? process.env.SystemRoot ?? 'C:\\Windows',
      'System32',
    );
    this.#sc = win32.join(system32, 'sc.exe');
    this.#powerShell = win32.join(system32, 'WindowsPowerShell', 'v1.0', 'powershell.exe');
    this.#shutdown = win32.join(system32, 'shutdown.exe');
    this.#wusa = win32.join(system32, 'wusa.exe');
    this.#dism = win32.join(system32, 'Dism.exe');
    this.#w32tm = win32.join(system32, 'w32tm.exe');
    this.#payloadDir = options.payloadDir ?? hostPaths.payload;
    this.#hnsModulePaths = options.hnsModulePaths ?? defaultHnsModulePaths;
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 60_000;
    this.#deleteTimeoutMs = options.deleteTimeoutMs ?? 30_000;
    this.#pollIntervalMs = options.pollIntervalMs ?? 500;
    this.#renameAttempts = options.renameAttempts ?? 10;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#now = options.now ?? Date.now;
    this.#hostname = options.hostname ?? osHostname;
  }

  // Services.

  async queryService(name: string): Promise<InstalledService | undefined> {
    const qc = await this.#scExe(scQcArgs(name), `query service "${name}"`, [
      win32Error.serviceDoesNotExist,
    ]);
    if (qc.failure) return undefined;
    const config = parseScConfig(qc.stdout);
    const status = await this.#queryStatus(name);
    if (!status) return undefined;
    const service: InstalledService = {
      name: config.name,
      state: status.state,
      // A service that reported its own code (winfleet-service.exe passes on the agent's) shows
      // 1066, ERROR_SERVICE_SPECIFIC_ERROR, with the code beside it: that code is the answer.
      exitCode:
        status.win32ExitCode === win32Error.serviceSpecificError
          ? status.serviceExitCode
          : status.win32ExitCode,
      commandLine: config.binaryPathName,
      startType: config.startType,
      dependencies: config.dependencies,
      displayName: config.displayName,
    };
    if (status.pid !== undefined) service.pid = status.pid;
    return service;
  }

  async createService(config: ServiceConfig): Promise<void> {
    const entries = serviceEnvironmentEntries(config.name, config.environment);
    await this.#scExe(scCreateArgs(config), `create service "${config.name}"`);
    if (config.description !== undefined) {
      await this.#scExe(
        scDescriptionArgs(config.name, config.description),
        `describe service "${config.name}"`,
      );
    }
    await this.#setRecovery(config);
    if (entries.length > 0) await this.#setEnvironment(config.name, entries);
  }

  async configureService(config: ServiceConfig): Promise<void> {
    const entries = serviceEnvironmentEntries(config.name, config.environment);
    await this.#scExe(scConfigArgs(config), `configure service "${config.name}"`);
    await this.#scExe(
      scDescriptionArgs(config.name, config.description ?? ''),
      `describe service "${config.name}"`,
    );
    await this.#setRecovery(config);
    await this.#setEnvironment(config.name, entries);
  }

  async #setEnvironment(name: string, entries: readonly string[]): Promise<void> {
    await this.#runPowerShell(
      setServiceEnvironmentScript(name, entries),
      `set the environment of service "${name}"`,
    );
  }

  async queryServiceEnvironment(name: string): Promise<Record<string, string> | undefined> {
    return parseServiceEnvironmentOutput(
      await this.#runPowerShell(
        getServiceEnvironmentScript(name),
        `read the environment of service "${name}"`,
      ),
      name,
    );
  }

  async #setRecovery(config: ServiceConfig): Promise<void> {
    const action = `set the recovery actions of service "${config.name}"`;
    await this.#scExe(scFailureArgs(config.name, config.recovery), action);
    await this.#scExe(scFailureFlagArgs(config.name), action);
  }

  async startService(name: string): Promise<void> {
    await this.#scExe(scStartArgs(name), `start service "${name}"`, [
      win32Error.serviceAlreadyRunning,
    ]);
  }

  /**
   * Sends stop whenever the service is running or paused and polls until it is stopped. A
   * service that is starting cannot take the stop yet (1061); the loop sends it once the
   * service is running. A missing service has nothing to stop.
   */
  async stopService(name: string): Promise<void> {
    checkServiceName(name);
    const deadline = this.#now() + this.#stopTimeoutMs;
    let last: ScStatus | undefined;
    for (;;) {
      last = await this.#queryStatus(name);
      if (!last || last.state === 'stopped') return;
      if (last.state === 'running' || last.state === 'paused') {
        const stop = await this.#scExe(scStopArgs(name), `stop service "${name}"`, [
          win32Error.serviceNotActive,
          win32Error.serviceCannotAcceptControl,
        ]);
        if (!stop.failure) {
          const status = parseScStatus(stop.stdout);
          if (status.state === 'stopped') return;
        }
      }
      if (this.#now() >= deadline) break;
      await this.#sleep(this.#pollIntervalMs);
    }
    const state = last.pid === undefined ? last.state : `${last.state}, PID ${last.pid}`;
    const fix =
      last.pid === undefined
        ? 'reboot the host'
        : `end its process (taskkill /F /PID ${last.pid}) or reboot the host`;
    throw new WinfleetError(
      'WF_SERVICE_STUCK',
      `Service "${name}" did not stop within ${this.#stopTimeoutMs} ms (still ${state}); ${fix}`,
    );
  }

  async deleteServiceWhenStopped(name: string): Promise<void> {
    checkServiceName(name);
    await this.#scExe(scDeleteArgs(name), `mark service "${name}" for deletion`, [
      win32Error.serviceDoesNotExist,
      win32Error.serviceMarkedForDelete,
    ]);
  }

  async deleteService(name: string): Promise<void> {
    checkServiceName(name);
    if (!(await this.#queryStatus(name))) return;
    await this.stopService(name);
    await this.#scExe(scDeleteArgs(name), `delete service "${name}"`, [
      win32Error.serviceDoesNotExist,
      win32Error.serviceMarkedForDelete,
    ]);
    // The SCM removes a deleted service once the last handle to it closes.
    const deadline = this.#now() + this.#deleteTimeoutMs;
    while (await this.#queryStatus(name)) {
      if (this.#now() >= deadline) {
        throw new WinfleetError(
          'WF_SERVICE_STUCK',
          `Service "${name}" is marked for deletion but still registered after ${this.#deleteTimeoutMs} ms; close programs that hold it open (services.msc, Event Viewer) or reboot the host`,
        );
      }
      await this.#sleep(this.#pollIntervalMs);
    }
  }

  async #queryStatus(name: string): Promise<ScStatus | undefined> {
    const result = await this.#scExe(scQueryExArgs(name), `query service "${name}"`, [
      win32Error.serviceDoesNotExist,
    ]);
    return result.failure ? undefined : parseScStatus(result.stdout);
  }

  async #scExe(
    args: string[],
    action: string,
    tolerated: readonly number[] = [],
  ): Promise<{ stdout: string; failure?: ScFailure }> {
    const result = await this.#run(this.#sc, args);
    const failure = parseScFailure(result.stdout, result.exitCode, result.stderr);
    if (!failure) return { stdout: result.stdout };
    if (!tolerated.includes(failure.code)) throw serviceControlError(action, args, failure);
    return { stdout: result.stdout, failure };
  }

  // Files.

  async readFile(path: string): Promise<Buffer | undefined> {
    try {
      return await readFile(path);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  /**
   * Writes a temporary file beside `path`, flushes it to disk (the agent reboots hosts), then
   * renames it over `path`. Windows refuses the rename while another process holds the target
   * open (an antivirus scan: retried; a running executable: stop its service first).
   */
  async writeFile(path: string, data: Buffer | string): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      const file = await open(temporary, 'wx');
      try {
        await file.writeFile(data);
        await file.sync();
      } finally {
        await file.close();
      }
      await this.#renameWithRetry(temporary, path);
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
  }

  /** As writeFile, with the content written chunk by chunk as it arrives. */
  async writeFileFromStream(path: string, chunks: AsyncIterable<Uint8Array>): Promise<number> {
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    let bytes = 0;
    try {
      const file = await open(temporary, 'wx');
      try {
        for await (const chunk of chunks) {
          for (let at = 0; at < chunk.byteLength; )
            at += (await file.write(chunk, at, chunk.byteLength - at)).bytesWritten;
          bytes += chunk.byteLength;
        }
        await file.sync();
      } finally {
        await file.close();
      }
      await this.#renameWithRetry(temporary, path);
      return bytes;
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
  }

  /** Reading a running executable is allowed (Windows maps images with FILE_SHARE_READ). */
  async fileSha256(path: string): Promise<string | undefined> {
    const hash = createHash('sha256');
    try {
      for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 }))
        hash.update(chunk as Buffer);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      throw err;
    }
    return hash.digest('hex');
  }

  async copyFile(from: string, to: string): Promise<void> {
    // Opened when read: a stream opened earlier would fail with nobody listening yet.
    async function* content() {
      yield* createReadStream(from, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>;
    }
    await this.writeFileFromStream(to, content());
  }

  async #renameWithRetry(from: string, to: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await rename(from, to);
        return;
      } catch (err) {
        const code = errorCode(err);
        const busy = code === 'EPERM' || code === 'EACCES' || code === 'EBUSY';
        if (!busy) throw err;
        if (attempt >= this.#renameAttempts) {
          throw new WinfleetError(
            'WF_FILE_IN_USE',
            `Cannot replace "${to}": it is in use (${code}); stop the service that runs or holds it, then write it again`,
            { cause: err },
          );
        }
        await this.#sleep(Math.min(100 * attempt, 1000));
      }
    }
  }

  async deleteAtBoot(path: string): Promise<void> {
    await this.#runPowerShell(deleteAtBootScript(path), `delete "${path}" at the next boot`);
  }

  async removePath(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }

  /** Node's rename is MoveFileEx with REPLACE_EXISTING: `to` is checked to be free first. */
  async renamePath(from: string, to: string): Promise<void> {
    const existing = await lstat(to).then(
      () => true,
      (err: unknown) => (errorCode(err) === 'ENOENT' ? false : Promise.reject(err)),
    );
    if (existing) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot rename "${from}" to "${to}": "${to}" already exists; remove it or choose another name`,
      );
    }
    await rename(from, to);
  }

  /**
   * One DeleteFile: a running executable refuses it (ERROR_ACCESS_DENIED, EPERM), a file open
   * without FILE_SHARE_DELETE too (ERROR_SHARING_VIOLATION, EBUSY). No retries.
   */
  async removeFileIfUnused(path: string): Promise<boolean> {
    try {
      await unlink(path);
      return true;
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT') return true;
      if (code === 'EPERM' || code === 'EACCES' || code === 'EBUSY') return false;
      throw err;
    }
  }

  async ensureDirectory(path: string): Promise<void> {
    await mkdir(path, { recursive: true });
  }

  async listDirectory(path: string): Promise<string[] | undefined> {
    try {
      return (await readdir(path)).sort();
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  // Machine environment.

  async getMachineEnv(name: string): Promise<string | undefined> {
    const stdout = await this.#runPowerShell(
      getMachineEnvScript(name),
      `read environment variable "${name}"`,
    );
    return parseMachineEnvOutput(stdout, name);
  }

  async setMachineEnv(name: string, value: string | undefined): Promise<void> {
    await this.#runPowerShell(
      setMachineEnvScript(name, value),
      `${value === undefined ? 'remove' : 'set'} environment variable "${name}"`,
    );
  }

  // Host Network Service.

  async listHnsNetworks(): Promise<HnsNetwork[]> {
    const action = 'list HNS networks';
    const result = parseHnsListOutput(
      await this.#runPowerShell(listHnsNetworksScript(this.#hnsModulePaths), action),
    );
    if (!result.available) throw hnsUnavailableError(action, result.tried);
    return result.networks;
  }

  /** Removes the network; one that no longer exists is not an error. */
  async removeHnsNetwork(id: string): Promise<void> {
    const action = `remove HNS network "${id}"`;
    const result = parseHnsRemoveOutput(
      await this.#runPowerShell(removeHnsNetworkScript(id, this.#hnsModulePaths), action),
    );
    if (!result.available) throw hnsUnavailableError(action, result.tried);
  }

  async listHnsEndpoints(): Promise<HnsEndpoint[]> {
    const action = 'list HNS endpoints';
    const result = parseHnsEndpointListOutput(
      await this.#runPowerShell(listHnsEndpointsScript(this.#hnsModulePaths), action),
    );
    if (!result.available) throw hnsUnavailableError(action, result.tried, 'Get-HnsEndpoint');
    return result.endpoints;
  }

  /** Removes the endpoint while it has that address (removeHnsEndpointScript). */
  async removeHnsEndpoint(id: string, ipAddress: string): Promise<boolean> {
    const action = `remove HNS endpoint "${id}" (${ipAddress})`;
    const result = parseHnsEndpointRemoveOutput(
      await this.#runPowerShell(
        removeHnsEndpointScript(id, ipAddress, this.#hnsModulePaths),
        action,
      ),
    );
    if (!result.available) throw hnsUnavailableError(action, result.tried, 'Get-HnsEndpoint');
    return result.removed === 1;
  }

  /** Creates the network unless one of that name exists (createHnsNetworkScript). */
  async createHnsNetwork(spec: HnsNetworkSpec): Promise<HnsNetwork> {
    const action = `create HNS network "${spec.name}"`;
    const result = parseHnsCreateOutput(
      await this.#runPowerShell(createHnsNetworkScript(spec, this.#hnsModulePaths), action),
    );
    if (!result.available) throw hnsUnavailableError(action, result.tried);
    return result.network;
  }

  /** Runs host-local.exe to reserve an address (cni-address.ts). */
  async reserveCniAddress(request: CniAddressRequest): Promise<string> {
    const stdout = await this.#runPowerShell(
      reserveCniAddressScript(request),
      `reserve an address on ${request.network} for ${request.containerId}`,
    );
    return parseCniAddressOutput(stdout, request);
  }

  // Root certificates and the WinHTTP proxy.

  async listRootCertificates(): Promise<StoredCertificate[]> {
    return parseRootCertificatesOutput(
      await this.#runPowerShell(listRootCertificatesScript(), 'list the Root certificates'),
    );
  }

  async addRootCertificate(pem: string): Promise<string> {
    return parseAddRootCertificateOutput(
      await this.#runPowerShell(addRootCertificateScript(pem), 'add a Root certificate'),
    ).thumbprint;
  }

  async removeRootCertificate(thumbprint: string): Promise<void> {
    parseRemoveRootCertificateOutput(
      await this.#runPowerShell(
        removeRootCertificateScript(thumbprint),
        `remove Root certificate ${thumbprint}`,
      ),
    );
  }

  async setWinHttpProxy(proxy: WinHttpProxy | undefined): Promise<void> {
    parseSetWinHttpProxyOutput(
      await this.#runPowerShell(setWinHttpProxyScript(proxy), 'set the WinHTTP proxy'),
    );
  }

  // Windows Firewall.

  async ensureInboundFirewallRule(rule: InboundFirewallRule): Promise<void> {
    parseEnsureFirewallRuleOutput(
      await this.#runPowerShell(
        ensureInboundFirewallRuleScript(rule),
        `open ${rule.protocol} port ${rule.localPort} with firewall rule "${rule.name}"`,
      ),
    );
  }

  async removeFirewallRule(name: string): Promise<void> {
    parseRemoveFirewallRuleOutput(
      await this.#runPowerShell(removeFirewallRuleScript(name), `remove firewall rule "${name}"`),
    );
  }

  // The machine.

  async hostname(): Promise<string> {
    return this.#hostname();
  }

  async containersFeature(): Promise<ContainersFeatureState> {
    return parseContainersFeatureOutput(
      await this.#runPowerShell(containersFeatureScript(), "read the Containers feature's state"),
    );
  }

  async instanceMetadata(request: ImdsRequest): Promise<ImdsResponse> {
    // Link-local, plain HTTP, no proxy (as the AWS tools do): fetch without a dispatcher.
    const response = await fetch(`http://169.254.169.254${request.path}`, {
      method: request.method,
      headers: request.headers,
      signal: AbortSignal.timeout(5_000),
    });
    return { status: response.status, body: await response.text() };
  }

  async ipv4Network(): Promise<HostNetwork> {
    return parseIpv4NetworkOutput(
      await this.#runPowerShell(ipv4NetworkScript(), "read the host's IPv4 addresses and routes"),
    );
  }

  async osVersion(): Promise<OsVersion> {
    return parseOsVersionOutput(
      await this.#runPowerShell(osVersionScript(), 'read the Windows version'),
    );
  }

  /** Free bytes available on the volume holding `path` (its nearest existing ancestor). */
  async freeDiskBytes(path: string): Promise<number> {
    let current = path;
    for (;;) {
      try {
        const stats = await statfs(current);
        return Number(stats.bavail) * Number(stats.bsize);
      } catch (err) {
        const parent = dirname(current);
        if (
          errorCode(err) !== 'ENOENT' ||
          parent === current ||
          current === parsePath(current).root
        ) {
          throw err;
        }
        current = parent;
      }
    }
  }

  /** The agent runs on the host: its clock is the host's system time. */
  async localTime(): Promise<number> {
    return this.#now();
  }

  /**
   * W32Time started when it is not running (on a standalone host it is a trigger-start service
   * that is often stopped), then `w32tm /resync /force`: the time service sets the clock from
   * its source now, ignoring the accumulated error statistics.
   */
  async resyncClock(): Promise<void> {
    const service = await this.queryService(timeServiceName);
    if (!service) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot resync the clock: the Windows Time service (${timeServiceName}) is not installed; register it with w32tm /register`,
      );
    }
    if (service.state !== 'running') {
      // sc start returns at START_PENDING; w32tm /resync talks to W32Time over RPC, which
      // answers only once the service registered its endpoint ("The RPC server is
      // unavailable" / 0x800706BA before that): wait for RUNNING first.
      await this.startService(timeServiceName);
      const deadline = this.#now() + timeServiceStartTimeoutMs;
      for (;;) {
        const status = await this.#queryStatus(timeServiceName);
        if (status?.state === 'running') break;
        if (this.#now() >= deadline) {
          throw new WinfleetError(
            'WF_WINDOWS_COMMAND_FAILED',
            `Cannot resync the clock: the Windows Time service (${timeServiceName}) is still ${status?.state ?? 'missing'} ${timeServiceStartTimeoutMs / 1000} s after it was started; read its events (Get-WinEvent -ProviderName Microsoft-Windows-Time-Service -MaxEvents 20)`,
          );
        }
        await this.#sleep(this.#pollIntervalMs);
      }
    }
    const args = ['/resync', '/force'];
    const result = await this.#run(this.#w32tm, args);
    const output = `${result.stdout}\n${result.stderr}`.replace(/\s+/g, ' ').trim();
    if (result.exitCode !== 0) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot resync the clock: w32tm.exe ${args.join(' ')} exited with ${result.exitCode}${output ? `: ${output.slice(0, 300)}` : ''}; check the time source (w32tm /query /source, w32tm /query /status)`,
      );
    }
  }

  /** Schedules a restart in 5 s, recorded as planned application maintenance (p:4:1). */
  async reboot(reason: string): Promise<void> {
    // One line without double quotes: shutdown.exe takes the comment as a single argument.
    const comment = reason
      .replace(/"/g, "'")
      .replace(/[\p{Cc}\s]+/gu, ' ')
      .trim()
      .slice(0, maxRebootReasonLength);
    const args = [
      '/r',
      '/t',
      String(rebootDelaySeconds),
      '/d',
      'p:4:1',
      '/c',
      comment || 'winfleet',
    ];
    const result = await this.#run(this.#shutdown, args);
    if (result.exitCode === 0 || result.exitCode === win32Error.shutdownIsScheduled) return;
    const output = `${result.stdout}\n${result.stderr}`.replace(/\s+/g, ' ').trim();
    const hint =
      result.exitCode === win32Error.accessDenied
        ? '; run the agent as LocalSystem or an administrator'
        : '';
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot reboot: shutdown.exe ${args.join(' ')} exited with ${result.exitCode}${output ? `: ${output}` : ''}${hint}`,
    );
  }

  // Windows Update (windows-update.ts: the WUA COM API, which must run locally), and the
  // payload's .msu files for air-gapped hosts (windows-update-msu.ts).

  async searchUpdates(): Promise<ReportedUpdate[]> {
    return searchWithPayload(this.#updatePrimitives());
  }

  async installUpdates(kbs: string[]): Promise<UpdateInstallResult> {
    return installWithPayload(this.#updatePrimitives(), kbs);
  }

  #updatePrimitives(): PayloadUpdatePrimitives {
    return {
      listPayload: async () => (await this.listDirectory(this.#payloadDir)) ?? [],
      searchOnline: async () =>
        reportedUpdates(
          parseSearchUpdatesOutput(
            await this.#runPowerShell(searchUpdatesScript(), 'search for Windows updates', {
              timeoutMs: longOperationTimeoutsMs.updateSearch,
            }),
          ),
        ),
      installedKbs: async () =>
        parseInstalledHotfixes(
          await this.#runPowerShell(installedHotfixesScript(), 'list the installed hotfixes'),
        ),
      installOnline: async (kbs) =>
        parseInstallUpdatesOutput(
          await this.#runPowerShell(
            installUpdatesScript(kbs),
            `install Windows updates ${kbs.join(', ')}`,
            { timeoutMs: longOperationTimeoutsMs.updateInstall },
          ),
          kbs,
        ),
      installMsu: (msu) => this.installMsu(msu),
    };
  }

  /**
   * Installs one .msu of the payload: wusa.exe /extract into a scratch directory beside the
   * payload, then dism.exe per .cab; fails with WF_WINDOWS_UPDATE_FAILED.
   */
  async installMsu(msu: PayloadMsu): Promise<{ rebootRequired: boolean }> {
    const source = join(this.#payloadDir, msu.name);
    const dir = join(dirname(this.#payloadDir), `msu-${msu.kb}`);
    await this.removePath(dir);
    await this.ensureDirectory(dir);
    try {
      const extract = await this.#run(this.#wusa, wusaExtractArgs(source, dir), {
        timeoutMs: longOperationTimeoutsMs.msuExtract,
      });
      if (extract.exitCode !== 0) {
        throw new WinfleetError(
          'WF_WINDOWS_UPDATE_FAILED',
          `wusa.exe ${wusaExtractArgs(source, dir).join(' ')} failed with ${describeHresult(exitCodeHresult(extract.exitCode))}`,
        );
      }
      const cabs = packageCabs((await this.listDirectory(dir)) ?? []);
      if (cabs.length === 0) {
        throw new WinfleetError('WF_WINDOWS_UPDATE_FAILED', msuWithoutCabText(msu.name));
      }
      let rebootRequired = false;
      for (const cab of cabs) {
        const args = dismAddPackageArgs(join(dir, cab));
        // Never killed half-way (long-operations.ts).
        const outcome = dismOutcome(
          (await this.#run(this.#dism, args, { timeoutMs: longOperationTimeoutsMs.dismAddPackage }))
            .exitCode,
        );
        if (!outcome.ok)
          throw new WinfleetError('WF_WINDOWS_UPDATE_FAILED', dismFailedText(args, outcome.error));
        rebootRequired ||= outcome.rebootRequired;
      }
      return { rebootRequired };
    } finally {
      await this.removePath(dir);
    }
  }

  async rebootPending(): Promise<boolean> {
    const entries = parseRebootPendingOutput(
      await this.#runPowerShell(rebootPendingScript(), 'read the reboot-pending registry entries'),
    );
    return entries.componentBasedServicing || entries.windowsUpdate;
  }

  getLoopbackHttp(port: number, path: string): Promise<{ status: number; body: string }> {
    return loopbackHttpGet(port, path);
  }

  async serviceFailures(name: string, sinceMs: number): Promise<number[]> {
    return parseServiceFailuresOutput(
      await this.#runPowerShell(
        serviceFailuresScript(name, sinceMs),
        `read the failures of service "${name}" from the System log`,
      ),
      name,
    );
  }

  async defenderThreats(): Promise<DefenderThreatList> {
    return parseDefenderThreatsOutput(
      await this.#runPowerShell(defenderThreatsScript(), 'list the Microsoft Defender threats'),
    );
  }

  async gmsaHostFacts(): Promise<GmsaHostFacts> {
    return parseGmsaHostFactsOutput(
      await this.#runPowerShell(gmsaHostFactsScript(), 'read the host’s gMSA facts'),
    );
  }

  // containerd's images (containerd-images.ts).

  async hasImage(reference: string): Promise<boolean> {
    const result = await this.#run(ctrExe, imageListArgs(reference));
    if (result.exitCode !== 0) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot list containerd's image "${reference}": ${ctrExe} exited with ${result.exitCode}: ${ctrError(result.stderr)}`,
      );
    }
    return parseImageListOutput(result.stdout, reference);
  }

  async pullImage(reference: string, signal: AbortSignal): Promise<void> {
    // A pull takes as long as the image's size needs: the caller's signal bounds it.
    const result = await this.#run(ctrExe, imagePullArgs(reference), {
      timeoutMs: Number.POSITIVE_INFINITY,
      signal,
    });
    if (result.exitCode !== 0) {
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot pull image "${reference}": ${ctrError(result.stderr)}`,
      );
    }
  }

  async #runPowerShell(
    script: string,
    action: string,
    options: CommandOptions = {},
  ): Promise<string> {
    const result = await this.#run(this.#powerShell, powerShellArgs(script), options);
    if (result.exitCode === 0) return result.stdout;
    const detail = powerShellErrorText(result.stderr) || result.stdout.trim() || 'no output';
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot ${action}: PowerShell exited with ${result.exitCode}: ${detail}`,
    );
  }
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}
