/**
 * winfleet: the command line for Windows nodes, also installed as kubectl-winfleet so that
 * `kubectl winfleet …` runs it. Each command lives in commands/; this file wires them (main.ts runs it), maps
 * errors to the exit codes in exit-codes.ts and prints errors without stack traces.
 *
 *   winfleet check [--host ADDRESS --ssh-key FILE]
 *   winfleet hosts add|list|remove|trust-key
 *   winfleet status [-w]
 *   winfleet diagnose [HOST…] -o bundle.tar.gz
 */
import { basename } from 'node:path';
import { Command, CommanderError } from 'commander';
import { WinfleetError } from '../errors/catalog.ts';
import { httpStatus } from '../kube/client.ts';
import { registerCheck } from './commands/check.ts';
import { registerDiagnose } from './commands/diagnose.ts';
import { registerHosts } from './commands/hosts.ts';
import { registerStatus } from './commands/status.ts';
import { registerVersion } from './commands/version.ts';
import { CliExit, ExitCode } from './exit-codes.ts';

/** "kubectl winfleet" when run as the kubectl plugin, else "winfleet". */
export function programName(argv1: string | undefined = process.argv[1]): string {
  return argv1 && basename(argv1).startsWith('kubectl-') ? 'kubectl winfleet' : 'winfleet';
}

export function buildProgram(name = programName()): Command {
  const program = new Command(name)
    .description('Windows worker nodes for any Kubernetes cluster')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerCheck(program);
  registerHosts(program);
  registerStatus(program);
  registerDiagnose(program);
  registerVersion(program);
  for (const command of program.commands) command.exitOverride();
  return program;
}

/** What an error means for the exit code, and how to say it. */
export function exitFor(error: unknown): { code: ExitCode; message?: string } {
  if (error instanceof CliExit) return { code: error.code, message: error.message };
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
    const hint =
      status === 401
        ? ' (the kubeconfig credentials were refused)'
        : status === 403
          ? ' (RBAC: ask for the permission named above)'
          : '';
    return {
      code: ExitCode.cluster,
      message: `the API server answered ${status}: ${detail}${hint}`,
    };
  }
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH'].includes(code)
  )
    return {
      code: ExitCode.cluster,
      message: `cannot reach the API server: ${(error as Error).message}`,
    };
  if (error instanceof WinfleetError) return { code: ExitCode.problem, message: error.message };
  return { code: ExitCode.problem, message: (error as Error)?.message ?? String(error) };
}

export async function runCli(argv: string[]): Promise<ExitCode> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return (process.exitCode as ExitCode | undefined) ?? ExitCode.ok;
  } catch (error) {
    const { code, message } = exitFor(error);
    if (message) process.stderr.write(`error: ${message}\n`);
    return code;
  }
}
