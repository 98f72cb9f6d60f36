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
