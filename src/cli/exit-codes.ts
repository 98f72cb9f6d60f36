/**
 * The exit codes of `winfleet` (and `kubectl winfleet`), for scripts to test:
 * - 0: done; for `check`, nothing failed (warnings allowed);
 * - 1: the command ran and found a problem: a check failed, a host or object is not as asked,
 *   a diagnostics bundle was written but some of its items could not be gathered;
 * - 2: usage: an unknown command or flag, or a flag with a bad value (nothing was done);
 * - 3: the cluster could not be reached, or refused the request (authentication, RBAC).
 */
export const ExitCode = {
  ok: 0,
  problem: 1,
  usage: 2,
  cluster: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** An error that ends the command with a given exit code and a message for people. */
export class CliExit extends Error {
  readonly code: ExitCode;
  constructor(code: ExitCode, message: string) {
    super(message);
    this.code = code;
  }
}
