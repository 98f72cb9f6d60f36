/**
 * A loopback /24 (127.0.N.0) that no other test process is using: test files run in
 * processes side by side, and two simulated hosts at one address would share its fixed ports
 * (the kubelet's 10250), so that one of them never gets a Node Ready. Each range is claimed
 * with a lock file created exclusively in the temp directory, holding the claimant's pid; a
 * claim whose process is gone is taken over; a process releases its claims when it exits.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const held: string[] = [];
let releaseHooked = false;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Claims 127.0.`n`.0/24 for this process; false when another live process holds it. */
export function claimLoopbackRange(n: number): boolean {
  const path = join(tmpdir(), `winfleet-loopback-127.0.${n}.lock`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.push(path);
      if (!releaseHooked) {
        releaseHooked = true;
        process.once('exit', () => {
          for (const claim of held) {
            try {
              unlinkSync(claim);
            } catch {
              // Already gone.
            }
          }
        });
      }
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let pid = Number.NaN;
      try {
        pid = Number(readFileSync(path, 'utf8'));
      } catch {
        // Released between the two calls: try again.
      }
      // This process's own earlier claim, or a live process's: not free.
      if (pid === process.pid || (Number.isInteger(pid) && pid > 0 && alive(pid))) return false;
      try {
        unlinkSync(path);
      } catch {
        // Another process took it over first; the next create decides.
      }
    }
  }
  return false;
}

let nextBase = 20 + Math.floor(Math.random() * 200);

/**
 * A fresh loopback base address per world, in a /24 no other test process holds (a random
 * start alone let two test files running side by side pick the same one).
 */
export function nextBaseAddress(): string {
  for (let tries = 0; tries < 250; tries++) {
    nextBase = (nextBase % 250) + 1;
    if (claimLoopbackRange(nextBase)) return `127.0.${nextBase}.10`;
  }
  throw new Error('Every loopback range 127.0.1-250.0/24 is held by a test process');
}
