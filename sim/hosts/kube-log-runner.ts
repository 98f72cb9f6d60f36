/**
 * kube-log-runner.exe (k8s.io/component-base/logs/kube-log-runner, v0.36.5), simulated: it
 * parses its flags with Go's flag package (-log-file, -log-file-size, -log-file-age,
 * -flush-interval, -also-stdout, -redirect-stderr), starts the program after its flags as a
 * child and appends the child's standard output (and, by default, standard error) to the log
 * file on the simulated disk. Its own messages go to its standard error (Go's log package),
 * which a service does not have. It exits 0 when the child exits 0 and 1 otherwise (log.Fatal
 * of "running command: exit status N"); a bad flag exits 2 (flag.ExitOnError).
 *
 * As a service it is the service's process, but it never calls the service dispatcher itself:
 * the program it runs does (kubelet and kube-proxy with --windows-service), as WMCO and the
 * Kubernetes GCE Windows nodes rely on. A stop reaches the program (the SCM sends it to the
 * dispatcher the program registered); the runner then exits with it.
 */
import type { ParsedFlags } from './flag-lists.ts';
import { parseGoBool, parseGoDuration, parseQuantity } from './go-values.ts';
import {
  type ProgramContext,
  processTerminatedUnexpectedly,
  type SimProgram,
} from './sim-process.ts';

/** A file a program appends its log to, on the simulated disk. */
export interface LogFileWriter {
  write(text: string): void;
  /** Waits for the pending writes and closes the file. */
  close(): Promise<void>;
}

/**
 * Opens (creates) `path` for appending, as Go's os.OpenFile(O_APPEND|O_CREATE|O_WRONLY) does,
 * and keeps it open for the process (Windows refuses to delete a file a process has open).
 * Throws when the directory is missing. Writes are queued in order; one that fails (a full
 * disk) drops the line, as a program that ignores write errors does.
 */
export async function openLogFile(context: ProgramContext, path: string): Promise<LogFileWriter> {
  const handle = await context.machine.fs.open(path, { write: true, append: true, create: true });
  await context.holdOpen(path);
  let queue = Promise.resolve();
  let closed = false;
  return {
    write(text: string) {
      if (closed || text === '') return;
      const data = Buffer.from(text);
      queue = queue.then(() => handle.write(0, data)).catch(() => {});
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue;
      await handle.close().catch(() => {});
    },
  };
}

/** Go's log package's default prefix: "2006/01/02 15:04:05 " in local time. */
export function goLogTime(now = new Date()): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${now.getFullYear()}/${two(now.getMonth() + 1)}/${two(now.getDate())} ${two(now.getHours())}:${two(now.getMinutes())}:${two(now.getSeconds())}`;
}

export interface KubeLogRunnerCommand {
  logFile: string;
  logFileSize: number;
  logFileAgeMs: number;
  flushIntervalMs: number;
  alsoStdout: boolean;
  redirectStderr: boolean;
  /** Set when -h or -help was given (usage, exit 0). */
  help: boolean;
  /** The program and its arguments: what follows the flags. */
  command: string[];
  /** The flags as given, for the start-up message. */
  flags: ParsedFlags;
}

type FlagKind = 'string' | 'bool' | 'duration' | 'quantity';

/** kube-log-runner.go initFlags: name → kind and default. */
const runnerFlags: Readonly<Record<string, { kind: FlagKind; usage: string }>> = {
  'also-stdout': {
    kind: 'bool',
    usage: 'useful with log-file, log to standard output as well as the log file',
  },
  'flush-interval': {
    kind: 'duration',
    usage:
      'interval to flush log file to disk, default value 0, if non-zero, flush log file every interval',
  },
  'log-file': { kind: 'string', usage: 'If non-empty, save stdout to this file' },
  'log-file-age': {
    kind: 'duration',
    usage:
      'useful with log-file-size, in format of timeDuration, if non-zero, remove log files older than this duration',
  },
  'log-file-size': {
    kind: 'quantity',
    usage:
      'useful with log-file, in format of resource.quantity, default value 0, if non-zero, rotate log file when it reaches this size',
  },
  'redirect-stderr': { kind: 'bool', usage: 'treat stderr same as stdout (default true)' },
};

/** What flag.PrintDefaults prints for kube-log-runner. */
function kubeLogRunnerUsage(binaryPath: string): string {
  const lines = [`Usage of ${binaryPath}:`];
  for (const [name, { kind, usage }] of Object.entries(runnerFlags)) {
    const type = kind === 'bool' ? '' : kind === 'quantity' ? ' value' : ` ${kind}`;
    lines.push(`  -${name}${type}`, `    \t${usage}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A command line kube-log-runner refuses: `message` is Go's flag package's. */
