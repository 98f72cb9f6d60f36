/**
 * The agent's commands, runnable in-process: `bootstrap`, `run`, `cleanup`, `status`. The
 * Windows executable (main.ts) calls this with the Windows HostOS; the simulated hosts call it
 * with theirs, so both run the same code.
 */
import type { HostOS } from './host-os.ts';

/** What a command may use besides the OS. */
export interface AgentContext {
  hostOS: HostOS;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Aborted when the service is asked to stop (the `run` loop ends cleanly). */
  signal?: AbortSignal;
}

/** Runs one agent command and resolves with its exit code. */
export async function runAgent(argv: readonly string[], context: AgentContext): Promise<number> {
  const [command] = argv;
  context.stderr(`winfleet-agent: command "${command ?? ''}" is not implemented yet\n`);
  return 2;
}
