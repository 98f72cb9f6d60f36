/**
 * What a simulated host prints for the `diagnostic` catalog script (`winfleet diagnose`): each
 * item's fixed command answered from the machine's state, laid out as the Windows tool prints
 * it (sc.exe, hnsdiag, ipconfig, route, netsh, Format-List/Format-Table of the cmdlets,
 * Get-Content), then cut to the catalog's limit as the script cuts it. Lines end in CRLF, as
 * the script joins them. Sources of each layout: /tmp/wf/ledger-diagnose.md rows.
 */
import type { InstalledService } from '../../src/agent/host-os.ts';
import {
  type DiagnosticItem,
  type DiagnosticOutput,
  diagnosticEventLogs,
  diagnosticFiles,
  diagnosticItems,
  diagnosticKeepsTail,
  diagnosticServices,
  diagnosticTailLines,
  diagnosticTextLimit,
} from '../../src/hostaccess/remote-scripts.ts';
import { ipConfiguration } from './ip-configuration.ts';
import type { SimMachine } from './machine.ts';
import { type ScmServiceConfig, scmErrorText } from './service-control-manager.ts';

/**
 * The item's output. An item outside the catalog never gets here: remoteScript has no script
 * for it (it throws before anything is sent), so classifyCommand calls such a command
 * unsupported; the RangeError only guards against a caller that skips the catalog.
 */
export async function diagnosticOutput(
  machine: SimMachine,
  args: { item?: unknown; hours?: unknown },
): Promise<DiagnosticOutput> {
  const item = String(args.item ?? '') as DiagnosticItem;
  if (!(diagnosticItems as readonly string[]).includes(item))
    throw new RangeError(`Unknown diagnostic item ${item}`);
  const lines = await itemLines(machine, item, Number.parseInt(String(args.hours ?? 0), 10) || 0);
  let text = lines.join('\r\n');
  const length = text.length;
  const truncated = length > diagnosticTextLimit;
  const keepTail = diagnosticKeepsTail(item);
  if (truncated)
    text = keepTail ? text.slice(length - diagnosticTextLimit) : text.slice(0, diagnosticTextLimit);
  return { item, length, truncated, text };
}

async function itemLines(
  machine: SimMachine,
  item: DiagnosticItem,
  hours: number,
): Promise<string[]> {
  if (item in diagnosticEventLogs) {
    const log = diagnosticEventLogs[item as keyof typeof diagnosticEventLogs];
    const events = log === 'System' ? systemEvents(machine, hours) : [];
    if (events.length === 0) return [`No events in ${log} in the last ${hours} hours.`];
    return formatList(
      events.map((e) => [
        ['TimeCreated', dateTimeText(e.time)],
        ['Id', String(e.id)],
        ['LevelDisplayName', e.level],
        ['ProviderName', 'Service Control Manager'],
        ['Message', e.message],
      ]),
    );
  }
  if (item in diagnosticFiles) {
    const lines: string[] = [];
    for (const path of diagnosticFiles[item as keyof typeof diagnosticFiles]) {
      lines.push(`==> ${path} <==`);
      const data = await machine.fs.tryReadFile(path).catch(() => undefined);
      if (!data) {
        lines.push('(no such file)');
        continue;
      }
      // Get-Content: one string per line, without its line ending; a final newline adds none.
      const fileLines = data.toString('utf8').split(/\r?\n/);
      if (fileLines.at(-1) === '') fileLines.pop();
      lines.push(...fileLines.slice(-diagnosticTailLines));
    }
    return lines;
  }
  switch (item) {
    case 'services':
      return diagnosticServices.flatMap((name) => [
        `> sc.exe qc ${name}`,
        ...scQc(machine, name),
        `> sc.exe query ${name}`,
        ...scQuery(machine, name),
      ]);
    case 'hns':
      return hnsdiag(machine);
    case 'ipconfig':
      return ipconfigAll(machine);
    case 'routes':
      return routePrint(machine);
    case 'excluded-ports':
      return [
        '',
        'Protocol tcp Port Exclusion Ranges',
        '',
        'Start Port    End Port',
        '----------    --------',
        '',
        '* - Administered port exclusions.',
        '',
      ];
    case 'firewall':
      return formatList(
        machine.firewall
          .rules()
          .filter((r) => r.name.toLowerCase().startsWith('winfleet-'))
          .map((r) => [
            ['Name', r.name],
            ['DisplayName', r.displayName],
            ['Description', r.description],
            ['Enabled', r.enabled ? 'True' : 'False'],
            ['Profile', 'Any'],
            ['Direction', r.direction],
            ['Action', r.action],
            ['Protocol', r.protocol],
            ['LocalPort', r.localPorts === 'Any' ? 'Any' : r.localPorts.join(',')],
          ]),
      );
    case 'os-version': {
      const v = machine.osVersion;
      return formatList([
        [
          ['ProductName', v.productName],
          ['EditionID', v.productName.endsWith('Standard') ? 'ServerStandard' : 'ServerDatacenter'],
          ['InstallationType', 'Server'],
          ['CurrentMajorVersionNumber', String(v.major)],
          ['CurrentMinorVersionNumber', String(v.minor)],
          ['CurrentBuildNumber', String(v.build)],
          ['UBR', String(v.ubr)],
        ],
      ]);
    }
    case 'hotfixes':
      return getHotFix(machine);
  }
  throw new RangeError(`Unknown diagnostic item ${item}`);
}

