/**
 * Simulated Windows hosts in their own process, as the benchmarks run them: a script that
 * prints one JSON line per host (SimulatedHostDescription) on stdout once they are up, then
 * keeps them up until SIGTERM. Resolves with the process and the hosts' descriptions.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { SimulatedHostDescription } from '../sim/hosts/fleet.ts';

/** sim/hosts/cli.ts: the simulator's own command line (mixed releases, default timings). */
export const simHostsCli = fileURLToPath(new URL('../sim/hosts/cli.ts', import.meta.url));

export interface SimHostsProcess {
  child: ChildProcess;
  hosts: SimulatedHostDescription[];
}

/** Starts `script args…` and waits (at most `startTimeoutMs`) for `count` hosts to be up. */
export async function startSimHostsProcess(
  script: string,
  args: string[],
  count: number,
  startTimeoutMs = 5 * 60_000,
): Promise<SimHostsProcess> {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const hosts: SimulatedHostDescription[] = [];
  const lines = createInterface({ input: child.stdout! });
  const readHosts = (async () => {
    for await (const line of lines) {
      hosts.push(JSON.parse(line) as SimulatedHostDescription);
      if (hosts.length === count) break;
    }
  })();
  const exited = once(child, 'exit').then(() => undefined);
  const timer = new AbortController();
  const timedOut = sleep(startTimeoutMs, undefined, { signal: timer.signal }).catch(() => {});
  await Promise.race([readHosts, exited, timedOut]);
  timer.abort();
  if (hosts.length !== count) {
    child.kill('SIGKILL');
    throw new Error(`The simulated hosts did not start (${hosts.length} of ${count})`);
  }
  return { child, hosts };
}
