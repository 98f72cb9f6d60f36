/**
 * Where a join stands, for people: `C:\k\winfleet\join-status.json`, rewritten at each phase
 * and each retry (`winfleet-agent status` shows it). A host that joins from userdata has no one
 * watching its console; this file and the agent's output are what says "waiting for the
 * registry" or "refused: the CA does not match". It never holds the token.
 */
import { winfleetDir } from './agent-config.ts';
import type { HostOS } from './host-os.ts';

export const joinStatusPath = `${winfleetDir}\\join-status.json`;

/** The join's phases, in order; `failed` and `joined` are final. */
export type JoinPhase =
  | 'discovering'
  | 'reading-join-info'
  | 'pulling-payload'
  | 'bootstrapping'
  | 'joined'
  | 'failed';

export interface JoinStatus {
  phase: JoinPhase;
  message: string;
  /** The attempt within the phase (1 for the first; retries count up). */
  attempt: number;
  /** When this was written, ISO 8601. */
  time: string;
}

/** Writes the status (atomically: a reader sees the old one or the new one). */
export async function writeJoinStatus(
  host: HostOS,
  status: Omit<JoinStatus, 'time'>,
  now = new Date(),
): Promise<void> {
  const value: JoinStatus = { ...status, time: now.toISOString() };
  await host.writeFile(joinStatusPath, `${JSON.stringify(value, null, 2)}\n`);
}

/** The last status written, or undefined when this host never ran a join (or it is unreadable). */
export async function readJoinStatus(host: HostOS): Promise<JoinStatus | undefined> {
  const data = await host.readFile(joinStatusPath);
  if (!data) return undefined;
  try {
    const value = JSON.parse(data.toString('utf8')) as JoinStatus;
    return typeof value?.phase === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
