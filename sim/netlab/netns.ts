/**
 * Network namespaces owned by this process: created with `ip netns add` under names from
 * netns-names.ts, removed by their lab's teardown, by an exit hook if the process ends first,
 * and — when the process was killed too hard for either (SIGKILL) — by the next lab any test
 * process creates, which finds the owner's pid dead. Nothing here touches the machine's own
 * (root) namespace.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { processAlive } from '../cluster/owned-temp-dir.ts';
import { CommandError, ip, toolPath } from './command.ts';
import { parseNetnsName } from './netns-names.ts';

/** Where `ip netns add` mounts the namespaces it names. */
export const netnsDir = '/run/netns';

const owned = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const name of owned) deleteNetnsSync(name);
  });
}

function deleteNetnsSync(name: string): void {
  try {
    execFileSync(toolPath('ip'), ['netns', 'delete', name], { stdio: 'ignore', timeout: 5000 });
  } catch {
    // Already gone, or the exit hook cannot do more; the next lab's sweep retries.
  }
  owned.delete(name);
}

/** The names under /run/netns (none when the directory does not exist yet). */
export function listNetns(): string[] {
  try {
    return readdirSync(netnsDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** Namespaces of this process, whatever lab made them. */
export function ownNetns(): string[] {
  return listNetns().filter((n) => parseNetnsName(n)?.ownerPid === process.pid);
}

/**
 * Deletes the namespaces whose owner process is gone (their processes died with the owner:
 * everything netlab starts in a namespace carries a parent-death signal). Returns their names.
 */
export async function sweepStaleNetns(): Promise<string[]> {
  const stale = listNetns().filter((name) => {
    const parts = parseNetnsName(name);
    return parts !== undefined && parts.ownerPid !== process.pid && !processAlive(parts.ownerPid);
  });
  for (const name of stale) await deleteNetns(name);
  return stale;
}

/** Creates namespace `name` owned by this process, with its loopback interface up. */
export async function createNetns(name: string): Promise<void> {
  const parts = parseNetnsName(name);
  if (parts?.ownerPid !== process.pid)
    throw new Error(`netns ${name} is not named for this process (sim/netlab/netns-names.ts)`);
  installExitHook();
  owned.add(name);
  try {
    await ip(['netns', 'add', name]);
  } catch (error) {
    owned.delete(name);
    throw new Error(`could not create network namespace ${name}: ${(error as Error).message}`);
  }
  await ip(['-n', name, 'link', 'set', 'lo', 'up']);
}

/** Deletes namespace `name`; one that is already gone is no error. */
export async function deleteNetns(name: string): Promise<void> {
  try {
    await ip(['netns', 'delete', name]);
  } catch (error) {
    const gone = error instanceof CommandError && /No such file or directory/.test(error.stderr);
    if (!gone)
      throw new Error(`could not delete network namespace ${name}: ${(error as Error).message}`);
  }
  owned.delete(name);
}
