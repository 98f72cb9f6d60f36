/**
 * The sc.exe argument vectors the Windows HostOS runs, one function per command, each checked
 * before it is built so a bad name or value fails here with a clear message instead of as an
 * sc.exe usage screen.
 *
 * sc.exe's own syntax: every option is "name=" as one argument and its value as the next
 * ("binPath= value"; the space after "=" is mandatory). Values are passed as separate argv
 * entries; the runner quotes them for the command line, so a binPath that holds quotes arrives
 * intact. What only Windows proves: that sc.exe accepts each vector (the tests assert the exact
 * argv against Microsoft's documented syntax: sc create/config/description/failure/
 * failureflag/start/stop/queryex/qc/delete).
 */

import { WinfleetError } from '../../errors/catalog.ts';
import type { ServiceConfig, ServiceRecovery } from '../host-os.ts';
import { serviceCommandLine } from './command-line.ts';

/** The buffer `sc qc` is given: QueryServiceConfig's documented maximum (8 KiB). */
export const scQcBufferBytes = 8192;

/** The SCM's limit for service and display names, in characters. */
const maxNameLength = 256;

/** Throws unless `name` can name a service (non-empty, at most 256 characters, no slashes). */
export function checkServiceName(name: string): void {
  if (
    name === '' ||
    name.length > maxNameLength ||
    /[\\/\0\r\n]/.test(name) ||
    name.trim() !== name
  ) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use "${name}" as a service name; use 1 to ${maxNameLength} characters without slashes or surrounding blanks`,
    );
  }
}

function checkConfig(config: ServiceConfig): string {
  checkServiceName(config.name);
  if (
    config.displayName === '' ||
    config.displayName.length > maxNameLength ||
    /[\0\r\n]/.test(config.displayName)
  ) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use "${config.displayName}" as the display name of service "${config.name}"; use 1 to ${maxNameLength} characters on one line`,
    );
  }
  for (const dependency of config.dependencies) {
    try {
      checkServiceName(dependency);
    } catch {
      // "/" separates dependencies on the sc.exe command line.
      throw new WinfleetError(
        'WF_INVARIANT',
        `Cannot make service "${config.name}" depend on "${dependency}"; name an installed service, without slashes`,
      );
    }
  }
  const commandLine = serviceCommandLine(config.binaryPath, config.args);
  const bytes = serviceConfigQueryBytes(commandLine, config.displayName, config.dependencies);
  if (bytes > scQcBufferBytes) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot register service "${config.name}": its command line (${commandLine.length} characters) would make its configuration ${bytes} bytes, more than the ${scQcBufferBytes} the service manager returns; move arguments into a config file`,
    );
  }
  return commandLine;
}

/** The size of the QUERY_SERVICE_CONFIGW that `sc qc` must read back (64-bit Windows). */
function serviceConfigQueryBytes(
  commandLine: string,
  displayName: string,
  dependencies: readonly string[],
): number {
  const struct = 64;
  const chars =
    commandLine.length +
    1 + // binPath
    1 + // empty load order group
    dependencies.reduce((n, d) => n + d.length + 1, 1) + // double-NUL-terminated list
    'LocalSystem'.length +
    1 +
    displayName.length +
    1;
  return struct + chars * 2;
}

/** `sc create`: the service, its command line, display name, start type and dependencies. */
export function scCreateArgs(config: ServiceConfig): string[] {
  const commandLine = checkConfig(config);
  const args = [
    'create',
    config.name,
    'type=',
    'own',
    'binPath=',
    commandLine,
    'DisplayName=',
    config.displayName,
    'start=',
    config.startType,
  ];
  if (config.dependencies.length > 0) args.push('depend=', config.dependencies.join('/'));
  return args;
}

/** `sc config`: the same fields for an existing service; "depend= /" clears dependencies. */
export function scConfigArgs(config: ServiceConfig): string[] {
  const commandLine = checkConfig(config);
  return [
    'config',
    config.name,
    'binPath=',
    commandLine,
    'DisplayName=',
    config.displayName,
    'start=',
    config.startType,
    'depend=',
    config.dependencies.length > 0 ? config.dependencies.join('/') : '/',
  ];
}

/** `sc description`; an empty description clears it. */
export function scDescriptionArgs(name: string, description: string): string[] {
  checkServiceName(name);
  if (/[\0\r\n]/.test(description)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot set the description of service "${name}": use one line`,
    );
  }
  return ['description', name, description];
}

/**
 * `sc failure`: restart after each failure with the given delays (the last repeats, as the
 * SCM repeats the last action) and reset the failure count after `resetPeriodSeconds`.
 * No delays means no recovery actions (`actions= ""`).
 * @package
 */
export function scFailureArgs(name: string, recovery: ServiceRecovery): string[] {
  checkServiceName(name);
  const { restartDelaysMs, resetPeriodSeconds } = recovery;
  if (
    !Number.isInteger(resetPeriodSeconds) ||
    resetPeriodSeconds < 0 ||
    resetPeriodSeconds > 0xffffffff
  ) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot use reset period "${resetPeriodSeconds}" for service "${name}"; use whole seconds from 0`,
    );
  }
  for (const delay of restartDelaysMs) {
    if (!Number.isInteger(delay) || delay < 0 || delay > 0xffffffff) {
      throw new WinfleetError(
        'WF_INVARIANT',
        `Cannot use restart delay "${delay}" for service "${name}"; use whole milliseconds from 0`,
      );
    }
  }
  const actions = restartDelaysMs.map((delay) => `restart/${delay}`).join('/');
  return ['failure', name, 'reset=', String(resetPeriodSeconds), 'actions=', actions];
}

/**
 * `sc failureflag <name> 1`: run the recovery actions also when the service stops itself with
 * a non-zero exit code, not only when its process dies (a kubelet that exits on a bad config).
 * @package
 */
export function scFailureFlagArgs(name: string): string[] {
  checkServiceName(name);
  return ['failureflag', name, '1'];
}

/** `sc start`. */
export function scStartArgs(name: string): string[] {
  checkServiceName(name);
  return ['start', name];
}

/** `sc stop`. */
export function scStopArgs(name: string): string[] {
  checkServiceName(name);
  return ['stop', name];
}

/** `sc queryex`: status with the PID. */
export function scQueryExArgs(name: string): string[] {
  checkServiceName(name);
  return ['queryex', name];
}

/** `sc qc` with the largest buffer the API accepts, so long command lines are read whole. */
export function scQcArgs(name: string): string[] {
  checkServiceName(name);
  return ['qc', name, String(scQcBufferBytes)];
}

/** `sc delete`. */
export function scDeleteArgs(name: string): string[] {
  checkServiceName(name);
  return ['delete', name];
}
