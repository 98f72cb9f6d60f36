/**
 * The exit codes of `winfleet` (and `kubectl winfleet`), for scripts to test:
 * - 0: done; for `check`, nothing failed (warnings allowed);
 * - 1: the command ran and found a problem: a check failed, a host or object is not as asked,
 *   a diagnostics bundle was written but some of its items could not be gathered;
 * - 2: usage: an unknown command or flag, or a flag with a bad value (nothing was done);
 * - 3: the cluster could not be reached, or refused the request (authentication, RBAC).
 */
import { CommanderError } from 'commander';
import { type ErrorCode, errorCode, WinfleetError } from '../errors/catalog.ts';
import { httpStatus } from '../kube/client.ts';
import { isForbiddenStatus, isUnauthorizedStatus } from '../net/http-status.ts';

export const ExitCode = {
  ok: 0,
  problem: 1,
  usage: 2,
  cluster: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The catalog code each exit code other than 0 is raised with. */
const exitErrorCodes = {
  [ExitCode.problem]: 'WF_COMMAND_FAILED',
  [ExitCode.usage]: 'WF_FLAG_INVALID',
  [ExitCode.cluster]: 'WF_CLUSTER_UNREACHABLE',
} as const satisfies Record<Exclude<ExitCode, 0>, ErrorCode>;

/** An error that ends the command with exit code `code` and a message for people. */
export function cliExit(
  code: Exclude<ExitCode, 0>,
  message: string,
): WinfleetError<{ exitCode: ExitCode }> {
  return new WinfleetError(exitErrorCodes[code], message, { details: { exitCode: code } });
}

/** The exit code a cliExit error carries; undefined for any other error. */
export function cliExitCode(error: unknown): ExitCode | undefined {
  if (!(error instanceof WinfleetError)) return undefined;
  const exitCode = (error.details as { exitCode?: unknown } | undefined)?.exitCode;
  return typeof exitCode === 'number' ? (exitCode as ExitCode) : undefined;
}

/** Socket and DNS error codes that mean the API server could not be reached at all. */
const unreachableCodes: readonly string[] = [
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
];

/**
 * Why `error` means the API server could not be reached, with the fix; undefined when it does
 * not. Node's own requests carry the code on the error; fetch (which @kubernetes/client-node
 * uses) throws "fetch failed" with the socket error, and its code, as the cause.
 */
export function unreachableReason(error: unknown, server?: string): string | undefined {
  const outer = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  const cause = outer?.cause as { code?: unknown; message?: unknown } | undefined;
  // A WinfleetError's code is its catalog code; the socket's code, if any, is on its cause.
  const own = errorCode(error) === undefined ? outer?.code : undefined;
  const code = typeof own === 'string' ? own : cause?.code;
  if (typeof code !== 'string' || !unreachableCodes.includes(code)) return undefined;
  const detail =
    typeof cause?.message === 'string' && cause.code === code
      ? cause.message
      : String(outer?.message ?? code);
  return `cannot reach the API server${server ? ` ${server}` : ''} (${detail}); check that the cluster is up and that the kubeconfig's server is right, or pick another cluster with --kubeconfig FILE or --context NAME`;
}

/** What an error means for the exit code, and how to say it. */
export function exitFor(error: unknown): { code: ExitCode; message?: string } {
  const carried = cliExitCode(error);
  if (carried !== undefined) return { code: carried, message: (error as Error).message };
  // A bad flag found below the command line (a parser the operator shares) is still usage.
  if (errorCode(error) === 'WF_FLAG_INVALID')
    return { code: ExitCode.usage, message: (error as Error).message };
  if (error instanceof CommanderError) {
    // Help and version end with code 0; commander has already printed its usage error.
    return { code: error.exitCode === 0 ? ExitCode.ok : ExitCode.usage };
  }
  const status = httpStatus(error);
  if (status !== undefined) {
    const body = (error as { body?: unknown }).body;
    let detail = '';
    try {
      detail = (JSON.parse(String(body)) as { message?: string }).message ?? '';
    } catch {
      detail = String(body ?? '');
    }
    const hint = isUnauthorizedStatus(status)
      ? ' (the kubeconfig credentials were refused)'
      : isForbiddenStatus(status)
        ? ' (RBAC: ask for the permission named above)'
        : '';
    return {
      code: ExitCode.cluster,
      message: `the API server answered ${status}: ${detail}${hint}`,
    };
  }
  const unreachable = unreachableReason(error);
  if (unreachable) return { code: ExitCode.cluster, message: unreachable };
  return { code: ExitCode.problem, message: (error as Error)?.message ?? String(error) };
}
