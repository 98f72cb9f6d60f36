/** What an agent command may use besides the OS, as run-agent.ts hands it to each command. */
import type { BackoffPolicy } from '../join/retry-with-backoff.ts';
import type { HostOS } from './host-os.ts';
import type { PullPayload } from './join-payload.ts';

/** What a command may use besides the OS. */
export interface AgentContext {
  hostOS: HostOS;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Aborted when the service is asked to stop (the `run` loop ends cleanly). */
  signal?: AbortSignal;
  /**
   * The process's environment (case-insensitive on Windows): `run` restarts when its own proxy
   * environment is not the manifest's; `join` reads its token from WINFLEET_JOIN_TOKEN.
   */
  env?: (name: string) => string | undefined;
  /** Shorter waits for `join` (tests, simulated hosts); defaults otherwise. */
  join?: JoinTuning;
}

export interface JoinTuning {
  /** While cluster-info or winfleet-join cannot be read yet. Default: up to 5 minutes. */
  discoveryBackoff?: BackoffPolicy;
  /** While the registry cannot be reached. Default: 2 s doubling to 60 s, up to 30 minutes. */
  payloadBackoff?: BackoffPolicy;
  /** The payload pull (default: join-payload.ts's). */
  pullPayload?: PullPayload;
}
