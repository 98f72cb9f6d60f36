/**
 * windows_exporter.exe (prometheus-community/windows_exporter v0.31.3), simulated: what
 * cmd/windows_exporter/main.go does before it serves, then idles until stopped.
 * - Flags are parsed by kingpin against the generated list (flag-lists.ts). A refused one is
 *   logged by slog's default logger on standard error, before the logger exists: as a service
 *   that message is lost (config.Parse fails, "Failed to load configuration"), exit 1.
 * - The logger writes where --log.file says: stdout, stderr, eventlog, or a file it appends to
 *   (internal/log/logger.go). The default is stdout, and eventlog when run as a service; the
 *   event log is not simulated, so those lines are lost here.
 * - --collectors.enabled ("[defaults]" expands to the default list) must name collectors that
 *   exist: otherwise "couldn't enable collectors" err="unknown collector cs", exit 1
 *   (pkg/collector/collection.go Enable).
 * It reports to the SCM whatever its flags (IsService detects a service at start-up).
 */
import { FlagError, flagLists, type ParsedFlags, parseKingpin } from './flag-lists.ts';
import { goLogTime, type LogFileWriter, openLogFile } from './kube-log-runner.ts';
import type { SimProgram } from './sim-process.ts';

/** A logfmt value as slog's text handler quotes it. */
function logfmt(value: string): string {
  return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
}

/** What `--collectors.enabled` enables (main.go expandEnabledCollectors: split, compact). */
export function expandEnabledCollectors(enabled: string, defaults: string): string[] {
  const names = enabled.replaceAll('[defaults]', defaults).split(',');
  return names.filter((name, i) => i === 0 || name !== names[i - 1]);
}

export const windowsExporterProgram: SimProgram = async (context) => {
  const list = flagLists().windows_exporter;
  const early = (message: string, err: string) =>
    context.stderr(`${goLogTime()} ERROR ${message} err=${logfmt(err)}\n`);
  let flags: ParsedFlags;
  try {
    flags = parseKingpin(list, context.argv);
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    early('Failed to load configuration', `failed to parse flags: ${error.message}`);
    return 1;
  }
  const target =
    flags.values.get('log.file') ?? (context.serviceName !== undefined ? 'eventlog' : 'stdout');
  let file: LogFileWriter | undefined;
  let write: (line: string) => void;
  switch (target) {
    case 'stdout':
      write = context.stdout;
      break;
    case 'stderr':
      write = context.stderr;
      break;
    case 'eventlog':
      write = () => {}; // the Application event log: not simulated
      break;
    default:
      try {
        file = await openLogFile(context, target);
      } catch (error) {
        early(
          'Failed to load configuration',
          `failed to parse flags: failed to open log file: open ${target}: ${(error as Error).message}`,
        );
        return 1;
      }
      write = (line) => file!.write(line);
  }
  const log = (level: 'INFO' | 'ERROR', source: string, msg: string, attrs = '') =>
    write(
      `time=${new Date().toISOString()} level=${level} source=${source} msg=${logfmt(msg)}${attrs}\n`,
    );
  try {
    const enabled = expandEnabledCollectors(
      flags.values.get('collectors.enabled') ?? list.defaultCollectors,
      list.defaultCollectors,
    );
    const unknown = enabled.find((name) => !list.collectors.includes(name));
    if (unknown !== undefined) {
      log(
        'ERROR',
        'main.go:166',
        "couldn't enable collectors",
        ` err=${logfmt(`unknown collector ${unknown}`)}`,
      );
      return 1;
    }
    log('INFO', 'main.go:190', `Enabled collectors: ${enabled.join(', ')}`);
    log(
      'INFO',
      'main.go:208',
      'starting windows_exporter in 1.2ms',
      ` version=${list.version.replace(/^v/, '')}`,
    );
    if (!context.signal.aborted) {
      await new Promise((resolve) =>
        context.signal.addEventListener('abort', resolve, { once: true }),
      );
    }
    log(
      'INFO',
      'main.go:239',
      context.serviceName !== undefined
        ? 'Shutting down windows_exporter via service control'
        : 'Shutting down windows_exporter via kill signal',
    );
    log('INFO', 'main.go:261', 'windows_exporter has shut down');
    return 0;
  } finally {
    await file?.close();
  }
};