export class GoFlagError extends Error {
  override name = 'GoFlagError';
}

/**
 * Parses kube-log-runner's arguments as Go's flag package does (flag.go parseOne): flags
 * with one or two dashes, `-name=value` or `-name value` (not for booleans), up to the first
 * argument that is not a flag or "--"; the rest is the command. Throws GoFlagError with the
 * package's messages ("flag provided but not defined: -x", "flag needs an argument: -x",
 * "invalid value ... for flag -x", "invalid boolean value ... for -x", "bad flag syntax: ...").
 */
export function parseKubeLogRunnerArgs(argv: readonly string[]): KubeLogRunnerCommand {
  const command: KubeLogRunnerCommand = {
    logFile: '',
    logFileSize: 0,
    logFileAgeMs: 0,
    flushIntervalMs: 0,
    alsoStdout: false,
    redirectStderr: true,
    help: false,
    command: [],
    flags: { values: new Map(), all: new Map(), positional: [], warnings: [] },
  };
  const args = [...argv];
  while (args.length > 0) {
    const s = args[0]!;
    if (s.length < 2 || s[0] !== '-') break;
    let minuses = 1;
    if (s[1] === '-') {
      minuses = 2;
      if (s.length === 2) {
        args.shift();
        break;
      }
    }
    const body = s.slice(minuses);
    if (body.length === 0 || body[0] === '-' || body[0] === '=')
      throw new GoFlagError(`bad flag syntax: ${s}`);
    args.shift();
    const eq = body.indexOf('=', 1);
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const hasValue = eq >= 0;
    let value = hasValue ? body.slice(eq + 1) : '';
    const flag = runnerFlags[name];
    if (!flag) {
      if (name === 'help' || name === 'h') {
        command.help = true;
        return command;
      }
      throw new GoFlagError(`flag provided but not defined: -${name}`);
    }
    if (flag.kind === 'bool') {
      if (hasValue) {
        const parsed = parseGoBool(value);
        if (parsed === undefined)
          throw new GoFlagError(`invalid boolean value "${value}" for -${name}: parse error`);
        value = String(parsed);
      } else value = 'true';
    } else if (!hasValue) {
      if (args.length === 0) throw new GoFlagError(`flag needs an argument: -${name}`);
      value = args.shift()!;
    }
    switch (flag.kind) {
      case 'duration': {
        const ms = parseGoDuration(value);
        if (ms === undefined)
          throw new GoFlagError(`invalid value "${value}" for flag -${name}: parse error`);
        if (name === 'flush-interval') command.flushIntervalMs = ms;
        else command.logFileAgeMs = ms;
        break;
      }
      case 'quantity': {
        const bytes = parseQuantity(value);
        if (bytes === undefined)
          throw new GoFlagError(
            `invalid value "${value}" for flag -${name}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
          );
        command.logFileSize = bytes;
        break;
      }
      case 'bool':
        if (name === 'also-stdout') command.alsoStdout = value === 'true';
        else command.redirectStderr = value === 'true';
        break;
      default:
        command.logFile = value;
    }
    command.flags.values.set(name, value);
    command.flags.all.set(name, [...(command.flags.all.get(name) ?? []), value]);
  }
  command.command = args;
  return command;
}

/** Go's %v of a time.Duration for the start-up message ("0s", "1m30s"). */
function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const h = Math.floor(ms / 3.6e6);
  const m = Math.floor((ms % 3.6e6) / 6e4);
  const s = (ms % 6e4) / 1000;
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${s}s`;
}

/** kube-log-runner.exe: see the module comment. */
export const kubeLogRunnerProgram: SimProgram = async (context) => {
  const log = (text: string) => context.stderr(`${goLogTime()} ${text}\n`);
  let runner: KubeLogRunnerCommand;
  try {
    runner = parseKubeLogRunnerArgs(context.argv);
  } catch (error) {
    if (!(error instanceof GoFlagError)) throw error;
    context.stderr(`${error.message}\n${kubeLogRunnerUsage(context.binaryPath)}`);
    return 2;
  }
  if (runner.help) {
    context.stderr(kubeLogRunnerUsage(context.binaryPath));
    return 0;
  }
  // configureAndRun's checks, each a log.Fatal (exit 1).
  if (runner.command.length === 0) {
    log('not enough arguments to run');
    return 1;
  }
  if (runner.logFileSize < 0) {
    log('log-file-size must be non-negative quantity');
    return 1;
  }
  if (runner.logFileAgeMs < 0) {
    log('log-file-age must be non-negative');
    return 1;
  }
  let file: LogFileWriter | undefined;
  let output = context.stdout;
  if (runner.logFile !== '') {
    try {
      file = await openLogFile(context, runner.logFile);
    } catch (error) {
      log(
        `failed to create log file ${runner.logFile}: open ${runner.logFile}: ${(error as Error).message}`,
      );
      return 1;
    }
    const writer = file;
    output = runner.alsoStdout
      ? (text) => {
          context.stdout(text);
          writer.write(text);
        }
      : (text) => writer.write(text);
  }
  const errors = runner.redirectStderr ? output : context.stderr;
  const [program, ...args] = runner.command as [string, ...string[]];
  log(
    `Running command:\nCommand env: (enable-flush=${formatDuration(runner.flushIntervalMs)}, log-file=${runner.logFile}, log-file-size=${runner.logFileSize}, log-file-age=${formatDuration(runner.logFileAgeMs)}, also-stdout=${runner.alsoStdout}, redirect-stderr=${runner.redirectStderr})\nRun from directory: \nExecutable path: ${program}\nArgs (comma-delimited): ${runner.command.join(',')}`,
  );
  let child: Awaited<ReturnType<typeof context.machine.spawn>>;
  try {
    child = await context.machine.spawn({
      binaryPath: program,
      args,
      env: context.env.entries(),
      stdout: output,
      stderr: errors,
    });
  } catch {
    log(`starting command: exec: "${program}": file does not exist`);
    await file?.close();
    return 1;
  }
  // The sim ends the child with the runner (on Windows a killed runner leaves it running).
  const self = context.machine.processes().find((p) => p.pid === context.pid);
  self?.exited.then(() => child.kill(processTerminatedUnexpectedly, 'kube-log-runner ended'));
  log('Now listening for interrupts');
  const onStop = () => child.requestStop('service stop');
  if (context.signal.aborted) onStop();
  else context.signal.addEventListener('abort', onStop, { once: true });
  const exit = await child.exited;
  context.signal.removeEventListener('abort', onStop);
  await file?.close();
  if (exit.code !== 0) {
    log(`running command: exit status ${exit.code}`);
    return 1;
  }
  return 0;
};

/**
 * The program kube-log-runner runs with `args` (its own arguments), for the SCM's question of
 * whether the service will call the dispatcher: undefined when it would not start one.
 */
export function kubeLogRunnerChild(
  args: readonly string[],
): { program: string; args: string[] } | undefined {
  try {
    const runner = parseKubeLogRunnerArgs(args);
    if (runner.help || runner.command.length === 0) return undefined;
    const [program, ...rest] = runner.command as [string, ...string[]];
    return { program, args: rest };
  } catch {
    return undefined;
  }
}
