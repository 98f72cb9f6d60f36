/**
 * The Windows operations that take minutes on a simulated host (a Windows Update search, the
 * download and install of updates, `wusa /extract`, `dism /online /add-package`), on a clock
 * tests can speed up: each takes its duration in simulated time, and `scale` simulated ms pass
 * per real ms. They run through runLongOperation, which keeps the contract of the agent's
 * CommandRunner (src/agent/windows/command-runner.ts childProcessRunner): the timeout the caller
 * passes (the runner's 2-minute default when it passes none; Infinity: none), measured on the
 * same simulated clock, kills the operation and rejects with the runner's WF_TIMEOUT text. So a
 * timeout shorter than an operation fails a test here as it fails the operation on a host.
 *
 * A killed operation changes nothing on the machine (its effect runs only at its end): WUA's
 * installer commits per update at the end of its install, and the simulation does not model
 * the half-done CBS state a killed DISM leaves (the agent never kills DISM).
 *
 * Durations (simulated): a search 90 s; a cumulative update (one that needs a reboot) 20 min to
 * download and install, any other update 1 min; unpacking an .msu 1 min; DISM adding a package
 * 15 min. Microsoft's Windows IT Pro blog ("How to improve Windows cumulative update
 * installation times", 2021) describes LCU installs of tens of minutes;
 * ansible-collections/ansible.windows#463 shows a search still running after 9 minutes.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CommandOptions,
  defaultCommandTimeoutMs,
} from '../../src/agent/windows/command-runner.ts';
import { WinfleetError } from '../../src/errors/catalog.ts';

export interface LongOperationTimings {
  /** Simulated ms per real ms during a long operation. Default 1000 (20 min take 1.2 s). */
  longOperationScale?: number;
  /** A Windows Update search, simulated ms. Default 90 s. */
  updateSearchMs?: number;
  /** Download and install of a cumulative update (one that needs a reboot). Default 20 min. */
  cumulativeUpdateInstallMs?: number;
  /** Download and install of any other update. Default 1 min. */
  updateInstallMs?: number;
  /** `wusa.exe /extract` of an .msu. Default 1 min. */
  msuExtractMs?: number;
  /** `dism.exe /online /add-package` of one .cab. Default 15 min. */
  dismAddPackageMs?: number;
  /**
   * Install-WindowsFeature of a feature whose payload is on disk (Containers), over SSH.
   * Default 2 min (a round figure, not a measurement; the restart that finishes it is apart).
   */
  featureInstallMs?: number;
}

export class SimLongOperations {
  readonly timings: Required<LongOperationTimings>;
  /** The operations running now (e.g. "install Windows updates KB5040437"), for tests. */
  readonly running = new Set<string>();

  constructor(timings: LongOperationTimings = {}) {
    const scale = timings.longOperationScale ?? 1000;
    if (!(scale > 0) || !Number.isFinite(scale)) {
      throw new RangeError(`longOperationScale: give a positive number, not ${scale}`);
    }
    this.timings = {
      longOperationScale: scale,
      updateSearchMs: timings.updateSearchMs ?? 90_000,
      cumulativeUpdateInstallMs: timings.cumulativeUpdateInstallMs ?? 20 * 60_000,
      updateInstallMs: timings.updateInstallMs ?? 60_000,
      msuExtractMs: timings.msuExtractMs ?? 60_000,
      dismAddPackageMs: timings.dismAddPackageMs ?? 15 * 60_000,
      featureInstallMs: timings.featureInstallMs ?? 2 * 60_000,
    };
  }

  /**
   * Runs `file args` for `durationMs` simulated ms, then `effect`; killed as childProcessRunner
   * kills it when `options.timeoutMs` (default 2 minutes) passes first, or when
   * `options.signal` aborts (spawn's `signal`: the runner rejects with "Cannot run …: The
   * operation was aborted"; over SSH, the channel closing). A killed operation has no effect.
   */
  async run<T>(
    file: string,
    args: readonly string[],
    options: CommandOptions | undefined,
    durationMs: number,
    effect: () => T | Promise<T>,
  ): Promise<T> {
    const timeoutMs = options?.timeoutMs ?? defaultCommandTimeoutMs;
    const real = (ms: number) => ms / this.timings.longOperationScale;
    const name = `${file} ${args.join(' ')}`.trim();
    const signal = options?.signal;
    const aborted = () =>
      new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `Cannot run "${file}": The operation was aborted`,
      );
    if (signal?.aborted) throw aborted();
    this.running.add(name);
    try {
      const wait = async (ms: number) => {
        try {
          await sleep(real(ms), undefined, signal ? { signal } : undefined);
        } catch (error) {
          if (signal?.aborted) throw aborted();
          throw error;
        }
      };
      if (Number.isFinite(timeoutMs) && timeoutMs < durationMs) {
        await wait(timeoutMs);
        throw new WinfleetError(
          'WF_TIMEOUT',
          `"${name.slice(0, 200)}" did not finish within ${timeoutMs} ms and was killed`,
        );
      }
      await wait(durationMs);
      return await effect();
    } finally {
      this.running.delete(name);
    }
  }
}
