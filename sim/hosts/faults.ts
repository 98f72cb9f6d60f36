/**
 * Fault knobs of one simulated host, settable at any time from a test:
 * - `refuseConnections`: nothing listens on the SSH port (connections are refused);
 * - `dropConnection(...)`: drop SSH connections now, after a delay, or when a given command
 *   runs (a catalog script, an agent command, the Nth exec);
 * - `slowLinkMs`: every data chunk on every SSH connection is delayed;
 * - `crashService(name)`: the service's process dies now (its recovery actions apply);
 * - `reboot()` now, or `rebootWhen(...)` a command runs or a service starts ("a reboot in the
 *   middle of bootstrap");
 * - `diskFull`: every data write fails with "There is not enough space on the disk.";
 * - `changeHostKey()`: the host presents a new host key to new connections.
 * Triggered faults fire once unless `times` says otherwise.
 */
import type { RemoteScriptName } from '../../src/hostaccess/remote-scripts.ts';
import type { SimMachine } from './machine.ts';
import type { ClassifiedCommand } from './remote-commands.ts';

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

  /** The service's process dies now; false when it was not running. */
  crashService(name: string): boolean {
    return this.#targets.machine.scm.crash(name);
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
    if (this.#restoreDowntime !== undefined) {
      this.#targets.machine.timings.rebootDowntimeMs = this.#restoreDowntime;
      this.#restoreDowntime = undefined;
    }
    if (this.#refuse) this.refuseConnections = false;
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
