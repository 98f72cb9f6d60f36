/**
 * `npm run lab:fault -- <host> <fault> [argument]`: injects a fault into a host of a running
 * `make lab`, through the lab's fault control channel (fault-control.ts), and prints what it
 * did and the kubectl commands to watch the condition appear and the repair happen.
 *
 *   npm run lab:fault -- list
 *   npm run lab:fault -- simwin-10 service-down kubelet
 *   npm run lab:fault -- simwin-11 clock-skew 600
 *   npm run lab:fault -- simwin-10 clear
 *   npm run lab:fault -- simwin-10 hns-delete --watch    # print detection and repair, timed
 *
 * It finds the lab by its control file: .cache/lab/fault-control.json, or the one in
 * --lab-dir (default $WINFLEET_LAB_DIR) for a lab started with WINFLEET_LAB_DIR.
 */
import { realpathSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import {
  type FaultControlFile,
  faultCommandFor,
  faultControlFilePath,
  type HostFaultState,
  readFaultControlFile,
} from './fault-control.ts';
import {
  argumentOf,
  crashLoopServices,
  FaultRequestError,
  faultableServices,
  faultKinds,
  maxClockSkewSeconds,
  parseFaultKind,
  parseFaultRequest,
  parseHostName,
  parseSecondsArgument,
} from './fault-requests.ts';
import {
  parseWatchTimeout,
  snapshotReader,
  startWatch,
  watchFault,
  watchPlanFor,
  watchTimeout,
} from './fault-watch.ts';

export interface CliOutput {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** How long one request to the lab may take. */
const requestTimeoutMs = 15_000;

/** Runs the CLI on `argv` (the arguments after the program); resolves to the exit code. */
export async function runFaultCli(
  argv: readonly string[],
  io: CliOutput,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let code = 0;
  const program = new Command('lab:fault')
    .description(
      [
        'Inject a fault into a host of a running `make lab` (or list its hosts).',
        '',
        'Faults:',
        ...Object.entries(faultKinds).map(([kind, what]) => {
          const arg = argumentOf(kind as keyof typeof faultKinds);
          const usage = arg === 'service' ? `${kind} <service>` : arg ? `${kind} <seconds>` : kind;
          return `  ${usage.padEnd(24)} ${what}`;
        }),
        '',
        `Services: ${faultableServices.join(', ')} (crash-loop: ${crashLoopServices.join(', ')}).`,
        `Seconds: -${maxClockSkewSeconds} to ${maxClockSkewSeconds} (negative: behind).`,
        '`list` (no host) shows the hosts, their services and the faults injected on each.',
      ].join('\n'),
    )
    .usage('[--lab-dir <dir>] <host> <fault> [argument] [--watch [--timeout <seconds>]] | list')
    .argument('<host>', 'a lab host as kubectl get nodes shows it (simwin-N), or list')
    .argument('[fault]', `one of ${Object.keys(faultKinds).join(', ')}`)
    .argument('[argument]', 'the service (service-down, crash-loop) or seconds (clock-skew)')
    .option(
      '--lab-dir <dir>',
      'the WINFLEET_LAB_DIR of the lab (default: $WINFLEET_LAB_DIR, else the make lab default)',
    )
    .option(
      '--watch',
      'after injecting, print (in seconds since) the condition, Events, ladder rungs and Ready, until repaired, needing a person, or the timeout (exit 1)',
    )
    .option(
      '--timeout <seconds>',
      `with --watch: stop after this many seconds (${watchTimeout.minSeconds}..${watchTimeout.maxSeconds}, default ${watchTimeout.defaultSeconds})`,
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.out(text.trimEnd()),
      writeErr: (text) => io.err(text.trimEnd()),
    })
    .action(async (host: string, fault: string | undefined, argument: string | undefined) => {
      const options = program.opts<{ labDir?: string; watch?: boolean; timeout?: string }>();
      const labDir = (options.labDir ?? env.WINFLEET_LAB_DIR) || '';
      const controlPath = faultControlFilePath(labDir || undefined);
      const again = faultCommandFor(labDir || undefined);
      if (options.timeout !== undefined && !options.watch) {
        throw new FaultRequestError('--timeout is only for --watch; add --watch or drop --timeout');
      }
      if (host === 'list') {
        if (fault !== undefined) {
          throw new FaultRequestError(`list takes no more arguments; run ${again} list`);
        }
        if (options.watch) {
          throw new FaultRequestError(`list does not watch; give a host and a fault with --watch`);
        }
        const lab = await readFaultControlFile(controlPath);
        const { hosts } = (await call(lab, controlPath, 'GET', '/v1/hosts')) as {
          hosts: HostFaultState[];
        };
        for (const line of hostLines(hosts)) io.out(line);
        return;
      }
      const request = commandLineRequest(host, fault, argument);
      let timeoutSeconds: number = watchTimeout.defaultSeconds;
      if (options.timeout !== undefined) {
        try {
          timeoutSeconds = parseWatchTimeout(options.timeout);
        } catch (error) {
          throw new FaultRequestError((error as Error).message);
        }
      }
      const lab = await readFaultControlFile(controlPath);
      const watch = options.watch ? await watchBaseline(lab, controlPath, request.host) : undefined;
      const injectedAt = performance.now();
      const answer = (await call(lab, controlPath, 'POST', '/v1/faults', request)) as {
        host: string;
        message: string;
      };
      io.out(`${answer.host}: ${answer.message}`);
      if (watch) {
        io.out(
          `Watching Node ${answer.host} and WindowsHost ${answer.host} (up to ${timeoutSeconds}s):`,
        );
        code = await watchFault({
          plan: watchPlanFor(request),
          read: watch.read,
          state: startWatch(watch.baseline),
          injectedAt,
          timeoutSeconds,
          clearCommand: `${again} ${answer.host} clear`,
          out: io.out,
        });
        return;
      }
      for (const line of watchLines(lab, answer.host, again, request.fault === 'clear')) {
        io.out(line);
      }
    });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      code = error.exitCode;
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') code = 0;
    } else {
      io.err(`lab:fault: ${(error as Error).message}`);
      code = error instanceof FaultRequestError ? 2 : 1;
    }
  }
  return code;
}

