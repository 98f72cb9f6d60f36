/**
 * DNS across the lab: one query for a name's A records from a pod namespace to a server
 * (dns-query-program.ts), over UDP or TCP, read back strictly.
 */
import { fileURLToPath } from 'node:url';
import { runInNetns } from './command.ts';

const program = fileURLToPath(new URL('./dns-query-program.ts', import.meta.url));

/** The A records `server` answers for `name`, asked from `netns`; rejects with the reason. */
export async function queryA(
  netns: string,
  o: { server: string; name: string; tcp?: boolean; timeoutMs?: number },
): Promise<string[]> {
  const timeoutMs = o.timeoutMs ?? 3000;
  const { stdout } = await runInNetns(
    netns,
    process.execPath,
    [
      program,
      '--server',
      o.server,
      '--name',
      o.name,
      ...(o.tcp ? ['--tcp'] : []),
      '--timeout-ms',
      String(timeoutMs),
    ],
    { timeoutMs: timeoutMs + 10_000 },
  );
  const answer = JSON.parse(stdout) as { addresses?: unknown };
  if (!Array.isArray(answer.addresses) || !answer.addresses.every((a) => typeof a === 'string'))
    throw new Error(`dns-query from ${netns}: unreadable answer ${JSON.stringify(stdout)}`);
  return answer.addresses as string[];
}
