/**
 * Running the machine's network tools (ip, bridge, ping, iptables) and programs inside a network
 * namespace, each bounded in time, with an error that names the command line, how it ended and
 * what it wrote to stderr.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where Debian puts the network tools; /usr/sbin is not on every PATH. */
const systemDirs = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];

/** The Debian package that brings each tool the network tests run. */
const packageOf: Record<string, string> = {
  ip: 'iproute2',
  bridge: 'iproute2',
  ping: 'iputils-ping',
  iptables: 'iptables',
  'iptables-restore': 'iptables',
  kubectl: 'kubernetes-client',
};

const resolved = new Map<string, string>();

/** The absolute path of a system tool, found on PATH or in the system directories. */
export function toolPath(name: string): string {
  const known = resolved.get(name);
  if (known) return known;
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...systemDirs];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      resolved.set(name, candidate);
      return candidate;
    } catch {
      // Not here.
    }
  }
  const pkg = packageOf[name];
  throw new Error(
    `${name} is not installed${pkg ? ` (Debian package ${pkg}; hack/ensure-packages.sh installs it)` : ''}`,
  );
}

/** A PATH for programs run in a namespace that run the system tools themselves (flanneld runs iptables). */
export function systemPath(): string {
  const own = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  return [...new Set([...own, ...systemDirs])].join(delimiter);
}

export interface RunOptions {
  /** Written to the command's stdin, which is then closed. */
  input?: string;
  env?: NodeJS.ProcessEnv;
  /** Killed (SIGKILL) after this long; default 10 s. */
  timeoutMs?: number;
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** A command that failed, with what it printed. */
export class CommandError extends Error {
  readonly commandLine: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;

  constructor(
    commandLine: string,
    result: RunResult & { code: number | null; signal: NodeJS.Signals | null; timedOut: boolean },
    timeoutMs: number,
  ) {
    const how = result.timedOut
      ? `did not finish within ${timeoutMs} ms`
      : result.signal
        ? `was killed by ${result.signal}`
        : `exited with ${result.code}`;
    const said = (result.stderr.trim() || result.stdout.trim()).split('\n').slice(-8).join('\n');
    super(`\`${commandLine}\` ${how}${said ? `: ${said}` : ''}`);
    this.commandLine = commandLine;
    this.code = result.code;
    this.signal = result.signal;
    this.stdout = result.stdout;
    this.stderr = result.stderr;
    this.timedOut = result.timedOut;
  }
}

/** The command line as one would type it, for messages. */
export function formatCommand(file: string, args: readonly string[]): string {
  return [file, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a}'`)).join(' ');
}

/** Runs a command to its end; resolves with its output, rejects with a CommandError. */
export function run(
  file: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const commandLine = formatCommand(file, args);
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: options.env ?? process.env,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`\`${commandLine}\` could not be started: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const result = {
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      };
      if (code === 0 && !timedOut) resolve(result);
      else reject(new CommandError(commandLine, { ...result, code, signal, timedOut }, timeoutMs));
    });
    child.stdin.on('error', () => {
      // The command may exit before reading its input; its exit status tells.
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Runs `ip ARGS`. */
export function ip(args: readonly string[], options?: RunOptions): Promise<RunResult> {
  return run(toolPath('ip'), args, options);
}

/** Runs `bridge ARGS`. */
export function bridgeTool(args: readonly string[], options?: RunOptions): Promise<RunResult> {
  return run(toolPath('bridge'), args, options);
}

/** The argv that runs `file args` inside network namespace `netns` (`ip netns exec`). */
export function inNetnsArgv(
  netns: string,
  file: string,
  args: readonly string[],
): [string, string[]] {
  return [toolPath('ip'), ['netns', 'exec', netns, file, ...args]];
}

/** Runs `file args` inside network namespace `netns` to its end. */
export function runInNetns(
  netns: string,
  file: string,
  args: readonly string[],
  options?: RunOptions,
): Promise<RunResult> {
  const [ipPath, argv] = inNetnsArgv(netns, file, args);
  return run(ipPath, argv, options);
}
