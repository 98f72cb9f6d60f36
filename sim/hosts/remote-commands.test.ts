import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { nodeAddress } from '../../src/hostaccess/node-address.ts';
import {
  agentExecutable,
  type HostFactsReport,
  readHostFacts,
  remoteCommand,
  remoteScript,
} from '../../src/hostaccess/remote-scripts.ts';
import {
  parsePowerShellJson,
  powerShellCommandLine,
  powerShellErrorText,
} from '../../src/powershell/powershell.ts';
import { powerShellJson, powerShellReadsStdin, runRemoteCommand } from './remote-commands.ts';
import { createTestMachine, installBinary, runOnHost } from './test-machine.ts';

test('host-facts prints the HostFacts line', async (t) => {
  const machine = await createTestMachine(t, { release: '2025', hostname: 'WIN-25' });
  const result = await runOnHost(machine, remoteCommand('host-facts', {}));
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^\{.*\}\r\n$/);
  const report = parsePowerShellJson(result.stdout, 'host facts');
  const { lastBootTime, ...rest } = report as Record<string, unknown>;
  // DateTime.ToString('o') in UTC: seven fractional digits.
  assert.match(String(lastBootTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/);
  assert.equal(Date.parse(String(lastBootTime)), machine.bootedAt.getTime());
  assert.deepEqual(rest, {
    hostname: 'WIN-25',
    partOfDomain: false,
    domain: 'WORKGROUP',
    pendingHostname: 'WIN-25',
    osVersion: {
      major: 10,
      minor: 0,
      build: 26100,
      ubr: 2894,
      productName: 'Windows Server 2025 Datacenter',
    },
    freeBytes: machine.fs.freeBytes(),
    ipAddresses: [
      row('172.16.200.1', 24, 'vEthernet (nat)'),
      row('169.254.0.200', 7, 'Ethernet 2'),
      row('127.0.0.200', 4, 'Ethernet'),
      row('127.0.0.1', 1, 'Loopback Pseudo-Interface 1'),
    ],
    defaultRoutes: [{ interfaceIndex: 4, routeMetric: 0, interfaceMetric: 15 }],
    powerShellVersion: '5.1.26100.2894',
    containersFeature: 'Installed',
  });
  // The host's own address is not the first row Get-NetIPAddress gives, but it is the node's.
  assert.deepEqual(readHostFacts(report).addresses, ['127.0.0.200', '172.16.200.1']);
});

function row(address: string, interfaceIndex: number, interfaceAlias: string) {
  return { address, interfaceIndex, interfaceAlias, addressState: 'Preferred' };
}

test('once an L2Bridge network binds the adapter, the address moves to vEthernet (Ethernet)', async (t) => {
  const machine = await createTestMachine(t);
  machine.hns.ensure('winfleet', 'L2Bridge');
  const report = parsePowerShellJson(
    (await runOnHost(machine, remoteCommand('host-facts', {}))).stdout,
    'host facts',
  ) as HostFactsReport;
  assert.deepEqual(report.ipAddresses[2], row('127.0.0.200', 18, 'vEthernet (Ethernet)'));
  assert.deepEqual(report.defaultRoutes, [
    { interfaceIndex: 18, routeMetric: 0, interfaceMetric: 15 },
  ]);
  assert.equal(nodeAddress('win-a.example.com', readHostFacts(report)), '127.0.0.200');
});

test('file-hashes gives SHA-256 per path and null for missing files and directories', async (t) => {
  const machine = await createTestMachine(t);
  await machine.fs.writeFileAtomic('C:\\k\\kubelet.exe', 'kubelet');
  const result = await runOnHost(
    machine,
    remoteCommand('file-hashes', {
      paths: ['C:\\k\\kubelet.exe', 'C:\\k\\missing.exe', 'C:\\k', 'C:\\K\\KUBELET.EXE'],
    }),
  );
  assert.equal(result.code, 0);
  const sha = createHash('sha256').update('kubelet').digest('hex');
  // [ordered]@{} keys are case-insensitive: the second spelling of kubelet.exe is the same key.
  assert.deepEqual(parsePowerShellJson(result.stdout, 'hashes'), {
    'C:\\k\\kubelet.exe': sha,
    'C:\\k\\missing.exe': null,
    'C:\\k': null,
  });
});

