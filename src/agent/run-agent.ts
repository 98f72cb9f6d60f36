/**
 * The agent's commands, runnable in-process: `join`, `bootstrap`, `run`, `cleanup`, `status`. The
 * Windows executable (main.ts) calls this with the Windows HostOS; the simulated hosts call it
 * with theirs, so both run the same code. Results are printed as one line of JSON on stdout;
 * failures as a message on stderr (and, for bootstrap, the failing step) with exit code 1.
 */
import { bootstrap, failedStep } from './bootstrap.ts';
import { cleanup } from './cleanup.ts';
import type { HostOS } from './host-os.ts';
import { type JoinTuning, join } from './join.ts';
import { parseJoinFlags } from './join-flags.ts';
import { runLoop } from './run-loop.ts';
import { status } from './status.ts';

/** What a command may use besides the OS. */
export interface AgentContext {
  hostOS: HostOS;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Aborted when the service is asked to stop (the `run` loop ends cleanly). */
  signal?: AbortSignal;
  /** Shorter waits for `join` (tests, simulated hosts); defaults otherwise. */
  join?: JoinTuning;
}

export const agentUsage = 'Usage: winfleet-agent <join|bootstrap|run|cleanup|status>';

/** Runs one agent command and resolves with its exit code. */
export async function runAgent(argv: readonly string[], context: AgentContext): Promise<number> {
  const [command, ...rest] = argv;
  const oneShot = async (work: () => Promise<Record<string, unknown>>) => {
    try {
      context.stdout(`${JSON.stringify(await work())}\n`);
      return 0;
    } catch (error) {
      const step = failedStep(error) ?? command;
      context.stdout(`${JSON.stringify({ error: (error as Error).message, step })}\n`);
      context.stderr(`winfleet-agent ${command}: ${(error as Error).message}\n`);
      return 1;
    }
  };
  if (rest.length > 0 && command !== 'run' && command !== 'join') {
    context.stderr(`winfleet-agent: unexpected arguments ${rest.join(' ')}\n${agentUsage}\n`);
    return 2;
  }
  switch (command) {
    case 'join': {
      let flags: ReturnType<typeof parseJoinFlags>;
      try {
        flags = parseJoinFlags(rest);
      } catch (error) {
        context.stderr(`${(error as Error).message}\n`);
        return 2;
      }
      return oneShot(() => join(context, flags));
    }
    case 'bootstrap':
      return oneShot(() => bootstrap(context));
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
