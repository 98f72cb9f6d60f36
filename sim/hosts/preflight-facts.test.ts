import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readPreflightFacts } from '../../src/cli/check/preflight-facts.ts';
import { remoteCommand } from '../../src/hostaccess/remote-scripts.ts';
import { parsePowerShellJson } from '../../src/powershell/powershell.ts';
import { idleProgram, ProgramRegistry } from './programs.ts';
import { createTestMachine, installBinary, runOnHost } from './test-machine.ts';

const gib = 1024 ** 3;

async function facts(machine: Parameters<typeof runOnHost>[0]) {
  const result = await runOnHost(machine, remoteCommand('preflight-facts', {}));
  assert.equal(result.code, 0, result.stderr);
  return readPreflightFacts(parsePowerShellJson(result.stdout, 'preflight-facts'));
}

test('a workgroup host answers preflight-facts from its machine state', async (t) => {
  const machine = await createTestMachine(t, {
    hostname: 'a-name-of-16-chr',
    cpus: 1,
    memoryBytes: 4 * gib,
  });
  const f = await facts(machine);
  assert.equal(f.netbiosName, 'A-NAME-OF-16-CH', 'NetBIOS: the first 15 characters, upper case');
  assert.equal(f.partOfDomain, false);
  assert.equal(f.domain, 'WORKGROUP');
  assert.equal(f.logicalProcessors, 1);
  assert.equal(f.memoryBytes, 4 * gib);
  assert.equal(f.administrator, true);
  assert.equal(f.userName, 'A-NAME-OF-16-CH\\Administrator');
  assert.deepEqual(f.listeners10250, []);
  assert.deepEqual(f.firewallRules10250, []);
  assert.deepEqual(f.winHttpProxy, { proxyServer: null, bypassList: null });
  assert.deepEqual(f.proxyEnvironment, { HTTP_PROXY: null, HTTPS_PROXY: null, NO_PROXY: null });
  assert.match(f.utcNow, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/);
  assert.ok(Math.abs(Date.parse(f.utcNow) - Date.now()) < 5_000);
});

test('domain membership, the clock, listeners, firewall rules and proxies come from the machine', async (t) => {
  const programs = new ProgramRegistry().register('kubelet.exe', { run: idleProgram });
  const machine = await createTestMachine(t, { domain: 'corp.example.com', programs });
  machine.clockOffsetMs = 120_000;
  await installBinary(machine, 'kubelet');
  const kubelet = await machine.spawn({
    binaryPath: 'C:\\k\\kubelet.exe',
    args: [],
    stdout: () => {},
    stderr: () => {},
  });
  machine.extraTcpListeners.push({
    port: 10250,
    localAddress: '0.0.0.0',
    owningProcess: 4242,
    processName: 'otheragent',
  });
  machine.extraTcpListeners.push({
    port: 8080,
    localAddress: '0.0.0.0',
    owningProcess: 4243,
    processName: 'web',
  });
  machine.firewall.add({
    name: 'winfleet-kubelet',
    displayName: 'winfleet kubelet API (TCP 10250)',
    description: '',
    direction: 'Inbound',
    action: 'Allow',
    protocol: 'TCP',
    localPorts: [10250],
    enabled: true,
  });
  machine.firewall.add({
    name: 'any-port',
    displayName: 'all TCP',
    description: '',
    direction: 'Inbound',
    action: 'Block',
    protocol: 'TCP',
    localPorts: 'Any',
    enabled: true,
  });
  machine.winHttpProxy = { proxyServer: 'proxy.corp:3128', bypassList: '<local>;*.corp' };
  machine.env.set('HTTPS_PROXY', 'http://proxy.corp:3128');
  const f = await facts(machine);
  assert.equal(f.partOfDomain, true);
  assert.equal(f.domain, 'corp.example.com');
  assert.ok(Date.parse(f.utcNow) - Date.now() > 110_000, 'the host clock is the machine’s');
  assert.deepEqual(f.listeners10250, [
    { localAddress: '::', owningProcess: kubelet.pid, processName: 'kubelet' },
    { localAddress: '0.0.0.0', owningProcess: 4242, processName: 'otheragent' },
  ]);
  assert.deepEqual(f.firewallRules10250, [
    { name: 'winfleet-kubelet', enabled: true, direction: 'Inbound', action: 'Allow' },
  ]);
  assert.deepEqual(f.winHttpProxy, {
    proxyServer: 'proxy.corp:3128',
    bypassList: '<local>;*.corp',
  });
  assert.equal(f.proxyEnvironment.HTTPS_PROXY, 'http://proxy.corp:3128');
  assert.equal(f.proxyEnvironment.NO_PROXY, null);
  kubelet.kill(0, 'test over');
});