/**
 * The request the command line asks for, checked here first so a typo is caught before the
 * lab is looked for (the lab checks it again, and that the host is one of its own).
 */
export function commandLineRequest(
  host: string,
  fault: string | undefined,
  argument: string | undefined,
) {
  const hostName = parseHostName(host);
  if (fault === undefined) {
    throw new FaultRequestError(
      `fault is missing; give one of ${Object.keys(faultKinds).join(', ')} after the host`,
    );
  }
  const kind = parseFaultKind(fault);
  const field = argumentOf(kind);
  if (field === undefined && argument !== undefined) {
    throw new FaultRequestError(`${kind} takes no argument; drop "${argument}"`);
  }
  if (field !== undefined && argument === undefined) {
    throw new FaultRequestError(
      field === 'service'
        ? `service is missing; give ${kind} one of ${faultableServices.join(', ')}`
        : `seconds is missing; give ${kind} the clock offset in seconds, e.g. 300 or -300`,
    );
  }
  return parseFaultRequest({
    host: hostName,
    fault: kind,
    ...(field === 'service' ? { service: argument } : {}),
    ...(field === 'seconds' ? { seconds: parseSecondsArgument(argument!) } : {}),
  });
}

/** --watch: the reader of the host's state, and that state before the fault (not news). */
async function watchBaseline(lab: FaultControlFile, controlPath: string, host: string) {
  if (!lab.kubeconfig) {
    throw new Error(
      `--watch needs the lab's kubeconfig, and ${controlPath} names none; restart the lab with this version of make lab`,
    );
  }
  let read: ReturnType<typeof snapshotReader>;
  try {
    read = snapshotReader(lab.kubeconfig, lab.namespace ?? 'winfleet-system', host);
  } catch (error) {
    const why = (error as { code?: string }).code ?? (error as Error).name;
    throw new Error(
      `--watch cannot load the lab's kubeconfig ${lab.kubeconfig} (${why}); check that make lab is still running, or drop --watch`,
    );
  }
  const baseline = await read();
  if (baseline.error || !baseline.node) {
    throw new Error(
      `--watch cannot read Node ${host} through the API server (${baseline.error ?? 'no Node'}); check that make lab is still running, or drop --watch`,
    );
  }
  return { read, baseline };
}

/** One request to the lab, its error answers turned into the lab's own message. */
async function call(
  lab: FaultControlFile,
  controlPath: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${lab.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${lab.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new Error(
      cause === 'ECONNREFUSED'
        ? `No lab answers at ${lab.url}: ${controlPath} is left from a lab that stopped; start one with make lab`
        : `The lab at ${lab.url} did not answer (${cause}); check that make lab is still running`,
    );
  }
  const text = await response.text();
  let answer: { error?: string } | undefined;
  try {
    answer = JSON.parse(text) as { error?: string };
  } catch {
    answer = undefined;
  }
  if (!response.ok) {
    throw new Error(`the lab refused (${response.status}): ${answer?.error ?? text.slice(0, 200)}`);
  }
  return answer;
}

/** `list`: per host, its services' states and what was injected since the last clear. */
export function hostLines(hosts: readonly HostFaultState[]): string[] {
  return hosts.flatMap((h) => [
    `${h.name}  injected since the last clear: ${h.injected.length ? h.injected.map((f) => f.fault).join(', ') : 'none'}${h.diskFull ? ' (disk full)' : ''}${h.unreachable ? ' (unreachable)' : ''}`,
    `  services: ${h.services.map((s) => `${s.name} ${s.state}`).join(', ') || '(none yet)'}`,
  ]);
}

/** What to run to watch the fault's effect (or its undoing). */
function watchLines(
  lab: FaultControlFile,
  host: string,
  again: string,
  cleared: boolean,
): string[] {
  const namespace = lab.namespace ?? 'winfleet-system';
  return [
    '',
    `Watch ${cleared ? 'it recover' : 'the condition appear and the repair'}${lab.kubeconfig ? ` (export KUBECONFIG=${lab.kubeconfig})` : ''}:`,
    '  kubectl get nodes -w',
    `  kubectl describe node ${host}`,
    `  kubectl get windowshosts ${host} -n ${namespace} -o yaml    # status.remediation`,
    `  kubectl get events -A --field-selector involvedObject.name=${host} -w`,
    ...(lab.dashboard ? [`  dashboard: ${lab.dashboard}`] : []),
    ...(cleared ? [] : [`Undo every fault on it: ${again} ${host} clear`]),
  ];
}

function isMain(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(new URL(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  process.exitCode = await runFaultCli(process.argv.slice(2), {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
  });
}
