import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type DiagnosticItem,
  diagnosticItems,
  readDiagnostic,
  remoteCommand,
} from '../../src/hostaccess/remote-scripts.ts';
import { parsePowerShellJson } from '../../src/powershell/powershell.ts';
import type { SimMachine } from './machine.ts';
import { createTestMachine, runOnHost } from './test-machine.ts';

async function item(machine: SimMachine, name: DiagnosticItem, hours = 6): Promise<string> {
  const result = await runOnHost(machine, remoteCommand('diagnostic', { item: name, hours }));
  assert.equal(result.code, 0, result.stderr);
  return readDiagnostic(parsePowerShellJson(result.stdout, name), name).text;
}

test('every diagnostic item answers from the machine, as the Windows tool prints it', async (t) => {
  const machine = await createTestMachine(t, { hostname: 'WIN-DIAG' });
  machine.scm.create({
    name: 'kubelet',
    displayName: 'kubelet',
    commandLine: '"C:\\k\\kubelet.exe" --windows-service',
    startType: 'auto',
    dependencies: ['containerd'],
    recovery: { restartDelaysMs: [1000], resetPeriodSeconds: 60 },
  });
  machine.hns.ensure('winfleet', 'L2Bridge', [
    { addressPrefix: '10.244.1.0/24', gateway: '10.244.1.1' },
  ]);
  machine.firewall.add({
    name: 'winfleet-kubelet',
    displayName: 'winfleet kubelet API (TCP 10250)',
    description: 'kubelet',
    direction: 'Inbound',
    action: 'Allow',
    protocol: 'TCP',
    localPorts: [10250],
    enabled: true,
  });
  await machine.fs.mkdir('C:\\k\\logs', { recursive: true });
  await machine.fs.writeFile('C:\\k\\logs\\kubelet.log', 'I1123 one\r\nI1123 two\r\n');
  const texts = new Map<DiagnosticItem, string>();
  for (const name of diagnosticItems) texts.set(name, await item(machine, name));

  const services = texts.get('services')!;
  assert.match(
    services,
    /> sc\.exe qc kubelet\r\n\[SC\] QueryServiceConfig SUCCESS\r\n\r\nSERVICE_NAME: kubelet\r\n/,
  );
  assert.match(services, /START_TYPE {9}: 2 {3}AUTO_START\r\n/);
  assert.match(services, /DEPENDENCIES {7}: containerd\r\n/);
  assert.match(
    services,
    /> sc\.exe query kubelet\r\n\r\nSERVICE_NAME: kubelet \r\n.*\r\n {8}STATE {14}: 1 {2}STOPPED \r\n {8}WIN32_EXIT_CODE {4}: 1077 {2}\(0x435\)/,
  );
  assert.match(services, /> sc\.exe qc csi-proxy\r\n\[SC\] OpenService FAILED 1060:/);
  assert.match(services, /SERVICE_NAME: hns\r\n {8}TYPE {15}: 20 {2}WIN32_SHARE_PROCESS/);
  assert.match(
    texts.get('hns')!,
    /^Networks:\r\n\{\r\n {4}"ID": "[0-9A-F-]{36}",\r\n {4}"Name": "winfleet"/,
  );
  assert.match(texts.get('hns')!, /"AddressPrefix": "10\.244\.1\.0\/24"/);
  assert.match(texts.get('ipconfig')!, /Host Name \. \. \. \. \. \. \. \. \. \. \. \. : WIN-DIAG/);
  assert.match(
    texts.get('ipconfig')!,
    /IPv4 Address\. \. \. \. \. \. \. \. \. \. \. : 127\.0\.0\.200\(Preferred\)/,
  );
  assert.match(
    texts.get('routes')!,
    / {10}0\.0\.0\.0 {10}0\.0\.0\.0 {8}127\.0\.0\.1 {6}127\.0\.0\.200 {5}15/,
  );
  assert.match(texts.get('firewall')!, /Name {8}: winfleet-kubelet\r\n/);
  assert.match(texts.get('firewall')!, /LocalPort {3}: 10250/);
  assert.ok(!texts.get('firewall')!.includes('OpenSSH'), "only winfleet's rules");
  assert.match(texts.get('excluded-ports')!, /Protocol tcp Port Exclusion Ranges/);
  assert.match(texts.get('os-version')!, /CurrentBuildNumber {8}: 20348\r\nUBR {23}: 2582/);
  assert.equal(texts.get('hotfixes'), '', 'no updates installed: Get-HotFix prints nothing');
  assert.match(
    texts.get('events-system')!,
    /Id {15}: 7045\r\nLevelDisplayName : Information\r\nProviderName {5}: Service Control Manager\r\nMessage {10}: A service was installed in the system\./,
  );
  assert.equal(texts.get('events-application'), 'No events in Application in the last 6 hours.');
  assert.equal(
    texts.get('log-kubelet'),
    '==> C:\\k\\logs\\kubelet.log <==\r\nI1123 one\r\nI1123 two',
  );
  assert.equal(
    texts.get('log-containerd'),
    '==> C:\\k\\logs\\containerd.log <==\r\n(no such file)',
  );
  assert.match(texts.get('agent-status')!, /==> C:\\k\\winfleet\\state\.json <==/);

  // Installed updates show in Get-HotFix; events older than the window do not show.
  machine.windowsUpdate.publish({
    kb: 'KB5041160',
    title: '2024-08 Cumulative Update',
    categories: ['Security Updates'],
    rebootRequired: false,
    ubr: 2655,
  });
  machine.windowsUpdate.install(['KB5041160']);
  assert.match(
    await item(machine, 'hotfixes'),
    /WIN-DIAG +Update +KB5041160 +NT AUTHORITY\\SYSTEM/,
  );
  assert.match(await item(machine, 'os-version'), /UBR {23}: 2655/);
});

test('an item outside the catalog is not run', async (t) => {
  const machine = await createTestMachine(t);
  const line = remoteCommand('diagnostic', { item: 'hns', hours: 1 }).replace(
    /[A-Za-z0-9+/=]+$/,
    (b64) =>
      Buffer.from(
        Buffer.from(b64, 'base64').toString('utf16le').replace('"item":"hns"', '"item":"wmic"'),
        'utf16le',
      ).toString('base64'),
  );
  const result = await runOnHost(machine, line);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /not support this command/);
});
