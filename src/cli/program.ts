/**
 * winfleet: the command line for Windows nodes, also installed as kubectl-winfleet so that
 * `kubectl winfleet …` runs it. Each command lives in commands/; this file wires them (main.ts runs it), maps
 * errors to the exit codes in exit-codes.ts and prints errors without stack traces.
 *
 *   winfleet check [--host ADDRESS --ssh-key FILE]
 *   winfleet hosts add|list|remove|trust-key
 *   winfleet status [-w]
 *   winfleet diagnose [HOST…] -o bundle.tar.gz
 *   winfleet join-command --pool NAME [--ttl 2h] [--uses N] [--format F]
 *   winfleet join-tokens list|revoke ID
 *   winfleet payload push DIR REGISTRY/REPOSITORY:TAG
 *   winfleet migrate plan --to 2022|2025|BUILD [-n NS | -A]
 */
import { basename } from 'node:path';
import { Command } from 'commander';
import { registerCheck } from './commands/check.ts';
import { registerDiagnose } from './commands/diagnose.ts';
import { registerHosts } from './commands/hosts.ts';
import { registerJoinCommand } from './commands/join-command.ts';
import { registerJoinTokens } from './commands/join-tokens.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerPayload } from './commands/payload.ts';
import { registerStatus } from './commands/status.ts';
import { registerVersion } from './commands/version.ts';
import { ExitCode, exitFor } from './exit-codes.ts';

export { exitFor };

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
  registerJoinCommand(program);
  registerJoinTokens(program);
  registerPayload(program);
  registerMigrate(program);
  registerVersion(program);
  for (const command of program.commands) command.exitOverride();
  return program;
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
