/**
 * The Service Control Manager of a simulated host, with sc.exe's semantics and Win32 error
 * codes:
 * - create/config/query/delete: 1073 when a service exists, 1060 when it does not, 1072 once
 *   it is marked for deletion (a running service is deleted when it stops);
 * - start: dependencies start first (1075 when one is missing, 1068 when one fails), 1058 for
 *   a disabled service, 1056 when already running, error 2 when the executable is not in the
 *   file system; a program that must be told it runs as a service (kubelet without
 *   --windows-service) never connects to the service dispatcher, so the start fails with 1053
 *   after ServicesPipeTimeout (30 s, as Windows waits by default), or with 1067 as soon as
 *   such a program exits before that;
 * - a service's process gets the machine environment of boot time plus the service's own
 *   `Environment` value (machine-environment.ts);
 * - stop: 1062 when not running, 1061 while starting or stopping, 1051 while services that
 *   depend on it run; a program that ignores the stop is killed after a timeout;
 * - a process that dies, or exits non-zero without being asked to stop (sc failureflag 1),
 *   counts as a failure: the recovery actions restart it after the configured delay for that
 *   failure (the last delay repeats), and the count resets after resetPeriodSeconds without one;
 * - at boot, auto services start (dependencies first); delayed-auto ones a little later.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  InstalledService,
  ServiceRecovery,
  ServiceStartType,
  ServiceState,
} from '../../src/agent/host-os.ts';
import { processTerminatedUnexpectedly, type SimProcess } from './sim-process.ts';

/** The Win32 errors the simulated SCM returns, with Windows' text for each. */
export const scmErrorText: Readonly<Record<number, string>> = {
  2: 'The system cannot find the file specified.',
  1051: 'A stop control has been sent to a service that other running services are dependent on.',
  1053: 'The service did not respond to the start or control request in a timely fashion.',
  1056: 'An instance of the service is already running.',
  1058: 'The service cannot be started, either because it is disabled or because it has no enabled devices associated with it.',
  1059: 'Circular service dependency was specified.',
  1060: 'The specified service does not exist as an installed service.',
  1061: 'The service cannot accept control messages at this time.',
  1062: 'The service has not been started.',
  1067: 'The process terminated unexpectedly.',
  1068: 'The dependency service or group failed to start.',
  1072: 'The specified service has been marked for deletion.',
  1073: 'The specified service already exists.',
  1075: 'The dependency service does not exist or has been marked for deletion.',
  1115: 'A system shutdown is in progress.',
};

/** A refused SCM call: `code` is the Win32 error, `operation` the API sc.exe would name. */
export class ScmError extends Error {
  readonly code: number;
  readonly operation: string;

  constructor(operation: string, code: number, subject: string) {
    super(`${operation} "${subject}" failed with ${code}: ${scmErrorText[code] ?? 'error'}`);
    this.name = 'ScmError';
    this.operation = operation;
    this.code = code;
  }
}

/** A service as the SCM stores it. */
export interface ScmServiceConfig {
  name: string;
  displayName: string;
  description?: string;
  /** binPath: the executable (quoted) and its arguments. */
  commandLine: string;
  startType: ServiceStartType;
  dependencies: string[];
  recovery: ServiceRecovery;
  /** The service's `Environment` registry value: NAME → value, added to its process's block. */
  environment?: Record<string, string>;
}

/** What the SCM needs from its machine. */
export interface ScmMachine {
  /** Whether the machine is up (not shutting down or off). */
  isUp(): boolean;
  /**
   * Starts the service's process, without a console (what it writes to standard output or
   * error is lost); throws ScmError 2 when the executable is missing. `serviceAware` is false
   * for a program that would never report to the SCM.
   */
  spawnService(config: ScmServiceConfig): Promise<{ process: SimProcess; serviceAware: boolean }>;
  /** Called when a service reached RUNNING (fault triggers listen here). */
  serviceStarted?(name: string): void;
}

