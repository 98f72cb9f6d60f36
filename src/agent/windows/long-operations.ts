/**
 * The Windows operations that run for minutes, and how long the agent lets each run before it
 * kills it (the runner's default, defaultCommandTimeoutMs, is 2 minutes). WindowsHostOS passes
 * these to its CommandRunner; the simulated hosts run the same operations through a runner with
 * the same contract (sim/hosts/long-operations.ts), so a timeout shorter than an operation fails
 * a test there as it would fail the operation on a real host.
 *
 * - A Windows Update search (IUpdateSearcher.Search) can run for many minutes on a host that has
 *   not searched for a while: ansible-collections/ansible.windows#463 shows one still running
 *   after more than 9 minutes. 30 minutes.
 * - Downloading and installing a cumulative update (hundreds of MB to over 1 GB, applied through
 *   Component Based Servicing) takes tens of minutes (Microsoft's Windows IT Pro blog, "How to
 *   improve Windows cumulative update installation times", 2021). installUpdatesScript
 *   downloads and installs every KB asked for in one powershell.exe: 3 hours.
 * - `wusa.exe /extract` only unpacks the .msu into a scratch directory that the agent removes
 *   afterwards, so killing it leaves nothing behind: 30 minutes.
 * - `dism.exe /online /add-package` is never killed: Node's kill() on Windows is
 *   TerminateProcess, and DISM stopped half-way leaves CBS working on a package the agent then
 *   reports as failed (DISM documents no safe way to stop /add-package). It ends on its own.
 */

/** ms; Infinity: never killed. */
export const longOperationTimeoutsMs = {
  updateSearch: 30 * 60_000,
  updateInstall: 3 * 60 * 60_000,
  msuExtract: 30 * 60_000,
  dismAddPackage: Number.POSITIVE_INFINITY,
} as const;

export type LongOperation = keyof typeof longOperationTimeoutsMs;
