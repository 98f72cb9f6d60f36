/**
 * Parsers for what sc.exe prints: `query`/`queryex` (and the status `start`/`stop` print),
 * `qc`, and the `[SC] <Operation> FAILED <code>:` lines of a failure.
 *
 * sc.exe writes CRLF lines; each field is indented 8 spaces, its name padded to 19 columns, then
 * ": " and the value, often with trailing blanks; a multi-valued field (DEPENDENCIES) continues
 * on lines holding only ": value"; STATE is followed by a line of flags in parentheses. Words
 * such as SUCCESS/FAILED and the error texts are translated on non-English Windows, field names
 * and state names are not, so these parsers read numbers and field names only, and failures
 * are recognised by sc.exe's exit code (the Win32 error). The fixtures beside this file are
 * written from Microsoft's documented formats and published sc.exe transcripts; a new Windows
 * release that changes the layout shows up only on a real host.
 */
import { hasCode, WinfleetError } from '../../errors/catalog.ts';
import type { ServiceStartType, ServiceState } from '../host-os.ts';

/** Win32 errors sc.exe reports that winfleet handles by name. */
export const win32Error = {
  accessDenied: 5,
  insufficientBuffer: 122,
  dependentServicesRunning: 1051,
  serviceRequestTimeout: 1053,
  serviceAlreadyRunning: 1056,
  serviceDisabled: 1058,
  serviceDoesNotExist: 1060,
  serviceCannotAcceptControl: 1061,
  serviceNotActive: 1062,
  /** The service stopped with its own exit code, given in SERVICE_EXIT_CODE. */
  serviceSpecificError: 1066,
  serviceDependencyFail: 1068,
  serviceMarkedForDelete: 1072,
  serviceExists: 1073,
  serviceDependencyDeleted: 1075,
  serviceNeverStarted: 1077,
  shutdownIsScheduled: 1190,
} as const;

/** What to do about a failure, by Win32 error; appended to error messages. */
const hints: Record<number, string> = {
  [win32Error.accessDenied]: 'run the agent as LocalSystem or an administrator',
  [win32Error.insufficientBuffer]: 'the service configuration is larger than sc.exe can read',
  [win32Error.dependentServicesRunning]: 'stop the services that depend on it first',
  [win32Error.serviceRequestTimeout]:
    'the program did not report to the service manager in time; check its log and that it runs as a service (--windows-service for kubelet and kube-proxy; winfleet-service.exe for the agent)',
  [win32Error.serviceDisabled]: 'its start type is disabled; configure another start type first',
  [win32Error.serviceDoesNotExist]: 'create the service first',
  [win32Error.serviceDependencyFail]:
    'a service it depends on failed to start; start that one and check its log',
  [win32Error.serviceMarkedForDelete]:
    'it is marked for deletion; close programs that hold it open (services.msc, Event Viewer) or reboot',
  [win32Error.serviceExists]: 'it already exists; configure it instead of creating it',
  [win32Error.serviceDependencyDeleted]:
    'a service it depends on does not exist; create that one or remove the dependency',
};

/** An sc.exe failure: the operation that failed, the Win32 error and its text. */
export interface ScFailure {
  /** The API sc.exe called, e.g. "OpenService", "StartService", "ControlService". */
  operation: string;
  code: number;
  /** The system's text for the error (translated on non-English Windows); may be empty. */
  message: string;
}

/** What a WF_SERVICE_CONTROL error carries: the Win32 error (sc.exe's exit code) and the arguments. */
export interface ServiceControlDetails {
  readonly win32Code: number;
  readonly args: readonly string[];
}

/** A WF_SERVICE_CONTROL error; `details` is always there. */
export type ServiceControlError = WinfleetError<ServiceControlDetails> & {
  readonly details: ServiceControlDetails;
};

/** An sc.exe command that failed, with what to do about its Win32 error. */
export function serviceControlError(
  action: string,
  args: readonly string[],
  failure: ScFailure,
): ServiceControlError {
  const text = failure.message ? `: ${failure.message.replace(/\.\s*$/, '')}` : '';
  const hint = hints[failure.code];
  return new WinfleetError<ServiceControlDetails>(
    'WF_SERVICE_CONTROL',
    `Cannot ${action}: sc.exe ${args.join(' ')} failed with ${failure.code}${text}${hint ? `; ${hint}` : ''}`,
    { details: { win32Code: failure.code, args } },
  ) as ServiceControlError;
}

/** True for an sc.exe failure, optionally only for this Win32 error. */
export function isServiceControlError(
  error: unknown,
  win32Code?: number,
): error is ServiceControlError {
  if (!hasCode(error, 'WF_SERVICE_CONTROL')) return false;
  const details = (error as ServiceControlError).details;
  return details !== undefined && (win32Code === undefined || details.win32Code === win32Code);
}

/**
 * The failure an sc.exe run reports, or undefined when it succeeded. `exitCode` decides; the
 * `[SC] ... FAILED n:` line, when present, supplies the operation and text.
 * @package
 */
export function parseScFailure(
  output: string,
  exitCode: number,
  stderr = '',
): ScFailure | undefined {
  if (exitCode === 0) return undefined;
  const lines = output.split(/\r?\n/);
  const at = lines.findIndex((l) => /^\[SC\] \S+ \S+ \d+:\s*$/.test(l));
  if (at < 0) {
    const message = `${output}\n${stderr}`.replace(/\s+/g, ' ').trim();
    return { operation: '', code: exitCode, message };
  }
  const [, operation, code] = /^\[SC\] (\S+) \S+ (\d+):/.exec(lines[at]!)!;
  const message: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (line.trim() === '') {
      if (message.length > 0) break;
      continue;
    }
    message.push(line.trim());
  }
  return {
    operation: operation!.split(':').at(-1)!,
    code: Number(code),
    message: message.join(' '),
  };
}