export interface ScmTimings {
  /** How long a service stays START_PENDING. Default 20 ms. */
  startPendingMs?: number;
  /** How long a stopping program may take before it is killed. Default 20 s. */
  stopTimeoutMs?: number;
  /**
   * How long the SCM waits for a program to connect to the service dispatcher before it fails
   * the start with 1053. Default 30 s: Windows' default ServicesPipeTimeout.
   */
  serviceStartTimeoutMs?: number;
  /** Delay of delayed-auto services after boot (real: 120 s). Default 2 s. */
  delayedAutoStartMs?: number;
  /** How long services get to stop at shutdown before they are killed. Default 2 s. */
  shutdownTimeoutMs?: number;
}

interface ServiceRecord {
  config: ScmServiceConfig;
  state: ServiceState;
  exitCode: number;
  process?: SimProcess;
  markedForDeletion: boolean;
  stopRequested: boolean;
  failureCount: number;
  lastFailureAt?: number;
  restartTimer?: NodeJS.Timeout;
  /** Settles when the current start attempt has an outcome. */
  starting?: Promise<void>;
  /** Resolvers waiting for the service to stop. */
  stopWaiters: (() => void)[];
}

const maxEvents = 500;
/** Never-started services report this exit code (ERROR_SERVICE_NEVER_STARTED). */
const neverStarted = 1077;
/**
 * How long Windows waits for a service program to connect to the dispatcher: the default of
 * HKLM\SYSTEM\CurrentControlSet\Control\ServicesPipeTimeout (30000 ms).
 */
export const serviceStartTimeoutMs = 30_000;

export class ServiceControlManager {
  readonly #machine: ScmMachine;
  readonly #services = new Map<string, ServiceRecord>();
  readonly #timings: Required<ScmTimings>;
  readonly #events: string[] = [];
  /**
   * When each service ended without being asked to (the System log's Service Control Manager
   * events 7031, with a corrective action, and 7034, without), by service name (lower case).
   */
  readonly #failures = new Map<string, number[]>();
  #delayedStart?: NodeJS.Timeout;