// Format-List and Format-Table as Out-String -Stream prints them.

/** Format-List: a blank line, then per object its properties, names padded to the longest. */
function formatList(objects: [string, string][][]): string[] {
  if (objects.length === 0) return [];
  const lines: string[] = [''];
  for (const properties of objects) {
    const width = Math.max(...properties.map(([name]) => name.length));
    for (const [name, value] of properties) {
      const [first, ...rest] = value.split(/\r?\n/);
      lines.push(`${name.padEnd(width)} : ${first}`);
      for (const line of rest) lines.push(`${' '.repeat(width + 3)}${line}`);
    }
    lines.push('');
  }
  lines.push('');
  return lines;
}

/** A DateTime as en-US PowerShell prints it: 11/23/2026 7:31:58 AM (the host runs UTC). */
function dateTimeText(time: Date): string {
  const h = time.getUTCHours();
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${time.getUTCMonth() + 1}/${time.getUTCDate()}/${time.getUTCFullYear()} ${h % 12 || 12}:${pad(time.getUTCMinutes())}:${pad(time.getUTCSeconds())} ${h < 12 ? 'AM' : 'PM'}`;
}

// sc.exe.

const startTypeText: Record<string, string> = {
  auto: '2   AUTO_START',
  'delayed-auto': '2   AUTO_START  (DELAYED)',
  demand: '3   DEMAND_START',
  disabled: '4   DISABLED',
};

const stateText: Record<string, string> = {
  stopped: '1  STOPPED',
  'start-pending': '2  START_PENDING',
  'stop-pending': '3  STOP_PENDING',
  running: '4  RUNNING',
  'continue-pending': '5  CONTINUE_PENDING',
  'pause-pending': '6  PAUSE_PENDING',
  paused: '7  PAUSED',
};

/**
 * The Host Network Service, a Windows service in a shared svchost process that the SCM of a
 * simulated host does not hold: present once the Containers feature is installed, running
 * while the machine is up (HNS is trigger-started by the first HNS client at boot).
 */
function hnsService(
  machine: SimMachine,
): { config: ScmServiceConfig; query: InstalledService } | undefined {
  if (machine.features.get('Containers')?.state !== 'Installed') return undefined;
  const config: ScmServiceConfig = {
    name: 'hns',
    displayName: 'Host Network Service',
    commandLine: 'C:\\Windows\\system32\\svchost.exe -k NetSvcs -p',
    startType: 'demand',
    dependencies: ['RpcSs', 'nsi'],
    recovery: { restartDelaysMs: [], resetPeriodSeconds: 0 },
  };
  return {
    config,
    query: {
      name: 'hns',
      state: 'running',
      exitCode: 0,
      commandLine: config.commandLine,
      startType: 'demand',
      dependencies: config.dependencies,
      displayName: config.displayName,
    },
  };
}

function scOpenFailed(prefix: string): string[] {
  return [`[SC] ${prefix}OpenService FAILED 1060:`, '', scmErrorText[1060]!, ''];
}

function scQc(machine: SimMachine, name: string): string[] {
  const config = name === 'hns' ? hnsService(machine)?.config : machine.scm.config(name);
  if (!config) return scOpenFailed('');
  const [first = '', ...more] = config.dependencies;
  const shared = name === 'hns';
  return [
    '[SC] QueryServiceConfig SUCCESS',
    '',
    `SERVICE_NAME: ${config.name}`,
    `        TYPE               : ${shared ? '20  WIN32_SHARE_PROCESS' : '10  WIN32_OWN_PROCESS'} `,
    `        START_TYPE         : ${startTypeText[config.startType]}`,
    '        ERROR_CONTROL      : 1   NORMAL',
    `        BINARY_PATH_NAME   : ${config.commandLine}`,
    '        LOAD_ORDER_GROUP   : ',
    '        TAG                : 0',
    `        DISPLAY_NAME       : ${config.displayName}`,
    `        DEPENDENCIES       : ${first}`,
    ...more.map((d) => `                           : ${d}`),
    '        SERVICE_START_NAME : LocalSystem',
  ];
}

function scQuery(machine: SimMachine, name: string): string[] {
  const service = name === 'hns' ? hnsService(machine)?.query : machine.scm.query(name);
  if (!service) return scOpenFailed('EnumQueryServicesStatus:');
  const shared = name === 'hns';
  const controls =
    service.state === 'running'
      ? ['                                (STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN)']
      : service.state === 'stopped'
        ? []
        : ['                                (NOT_STOPPABLE, NOT_PAUSABLE, IGNORES_SHUTDOWN)'];
  return [
    '',
    `SERVICE_NAME: ${service.name} `,
    `        TYPE               : ${shared ? '20  WIN32_SHARE_PROCESS' : '10  WIN32_OWN_PROCESS'}  `,
    `        STATE              : ${stateText[service.state]} `,
    ...controls,
    `        WIN32_EXIT_CODE    : ${service.exitCode ?? 0}  (0x${(service.exitCode ?? 0).toString(16)})`,
    '        SERVICE_EXIT_CODE  : 0  (0x0)',
    '        CHECKPOINT         : 0x0',
    '        WAIT_HINT          : 0x0',
  ];
}

// The System event log: what the SCM recorded (service-control-manager.ts), as its events.

interface EventRecord {
  time: Date;
  id: number;
  level: 'Information' | 'Error' | 'Warning';
  message: string;
}

function systemEvents(machine: SimMachine, hours: number): EventRecord[] {
  const since = Date.now() - hours * 3_600_000;
  const records: EventRecord[] = [];
  for (const entry of machine.scm.events()) {
    const at = entry.indexOf(' ');
    const time = new Date(entry.slice(0, at));
    if (Number.isNaN(time.getTime()) || time.getTime() < since) continue;
    const event = scmEvent(machine, entry.slice(at + 1));
    if (event) records.push({ time, ...event });
  }
  return records;
}

function scmEvent(machine: SimMachine, text: string): Omit<EventRecord, 'time'> | undefined {
  let m = /^The (\S+) service was installed\.$/.exec(text);
  if (m) {
    const config = machine.scm.config(m[1]!);
    return {
      id: 7045,
      level: 'Information',
      message: [
        'A service was installed in the system.',
        '',
        `Service Name:  ${config?.displayName ?? m[1]}`,
        `Service File Name:  ${config?.commandLine ?? ''}`,
        'Service Type:  user mode service',
        `Service Start Type:  ${config?.startType === 'demand' ? 'demand start' : config?.startType === 'disabled' ? 'disabled' : 'auto start'}`,
        'Service Account:  LocalSystem',
      ].join('\n'),
    };
  }
  m = /^The (\S+) service entered the (running|stopped) state\.$/.exec(text);
  if (m) return { id: 7036, level: 'Information', message: text };
  m = /^The (\S+) service exited on its own/.exec(text);
  if (m)
    return {
      id: 7036,
      level: 'Information',
      message: `The ${m[1]} service entered the stopped state.`,
    };
  m = /^The (\S+) service terminated unexpectedly\. It has done this (\d+) time\(s\)\.(.*)$/.exec(
    text,
  );
  if (m) return { id: m[3] ? 7031 : 7034, level: 'Error', message: text };
  m = /^The (\S+) service terminated with the following service-specific error: (.*?)\./.exec(text);
  if (m)
    return {
      id: 7024,
      level: 'Error',
      message: `The ${m[1]} service terminated with the following service-specific error: \n${m[2]}`,
    };
  m = /^The (\S+) service failed to start due to the following error: (.*)$/.exec(text);
  if (m)
    return {
      id: 7000,
      level: 'Error',
      message: `The ${m[1]} service failed to start due to the following error: \n${m[2]}`,
    };
  m = /^A timeout was reached/.exec(text);
  if (m) return { id: 7009, level: 'Error', message: text };
  return undefined;
}

// HNS: hnsdiag list all -d.

function hnsdiag(machine: SimMachine): string[] {
  const json = (value: unknown) => JSON.stringify(value, null, 4).split('\n');
  const networks = machine.hns.list();
  const lines: string[] = ['Networks:'];
  for (const n of networks) {
    lines.push(
      ...json({
        ID: n.id.toUpperCase(),
        Name: n.name,
        Type: n.type,
        Subnets: machine.hns
          .subnets(n.id)
          .map((s) => ({ AddressPrefix: s.addressPrefix, GatewayAddress: s.gateway })),
      }),
    );
  }
  lines.push('', 'Endpoints:');
  for (const e of machine.hns.endpoints()) {
    const network = networks.find((n) => n.id === e.networkId);
    lines.push(
      ...json({
        ID: e.id,
        Name: `${e.containerId.slice(0, 12)}_${network?.name ?? ''}`,
        VirtualNetwork: e.networkId.toUpperCase(),
        VirtualNetworkName: network?.name ?? '',
        IPAddress: e.ip,
        SharedContainers: [e.containerId],
      }),
    );
  }
  lines.push('', 'Namespaces:', '', 'LoadBalancers:');
  for (const lb of machine.hns.loadBalancers()) {
    lines.push(
      ...json({
        ID: lb.id,
        FrontendVIPs: lb.frontendVips,
        Protocol: lb.protocol,
        InternalPort: lb.internalPort,
        ExternalPort: lb.externalPort,
        References: lb.endpoints,
      }),
    );
  }
  lines.push('');
  return lines;
}

// ipconfig /all and route print, from the addresses host-facts reports (ip-configuration.ts).

function macOf(index: number, address: string): string {
  const [, , c, d] = address.split('.').map(Number);
  return ['00', '15', '5D', hex(c!), hex(d!), hex(index)].join('-');
}
function hex(n: number): string {
  return n.toString(16).toUpperCase().padStart(2, '0');
}
function gatewayOf(address: string): string {
  return address.split('.').slice(0, 3).concat('1').join('.');
}

function adapters(machine: SimMachine) {
  return ipConfiguration(machine).ipAddresses.filter((a) => a.interfaceIndex !== 1);
}

function ipconfigAll(machine: SimMachine): string[] {
  const { defaultRoutes } = ipConfiguration(machine);
  const lines = [
    '',
    'Windows IP Configuration',
    '',
    `   Host Name . . . . . . . . . . . . : ${machine.hostname}`,
    '   Primary Dns Suffix  . . . . . . . : ',
    '   Node Type . . . . . . . . . . . . : Hybrid',
    '   IP Routing Enabled. . . . . . . . : No',
    '   WINS Proxy Enabled. . . . . . . . : No',
  ];
  for (const a of adapters(machine)) {
    const apipa = a.address.startsWith('169.254.');
    const hyperV = a.interfaceAlias.startsWith('vEthernet');
    const routed = defaultRoutes.some((r) => r.interfaceIndex === a.interfaceIndex);
    lines.push(
      '',
      `Ethernet adapter ${a.interfaceAlias}:`,
      '',
      '   Connection-specific DNS Suffix  . : ',
      `   Description . . . . . . . . . . . : ${hyperV ? `Hyper-V Virtual Ethernet Adapter${a.interfaceAlias === 'vEthernet (nat)' ? '' : ' #2'}` : `Microsoft Hyper-V Network Adapter${a.interfaceAlias === 'Ethernet' ? '' : ' #2'}`}`,
      `   Physical Address. . . . . . . . . : ${macOf(a.interfaceIndex, machine.address)}`,
      '   DHCP Enabled. . . . . . . . . . . : No',
      '   Autoconfiguration Enabled . . . . : Yes',
      apipa
        ? `   Autoconfiguration IPv4 Address. . : ${a.address}(${a.addressState})`
        : `   IPv4 Address. . . . . . . . . . . : ${a.address}(${a.addressState})`,
      `   Subnet Mask . . . . . . . . . . . : ${apipa ? '255.255.0.0' : a.interfaceAlias === 'vEthernet (nat)' ? '255.255.240.0' : '255.255.255.0'}`,
      `   Default Gateway . . . . . . . . . : ${routed ? gatewayOf(a.address) : ''}`,
      `   NetBIOS over Tcpip. . . . . . . . : ${hyperV ? 'Disabled' : 'Enabled'}`,
    );
  }
  lines.push('');
  return lines;
}

function routePrint(machine: SimMachine): string[] {
  const { defaultRoutes } = ipConfiguration(machine);
  const list = adapters(machine);
  const rule = '='.repeat(75);
  const row = (dest: string, mask: string, gw: string, iface: string, metric: number) =>
    `${dest.padStart(17)}${mask.padStart(17)}${gw.padStart(17)}${iface.padStart(17)}${String(metric).padStart(7)}`;
  const lines = [rule, 'Interface List'];
  for (const a of list)
    lines.push(
      `${String(a.interfaceIndex).padStart(3)}...${macOf(a.interfaceIndex, machine.address).replaceAll('-', ' ').toLowerCase()} ......${a.interfaceAlias.startsWith('vEthernet') ? 'Hyper-V Virtual Ethernet Adapter' : 'Microsoft Hyper-V Network Adapter'}`,
    );
  lines.push('  1...........................Software Loopback Interface 1', rule, '');
  lines.push('IPv4 Route Table', rule, 'Active Routes:');
  lines.push('Network Destination        Netmask          Gateway       Interface  Metric');
  for (const route of defaultRoutes) {
    const a = list.find((x) => x.interfaceIndex === route.interfaceIndex);
    if (a)
      lines.push(
        row(
          '0.0.0.0',
          '0.0.0.0',
          gatewayOf(a.address),
          a.address,
          route.routeMetric + route.interfaceMetric,
        ),
      );
  }
  lines.push(row('127.0.0.0', '255.0.0.0', 'On-link', '127.0.0.1', 331));
  lines.push(row('127.0.0.1', '255.255.255.255', 'On-link', '127.0.0.1', 331));
  for (const a of list) {
    const metric = a.interfaceAlias.startsWith('vEthernet') ? 271 : 271;
    const mask = a.address.startsWith('169.254.') ? '255.255.0.0' : '255.255.255.0';
    const net =
      mask === '255.255.0.0'
        ? `${a.address.split('.').slice(0, 2).join('.')}.0.0`
        : `${a.address.split('.').slice(0, 3).join('.')}.0`;
    lines.push(row(net, mask, 'On-link', a.address, metric));
    lines.push(row(a.address, '255.255.255.255', 'On-link', a.address, metric));
  }
  lines.push(rule, 'Persistent Routes:', '  None', '');
  lines.push(
    'IPv6 Route Table',
    rule,
    'Active Routes:',
    ' If Metric Network Destination      Gateway',
  );
  lines.push(
    '  1    331 ::1/128                  On-link',
    rule,
    'Persistent Routes:',
    '  None',
    '',
  );
  return lines;
}

// Get-HotFix | Format-Table -AutoSize: the KBs Windows Update installed (windows-update.ts).

function getHotFix(machine: SimMachine): string[] {
  const rows = machine.windowsUpdate
    .installed()
    .map((kb) => [machine.hostname.toUpperCase(), 'Update', kb, 'NT AUTHORITY\\SYSTEM', '']);
  if (rows.length === 0) return [];
  const headers = ['Source', 'Description', 'HotFixID', 'InstalledBy', 'InstalledOn'];
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join(' ')
      .trimEnd();
  return ['', line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), '', ''];
}