test('ensure-directory creates what is missing, records it, and prints it', async (t) => {
  const machine = await createTestMachine(t);
  const record = 'C:\\k\\winfleet\\created-directories.txt';
  const first = await runOnHost(
    machine,
    remoteCommand('ensure-directory', { path: 'C:\\k\\winfleet\\logs', record }),
  );
  assert.equal(first.code, 0);
  assert.equal(
    first.stdout,
    '{"created":["C:\\\\k","C:\\\\k\\\\winfleet","C:\\\\k\\\\winfleet\\\\logs"]}\r\n',
  );
  assert.equal((await machine.fs.stat('C:\\k\\winfleet\\logs'))?.kind, 'directory');
  const recorded = 'C:\\k\r\nC:\\k\\winfleet\r\nC:\\k\\winfleet\\logs\r\n';
  assert.equal((await machine.fs.readFile(record)).toString(), recorded);
  const again = await runOnHost(
    machine,
    remoteCommand('ensure-directory', { path: 'C:\\k\\winfleet', record }),
  );
  assert.deepEqual(again, { code: 0, stdout: '{"created":[]}\r\n', stderr: '' });
  await runOnHost(machine, remoteCommand('ensure-directory', { path: 'C:\\k\\pki', record }));
  assert.equal((await machine.fs.readFile(record)).toString(), `${recorded}C:\\k\\pki\r\n`);
});

test('remove-path removes a tree; missing is fine', async (t) => {
  const machine = await createTestMachine(t);
  await machine.fs.writeFileAtomic('C:\\k\\winfleet\\x.exe', 'x');
  assert.deepEqual(await runOnHost(machine, remoteCommand('remove-path', { path: 'C:\\k' })), {
    code: 0,
    stdout: '{"ok":true}\r\n',
    stderr: '',
  });
  assert.equal(await machine.fs.stat('C:\\k'), undefined);
  assert.equal((await runOnHost(machine, remoteCommand('remove-path', { path: 'C:\\k' }))).code, 0);
});

