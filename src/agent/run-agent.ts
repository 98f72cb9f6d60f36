/**
 * The agent's commands, runnable in-process: `join`, `bootstrap`, `pull-payload`, `run`,
 * `cleanup`, `status`. The Windows executable (main.ts) calls this with the Windows HostOS; the
 * simulated hosts call it with theirs, so both run the same code. Results are printed as one
 * line of JSON on stdout; failures as a message on stderr with exit code 1, and as JSON on
 * stdout with the failing step (bootstrap's), the error's catalog code and, when it has one,
 * its reason (a registry "unreachable"), which the operator reads.
 */
import { errorCode } from '../errors/catalog.ts';
import type { AgentContext } from './agent-context.ts';
import { bootstrap, failedStep } from './bootstrap.ts';
import { cleanup } from './cleanup.ts';
import { join } from './join.ts';
import { parseJoinFlags } from './join-flags.ts';
import { parsePullPayloadFlags, pullPayloadCommand } from './pull-payload-command.ts';
import { runLoop } from './run-loop.ts';
import { status } from './status.ts';

export const agentUsage = 'Usage: winfleet-agent <join|bootstrap|pull-payload|run|cleanup|status>';

/** What a failure's JSON says besides its message: the catalog code and its reason, if any. */
function failureFacts(error: unknown): { code?: string; reason?: string } {
  const code = errorCode(error);
  const reason = (error as { details?: { reason?: unknown } } | undefined)?.details?.reason;
  return {
    ...(code ? { code } : {}),
    ...(typeof reason === 'string' ? { reason } : {}),
  };
}

/** Runs one agent command and resolves with its exit code. */
export async function runAgent(argv: readonly string[], context: AgentContext): Promise<number> {
  const [command, ...rest] = argv;
  const oneShot = async (work: () => Promise<Record<string, unknown>>) => {
    try {
      context.stdout(`${JSON.stringify(await work())}\n`);
      return 0;
    } catch (error) {
      const step = failedStep(error) ?? command;
      const facts = failureFacts(error);
      context.stdout(`${JSON.stringify({ error: (error as Error).message, step, ...facts })}\n`);
      context.stderr(`winfleet-agent ${command}: ${(error as Error).message}\n`);
      return 1;
    }
  };
  if (rest.length > 0 && command !== 'run' && command !== 'join' && command !== 'pull-payload') {
    context.stderr(`winfleet-agent: unexpected arguments ${rest.join(' ')}\n${agentUsage}\n`);
    return 2;
  }
  switch (command) {
    case 'join': {
      let flags: ReturnType<typeof parseJoinFlags>;
      try {
        flags = parseJoinFlags(rest, context.env ?? (() => undefined));
      } catch (error) {
        context.stderr(`${(error as Error).message}\n`);
        return 2;
      }
      return oneShot(() => join(context, flags));
    }
    case 'bootstrap':
      return oneShot(() => bootstrap(context));
    case 'pull-payload': {
      let flags: ReturnType<typeof parsePullPayloadFlags>;
      try {
        flags = parsePullPayloadFlags(rest);
      } catch (error) {
        context.stderr(`${(error as Error).message}\n`);
        return 2;
      }
      return oneShot(() => pullPayloadCommand(context, flags));
    }
    case 'cleanup':
      return oneShot(() => cleanup(context));
    case 'status':
      return oneShot(() => status(context));
    case 'run':
      try {
        return await runLoop(context);
      } catch (error) {
        context.stderr(`winfleet-agent run: ${(error as Error).message}\n`);
        return 1;
      }
    default:
      context.stderr(`winfleet-agent: unknown command "${command ?? ''}"\n${agentUsage}\n`);
      return 2;
  }
}
