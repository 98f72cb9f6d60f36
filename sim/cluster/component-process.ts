/**
 * One control-plane process: started in its own process group with its output in a log file,
 * stopped with its whole group, and killed by the kernel if the launcher dies
 * (setpriv --pdeathsig), so a crashed test run leaves no orphans behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';

/** How to start a component. */
export interface ComponentSpec {
  name: string;
  binary: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
}

/** A running component. */
export class ComponentProcess {
  readonly name: string;
  readonly logFile: string;
  readonly child: ChildProcess;
  #exit: Promise<number | null>;
  #exited = false;

  constructor(spec: ComponentSpec) {
    this.name = spec.name;
    this.logFile = spec.logFile;
    const log = openSync(spec.logFile, 'a');
    try {
      this.child = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', spec.binary, ...spec.args], {
        detached: true,
        stdio: ['ignore', log, log],
        env: spec.env ?? process.env,
      });
    } finally {
      closeSync(log);
    }
    // A running component does not keep the launcher's process alive by itself: a test file
    // ends when its tests do, and the exit hook of startCluster stops the components.
    this.child.unref();
    this.#exit = once(this.child, 'exit').then(([code]) => {
      this.#exited = true;
      return code as number | null;
    });
    this.child.on('error', () => {});
  }

  get exited(): boolean {
    return this.#exited;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves with the exit code when the process ends. */
  waitForExit(): Promise<number | null> {
    return this.#exit;
  }

  /** The last `lines` lines of the component's log. */
  logTail(lines = 40): string {
    try {
      const text = readFileSync(this.logFile, 'utf8').trimEnd().split('\n');
      return text.slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  #signalGroup(signal: NodeJS.Signals): void {
    if (this.#exited || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  /** Stops the process group: SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.#exited) return;
    this.#signalGroup('SIGTERM');
    const timer = setTimeout(() => this.#signalGroup('SIGKILL'), graceMs);
    await this.#exit;
    clearTimeout(timer);
  }

  /** Kills the group at once; safe to call from a process 'exit' handler. */
  killNow(): void {
    this.#signalGroup('SIGKILL');
  }
}
