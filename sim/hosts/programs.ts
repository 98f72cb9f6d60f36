/**
 * What a process on a simulated host does, chosen by its executable's file name:
 * - winfleet-agent.exe runs the real agent (`runAgent`) in-process with the process's HostOS;
 *   as a Node program it never reports to the SCM, so only under winfleet-service.exe does it
 *   run as a service (started directly, the start times out with 1053, as on Windows);
 * - winfleet-service.exe does what the Go shim (windows/service) does: reports to the SCM,
 *   runs the program after "--" as its child, asks it to stop on a service stop (the shim
 *   closes the child's stdin), kills it after the stop timeout or when the shim itself dies
 *   (its job object), and exits with the child's code;
 * - kubelet.exe runs the kubelet stand-in (TLS bootstrap and Node registration against the
 *   real API server);
 * - kube-proxy.exe runs the kube-proxy stand-in (kube-proxy-standin.ts: it needs a network name,
 *   waits for that HNS network, and programs Services with the credentials it was given);
 * - containerd.exe and the runhcs shims it starts per pod sandbox: containerd-standin.ts;
 * - kube-log-runner.exe runs the program after its flags with its output in the log file
 *   (kube-log-runner.ts); the service's dispatcher call is that program's;
 * - windows_exporter.exe checks its flags and collectors, logs to --log.file and idles
 *   (windows-exporter.ts);
 * - anything else (csi-proxy.exe, ...) idles until stopped or killed.
 * Services have no console: what a program started by the SCM writes to standard output or
 * error is lost (machine.ts). The kubelet's and kube-proxy's flags are checked against the
 * pinned versions' (flag-lists.ts).
 * A program that only runs as a service when told so (kubelet and kube-proxy need
 * --windows-service, containerd --run-service) never reports to the SCM without its flag, so
 * the start times out with 1053 as on Windows. Tests can register their own programs.
 */
import { runAgent } from '../../src/agent/run-agent.ts';
import { stopOnStdinEofVariable } from '../../src/agent/windows/service-shim.ts';
import {
  containerdImageName,
  containerdProgram,
  runhcsShimImageName,
  runhcsShimProgram,
} from './containerd-standin.ts';
import {
  FlagError,
  flagLists,
  type ParsedFlags,
  type PflagList,
  parsePflag,
} from './flag-lists.ts';
import { createFlanneldStandIn } from './flanneld-standin.ts';
import { parseGoBool, parseGoDuration } from './go-values.ts';
import { createHybridOverlayStandIn } from './hybrid-overlay-standin.ts';
import {
  kubeLogRunnerChild,
  kubeLogRunnerProgram,
  type LogFileWriter,
  openLogFile,
} from './kube-log-runner.ts';
import { createKubeProxyStandIn } from './kube-proxy-standin.ts';
import { kubeletStandIn } from './kubelet-standin.ts';
import { processTerminatedUnexpectedly, type SimProcess, type SimProgram } from './sim-process.ts';
import { windowsExporterProgram } from './windows-exporter.ts';
import { windowsBaseName } from './windows-path.ts';

export interface ProgramDefinition {
  run: SimProgram;
  /** The flag without which the program never reports to the SCM when run as a service. */
  serviceFlag?: string;
  /**
   * The pflag flags of a program that parses its command line with spf13/pflag (kubelet,
   * kube-proxy): serviceFlag is then a boolean read as pflag reads it (the last one given, Go's
   * ParseBool), and a command line pflag refuses never reaches the dispatcher.
   */
  flagList?: () => PflagList;
  /** The program never reports to the SCM, whatever its flags (winfleet-agent.exe, a Node SEA). */
  neverReportsToScm?: boolean;
  /**
   * The program it runs as a child, which calls the dispatcher for the service in its place
   * (kube-log-runner.exe); undefined when these arguments start none.
   */
  runsForService?: (args: readonly string[]) => { program: string; args: string[] } | undefined;
}

/** Runs until asked to stop or killed. */
export const idleProgram: SimProgram = async ({ signal }) => {
  if (!signal.aborted) {
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }
  return 0;
};

/** The winfleet agent: the real code, with this process's HostOS. */
export const agentProgram: SimProgram = (context) =>
  runAgent(context.argv, {
    hostOS: context.hostOS,
    stdout: context.stdout,
    stderr: context.stderr,
    signal: context.signal,
    env: (name) => context.env.get(name),
    ...(context.machine.joinTuning ? { join: context.machine.joinTuning } : {}),
  });

/** `env` without `name`, compared as Windows does: case-insensitively. */
function withoutVariable(env: Record<string, string>, name: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(([key]) => key.toLowerCase() !== name.toLowerCase()),
  );
}

/** What winfleet-service.exe's command line says (windows/service/options.go). */
export interface ServiceShimCommand {
  logDir: string;
  stopTimeoutMs: number;
  program: string;
  programArgs: string[];
}

