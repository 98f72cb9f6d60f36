/**
 * What the `preflight-facts` catalog script (src/hostaccess/remote-scripts.ts) prints, and its
 * strict reader. A host's answer is input from the host: exactly the fields below, each of its
 * type, strings and lists bounded, or it is refused naming the field. Windows PowerShell 5.1
 * prints a one-element list as a bare object and an empty one as null; both are accepted.
 */
import { WinfleetError } from '../../errors/catalog.ts';

/** Who listens on TCP 10250 (Get-NetTCPConnection -State Listen, Get-Process). */
export interface PortListener {
  localAddress: string;
  owningProcess: number;
  /** Get-Process's ProcessName ("kubelet"), empty when the process is gone. */
  processName: string;
}

/** A firewall rule whose port filter names TCP 10250 (Get-NetFirewallPortFilter). */
export interface PortFirewallRule {
  name: string;
  enabled: boolean;
  direction: string;
  action: string;
}

export interface PreflightFacts {
  /** Win32_ComputerSystem.Name: the NetBIOS name. */
  netbiosName: string;
  partOfDomain: boolean;
  /** Win32_ComputerSystem.Domain: the AD domain, or the workgroup's name. */
  domain: string;
  logicalProcessors: number;
  /** Win32_ComputerSystem.TotalPhysicalMemory, bytes. */
  memoryBytes: number;
  /** The SSH session's account, DOMAIN\user. */
  userName: string;
  /** The session's token is in BUILTIN\Administrators (S-1-5-32-544), enabled. */
  administrator: boolean;
  /** The host's clock, ISO 8601 UTC (DateTime.ToString('o')). */
  utcNow: string;
  listeners10250: PortListener[];
  firewallRules10250: PortFirewallRule[];
  winHttpProxy: { proxyServer: string | null; bypassList: string | null };
  proxyEnvironment: {
    HTTP_PROXY: string | null;
    HTTPS_PROXY: string | null;
    NO_PROXY: string | null;
  };
}

/** The Hyper-V role and the hypervisor, for Hyper-V isolated containers. */
export interface HyperVFacts {
  /** Get-WindowsFeature -Name Hyper-V: its InstallState, or "Unknown" without Server Manager. */
  feature: string;
  /** Win32_ComputerSystem.HypervisorPresent: a hypervisor runs (this host's, or a VM's host's). */
  hypervisorPresent: boolean;
  /**
   * Win32_Processor.VirtualizationFirmwareEnabled (the first processor): VT-x/AMD-V enabled in
   * firmware; in a VM, whether its hypervisor exposes virtualization extensions (nested
   * virtualization). Read before the Hyper-V role runs: once the hypervisor runs, Windows no
   * longer reports it.
   */
  virtualizationFirmwareEnabled: boolean;
}

/** Longest string accepted from a host (a proxy bypass list is the longest expected). */
export const maxFactString = 2048;
/** Most rows accepted in a list. */
export const maxFactRows = 64;

/** The host answered something other than the catalog script prints. */
function factError(field: string, why: string): WinfleetError {
  return new WinfleetError(
    'WF_REMOTE_COMMAND_FAILED',
    `Cannot read the host's preflight-facts: "${field}" ${why}; the host answered something other than the winfleet catalog script prints (check what runs as powershell.exe on the host)`,
  );
}

