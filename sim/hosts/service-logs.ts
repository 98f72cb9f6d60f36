/**
 * A service's log, for tests and diagnostics: a service has no console (machine.ts), so its
 * log is the file its command line names, read from the simulated disk:
 * - winfleet-service.exe: winfleet-agent.log in its --log-dir (the agent's output, stamped);
 * - kube-log-runner.exe: its -log-file (the kubelet's, kube-proxy's output);
 * - otherwise the program's own log flag: --log-file (containerd), -log_file (csi-proxy),
 *   --log.file (windows_exporter).
 */
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import { parseKubeLogRunnerArgs } from './kube-log-runner.ts';
import type { SimMachine } from './machine.ts';
import { parseServiceShimArgs, serviceShimLogFileName } from './programs.ts';
import { windowsBaseName } from './windows-path.ts';

/** The value of flag `name` in `args` (`name=value` or `name value`), if given. */
export function flagValue(args: readonly string[], names: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    for (const name of names) {
      if (args[i] === name && i + 1 < args.length) return args[i + 1];
      if (args[i]!.startsWith(`${name}=`)) return args[i]!.slice(name.length + 1);
    }
  }
  return undefined;
}

/** The file service `name`'s program writes its log to, from its registered command line. */
export function serviceLogFile(machine: SimMachine, name: string): string | undefined {
  const service = machine.scm.query(name);
  if (!service) return undefined;
  const { binaryPath, args } = splitServiceCommandLine(service.commandLine);
  try {
    switch (windowsBaseName(binaryPath).toLowerCase()) {
      case 'winfleet-service.exe':
        return `${parseServiceShimArgs(args).logDir}\\${serviceShimLogFileName}`;
      case 'kube-log-runner.exe':
        return parseKubeLogRunnerArgs(args).logFile || undefined;
      default:
        return flagValue(args, ['--log-file', '-log_file', '--log_file', '--log.file']);
    }
  } catch {
    return undefined; // a command line the program refuses: it wrote no log
  }
}

/** The lines of service `name`'s log file (none when it has no log file or none yet). */
export async function serviceLog(machine: SimMachine, name: string): Promise<string[]> {
  const path = serviceLogFile(machine, name);
  if (!path) return [];
  const data = await machine.fs.tryReadFile(path);
  return data
    ? data
        .toString('utf8')
        .split(/\r?\n/)
        .filter((line) => line !== '')
    : [];
}