const shimUsage =
  'usage: winfleet-service --log-dir <directory> [--stop-timeout <duration>] -- <program> [arguments...]';
const shimDefaultStopTimeoutMs = 30_000;

const isAbsoluteWindowsPath = (path: string) =>
  /^[A-Za-z]:[\\/]/.test(path) || /^[\\/]{2}[^\\/]+[\\/][^\\/]+/.test(path);

/**
 * Parses winfleet-service.exe's arguments as the Go shim does (options.go), with the same
 * messages: each flag once as "--flag value", only --log-dir and --stop-timeout, then "--" and
 * an absolute program path. Throws RangeError otherwise.
 */
export function parseServiceShimArgs(args: readonly string[]): ServiceShimCommand {
  const fail = (message: string): never => {
    throw new RangeError(message);
  };
  let logDir = '';
  let stopTimeoutMs = shimDefaultStopTimeoutMs;
  const seen = new Set<string>();
  for (let i = 0; ; i += 2) {
    if (i >= args.length) fail(`missing "--" and the program to run; ${shimUsage}`);
    const flag = args[i]!;
    if (flag === '--') {
      if (i + 1 >= args.length) fail(`missing the program to run after "--"; ${shimUsage}`);
      const program = args[i + 1]!;
      if (logDir === '')
        fail(`--log-dir is missing: name the directory for the log file; ${shimUsage}`);
      if (!isAbsoluteWindowsPath(logDir))
        fail(
          `--log-dir ${JSON.stringify(logDir)} is not an absolute path; give the full path, with its drive`,
        );
      if (!isAbsoluteWindowsPath(program))
        fail(
          `the program ${JSON.stringify(program)} after "--" is not an absolute path; give the full path of the executable, with its drive`,
        );
      return { logDir, stopTimeoutMs, program, programArgs: args.slice(i + 2) };
    }
    if (flag !== '--log-dir' && flag !== '--stop-timeout') {
      fail(
        flag.startsWith('-')
          ? `unknown flag ${JSON.stringify(flag)}: winfleet-service accepts --log-dir and --stop-timeout, each followed by its value, before "--"; ${shimUsage}`
          : `unexpected argument ${JSON.stringify(flag)} before "--": put the program and its arguments after "--"; ${shimUsage}`,
      );
    }
    if (seen.has(flag)) fail(`${flag} is given twice; give it once`);
    seen.add(flag);
    const value = args[i + 1];
    if (value === undefined || value === '' || value.startsWith('--'))
      fail(`${flag} needs a value after it; ${shimUsage}`);
    if (flag === '--log-dir') logDir = value!;
    else {
      const ms = parseGoDuration(value!);
      if (ms === undefined || ms < 1000 || ms > 600_000)
        fail(
          `--stop-timeout ${JSON.stringify(value)} is not a duration from 1s to 10m0s; give one such as 30s`,
        );
      stopTimeoutMs = ms!;
    }
  }
}

/** Exit codes of the shim itself: Win32 errors, as the Go shim reports them. */
const shimErrorInvalidParameter = 87;
const shimErrorFileNotFound = 2;

/** winfleet-service.exe: see the module comment and windows/service/supervise.go. */
export const serviceShimProgram: SimProgram = async (context) => {
  let command: ServiceShimCommand;
  try {
    command = parseServiceShimArgs(context.argv);
  } catch (error) {
    context.stderr(`winfleet-service: ${(error as Error).message}\n`);
    return shimErrorInvalidParameter;
  }
  // Its own lines and the program's output go, time-stamped, to the log in --log-dir
  // (supervise.go, logfile.go): a service has no console.
  let file: LogFileWriter;
  try {
    await context.machine.fs.mkdir(command.logDir, { recursive: true });
    file = await openLogFile(context, `${command.logDir}\\${serviceShimLogFileName}`);
  } catch (error) {
    context.stderr(`winfleet-service: cannot open the log file: ${(error as Error).message}\n`);
    return shimErrorFileNotFound;
  }
  const output = stampedLines((line) => file.write(line));
  const log = (line: string) => output(`winfleet-service: ${line}\n`);
  const self = context.machine.processes().find((p) => p.pid === context.pid);
  let child: SimProcess;
  try {
    child = await context.machine.spawn({
      binaryPath: command.program,
      args: command.programArgs,
      // windows/service/supervise.go programEnv: the shim's environment with
      // WINFLEET_STOP_ON_STDIN_EOF=1, whatever the shim itself was given.
      env: {
        ...withoutVariable(context.env.entries(), stopOnStdinEofVariable),
        [stopOnStdinEofVariable]: '1',
      },
      stdout: output,
      stderr: output,
    });
  } catch (error) {
    log(`cannot start ${command.program}: ${(error as Error).message}`);
    await file.close();
    return shimErrorFileNotFound;
  }
  // The job object: the child never outlives the shim.
  self?.exited.then(() => child.kill(processTerminatedUnexpectedly, 'its service shim ended'));
  log(`started ${[command.program, ...command.programArgs].join(' ')} (pid ${child.pid})`);
  let timer: NodeJS.Timeout | undefined;
  const onStop = () => {
    log(`stop requested: closed the standard input of ${command.program}`);
    child.requestStop('standard input closed');
    timer = setTimeout(() => {
      log(`${command.program} did not stop within ${command.stopTimeoutMs} ms: killing it`);
      child.kill(processTerminatedUnexpectedly, 'stop timeout');
    }, command.stopTimeoutMs);
  };
  if (context.signal.aborted) onStop();
  else context.signal.addEventListener('abort', onStop, { once: true });
  const exit = await child.exited;
  clearTimeout(timer);
  context.signal.removeEventListener('abort', onStop);
  log(`${command.program} exited with code ${exit.code}`);
  output.flush();
  await file.close();
  return exit.killed ? processTerminatedUnexpectedly : exit.code;
};

