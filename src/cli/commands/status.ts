/**
 * winfleet status [-w] [-o table|wide|json|yaml]: the fleet at a glance. A summary line
 * (hosts Ready of all, Windows nodes by build, kubelet and services versions), the hosts with
 * their conditions and their Nodes' health, the pools (counts, rollout, remediation) and the
 * RuntimeClasses. -w keeps watching and prints again on every change until Ctrl-C or
 * --watch-timeout; off a terminal, -o json prints one JSON document per line (JSON Lines) and
 * -o yaml a YAML stream (documents between plain --- lines), for programs to read.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { parseDuration } from '../../rollout/duration.ts';
import { cliExit, ExitCode } from '../exit-codes.ts';
import { readFleet, watchFleet } from '../fleet/fleet-source.ts';
import { buildFleetStatus, type FleetStatus, renderFleetStatus } from '../fleet/fleet-status.ts';
import { type KubeFlags, kubeConfigFrom, namespaceFrom, withKubeFlags } from '../kube-flags.ts';
import { formatData, type OutputFormat, outputOption, paint } from '../output.ts';

interface StatusFlags extends KubeFlags {
  output: OutputFormat;
  watch?: boolean;
  watchTimeout?: number;
}

function watchTimeout(value: string): number {
  try {
    return parseDuration(value, '--watch-timeout', { minMs: 1000, maxMs: 7 * 24 * 3_600_000 });
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** The status in the asked format. */
export function formatStatus(status: FleetStatus, format: OutputFormat): string {
  if (format === 'json' || format === 'yaml') return formatData(format, status);
  return renderFleetStatus(status, {
    wide: format === 'wide',
    paint: (tone, text) => paint(tone, text),
  });
}

/**
 * What -w prints for one change. On a terminal: the screen cleared, then the status. Off it:
 * -o json one compact JSON document per line; -o yaml documents separated by a plain "---"
 * (a YAML stream: anything after --- on that line would be read as the next document's
 * content); a table after a "--- <time>" line.
 * @package
 */
export function watchFrame(
  status: FleetStatus,
  format: OutputFormat,
  tty: boolean,
  first: boolean,
): string {
  if (tty) return `\u001b[H\u001b[2J${formatStatus(status, format)}`;
  if (format === 'json') return `${JSON.stringify(status)}\n`;
  const separator = first ? '' : format === 'yaml' ? '---\n' : `--- ${status.generatedAt}\n`;
  return `${separator}${formatStatus(status, format)}`;
}

export function registerStatus(program: Command): void {
  const command = program
    .command('status')
    .description(
      'the fleet at a glance: hosts, Windows builds and versions, conditions, pools and rollouts, RuntimeClasses',
    );
  withKubeFlags(command)
    .addOption(outputOption())
    .option(
      '-w, --watch',
      'keep watching and print again on every change (Ctrl-C stops); off a terminal -o json prints JSON Lines (one document per line) and -o yaml a stream of --- separated documents',
    )
    .addOption(
      new Option(
        '--watch-timeout <duration>',
        'with -w: stop after this long (e.g. 30s, 10m); default: until Ctrl-C',
      ).argParser(watchTimeout),
    )
    .action(async (flags: StatusFlags) => {
      if (flags.watchTimeout !== undefined && !flags.watch)
        throw cliExit(ExitCode.usage, '--watch-timeout: only with -w/--watch; add -w or drop it');
      const kc = kubeConfigFrom(flags);
      const namespace = namespaceFrom(flags, kc);
      if (!flags.watch) {
        const objects = await readFleet(kc, namespace);
        process.stdout.write(formatStatus(buildFleetStatus(objects, new Date()), flags.output));
        return;
      }
      const abort = new AbortController();
      const onSigint = () => abort.abort();
      process.once('SIGINT', onSigint);
      const timer =
        flags.watchTimeout === undefined
          ? undefined
          : setTimeout(() => abort.abort(), flags.watchTimeout);
      const tty = process.stdout.isTTY === true;
      let last = '';
      let printed = 0;
      let lastError = '';
      try {
        await watchFleet(
          kc,
          namespace,
          (objects) => {
            const status = buildFleetStatus(objects, new Date());
            // generatedAt differs every time; compare what a person would see.
            const comparable = formatStatus({ ...status, generatedAt: '' }, flags.output);
            if (comparable === last) return;
            last = comparable;
            process.stdout.write(watchFrame(status, flags.output, tty, printed === 0));
            printed++;
          },
          {
            signal: abort.signal,
            onError: (error) => {
              const message = (error as Error)?.message ?? String(error);
              if (message === lastError) return;
              lastError = message;
              process.stderr.write(`warning: watch interrupted, retrying: ${message}\n`);
            },
          },
        );
      } finally {
        clearTimeout(timer);
        process.removeListener('SIGINT', onSigint);
      }
    });
}