  constructor(machine: ScmMachine, timings: ScmTimings = {}) {
    this.#machine = machine;
    this.#timings = {
      startPendingMs: timings.startPendingMs ?? 20,
      stopTimeoutMs: timings.stopTimeoutMs ?? 20_000,
      serviceStartTimeoutMs: timings.serviceStartTimeoutMs ?? serviceStartTimeoutMs,
      delayedAutoStartMs: timings.delayedAutoStartMs ?? 2_000,
      shutdownTimeoutMs: timings.shutdownTimeoutMs ?? 2_000,
    };
  }

  // Registration.

  create(config: ScmServiceConfig): void {
    const existing = this.#services.get(config.name.toLowerCase());
    if (existing) {
      throw new ScmError('CreateService', existing.markedForDeletion ? 1072 : 1073, config.name);
    }
    this.#services.set(config.name.toLowerCase(), {
      config: copyConfig(config),
      state: 'stopped',
      exitCode: neverStarted,
      markedForDeletion: false,
      stopRequested: false,
      failureCount: 0,
      stopWaiters: [],
    });
    this.#event(`The ${config.name} service was installed.`);
  }

  /** Replaces a service's configuration; a running process keeps its old command line. */
  configure(config: ScmServiceConfig): void {
    const record = this.#open(config.name, 'ChangeServiceConfig');
    record.config = { ...copyConfig(config), name: record.config.name };
  }

  query(name: string): InstalledService | undefined {
    const record = this.#services.get(name.toLowerCase());
    if (!record) return undefined;
    const service: InstalledService = {
      name: record.config.name,
      state: record.state,
      exitCode: record.exitCode,
      commandLine: record.config.commandLine,
      startType: record.config.startType,
      dependencies: [...record.config.dependencies],
      displayName: record.config.displayName,
    };
    if (record.process) service.pid = record.process.pid;
    return service;
  }

  /** The stored configuration of a service (recovery and description included). */
  config(name: string): ScmServiceConfig | undefined {
    const record = this.#services.get(name.toLowerCase());
    return record ? copyConfig(record.config) : undefined;
  }

  /** Names of all installed services (including those marked for deletion). */
  names(): string[] {
    return [...this.#services.values()].map((r) => r.config.name).sort();
  }

  isMarkedForDeletion(name: string): boolean {
    return this.#services.get(name.toLowerCase())?.markedForDeletion ?? false;
  }

  /** What the SCM did, like the System event log (starts, crashes, recovery). */
  events(): string[] {
    return [...this.#events];
  }

  /**
   * When the service ended unexpectedly (crashed, or exited non-zero without a stop control)
   * since `sinceMs`, oldest first: what Get-WinEvent reads from the System log (7031/7034).
   */
  failureTimes(name: string, sinceMs = 0): number[] {
    return (this.#failures.get(name.toLowerCase()) ?? []).filter((t) => t >= sinceMs);
  }

  /** How many failures count toward the next recovery action. */
  failureCount(name: string): number {
    return this.#services.get(name.toLowerCase())?.failureCount ?? 0;
  }

  delete(name: string): void {
    const record = this.#open(name, 'DeleteService');
    if (record.state === 'stopped') {
      this.#remove(record);
      return;
    }
    record.markedForDeletion = true;
  }

  // Control.

  /** Starts a service (and its dependencies first); resolves once it is RUNNING. */
  async start(name: string, chain: readonly string[] = []): Promise<void> {
    if (!this.#machine.isUp()) throw new ScmError('StartService', 1115, name);
    const record = this.#open(name, 'StartService');
    if (chain.includes(record.config.name.toLowerCase())) {
      throw new ScmError('StartService', 1059, name);
    }
    if (record.config.startType === 'disabled') throw new ScmError('StartService', 1058, name);
    if (record.state !== 'stopped') throw new ScmError('StartService', 1056, name);
    const attempt = this.#start(record, [...chain, record.config.name.toLowerCase()]);
    record.starting = attempt.then(
      () => {},
      () => {},
    );
    await attempt;
  }

  async #start(record: ServiceRecord, chain: string[]): Promise<void> {
    const name = record.config.name;
    clearTimeout(record.restartTimer);
    record.restartTimer = undefined;
    record.state = 'start-pending';
    try {
      for (const dependency of record.config.dependencies) {
        await this.#startDependency(name, dependency, chain);
      }
    } catch (error) {
      record.state = 'stopped';
      throw error;
    }
    let spawned: { process: SimProcess; serviceAware: boolean };
    try {
      spawned = await this.#machine.spawnService(record.config);
    } catch (error) {
      record.state = 'stopped';
      if (error instanceof ScmError) {
        record.exitCode = error.code;
        this.#event(
          `The ${name} service failed to start due to the following error: ${scmErrorText[error.code] ?? error.message}`,
        );
      }
      throw error;
    }
    const { process } = spawned;
    record.process = process;
    record.stopRequested = false;
    process.exited.then(({ code, killed }) => this.#exited(record, process, code, killed));
    if (!spawned.serviceAware) {
      // The program never connects: the SCM waits until the timeout, or until it exits.
      const waiting = new AbortController();
      await Promise.race([
        sleep(this.#timings.serviceStartTimeoutMs, undefined, { signal: waiting.signal }).catch(
          () => {},
        ),
        process.exited,
      ]);
      waiting.abort();
      if (record.process !== process || !process.alive) {
        throw new ScmError('StartService', processTerminatedUnexpectedly, name);
      }
      record.stopRequested = true;
      process.kill(1053, 'did not report to the service control manager');
      this.#event(
        `A timeout was reached (${this.#timings.serviceStartTimeoutMs} milliseconds) while waiting for the ${name} service to connect.`,
      );
      throw new ScmError('StartService', 1053, name);
    }
    // A service-aware program reports RUNNING before its own start-up work, so a program
    // that then fails still started (its exit is a failure, handled by the recovery actions).
    await sleep(this.#timings.startPendingMs);
    if (record.process !== process || record.state !== 'start-pending') return;
    record.state = 'running';
    this.#event(`The ${name} service entered the running state.`);
    this.#machine.serviceStarted?.(name);
  }

  async #startDependency(name: string, dependency: string, chain: string[]): Promise<void> {
    const record = this.#services.get(dependency.toLowerCase());
    if (!record || record.markedForDeletion) throw new ScmError('StartService', 1075, name);
    if (record.state === 'running') return;
    if (record.state === 'start-pending' && record.starting) {
      await record.starting;
      if ((record.state as ServiceState) !== 'running')
        throw new ScmError('StartService', 1068, name);
      return;
    }
    try {
      await this.start(dependency, chain);
    } catch (error) {
      if (error instanceof ScmError && error.code === 1059) throw error;
      if (
        error instanceof ScmError &&
        error.code === 1056 &&
        (record.state as ServiceState) === 'running'
      ) {
        return;
      }
      throw new ScmError('StartService', 1068, name);
    }
  }

  /**
   * Sends the stop control; resolves once the service is STOPPED (its program returned, or was
   * killed after the stop timeout).
   */
  async stop(name: string): Promise<void> {
    const record = this.#open(name, 'ControlService', false);
    if (record.state === 'stopped') throw new ScmError('ControlService', 1062, name);
    if (record.state !== 'running' && record.state !== 'paused') {
      throw new ScmError('ControlService', 1061, name);
    }
    const dependents = [...this.#services.values()].filter(
      (other) =>
        other.state !== 'stopped' &&
        other.config.dependencies.some((d) => d.toLowerCase() === name.toLowerCase()),
    );
    if (dependents.length > 0) throw new ScmError('ControlService', 1051, name);
    await this.#stopProcess(record, this.#timings.stopTimeoutMs);
  }

  async #stopProcess(record: ServiceRecord, timeoutMs: number): Promise<void> {
    const process = record.process;
    if (!process) return;
    record.stopRequested = true;
    record.state = 'stop-pending';
    const stopped = new Promise<void>((resolve) => record.stopWaiters.push(resolve));
    process.requestStop('service stop');
    const timer = setTimeout(
      () => process.kill(processTerminatedUnexpectedly, 'stop timeout'),
      timeoutMs,
    );
    try {
      await stopped;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves when the service is stopped (or gone); bounded by `timeoutMs`. */
  async waitUntilStopped(name: string, timeoutMs: number): Promise<boolean> {
    const record = this.#services.get(name.toLowerCase());
    if (!record || record.state === 'stopped') return true;
    const stopped = new Promise<boolean>((resolve) => record.stopWaiters.push(() => resolve(true)));
    const timeout = sleep(timeoutMs, false, { ref: false });
    return Promise.race([stopped, timeout]);
  }

  /** Kills the service's process, as a crash: the recovery actions apply. */
  crash(name: string): boolean {
    const record = this.#services.get(name.toLowerCase());
    const process = record?.process;
    if (!record || !process?.alive) return false;
    process.kill(processTerminatedUnexpectedly, 'crashed');
    this.#exited(record, process, processTerminatedUnexpectedly, true);
    return true;
  }

  /**
   * The service's program stops itself, reporting SERVICE_STOPPED with exit code 0 (a program
   * that gave up after a fatal error but told the SCM it stopped): not a failure, so the
   * recovery actions do not run, even with the failure flag set (it adds non-zero exits only).
   * The service stays stopped until something starts it. False when it was not running.
   */
  stopOnItsOwn(name: string): boolean {
    const record = this.#services.get(name.toLowerCase());
    const process = record?.process;
    if (!record || !process?.alive) return false;
    process.kill(0, 'stopped on its own');
    this.#exited(record, process, 0, false);
    return true;
  }

  #exited(record: ServiceRecord, process: SimProcess, code: number, killed: boolean): void {
    if (record.process !== process) return;
    record.process = undefined;
    record.state = 'stopped';
    record.exitCode = code;
    const wasStopped = record.stopRequested;
    record.stopRequested = false;
    const name = record.config.name;
    for (const resolve of record.stopWaiters.splice(0)) resolve();
    if (record.markedForDeletion) {
      this.#remove(record);
      return;
    }
    if (wasStopped) {
      this.#event(`The ${name} service entered the stopped state.`);
      return;
    }
    if (code === 0 && !killed) {
      this.#event(`The ${name} service exited on its own (exit code 0).`);
      return;
    }
    this.#failed(record, code);
  }

  #failed(record: ServiceRecord, code: number): void {
    const name = record.config.name;
    const now = Date.now();
    const { restartDelaysMs, resetPeriodSeconds } = record.config.recovery;
    if (
      record.lastFailureAt !== undefined &&
      now - record.lastFailureAt > resetPeriodSeconds * 1000
    ) {
      record.failureCount = 0;
    }
    record.failureCount++;
    record.lastFailureAt = now;
    const times = this.#failures.get(name.toLowerCase()) ?? [];
    times.push(now);
    this.#failures.set(name.toLowerCase(), times.slice(-maxEvents));
    const what =
      code === processTerminatedUnexpectedly
        ? 'terminated unexpectedly'
        : `terminated with the following service-specific error: ${code}`;
    if (restartDelaysMs.length === 0 || !this.#machine.isUp()) {
      this.#event(`The ${name} service ${what}. It has done this ${record.failureCount} time(s).`);
      return;
    }
    const delay = restartDelaysMs[Math.min(record.failureCount, restartDelaysMs.length) - 1]!;
    this.#event(
      `The ${name} service ${what}. It has done this ${record.failureCount} time(s). The following corrective action will be taken in ${delay} milliseconds: Restart the service.`,
    );
    record.restartTimer = setTimeout(() => {
      record.restartTimer = undefined;
      if (
        this.#services.get(name.toLowerCase()) !== record ||
        record.state !== 'stopped' ||
        !this.#machine.isUp()
      ) {
        return;
      }
      this.start(name).catch((error: unknown) => {
        this.#event(`Restarting the ${name} service failed: ${(error as Error).message}`);
      });
    }, delay);
  }

  // The machine's power cycle.

  /** Stops every service for a shutdown: stop controls first, then kills after a timeout. */
  async shutdown(): Promise<void> {
    clearTimeout(this.#delayedStart);
    this.#delayedStart = undefined;
    const records = [...this.#services.values()];
    for (const record of records) {
      clearTimeout(record.restartTimer);
      record.restartTimer = undefined;
    }
    await Promise.all(
      records
        .filter((r) => r.process)
        .map((r) => this.#stopProcess(r, this.#timings.shutdownTimeoutMs)),
    );
    for (const record of records) {
      record.state = 'stopped';
      if (record.markedForDeletion) this.#remove(record);
    }
  }

  /** Starts the auto services (dependencies first) and schedules the delayed-auto ones. */
  async boot(): Promise<void> {
    const startAll = async (type: ServiceStartType) => {
      for (const record of [...this.#services.values()]) {
        if (record.config.startType !== type || record.state !== 'stopped') continue;
        if (!this.#machine.isUp()) return;
        try {
          await this.start(record.config.name);
        } catch (error) {
          if (error instanceof ScmError && error.code === 1056) continue;
          this.#event(
            `The ${record.config.name} service failed to start at boot: ${(error as Error).message}`,
          );
        }
      }
    };
    await startAll('auto');
    this.#delayedStart = setTimeout(() => {
      this.#delayedStart = undefined;
      void startAll('delayed-auto');
    }, this.#timings.delayedAutoStartMs);
  }

  // Helpers.

  #open(name: string, operation: string, refuseMarked = true): ServiceRecord {
    const record = this.#services.get(name.toLowerCase());
    if (!record) throw new ScmError(operation, 1060, name);
    if (refuseMarked && record.markedForDeletion) throw new ScmError(operation, 1072, name);
    return record;
  }

  #remove(record: ServiceRecord): void {
    clearTimeout(record.restartTimer);
    this.#services.delete(record.config.name.toLowerCase());
    this.#event(`The ${record.config.name} service was deleted.`);
  }

  #event(text: string): void {
    this.#events.push(`${new Date().toISOString()} ${text}`);
    if (this.#events.length > maxEvents) this.#events.splice(0, this.#events.length - maxEvents);
  }
}

function copyConfig(config: ScmServiceConfig): ScmServiceConfig {
  const copy: ScmServiceConfig = {
    ...config,
    dependencies: [...config.dependencies],
    recovery: {
      restartDelaysMs: [...config.recovery.restartDelaysMs],
      resetPeriodSeconds: config.recovery.resetPeriodSeconds,
    },
  };
  if (config.environment) copy.environment = { ...config.environment };
  else delete copy.environment;
  return copy;
}
