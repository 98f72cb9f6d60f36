/**
 * Fault knobs of one simulated host, settable at any time from a test:
 * - `refuseConnections`: nothing listens on the SSH port (connections are refused);
 * - `dropConnection(...)`: drop SSH connections now, after a delay, or when a given command
 *   runs (a catalog script, an agent command, the Nth exec);
 * - `slowLinkMs`: every data chunk on every SSH connection is delayed;
 * - `crashService(name)`: the service's process dies now (its recovery actions apply);
 *   `{ stayDown: true }`: it stops without a failure instead, so they do not (see the method);
 * - `crashLoop(name)`: the kubelet's or containerd's config file is corrupted and the service
 *   crashes: every restart exits at once with the program's error, until the file is
 *   rewritten (a re-bootstrap does) or `clear()` puts it back;
 * - `deleteHnsNetwork(name)`: the CNI's HNS network goes, with its pods' endpoints;
 * - `interruptCniDel(times)`: the next CNI DELs release the pod's address but leave its HNS
 *   endpoint behind (a crash or reboot mid-teardown);
 * - `skewClock(offsetMs)`: the machine's clock runs that far off;
 * - `setUnreachable(true)`: the host is gone from the network, modelled as switched off
 *   until `setUnreachable(false)` (see the method);
 * - `reboot()` now, or `rebootWhen(...)` a command runs or a service starts ("a reboot in the
 *   middle of bootstrap");
 * - `diskFull`: every data write fails with "There is not enough space on the disk." and C:
 *   reports 0 bytes free;
 * - `changeHostKey()`: the host presents a new host key to new connections;
 * - `blockOutbound({ host, port })`: the host's programs cannot connect to that address and
 *   port (refused, or dropped until they time out), while everyone else still can: "this host
 *   cannot reach the registry" (network-faults.ts); `unblockOutbound()` lifts it.
 * Triggered faults fire once unless `times` says otherwise.
 */
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import type { RemoteScriptName } from '../../src/hostaccess/remote-scripts.ts';
import { cniNetworkName, hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import type { SimMachine } from './machine.ts';
import type { BlockedEndpoint } from './network-faults.ts';
import type { ClassifiedCommand } from './remote-commands.ts';
import { flagValue } from './service-logs.ts';
import { containerdConfigFlag, SimCni } from './sim-cni.ts';

/** Which exec request a fault waits for; every given field must match. */
export interface CommandTrigger {
  /** A catalog script by name, e.g. "run-agent". */
  script?: RemoteScriptName;
  /** An agent run (direct or through run-agent) by its command, e.g. "bootstrap". */
  agentCommand?: string;
  /** The Nth exec request on this host counted from when the fault was set (1 = the next). */
  nthExec?: number;
}

export interface DropConnectionFault {
  /** Wait for this command; without it, the host's current connections drop. */
  when?: CommandTrigger;
  /** Delay after the trigger (or now), ms. Default 0. */
  afterMs?: number;
  /** How many triggers to act on. Default 1. */
  times?: number;
}

export interface RebootFault {
  /** A command, or `{ serviceStarted: name }` (case-insensitive). */
  when: CommandTrigger | { serviceStarted: string };
  /** Delay after the trigger, ms. Default 0. */
  afterMs?: number;
  /** How long the machine stays down. Default: the machine's reboot downtime. */
  downtimeMs?: number;
  times?: number;
}

/** What the faults act on (the SSH server and the machine). */
export interface FaultTargets {
  machine: SimMachine;
  /** Drops every SSH connection of the host now. */
  dropConnections(): void;
  /** Replaces the host key; returns the new SHA256 fingerprint. */
  changeHostKey(): string;
  /** Re-evaluates whether the SSH port should listen. */
  updateListening(): Promise<void>;
}

interface PendingCommandFault {
  trigger: CommandTrigger;
  baseExec: number;
  remaining: number;
  action: (drop: () => void) => void;
}

interface PendingServiceFault {
  service: string;
  remaining: number;
  action: () => void;
}

export class HostFaults {
  /** Delay per data chunk on SSH connections, ms (0: a fast link). */
  slowLinkMs = 0;
  readonly #targets: FaultTargets;
  #refuse = false;
  #execCount = 0;
  #commandFaults: PendingCommandFault[] = [];
  #serviceFaults: PendingServiceFault[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(targets: FaultTargets) {
    this.#targets = targets;
    targets.machine.onServiceStarted((name) => this.#serviceStarted(name));
  }

  /** Whether new SSH connections are refused. */
  get refuseConnections(): boolean {
    return this.#refuse;
  }

  set refuseConnections(refuse: boolean) {
    this.#refuse = refuse;
    // The listener follows asynchronously; setRefuseConnections() waits for it.
    this.#targets.updateListening().catch(() => {});
  }

  /** Sets `refuseConnections` and resolves once the listener follows. */
  async setRefuseConnections(refuse: boolean): Promise<void> {
    this.#refuse = refuse;
    await this.#targets.updateListening();
  }

  get diskFull(): boolean {
    return this.#targets.machine.fs.diskFull;
  }

  set diskFull(full: boolean) {
    this.#targets.machine.fs.diskFull = full;
  }

  /** Drops connections now, after `afterMs`, or when a command runs. */
  dropConnection(fault: DropConnectionFault = {}): void {
    const afterMs = fault.afterMs ?? 0;
    if (!fault.when) {
      this.#later(afterMs, () => this.#targets.dropConnections());
      return;
    }
    this.#commandFaults.push({
      trigger: fault.when,
      baseExec: this.#execCount,
      remaining: fault.times ?? 1,
      action: (drop) => this.#later(afterMs, drop),
    });
  }

  /**
   * The service's process dies now; false when it was not running. Its recovery actions
   * restart it (winfleet registers restart after 5 s, 5 s, then every 10 s: converge.ts
   * defaultRecovery, with the failure flag set), so on Windows a crash of a winfleet service
   * does not stay down. `stayDown` models the way one does: the program stops itself and
   * reports SERVICE_STOPPED with exit code 0, which is no failure, so no recovery action runs
   * and only an explicit start (the agent's converge, Start-Service) brings it back.
   */
  crashService(name: string, options: { stayDown?: boolean } = {}): boolean {
    const scm = this.#targets.machine.scm;
    return options.stayDown ? scm.stopOnItsOwn(name) : scm.crash(name);
  }

  /**
   * A crash loop: the service's config file is corrupted on disk as a power loss during a write
   * leaves it, and the service crashes now; each restart by its recovery actions (or anyone)
   * exits at once with the program's own error:
   * - kubelet: its --config file (C:\k\kubelet-config.yaml) is empty: "failed to load kubelet
   *   config file, path: ..., error: ... was empty" (kubelet v1.36), exit 1;
   * - containerd: its --config file (C:\k\containerd\config.toml) is zero-filled:
   *   "containerd: failed to unmarshal TOML at row 1 column 1: ..." (containerd v2.4.2), exit 1.
   * It ends by itself once the file is rewritten: a re-bootstrap writes both files. `clear()`
   * puts the old content back if the file is still the corrupted one. Returns the file.
   */
  async crashLoop(name: string): Promise<string> {
    const machine = this.#targets.machine;
    const service = name.toLowerCase();
    if (service !== 'kubelet' && service !== 'containerd') {
      throw new RangeError(
        `Cannot make "${name}" crash-loop: the simulated hosts corrupt the config file of kubelet or containerd (kube-proxy's settings are flags and a kubeconfig the agent rewrites); give kubelet or containerd`,
      );
    }
    const commandLine = machine.scm.config(service)?.commandLine;
    if (!commandLine) {
      throw new RangeError(
        `Cannot make "${name}" crash-loop: no such service on ${machine.hostname}; bootstrap the host first`,
      );
    }
    const { args } = splitServiceCommandLine(commandLine);
    const file =
      service === 'kubelet'
        ? (flagValue(args, ['--config']) ?? hostPaths.kubeletConfig)
        : (containerdConfigFlag(args) ?? hostPaths.containerdConfig);
    const original = await machine.fs.tryReadFile(file);
    const corrupted =
      service === 'kubelet' ? Buffer.alloc(0) : Buffer.alloc(Math.max(original?.length ?? 0, 64));
    // Written in place, bypassing diskFull: the corruption is what a lost write left behind.
    const wasFull = machine.fs.diskFull;
    machine.fs.diskFull = false;
    try {
      await machine.fs.writeFileAtomic(file, corrupted);
    } finally {
      machine.fs.diskFull = wasFull;
    }
    if (original && !this.#corrupted.has(file.toLowerCase()))
      this.#corrupted.set(file.toLowerCase(), { file, original, corrupted });
    machine.scm.crash(service);
    return file;
  }

  readonly #corrupted = new Map<string, { file: string; original: Buffer; corrupted: Buffer }>();

  /**
   * Removes the CNI's HNS network (default "winfleet", the network winfleet's CNI config names),
   * as `Get-HnsNetwork | ? Name -eq winfleet | Remove-HnsNetwork` would. Its endpoints go with
   * it: the pods on it keep their IP on the API server (the kubelet and containerd do not look
   * again) but nothing answers there any more. False when there was no such network.
   */
  deleteHnsNetwork(name = cniNetworkName): boolean {
    const machine = this.#targets.machine;
    const network = machine.hns.find(name);
    return network ? machine.removeHnsNetwork(network.id) : false;
  }

  /**
   * The next `times` CNI DELs (a pod's sandbox torn down) stop after host-local released the
   * address and before the HNS endpoint is removed, as a crash or a reboot mid-teardown leaves
   * them (sim-cni.ts interruptDels): the endpoint stays on the network with its address.
   */
  interruptCniDel(times = 1): void {
    SimCni.of(this.#targets.machine).interruptDels(times);
  }

  /**
   * The machine's clock runs `offsetMs` off the real time (positive: ahead), as a host whose
   * time source failed, or whose clock was set by hand. The Windows Time service's resync
   * (w32tm /resync /force) sets it right again.
   */
  skewClock(offsetMs: number): void {
    if (!Number.isFinite(offsetMs) || Math.abs(offsetMs) > 10 * 365 * 86_400_000) {
      throw new RangeError(
        `Cannot skew the clock by ${offsetMs} ms: give a whole number of ms within ten years`,
      );
    }
    this.#targets.machine.clockOffsetMs = Math.round(offsetMs);
  }

  /**
   * The host is off the network. Modelled as a host switched off until cleared: a partition
   * the sim cannot make (its programs reach the API server over the real loopback), so
   * everything on it stops: SSH is refused, the kubelet renews no lease (kube-controller-manager
   * marks the Node Unknown after its grace period), the agent makes no API call. Unlike a real
   * partition, clearing it boots the host (a new boot id, auto services started, pods' sandboxes
   * set up again). Resolves once the host is down, or up again.
   */
  async setUnreachable(on: boolean): Promise<void> {
    const machine = this.#targets.machine;
    if (on) await machine.holdPowerOff('fault: unreachable');
    else await machine.releasePowerOff();
  }

  /** Whether setUnreachable(true) holds the host down. */
  get unreachable(): boolean {
    return this.#targets.machine.poweredOffHeld;
  }

  /** Reboots now; resolves once the machine is up again. */
  reboot(options: { downtimeMs?: number } = {}): Promise<void> {
    return this.#targets.machine.reboot({ reason: 'fault: reboot', ...options });
  }

  /**
   * The machine's next reboots keep it down for good (a host that does not come back from a
   * reboot: a boot that hangs, a failed update rolling back for hours); `clear()` undoes it for
   * later reboots. The fleet's stop still powers it off.
   */
  stayDownOnReboot(): void {
    const timings = this.#targets.machine.timings;
    this.#restoreDowntime ??= timings.rebootDowntimeMs;
    timings.rebootDowntimeMs = 24 * 3600_000;
  }

  #restoreDowntime: number | undefined;

  /** Reboots when a command runs or a service starts. */
  rebootWhen(fault: RebootFault): void {
    const reboot = () =>
      this.#later(fault.afterMs ?? 0, () => {
        this.#targets.machine
          .reboot({ reason: 'fault: reboot', downtimeMs: fault.downtimeMs })
          .catch(() => {});
      });
    if ('serviceStarted' in fault.when) {
      this.#serviceFaults.push({
        service: fault.when.serviceStarted.toLowerCase(),
        remaining: fault.times ?? 1,
        action: reboot,
      });
      return;
    }
    this.#commandFaults.push({
      trigger: fault.when,
      baseExec: this.#execCount,
      remaining: fault.times ?? 1,
      action: reboot,
    });
  }

  /**
   * The host's programs cannot connect to `endpoint` (see network-faults.ts for how each mode
   * fails); the SSH server, the operator and other hosts are not affected.
   */
  blockOutbound(endpoint: BlockedEndpoint): void {
    this.#targets.machine.network.block(endpoint);
  }

  /** Lifts the block of `endpoint`, or every outbound block without one. */
  unblockOutbound(endpoint?: Pick<BlockedEndpoint, 'host' | 'port'>): void {
    this.#targets.machine.network.unblock(endpoint);
  }

  /** New connections see a new host key; returns its SHA256 fingerprint. */
  changeHostKey(): string {
    return this.#targets.changeHostKey();
  }

  /** Turns every fault off and forgets pending triggers. */
  clear(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#commandFaults = [];
    this.#serviceFaults = [];
    this.slowLinkMs = 0;
    this.diskFull = false;
    SimCni.of(this.#targets.machine).interruptDels(0);
    this.unblockOutbound();
    if (this.#restoreDowntime !== undefined) {
      this.#targets.machine.timings.rebootDowntimeMs = this.#restoreDowntime;
      this.#restoreDowntime = undefined;
    }
    if (this.#refuse) this.refuseConnections = false;
    const machine = this.#targets.machine;
    machine.clockOffsetMs = 0;
    // Config files a crash loop corrupted get their content back unless rewritten since.
    for (const { file, original, corrupted } of this.#corrupted.values()) {
      void (async () => {
        const now = await machine.fs.tryReadFile(file);
        if (now?.equals(corrupted)) await machine.fs.writeFileAtomic(file, original);
      })().catch(() => {});
    }
    this.#corrupted.clear();
    if (machine.poweredOffHeld) machine.releasePowerOff().catch(() => {});
  }

  /** Called by the SSH server for each exec request, before it runs. */
  execStarted(command: ClassifiedCommand, dropThisConnection: () => void): void {
    this.#execCount++;
    for (const fault of [...this.#commandFaults]) {
      if (!matches(fault.trigger, command, this.#execCount - fault.baseExec)) continue;
      fault.remaining--;
      if (fault.remaining <= 0) this.#commandFaults.splice(this.#commandFaults.indexOf(fault), 1);
      fault.action(dropThisConnection);
    }
  }

  #serviceStarted(name: string): void {
    for (const fault of [...this.#serviceFaults]) {
      if (fault.service !== name.toLowerCase()) continue;
      fault.remaining--;
      if (fault.remaining <= 0) this.#serviceFaults.splice(this.#serviceFaults.indexOf(fault), 1);
      fault.action();
    }
  }

  #later(ms: number, action: () => void): void {
    if (ms <= 0) {
      action();
      return;
    }
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      action();
    }, ms);
    this.#timers.add(timer);
  }
}

/** The value of a `--flag value` or `--flag=value` argument. */
function matches(trigger: CommandTrigger, command: ClassifiedCommand, execNumber: number): boolean {
  if (trigger.nthExec !== undefined && trigger.nthExec !== execNumber) return false;
  if (
    trigger.script !== undefined &&
    (command.kind !== 'script' || command.script !== trigger.script)
  ) {
    return false;
  }
  if (trigger.agentCommand !== undefined) {
    if (command.kind === 'unsupported' || command.agentCommand !== trigger.agentCommand)
      return false;
  }
  return true;
}
