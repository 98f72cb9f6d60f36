/**
 * Processes on a simulated host. A process runs a program (an async function chosen by the
 * executable's file name, see programs.ts) in this Node process. It ends when the program
 * returns (its exit code), when it is asked to stop and returns, or when it is killed (a
 * crash, a reboot, a dropped SSH session): then it is dead at once, its abort signal fires and
 * the HostOS it was given stops answering, as nothing runs after a real process died.
 */
import type { HostOS } from '../../src/agent/host-os.ts';
import type { SimMachine } from './machine.ts';
import type { EnvironmentVariables } from './machine-environment.ts';
import { runWithMachineNetwork } from './network-faults.ts';

/** What a program is given when its process starts. */
export interface ProgramContext {
  /** The arguments after the executable, split as the C runtime splits a command line. */
  argv: string[];
  commandLine: string;
  /** Canonical Windows path of the executable. */
  binaryPath: string;
  /**
   * The first bytes of the executable's file when the process started (stand-ins carry a
   * version there); never the whole file, which may be a real-size binary.
   */
  binary: Buffer;
  pid: number;
  /** Set when the Service Control Manager started the process. */
  serviceName?: string;
  /**
   * The process's environment block (machine-environment.ts says what a service, an SSH
   * command and a child get). Read variables from here, never from `machine.env`: a service
   * does not see a machine variable set after boot.
   */
  env: EnvironmentVariables;
  /**
   * Declares that the process holds `path` open (a log, a database) until it exits: as a Go
   * program's handle (share read and write, not delete), it cannot be deleted, renamed or
   * replaced, while writing in place still works. Resolves once the file is held.
   */
  holdOpen(path: string): Promise<void>;
  machine: SimMachine;
  /** A HostOS for this process: it stops answering once the process is dead. */
  hostOS: HostOS;
  /** Aborted when the process is asked to stop (service stop) or killed. */
  signal: AbortSignal;
  stdout(text: string): void;
  stderr(text: string): void;
}

/**
 * How a process holds a file. `image`: its executable, mapped as an image section — Windows
 * refuses to open it for writing (ERROR_SHARING_VIOLATION, 32), to delete it or to replace it
 * by a rename (ERROR_ACCESS_DENIED, 5), but renames it. `open`: a handle without
 * FILE_SHARE_DELETE (Go's os.Open/OpenFile) — delete, rename and replace fail with
 * ERROR_SHARING_VIOLATION; opening it for writing works.
 */
export type FileHold = 'image' | 'open';

/** A program: resolves with the process exit code. */
export type SimProgram = (context: ProgramContext) => Promise<number>;

export interface ProcessExit {
  code: number;
  /** True when the process was killed rather than returning. */
  killed: boolean;
}

/** Win32 exit code of a process that ended unexpectedly (ERROR_PROCESS_ABORTED). */
export const processTerminatedUnexpectedly = 1067;

export class SimProcess {
  readonly pid: number;
  /** Lower-case file name of the executable, e.g. "kubelet.exe". */
  readonly imageName: string;
  readonly binaryPath: string;
  /** The executable's path on the real disk when it started (it may be renamed since). */
  readonly hostBinaryPath: string;
  readonly commandLine: string;
  /**
   * The environment block it started with (what Process Explorer shows for a process), for
   * tests to look at; the program itself reads ProgramContext.env.
   */
  readonly environment: Readonly<Record<string, string>>;
  readonly startedAt = new Date();
  readonly exited: Promise<ProcessExit>;
  readonly #controller = new AbortController();
  /** Files this process holds, by file identity (file-system.ts `fileIdentity`). */
  readonly #held = new Map<string, FileHold>();
  #alive = true;
  #resolveExit!: (exit: ProcessExit) => void;

  constructor(fields: {
    pid: number;
    imageName: string;
    binaryPath: string;
    hostBinaryPath: string;
    commandLine: string;
    environment?: Readonly<Record<string, string>>;
  }) {
    this.pid = fields.pid;
    this.imageName = fields.imageName;
    this.binaryPath = fields.binaryPath;
    this.hostBinaryPath = fields.hostBinaryPath;
    this.commandLine = fields.commandLine;
    this.environment = { ...fields.environment };
    this.exited = new Promise((resolve) => {
      this.#resolveExit = resolve;
    });
  }

  get alive(): boolean {
    return this.#alive;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Records that this process holds the file with identity `id`; nothing once it is dead. */
  hold(id: string, how: FileHold): void {
    if (!this.#alive) return;
    if (this.#held.get(id) !== 'image') this.#held.set(id, how);
  }

  /** How this process holds the file with identity `id`, if it does. */
  holds(id: string): FileHold | undefined {
    return this.#alive ? this.#held.get(id) : undefined;
  }

  /** Runs `program` in this process; called once by the machine. */
  run(program: SimProgram, context: Omit<ProgramContext, 'signal' | 'pid' | 'holdOpen'>): void {
    const holdOpen = async (path: string) => {
      const id = await context.machine.fs.fileIdentity(path);
      this.hold(id, 'open');
    };
    // Its connections meet its machine's network faults (network-faults.ts), wherever they go.
    const started = runWithMachineNetwork(context.machine.network, async () =>
      program({ ...context, pid: this.pid, signal: this.signal, holdOpen }),
    );
    started.then(
      (code) => this.#exit({ code: Number.isInteger(code) ? code : 1, killed: false }),
      (error: unknown) => {
        context.stderr(`Unhandled error: ${(error as Error)?.stack ?? String(error)}\n`);
        this.#exit({ code: processTerminatedUnexpectedly, killed: false });
      },
    );
  }

  /** Asks the program to stop (aborts its signal); it stays alive until it returns. */
  requestStop(reason = 'stop requested'): void {
    if (this.#alive) this.#controller.abort(new Error(reason));
  }

  /** Ends the process now with `code`. */
  kill(code = processTerminatedUnexpectedly, reason = 'killed'): void {
    if (!this.#alive) return;
    this.#controller.abort(new Error(reason));
    this.#exit({ code, killed: true });
  }

  #exit(exit: ProcessExit): void {
    if (!this.#alive) return;
    this.#alive = false;
    this.#held.clear();
    this.#controller.abort(new Error('process exited'));
    this.#resolveExit(exit);
  }
}