test('a failing catalog script exits 1 with a PowerShell error record in CLIXML', async (t) => {
  const machine = await createTestMachine(t);
  await machine.fs.writeFileAtomic('C:\\k', 'a file');
  const record = 'C:\\created.txt';
  const onFile = await runOnHost(
    machine,
    remoteCommand('ensure-directory', { path: 'C:\\k', record }),
  );
  assert.deepEqual(
    onFile,
    { code: 0, stdout: '{"created":[]}\r\n', stderr: '' },
    'Test-Path: a file exists',
  );
  const result = await runOnHost(
    machine,
    remoteCommand('ensure-directory', { path: 'C:\\k\\winfleet', record }),
  );
  assert.equal(result.code, 1);
  assert.match(result.stderr, /^#< CLIXML\r\n<Objs /);
  const text = powerShellErrorText(result.stderr);
  assert.match(text, /^New-Item : Could not find a part of the path 'C:\\k\\winfleet'\./);
  assert.match(text, /FullyQualifiedErrorId : CreateDirectoryIOError/);
  assert.equal(await machine.fs.stat(record), undefined, 'nothing recorded');
});

test('remove-path fails on a running program, as Windows refuses to delete it', async (t) => {
  const machine = await createTestMachine(t);
  await installBinary(machine, 'containerd');
  const process = await machine.spawn({
    binaryPath: 'C:\\k\\containerd.exe',
    args: [],
    stdout: () => {},
    stderr: () => {},
  });
  const result = await runOnHost(machine, remoteCommand('remove-path', { path: 'C:\\k' }));
  assert.equal(result.code, 1);
  assert.match(
    powerShellErrorText(result.stderr),
    /Access to the path 'C:\\k\\containerd\.exe' is denied/,
  );
  process.kill();
});

test('run-agent and a direct agent command line run the agent with its arguments', async (t) => {
  const machine = await createTestMachine(t);
  const seen: string[][] = [];
  machine.programs.register('winfleet-agent.exe', {
    run: async (context) => {
      seen.push(context.argv);
      context.stdout('progress\n');
      context.stderr('warning\n');
      return 7;
    },
  });
  const missing = await runOnHost(machine, remoteCommand('run-agent', { args: ['bootstrap'] }));
  assert.equal(missing.code, 1);
  assert.match(
    powerShellErrorText(missing.stderr),
    /The term 'C:\\k\\winfleet\\winfleet-agent\.exe' is not recognized/,
  );
  const direct = await runOnHost(machine, `"${agentExecutable}" status`);
  assert.equal(direct.code, 9009);

  await machine.fs.writeFileAtomic(agentExecutable, 'agent');
  assert.deepEqual(
    await runOnHost(
      machine,
      remoteCommand('run-agent', { args: ['bootstrap', '--config', "C:\\k\\it's here.json"] }),
    ),
    {
      code: 7,
      stdout: 'progress\n',
      stderr: 'warning\n',
    },
  );
  assert.equal(
    (await runOnHost(machine, `"${agentExecutable}" cleanup --reason "host removed"`)).code,
    7,
  );
  assert.deepEqual(seen, [
    ['bootstrap', '--config', "C:\\k\\it's here.json"],
    ['cleanup', '--reason', 'host removed'],
  ]);
});

test('anything else is refused with exit code 1', async (t) => {
  const machine = await createTestMachine(t);
  const script = remoteScript('host-facts', {});
  const refused = [
    'dir C:\\',
    'powershell.exe -Command Get-Process',
    powerShellCommandLine('Get-Process'),
    powerShellCommandLine(`${script}Remove-Item C:\\ -Recurse\n`),
    `"${agentExecutable}" status & del C:\\k`,
    'powershell.exe -EncodedCommand !!notbase64',
  ];
  for (const line of refused) {
    const result = await runOnHost(machine, line);
    assert.equal(result.code, 1, line);
    assert.match(result.stderr, /simulated Windows host does not support this command/, line);
    assert.equal(result.stdout, '');
  }
});

test('JSON is printed as Windows PowerShell 5.1 prints it', () => {
  assert.equal(
    powerShellJson({ name: "Café <b> & 'x'" }),
    '{"name":"Caf\\u00e9 \\u003cb\\u003e \\u0026 \\u0027x\\u0027"}\r\n',
  );
  assert.deepEqual(JSON.parse(powerShellJson({ name: 'Café <b>' })), { name: 'Café <b>' });
});

test('powershell.exe reads its stdin unless -InputFormat None (any prefix, -if, or the value 2)', () => {
  const encoded = 'JABhAA==';
  assert.equal(powerShellReadsStdin(`powershell.exe -NoProfile -EncodedCommand ${encoded}`), true);
  for (const flag of ['-InputFormat None', '-inputformat none', '/i NONE', '-if None', '-inp 2']) {
    assert.equal(
      powerShellReadsStdin(`powershell ${flag} -EncodedCommand ${encoded}`),
      false,
      flag,
    );
  }
  assert.equal(powerShellReadsStdin(`powershell -InputFormat Text -e ${encoded}`), true);
  // After the script, words are the script's arguments, not powershell.exe's switches.
  assert.equal(powerShellReadsStdin('powershell -Command Get-Date -InputFormat None'), true);
  assert.equal(powerShellReadsStdin('"C:\\k\\winfleet\\winfleet-agent.exe" status'), false);
});

test('install-windows-feature takes its minutes on the long-operation clock; a closed channel kills it and installs nothing', async (t) => {
  // 2 simulated minutes at 1000x: 120 ms.
  const machine = await createTestMachine(t, { features: { Containers: 'Available' } });
  assert.equal(machine.longOperations.timings.featureInstallMs, 120_000);
  const line = remoteCommand('install-windows-feature', { name: 'Containers' });
  const channel = new AbortController();
  let stderr = '';
  const killed = runRemoteCommand(machine, line, {
    stdout: () => {},
    stderr: (text) => {
      stderr += text;
    },
    signal: channel.signal,
  });
  await waitUntil(() => machine.longOperations.running.size === 1);
  assert.deepEqual(
    [...machine.longOperations.running],
    ['powershell.exe Install-WindowsFeature Containers'],
  );
  channel.abort();
  assert.equal(await killed, 1);
  assert.match(stderr, /The operation was aborted/);
  assert.equal(machine.features.get('Containers')?.state, 'Available', 'nothing installed');

  const done = await runOnHost(machine, line);
  assert.equal(done.code, 0, done.stderr);
  assert.equal(machine.features.get('Containers')?.state, 'InstallPending');
});

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
