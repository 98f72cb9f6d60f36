/**
 * The command line of winfleet-service.exe (Go, windows/service), the program the agent's
 * service runs. A Node single executable never calls the service dispatcher, so the SCM would
 * kill a bare `winfleet-agent.exe run` after 30 s (error 1053); the shim calls it at once, runs
 * the agent as its child, asks it to stop by closing its standard input and ends with its exit
 * code. Its grammar (options.go) is strict:
 *
 *   winfleet-service.exe --log-dir <dir> [--stop-timeout <duration>] -- <program> [args...]
 *
 * The simulated hosts parse the same grammar (sim/hosts/programs.ts), and the shim's tests run
 * what `serviceShimArgs` builds through the real Go parser.
 */
import { WinfleetError } from '../../errors/catalog.ts';

/**
 * Set to 1 by the shim for its child: the agent's `run` then stops when its standard input
 * closes, and only then (an interactive run is not affected).
 */
export const stopOnStdinEofVariable = 'WINFLEET_STOP_ON_STDIN_EOF';

export interface ServiceShimOptions {
  /** Where the shim writes winfleet-agent.log (size-rotated); an absolute Windows path. */
  logDir: string;
  /** How long the child gets to stop before it is killed, in whole seconds (1 to 600). */
  stopTimeoutSeconds?: number;
}

/**
 * The shim's arguments to run `program` with `programArgs`, for a service's binPath.
 *
 * @example
 * serviceShimArgs({ logDir: 'C:\\k\\winfleet\\logs' }, 'C:\\k\\winfleet\\winfleet-agent.exe', ['run'])
 * // ['--log-dir', 'C:\\k\\winfleet\\logs', '--', 'C:\\k\\winfleet\\winfleet-agent.exe', 'run']
 */
export function serviceShimArgs(
  options: ServiceShimOptions,
  program: string,
  programArgs: readonly string[],
): string[] {
  if (options.logDir === '' || options.logDir.startsWith('--')) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use "${options.logDir}" as the service log directory; give an absolute Windows path`,
    );
  }
  const args = ['--log-dir', options.logDir];
  const timeout = options.stopTimeoutSeconds;
  if (timeout !== undefined) {
    if (!Number.isInteger(timeout) || timeout < 1 || timeout > 600) {
      throw new WinfleetError(
        'WF_INVARIANT',
        `Cannot use stop timeout ${timeout}; give whole seconds from 1 to 600`,
      );
    }
    args.push('--stop-timeout', `${timeout}s`);
  }
  return [...args, '--', program, ...programArgs];
}
