/**
 * ICMP echo between namespaces with iputils ping (Debian iputils-ping): bounded in count and
 * time (-c, -w), optionally with don't-fragment set and a payload size (-M do -s), and read back
 * from its summary line and its local errors (iputils 20221126 output).
 */
import { CommandError, runInNetns, toolPath } from './command.ts';

export interface PingResult {
  transmitted: number;
  received: number;
  /** Packets the local stack refused to send (e.g. larger than the route's MTU with DF set). */
  errors: number;
  /** The MTU in "local error: message too long, mtu=N", when ping printed one. */
  localMtu?: number;
  output: string;
}

// iputils ping_common.c finish(): "+N duplicates", "+N corrupted", "+N errors" may follow "received".
const summary =
  /^(\d+) packets transmitted, (\d+) received((?:, \+\d+ [a-z]+)*), [\d.]+% packet loss/m;

/** Reads ping's summary; throws when there is none. */
export function parsePingOutput(stdout: string, stderr: string): PingResult {
  const match = summary.exec(stdout);
  if (!match) throw new Error(`ping printed no summary line:\n${stdout}${stderr}`);
  const errors = /, \+(\d+) errors/.exec(match[3] ?? '');
  const result: PingResult = {
    transmitted: Number(match[1]),
    received: Number(match[2]),
    errors: Number(errors?.[1] ?? 0),
    output: `${stdout}${stderr}`.trim(),
  };
  const local = /local error: message too long, mtu=(\d+)/.exec(stderr);
  if (local) result.localMtu = Number(local[1]);
  return result;
}

export interface PingOptions {
  count?: number;
  /** Seconds before ping gives up whatever it got (-w); default count + 2. */
  deadlineSeconds?: number;
  /** ICMP payload bytes (-s); the IP packet is 28 more. */
  size?: number;
  /** Set don't-fragment and never fragment locally (-M do). */
  dontFragment?: boolean;
}

/**
 * Pings `target` from inside `netns`. Resolves with the counts whether or not replies came
 * (exit 0 or 1); rejects when ping itself failed (exit 2: bad arguments, no route).
 */
export async function ping(
  netns: string,
  target: string,
  options: PingOptions = {},
): Promise<PingResult> {
  const count = options.count ?? 3;
  const deadline = options.deadlineSeconds ?? count + 2;
  const args = [
    '-n',
    '-c',
    String(count),
    '-i',
    '0.2',
    '-W',
    '1',
    '-w',
    String(deadline),
    ...(options.dontFragment ? ['-M', 'do'] : []),
    ...(options.size !== undefined ? ['-s', String(options.size)] : []),
    target,
  ];
  try {
    const { stdout, stderr } = await runInNetns(netns, toolPath('ping'), args, {
      timeoutMs: (deadline + 5) * 1000,
    });
    return parsePingOutput(stdout, stderr);
  } catch (error) {
    if (error instanceof CommandError && error.code === 1)
      return parsePingOutput(error.stdout, error.stderr);
    throw new Error(`ping ${target} from ${netns} failed: ${(error as Error).message}`);
  }
}