type Kind = 'string' | 'nullable string' | 'integer' | 'boolean';

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 60)}… (${text.length} characters)` : text;
}

function read(record: Record<string, unknown>, name: string, kind: Kind, where: string): unknown {
  const field = where ? `${where}.${name}` : name;
  const value = record[name];
  if (kind === 'nullable string' && value === null) return null;
  if (kind === 'string' || kind === 'nullable string') {
    if (typeof value !== 'string') throw factError(field, `is ${shown(value)}, expected a string`);
    if (value.length > maxFactString)
      throw factError(
        field,
        `is ${value.length} characters long, more than ${maxFactString} accepted`,
      );
    return value;
  }
  if (kind === 'boolean') {
    if (typeof value !== 'boolean')
      throw factError(field, `is ${shown(value)}, expected true or false`);
    return value;
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw factError(field, `is ${shown(value)}, expected a whole number from 0`);
  return value;
}

function object(value: unknown, field: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw factError(field || 'the answer', `is ${shown(value)}, expected a JSON object`);
  const record = value as Record<string, unknown>;
  const extra = Object.keys(record).filter((k) => !keys.includes(k));
  if (extra.length > 0)
    throw factError(
      field ? `${field}.${extra[0]}` : extra[0]!,
      'is not a field the script prints (extra fields are refused)',
    );
  const missing = keys.filter((k) => !(k in record));
  if (missing.length > 0)
    throw factError(field ? `${field}.${missing[0]}` : missing[0]!, 'is missing');
  return record;
}

function list(value: unknown, field: string): unknown[] {
  const rows = value === null ? [] : Array.isArray(value) ? value : [value];
  if (rows.length > maxFactRows)
    throw factError(field, `has ${rows.length} rows, more than ${maxFactRows} accepted`);
  return rows;
}

const topKeys = [
  'netbiosName',
  'partOfDomain',
  'domain',
  'logicalProcessors',
  'memoryBytes',
  'userName',
  'administrator',
  'utcNow',
  'listeners10250',
  'firewallRules10250',
  'winHttpProxy',
  'proxyEnvironment',
] as const;

/** Reads what `preflight-facts` printed (parsed JSON); throws naming the first bad field. */
export function readPreflightFacts(value: unknown): PreflightFacts {
  const top = object(value, '', topKeys);
  const utcNow = read(top, 'utcNow', 'string', '') as string;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,7})?Z$/.test(utcNow))
    throw factError('utcNow', `is ${shown(utcNow)}, expected an ISO 8601 UTC time`);
  const listeners = list(top.listeners10250, 'listeners10250').map((row, i) => {
    const where = `listeners10250[${i}]`;
    const r = object(row, where, ['localAddress', 'owningProcess', 'processName']);
    return {
      localAddress: read(r, 'localAddress', 'string', where) as string,
      owningProcess: read(r, 'owningProcess', 'integer', where) as number,
      processName: read(r, 'processName', 'string', where) as string,
    };
  });
  const rules = list(top.firewallRules10250, 'firewallRules10250').map((row, i) => {
    const where = `firewallRules10250[${i}]`;
    const r = object(row, where, ['name', 'enabled', 'direction', 'action']);
    return {
      name: read(r, 'name', 'string', where) as string,
      enabled: read(r, 'enabled', 'boolean', where) as boolean,
      direction: read(r, 'direction', 'string', where) as string,
      action: read(r, 'action', 'string', where) as string,
    };
  });
  const winHttp = object(top.winHttpProxy, 'winHttpProxy', ['proxyServer', 'bypassList']);
  const env = object(top.proxyEnvironment, 'proxyEnvironment', [
    'HTTP_PROXY',
    'HTTPS_PROXY',
    'NO_PROXY',
  ]);
  return {
    netbiosName: read(top, 'netbiosName', 'string', '') as string,
    partOfDomain: read(top, 'partOfDomain', 'boolean', '') as boolean,
    domain: read(top, 'domain', 'string', '') as string,
    logicalProcessors: read(top, 'logicalProcessors', 'integer', '') as number,
    memoryBytes: read(top, 'memoryBytes', 'integer', '') as number,
    userName: read(top, 'userName', 'string', '') as string,
    administrator: read(top, 'administrator', 'boolean', '') as boolean,
    utcNow,
    listeners10250: listeners,
    firewallRules10250: rules,
    winHttpProxy: {
      proxyServer: read(winHttp, 'proxyServer', 'nullable string', 'winHttpProxy') as string | null,
      bypassList: read(winHttp, 'bypassList', 'nullable string', 'winHttpProxy') as string | null,
    },
    proxyEnvironment: {
      HTTP_PROXY: read(env, 'HTTP_PROXY', 'nullable string', 'proxyEnvironment') as string | null,
      HTTPS_PROXY: read(env, 'HTTPS_PROXY', 'nullable string', 'proxyEnvironment') as string | null,
      NO_PROXY: read(env, 'NO_PROXY', 'nullable string', 'proxyEnvironment') as string | null,
    },
  };
}

/** Reads what `hyperv-facts` printed; throws naming the first bad field. */
export function readHyperVFacts(value: unknown): HyperVFacts {
  const r = object(value, 'hyperv-facts', [
    'feature',
    'hypervisorPresent',
    'virtualizationFirmwareEnabled',
  ]);
  const feature = read(r, 'feature', 'string', 'hyperv-facts') as string;
  if (!/^[A-Za-z]{1,32}$/.test(feature))
    throw factError('hyperv-facts.feature', `is ${shown(feature)}, expected an InstallState`);
  return {
    feature,
    hypervisorPresent: read(r, 'hypervisorPresent', 'boolean', 'hyperv-facts') as boolean,
    virtualizationFirmwareEnabled: read(
      r,
      'virtualizationFirmwareEnabled',
      'boolean',
      'hyperv-facts',
    ) as boolean,
  };
}

/** The fields of host-facts the checks use, read as strictly (host-facts' own reader reads its network tables). */
export interface HostBasics {
  hostname: string;
  osVersion: { major: number; minor: number; build: number; ubr: number; productName: string };
  freeBytes: number;
  containersFeature: string;
}

/** Reads hostname, osVersion, freeBytes and containersFeature of a host-facts answer. */
export function readHostBasics(value: unknown): HostBasics {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw factError('host-facts', `is ${shown(value)}, expected a JSON object`);
  const facts = value as Record<string, unknown>;
  const os = facts.osVersion;
  if (typeof os !== 'object' || os === null || Array.isArray(os))
    throw factError('osVersion', `is ${shown(os)}, expected a JSON object`);
  const v = os as Record<string, unknown>;
  const hostname = read(facts, 'hostname', 'string', '') as string;
  if (hostname.length > 255) throw factError('hostname', 'is longer than 255 characters');
  return {
    hostname,
    osVersion: {
      major: read(v, 'major', 'integer', 'osVersion') as number,
      minor: read(v, 'minor', 'integer', 'osVersion') as number,
      build: read(v, 'build', 'integer', 'osVersion') as number,
      ubr: read(v, 'ubr', 'integer', 'osVersion') as number,
      productName: read(v, 'productName', 'string', 'osVersion') as string,
    },
    freeBytes: read(facts, 'freeBytes', 'integer', '') as number,
    containersFeature: read(facts, 'containersFeature', 'string', '') as string,
  };
}
