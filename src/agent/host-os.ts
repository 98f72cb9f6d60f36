/**
 * HostOS: every operating-system action the winfleet agent takes goes through this one narrow
 * interface. Two implementations exist: Windows (sc.exe and PowerShell, in ./windows) and the
 * simulated hosts the tests and the lab use (sim/hosts). Paths are Windows paths
 * ("C:\\k\\kubelet.exe") in both.
 */

import type { ReportedUpdate } from '../api/windows-updates.ts';
import type { HostNetwork } from '../hostaccess/node-address.ts';
import type { ImdsRequest, ImdsResponse } from '../pki/instance-identity.ts';
import type { HnsEndpoint, HnsNetwork, HnsNetworkSpec } from '../windows/hns-objects.ts';
import type { CniAddressRequest } from './windows/cni-address.ts';
import type { ContainersFeatureState } from './windows/containers-feature.ts';
import type { DefenderThreatList } from './windows/defender.ts';
import type { GmsaHostFacts } from './windows/gmsa-host-facts.ts';
import type { StoredCertificate, WinHttpProxy } from './windows/root-certificates.ts';

export type { StoredCertificate, WinHttpProxy } from './windows/root-certificates.ts';

/** How the Service Control Manager starts a service. */
export type ServiceStartType = 'auto' | 'delayed-auto' | 'demand' | 'disabled';

/** The states sc.exe reports. */
export type ServiceState =
  | 'stopped'
  | 'start-pending'
  | 'stop-pending'
  | 'running'
  | 'continue-pending'
  | 'pause-pending'
  | 'paused';

/** What to do when a service exits without being asked to (sc.exe failure). */
export interface ServiceRecovery {
  /** Delay before each restart, in ms; one entry per failure (the last one repeats). */
  restartDelaysMs: number[];
  /** Seconds without failure after which the failure count resets. */
  resetPeriodSeconds: number;
}

/** A Windows service as winfleet registers it. */
export interface ServiceConfig {
  name: string;
  displayName: string;
  description?: string;
  /** Full path of the executable. */
  binaryPath: string;
  /** Arguments, unquoted; the implementation quotes them for the command line. */
  args: string[];
  /** Services that must run first (sc.exe depend=). */
  dependencies: string[];
  startType: ServiceStartType;
  recovery: ServiceRecovery;
  /**
   * Variables for the service's process only (the service's `Environment` registry value, read
   * when it starts), on top of the machine environment as it was at boot — a machine
   * variable set later reaches services only after a reboot. None: no such value.
   */
  environment?: Record<string, string>;
}

/** What the Service Control Manager says about a service. */
export interface ServiceStatus {
  name: string;
  state: ServiceState;
  /** Process id while running. */
  pid?: number;
  /**
   * Exit code of the last run: the Win32 error, or the service's own code when it reported
   * one (sc.exe's SERVICE_EXIT_CODE beside 1066; winfleet-service.exe passes on the agent's).
   */
  exitCode?: number;
}

/** The full registration of an installed service, as read back from the SCM. */
export interface InstalledService extends ServiceStatus {
  /** The command line as stored (binPath), executable and arguments. */
  commandLine: string;
  startType: ServiceStartType;
  dependencies: string[];
  displayName: string;
}

/** An inbound Windows Firewall rule that allows one local port on every profile. */
export interface InboundFirewallRule {
  /** The rule's Name: its unique id (New-NetFirewallRule -Name), not the display name. */
  name: string;
  displayName: string;
  description: string;
  protocol: 'TCP' | 'UDP';
  localPort: number;
}

/** The Windows version as the host reports it. */
export interface OsVersion {
  major: number;
  minor: number;
  build: number;
  /** Update build revision: the patch level (e.g. 2582 in 10.0.20348.2582). */
  ubr: number;
  productName: string;
}

export interface HostOS {
  // Services (Service Control Manager).
  queryService(name: string): Promise<InstalledService | undefined>;
  createService(config: ServiceConfig): Promise<void>;
  /**
   * Updates an existing service's command line, dependencies, start type, recovery and
   * environment (removing an environment the config no longer has).
   */
  configureService(config: ServiceConfig): Promise<void>;
  /** The service's own environment ({} when it has none); undefined when it does not exist. */
  queryServiceEnvironment(name: string): Promise<Record<string, string> | undefined>;
  startService(name: string): Promise<void>;
  /** Stops a service and waits until it is stopped. A stopped service is not an error. */
  stopService(name: string): Promise<void>;
  /** Deletes a service (stopping it first). A missing service is not an error. */
  deleteService(name: string): Promise<void>;
  /**
   * Marks a service for deletion without stopping it (`sc.exe delete`): the SCM deletes a
   * running service once it stops. How a service removes itself: its process marks it, then
   * exits. A missing service, or one marked already, is not an error.
   */
  deleteServiceWhenStopped(name: string): Promise<void>;

