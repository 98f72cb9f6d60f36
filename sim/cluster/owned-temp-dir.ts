/**
 * Temporary directories owned by this process: removed when it exits, and — when it was
 * killed too hard to clean up (SIGKILL) — removed by the next process that makes one with the
 * same prefix, which finds the owner's pid dead.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const owned = new Set<string>();
let exitHookInstalled = false;

/** Whether process `pid` is running (a zombie its parent has not reaped counts as gone). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A killed process its parent has not reaped yet (a zombie) still answers signal 0.
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

function sweepStale(prefix: string): void {
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(prefix)) continue;
    const dir = join(tmpdir(), entry);
    try {
      const owner = Number(readFileSync(join(dir, 'owner.pid'), 'utf8'));
      if (Number.isInteger(owner) && owner > 0 && !processAlive(owner))
        rmSync(dir, { recursive: true, force: true });
    } catch {
      // No owner file (being created, or not ours): leave it.
    }
  }
}

/** Makes `<tmpdir>/<prefix>XXXXXX`, owned by this process. */
export async function createOwnedTempDir(prefix: string): Promise<string> {
  sweepStale(prefix);
  const dir = await mkdtemp(join(tmpdir(), prefix));
  writeFileSync(join(dir, 'owner.pid'), String(process.pid));
  owned.add(dir);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const d of owned) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

/**
 * Removes an owned directory now. A process that has just stopped may still finish a write into
 * it (a simulated host's agent installing a file): rm's retries cover the ENOTEMPTY of that race,
 * which once failed a test's teardown.
 */
export async function removeOwnedTempDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  owned.delete(dir);
}
