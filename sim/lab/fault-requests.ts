/**
 * The faults a person can inject into a host of a running lab (`npm run lab:fault`), as one
 * strictly parsed request shared by the CLI and the lab's control channel: a host name, a fault
 * from a fixed list and that fault's one argument, nothing else. Every refusal names the field
 * and says what to give instead.
 *
 * @example
 * parseFaultRequest({ host: 'simwin-10', fault: 'clock-skew', seconds: 300 });
 * // { host: 'simwin-10', fault: 'clock-skew', seconds: 300 }
 */

/** The faults, each with what it does to the host (what `--help` and the CLI print). */
export const faultKinds = {
  'service-down': 'the service crashes and stays down',
  'crash-loop': 'the service crashes every time it starts',
  'hns-delete': "the pod network's HNS network (winfleet) is deleted",
  'clock-skew': 'the system clock is set off by the given seconds',
  'disk-full': 'writes to the system drive fail (disk full)',
  unreachable: 'the host drops off the network (no SSH, no heartbeat)',
  clear: 'every fault on the host is undone',
} as const;

export type FaultKind = keyof typeof faultKinds;

/** The services a service fault may target: those winfleet installs on every host. */
export const faultableServices = [
  'kubelet',
  'containerd',
  'kube-proxy',
  'csi-proxy',
  'windows_exporter',
  'winfleet-agent',
] as const;

/**
 * The services `crash-loop` may target: the simulated hosts corrupt the config file of the
 * kubelet or containerd (kube-proxy and the others take flags the agent rewrites).
 */
export const crashLoopServices = ['kubelet', 'containerd'] as const;

/** Bound of `clock-skew`, either way: one day is far past where certificates fail. */
export const maxClockSkewSeconds = 86_400;

export type FaultRequest =
  | { host: string; fault: 'service-down' | 'crash-loop'; service: string }
  | { host: string; fault: 'clock-skew'; seconds: number }
  | { host: string; fault: 'hns-delete' | 'disk-full' | 'unreachable' | 'clear' };

/** A host name as Nodes and WindowsHosts show it (a NetBIOS name: ≤ 15 characters). */
const hostNamePattern = /^[A-Za-z0-9][A-Za-z0-9-]{0,14}$/;

/** An input the control channel or the CLI refuses; the message names the field and the fix. */
export class FaultRequestError extends Error {
  override name = 'FaultRequestError';
}

/**
 * Parses a request body (already JSON-decoded): exactly `host`, `fault` and the fault's own
 * argument (`service` or `seconds`); any other field, type or value is refused.
 */
export function parseFaultRequest(value: unknown): FaultRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FaultRequestError(
      'The request body must be a JSON object; send {"host": "simwin-10", "fault": "disk-full"}',
    );
  }
  const body = value as Record<string, unknown>;
  const host = parseHostName(body.host);
  const fault = parseFaultKind(body.fault);
  const argument = argumentOf(fault);
  const allowed = new Set(['host', 'fault', ...(argument ? [argument] : [])]);
  for (const key of Object.keys(body)) {
    if (!allowed.has(key)) {
      throw new FaultRequestError(
        `Field "${key}" is not expected with fault ${fault}; send only ${[...allowed].join(', ')}`,
      );
    }
  }
  switch (fault) {
    case 'service-down':
    case 'crash-loop':
      return { host, fault, service: parseServiceName(body.service, fault) };
    case 'clock-skew':
      return { host, fault, seconds: parseSeconds(body.seconds) };
    default:
      return { host, fault };
  }
}

/** The name of the one argument a fault takes, if any. */
export function argumentOf(fault: FaultKind): 'service' | 'seconds' | undefined {
  if (fault === 'service-down' || fault === 'crash-loop') return 'service';
  if (fault === 'clock-skew') return 'seconds';
  return undefined;
}

export function parseHostName(value: unknown): string {
  if (typeof value !== 'string' || !hostNamePattern.test(value)) {
    throw new FaultRequestError(
      `host ${quote(value)} is not a host name; give a lab host as kubectl get nodes shows it, e.g. simwin-10 (list shows them)`,
    );
  }
  return value.toLowerCase();
}

export function parseFaultKind(value: unknown): FaultKind {
  if (typeof value !== 'string' || !Object.hasOwn(faultKinds, value)) {
    throw new FaultRequestError(
      `fault ${quote(value)} is not known; use one of ${Object.keys(faultKinds).join(', ')}`,
    );
  }
  return value as FaultKind;
}

function parseServiceName(value: unknown, fault: FaultKind): string {
  const lower = typeof value === 'string' ? value.toLowerCase() : undefined;
  const choices: readonly string[] = fault === 'crash-loop' ? crashLoopServices : faultableServices;
  const known = choices.find((s) => s === lower);
  if (!known) {
    throw new FaultRequestError(
      `service ${quote(value)} is not one ${fault} can target; give ${fault} one of ${choices.join(', ')}`,
    );
  }
  return known;
}

const secondsFix = `give the clock offset as whole seconds from -${maxClockSkewSeconds} to ${maxClockSkewSeconds}, e.g. 300 (ahead) or -300 (behind)`;

/** The clock offset in whole seconds, a JSON number within ±maxClockSkewSeconds. */
function parseSeconds(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new FaultRequestError(`seconds ${quote(value)} is not a whole number; ${secondsFix}`);
  }
  if (Math.abs(value) > maxClockSkewSeconds) {
    throw new FaultRequestError(`seconds ${value} is out of range; ${secondsFix}`);
  }
  return value;
}

/** The clock offset as typed on the command line: digits with an optional sign, nothing else. */
export function parseSecondsArgument(text: string): number {
  if (!/^[+-]?\d{1,6}$/.test(text)) {
    throw new FaultRequestError(`seconds ${quote(text)} is not a whole number; ${secondsFix}`);
  }
  return parseSeconds(Number(text));
}

/** One line saying what a request does, e.g. `service-down kubelet`. */
export function describeFault(request: FaultRequest): string {
  if ('service' in request) return `${request.fault} ${request.service}`;
  if ('seconds' in request) return `${request.fault} ${request.seconds}s`;
  return request.fault;
}

/** A value quoted for an error message, cut short so a huge input does not flood the terminal. */
function quote(value: unknown): string {
  if (value === undefined) return '(missing)';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