  // Files.
  readFile(path: string): Promise<Buffer | undefined>;
  /** Writes atomically (temp file + rename), creating parent directories. */
  writeFile(path: string, data: Buffer | string): Promise<void>;
  /**
   * Writes `chunks` to `path` as they come, never holding the whole file: into a temporary
   * file beside it (parents created), renamed over `path` only once the chunks ended without
   * an error, and removed otherwise — so a stream that fails its check at the end (a payload
   * blob whose digest does not match) never lands under the name. Returns the bytes written.
   */
  writeFileFromStream(path: string, chunks: AsyncIterable<Uint8Array>): Promise<number>;
  /** The SHA-256 (lowercase hex) of a file, read as a stream; undefined when it is missing. */
  fileSha256(path: string): Promise<string | undefined>;
  /** Copies a file as a stream, atomically as writeFileFromStream; a missing `from` throws. */
  copyFile(from: string, to: string): Promise<void>;
  /** Removes a file or directory tree; a missing path is not an error. */
  removePath(path: string): Promise<void>;
  /**
   * Renames a file; `to` must not exist. Windows renames a running executable (it will not
   * overwrite or delete one), which is how a running one is replaced.
   */
  renamePath(from: string, to: string): Promise<void>;
  /**
   * Deletes a file unless a process holds it (a running executable): true when it is gone
   * (or was missing), false when it is in use. One attempt, no waiting.
   */
  removeFileIfUnused(path: string): Promise<boolean>;
  ensureDirectory(path: string): Promise<void>;
  listDirectory(path: string): Promise<string[] | undefined>;
  /**
   * Has Windows delete a file, or a directory that is empty by then, at the next boot
   * (MoveFileEx with MOVEFILE_DELAY_UNTIL_REBOOT: an entry in Session Manager's
   * PendingFileRenameOperations, which is housekeeping and does not make rebootPending true).
   * For what a running process holds, such as the agent's own executable.
   */
  deleteAtBoot(path: string): Promise<void>;

  // Machine-level environment variables (HKLM\...\Session Manager\Environment).
  getMachineEnv(name: string): Promise<string | undefined>;
  /** Sets a machine environment variable; undefined removes it. */
  setMachineEnv(name: string, value: string | undefined): Promise<void>;

  // Trusted root CAs (Cert:\LocalMachine\Root) and the WinHTTP proxy (host-settings.ts).
  /** The certificates of the machine's Root store. */
  listRootCertificates(): Promise<StoredCertificate[]>;
  /**
   * Adds one PEM certificate to the Root store; returns the thumbprint Windows gave it (the
   * SHA-1 of its DER). Adding one already there changes nothing.
   */
  addRootCertificate(pem: string): Promise<string>;
  /** Removes the certificate with this thumbprint from the Root store; a missing one is no error. */
  removeRootCertificate(thumbprint: string): Promise<void>;
  /** Sets the machine's WinHTTP proxy (netsh winhttp set proxy); undefined: direct access. */
  setWinHttpProxy(proxy: WinHttpProxy | undefined): Promise<void>;

  // Host Network Service.
  listHnsNetworks(): Promise<HnsNetwork[]>;
  removeHnsNetwork(id: string): Promise<void>;
  /** Every HNS endpoint, on every network. */
  listHnsEndpoints(): Promise<HnsEndpoint[]>;
  /**
   * Removes the endpoint with this id while it still has this IPv4 address; false when there was
   * no such endpoint (gone, or its address is another now).
   */
  removeHnsEndpoint(id: string, ipAddress: string): Promise<boolean>;
  /**
   * Creates the network unless one of that name exists (then returns that one, as sdnbridge's
   * getOrCreateNetwork does).
   */
  createHnsNetwork(spec: HnsNetworkSpec): Promise<HnsNetwork>;
  /**
   * Reserves an address in host-local's store of a pod network for `containerId`, running the
   * CNI host-local plugin (windows/cni-address.ts); the same id again gets the address it holds.
   */
  reserveCniAddress(request: CniAddressRequest): Promise<string>;