/** The shim's log file in --log-dir (windows/service/logfile.go logFileName). */
export const serviceShimLogFileName = 'winfleet-agent.log';

/**
 * Writes whole lines, each after the UTC time as logfile.go stamps them
 * ("2006-01-02T15:04:05.000000Z "); `flush` writes a last line without its newline.
 */
function stampedLines(write: (line: string) => void): ((text: string) => void) & {
  flush(): void;
} {
  let partial = '';
  const stamp = () => `${new Date().toISOString().slice(0, 23)}000Z `;
  const output = (text: string) => {
    partial += text;
    let end = partial.indexOf('\n');
    while (end >= 0) {
      write(`${stamp()}${partial.slice(0, end + 1)}`);
      partial = partial.slice(end + 1);
      end = partial.indexOf('\n');
    }
  };
  output.flush = () => {
    if (partial !== '') write(`${stamp()}${partial}\n`);
    partial = '';
  };
  return output;
}

export class ProgramRegistry {
  readonly #programs = new Map<string, ProgramDefinition>();
  #fallback: ProgramDefinition = { run: idleProgram };

  /** Sets the program for executables named `imageName` (case-insensitive, e.g. "kubelet.exe"). */
  register(imageName: string, definition: ProgramDefinition): this {
    this.#programs.set(imageName.toLowerCase(), definition);
    return this;
  }

  /** Sets the program for executables nothing else matches (idle by default). */
  setFallback(definition: ProgramDefinition): this {
    this.#fallback = definition;
    return this;
  }

  lookup(imageName: string): ProgramDefinition {
    return this.#programs.get(imageName.toLowerCase()) ?? this.#fallback;
  }

  /** Whether `imageName` run with `args` as a service calls the service dispatcher. */
  reportsToScm(imageName: string, args: readonly string[]): boolean {
    const { serviceFlag, flagList, neverReportsToScm, runsForService } = this.lookup(imageName);
    if (neverReportsToScm) return false;
    if (runsForService) {
      const child = runsForService(args);
      return child !== undefined && this.reportsToScm(windowsBaseName(child.program), child.args);
    }
    if (serviceFlag === undefined) return true;
    if (flagList) {
      let parsed: ParsedFlags;
      try {
        parsed = parsePflag(flagList(), args);
      } catch (error) {
        if (error instanceof FlagError) return false;
        throw error;
      }
      const value = parsed.values.get(serviceFlag.replace(/^--/, ''));
      return value !== undefined && parseGoBool(value) === true;
    }
    return args.some((a) => a === serviceFlag || a.startsWith(`${serviceFlag}=`));
  }
}

/** The programs every simulated host knows. */
export function defaultPrograms(): ProgramRegistry {
  return (
    new ProgramRegistry()
      .register('winfleet-agent.exe', { run: agentProgram, neverReportsToScm: true })
      .register('winfleet-service.exe', { run: serviceShimProgram })
      .register('kubelet.exe', {
        run: kubeletStandIn,
        serviceFlag: '--windows-service',
        flagList: () => flagLists().kubelet,
      })
      .register('kube-proxy.exe', {
        run: createKubeProxyStandIn(),
        serviceFlag: '--windows-service',
        flagList: () => flagLists()['kube-proxy'],
      })
      .register('kube-log-runner.exe', {
        run: kubeLogRunnerProgram,
        runsForService: kubeLogRunnerChild,
      })
      .register('windows_exporter.exe', { run: windowsExporterProgram })
      // A plain Go program: run as a service only through winfleet-service.exe.
      .register('flanneld.exe', { run: createFlanneldStandIn(), neverReportsToScm: true })
      // Reports to the service manager itself with --windows-service (its windows/service package).
      .register('hybrid-overlay-node.exe', {
        run: createHybridOverlayStandIn(),
        serviceFlag: '--windows-service',
      })
      .register(containerdImageName, { run: containerdProgram, serviceFlag: '--run-service' })
      .register(runhcsShimImageName, { run: runhcsShimProgram })
  );
}
