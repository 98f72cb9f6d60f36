/**
 * A long-running program inside a network namespace (flanneld, the API relay, a TCP echo
 * server): started as `ip netns exec NS program …` in its own process group with its output in
 * a log file, killed by the kernel if the test process dies (setpriv --pdeathsig, as the
 * control plane's components are: sim/cluster/component-process.ts), and waited on by what it
 * logs, never by a sleep.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ComponentProcess } from '../cluster/component-process.ts';
import { inNetnsArgv } from './command.ts';

export interface NetnsProcessSpec {
  netns: string;
  /** For messages and the log file name. */
  name: string;
  file: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
}

/** Starts the program; stop it with `.stop()` (SIGTERM to its group, SIGKILL after a grace). */
export function startInNetns(spec: NetnsProcessSpec): ComponentProcess {
  const [ipPath, argv] = inNetnsArgv(spec.netns, spec.file, spec.args);
  return new ComponentProcess({
    name: spec.name,
    binary: ipPath,
    args: argv,
    logFile: spec.logFile,
    ...(spec.env ? { env: spec.env } : {}),
  });
}

function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Waits until the process's log has a line matching `pattern` and returns that line; fails at
 * once if the process exits first, and after `timeoutMs`, with the log's tail either way.
 */
export async function waitForLogLine(
  proc: ComponentProcess,
  pattern: RegExp,
  options: { description: string; timeoutMs: number },
): Promise<string> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const line = readLog(proc.logFile)
      .split('\n')
      .find((l) => pattern.test(l));
    if (line !== undefined) return line;
    if (proc.exited)
      throw new Error(
        `${proc.name} exited before ${options.description}; its log (${proc.logFile}) ends:\n${proc.logTail(30)}`,
      );
    if (Date.now() >= deadline)
      throw new Error(
        `${proc.name}: no ${options.description} within ${options.timeoutMs} ms; its log (${proc.logFile}) ends:\n${proc.logTail(30)}`,
      );
    await sleep(50);
  }
}