  // Windows Firewall (inbound rules).
  /** Creates the enabled inbound allow rule, or makes the rule of that name match it. */
  ensureInboundFirewallRule(rule: InboundFirewallRule): Promise<void>;
  /** Removes the rule of that name; a missing rule is not an error. */
  removeFirewallRule(name: string): Promise<void>;

  // The machine.
  hostname(): Promise<string>;
  /** The Containers feature's InstallState (Get-WindowsFeature), "Unknown" off Windows Server. */
  containersFeature(): Promise<ContainersFeatureState>;
  /**
   * Every IPv4 address with its interface (alias, index, state) and the default routes with
   * their metrics: what a host that joins on its own picks its node address from, by the
   * operator's rule (hostaccess/node-address.ts: the default route's address, never APIPA,
   * loopback or an HNS vEthernet one before an adapter's).
   */
  ipv4Network(): Promise<HostNetwork>;
  /**
   * One HTTP request to the cloud's instance metadata service at 169.254.169.254 (EC2's IMDS),
   * for the instance identity a pool may require of a host joining by command
   * (pki/instance-identity.ts speaks IMDSv2 over it). Rejects when nothing answers.
   */
  instanceMetadata(request: ImdsRequest): Promise<ImdsResponse>;
  osVersion(): Promise<OsVersion>;
  /** Free bytes on the volume holding `path`. */
  freeDiskBytes(path: string): Promise<number>;
  /** Restarts the machine; the promise may never settle. */
  reboot(reason: string): Promise<void>;
  /** The host's clock now (ms since the epoch): its system time, which may be off. */
  localTime(): Promise<number>;
  /**
   * Has the Windows Time service set the clock from its time source now (w32tm /resync
   * /force, starting W32Time first when it is stopped). Throws naming what failed.
   */
  resyncClock(): Promise<void>;

  // Windows Update (the Windows Update Agent's COM API; it must run locally: the agent does it).
  /** Updates not installed: WUA's search "IsInstalled=0 and Type='Software' and IsHidden=0". */
  searchUpdates(): Promise<ReportedUpdate[]>;
  /**
   * Downloads and installs the updates with these KB numbers (EULAs accepted). A KB that fails
   * is in `failed` with its HRESULT; the call throws only when nothing could be tried.
   */
  installUpdates(kbs: string[]): Promise<UpdateInstallResult>;
  /**
   * Windows servicing waits for a reboot: the Component Based Servicing\RebootPending key or
   * the WindowsUpdate\Auto Update\RebootRequired key. Session Manager's
   * PendingFileRenameOperations does not count (antivirus and installers write it routinely).
   */
  rebootPending(): Promise<boolean>;

  // Problem detection (node-health.ts).
  /**
   * GET http://127.0.0.1:<port><path> on the host (a health endpoint such as the kubelet's
   * :10248/healthz): the status and up to 1 KiB of the body. Throws when nothing answers within
   * a few seconds.
   */
  getLoopbackHttp(port: number, path: string): Promise<{ status: number; body: string }>;
  /**
   * When the service ended unexpectedly since `sinceMs` (ms since the epoch, oldest first): the
   * Service Control Manager's System log events 7031 and 7034 (windows/service-failures.ts).
   */
  serviceFailures(name: string, sinceMs: number): Promise<number[]>;
  /** Microsoft Defender's threats (Get-MpThreat; windows/defender.ts). */
  defenderThreats(): Promise<DefenderThreatList>;

  // gMSA readiness (gmsa-readiness.ts).
  /**
   * Whether the host is in an Active Directory domain, whether Container Credential Guard is
   * there, and the CCG plug-ins registered (windows/gmsa-host-facts.ts). Reads only.
   */
  gmsaHostFacts(): Promise<GmsaHostFacts>;

  // containerd's images, in the k8s.io namespace the kubelet's CRI uses (pre-pull.ts).
  /** Whether containerd has the image, by its normalised reference ("registry/repo:tag"). */
  hasImage(reference: string): Promise<boolean>;
  /**
   * Pulls the image for the host's platform and unpacks it (ctr images pull, with the registry
   * hosts of C:\k\containerd\certs.d). Rejects with containerd's error; `signal` stops it.
   */
  pullImage(reference: string, signal: AbortSignal): Promise<void>;
}

/** What an installUpdates call did. */
export interface UpdateInstallResult {
  /** KBs installed (some may wait for a reboot to finish). */
  installed: string[];
  /** KBs that failed, with the HRESULT and its meaning. */
  failed: { kb: string; error: string }[];
  /** Some installed update needs a reboot to finish. */
  rebootRequired: boolean;
}