interface ScFields {
  serviceName: string;
  fields: Map<string, string[]>;
}

function parseScFields(output: string, command: string): ScFields {
  let serviceName: string | undefined;
  const fields = new Map<string, string[]>();
  let last: string[] | undefined;
  for (const raw of output.split(/\r?\n/)) {
    const line = raw.trimEnd();
    const name = /^SERVICE_NAME: (.+)$/.exec(line);
    if (name) {
      if (serviceName !== undefined) break;
      serviceName = name[1]!.trim();
      continue;
    }
    if (serviceName === undefined) continue;
    const field = /^\s+([A-Z0-9_]+)\s*:(?: (.*))?$/.exec(line);
    if (field) {
      last = [(field[2] ?? '').trim()];
      fields.set(field[1]!, last);
      continue;
    }
    const continued = /^\s+:(?: (.*))?$/.exec(line);
    if (continued && last) last.push((continued[1] ?? '').trim());
  }
  if (serviceName === undefined) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot parse sc.exe ${command} output "${output.trim().slice(0, 200)}": no SERVICE_NAME line`,
    );
  }
  return { serviceName, fields };
}

function field(parsed: ScFields, name: string, command: string): string {
  const value = parsed.fields.get(name)?.[0];
  if (value === undefined) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot parse sc.exe ${command} output for "${parsed.serviceName}": no ${name} field`,
    );
  }
  return value;
}

function leadingNumber(value: string, name: string, command: string): number {
  const match = /^(0x[0-9a-fA-F]+|\d+)\b/.exec(value);
  if (!match) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot parse sc.exe ${command} ${name} "${value}": expected a number`,
    );
  }
  return Number(match[1]);
}

const states: Record<number, ServiceState> = {
  1: 'stopped',
  2: 'start-pending',
  3: 'stop-pending',
  4: 'running',
  5: 'continue-pending',
  6: 'pause-pending',
  7: 'paused',
};

/** A service's status as `sc query`/`queryex` (or a successful `start`/`stop`) prints it. */
export interface ScStatus {
  name: string;
  state: ServiceState;
  /** Present when queryex printed a non-zero PID. */
  pid?: number;
  win32ExitCode: number;
  /** Meaningful when win32ExitCode is 1066 (the service reported its own code). */
  serviceExitCode: number;
  checkpoint: number;
  waitHintMs: number;
}

/** Parses the status block of `sc query`/`queryex`/`start`/`stop`. */
export function parseScStatus(output: string): ScStatus {
  const command = 'query';
  const parsed = parseScFields(output, command);
  const stateNumber = leadingNumber(field(parsed, 'STATE', command), 'STATE', command);
  const state = states[stateNumber];
  if (!state) {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot parse sc.exe query STATE "${stateNumber}": unknown state`,
    );
  }
  const status: ScStatus = {
    name: parsed.serviceName,
    state,
    win32ExitCode: leadingNumber(
      field(parsed, 'WIN32_EXIT_CODE', command),
      'WIN32_EXIT_CODE',
      command,
    ),
    serviceExitCode: leadingNumber(
      field(parsed, 'SERVICE_EXIT_CODE', command),
      'SERVICE_EXIT_CODE',
      command,
    ),
    checkpoint: leadingNumber(field(parsed, 'CHECKPOINT', command), 'CHECKPOINT', command),
    waitHintMs: leadingNumber(field(parsed, 'WAIT_HINT', command), 'WAIT_HINT', command),
  };
  const pid = parsed.fields.get('PID')?.[0];
  if (pid !== undefined && pid !== '') {
    const value = leadingNumber(pid, 'PID', command);
    if (value > 0) status.pid = value;
  }
  return status;
}

/** A service's registration as `sc qc` prints it. */
export interface ScConfig {
  name: string;
  startType: ServiceStartType;
  errorControl: number;
  /** The stored command line, verbatim. */
  binaryPathName: string;
  loadOrderGroup: string;
  displayName: string;
  dependencies: string[];
  /** The account, e.g. "LocalSystem". */
  serviceStartName: string;
}

/** Parses `sc qc` output. */
export function parseScConfig(output: string): ScConfig {
  const command = 'qc';
  const parsed = parseScFields(output, command);
  const startField = field(parsed, 'START_TYPE', command);
  const startNumber = leadingNumber(startField, 'START_TYPE', command);
  let startType: ServiceStartType;
  if (startNumber === 2) {
    startType = /\(DELAYED\)/.test(startField) ? 'delayed-auto' : 'auto';
  } else if (startNumber === 3) {
    startType = 'demand';
  } else if (startNumber === 4) {
    startType = 'disabled';
  } else {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot use service "${parsed.serviceName}" with START_TYPE "${startField}": boot and system start are for drivers`,
    );
  }
  return {
    name: parsed.serviceName,
    startType,
    errorControl: leadingNumber(field(parsed, 'ERROR_CONTROL', command), 'ERROR_CONTROL', command),
    binaryPathName: field(parsed, 'BINARY_PATH_NAME', command),
    loadOrderGroup: parsed.fields.get('LOAD_ORDER_GROUP')?.[0] ?? '',
    displayName: field(parsed, 'DISPLAY_NAME', command),
    dependencies: (parsed.fields.get('DEPENDENCIES') ?? []).filter((d) => d !== ''),
    serviceStartName: parsed.fields.get('SERVICE_START_NAME')?.[0] ?? '',
  };
}
