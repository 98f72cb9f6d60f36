import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { idleProgram } from './programs.ts';
import { SimHostOS } from './sim-host-os.ts';
import { createTestMachine, installBinary } from './test-machine.ts';

test('files: atomic writes, reads, listings and removal with Windows paths', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  assert.equal(await os.readFile('C:\\k\\missing.yaml'), undefined);
  assert.equal(await os.listDirectory('C:\\k'), undefined);
  await os.writeFile('C:\\k\\b.yaml', 'b');
  await os.writeFile('C:\\k\\A.yaml', Buffer.from('a'));
  await os.ensureDirectory('C:\\k\\pki');
  assert.deepEqual(await os.listDirectory('c:\\K'), ['A.yaml', 'b.yaml', 'pki']);
  assert.equal((await os.readFile('C:\\k\\a.yaml'))?.toString(), 'a');
  await os.removePath('C:\\k\\pki');
  await os.removePath('C:\\k\\nothing');
  assert.deepEqual(await os.listDirectory('C:\\k'), ['A.yaml', 'b.yaml']);
  await assert.rejects(os.writeFile('k\\relative.yaml', 'x'), /not an absolute path/);
  assert.equal(await os.readFile('D:\\x'), undefined, 'a missing drive reads as a missing file');
  await assert.rejects(os.writeFile('D:\\x', 'x'), /drive D: does not exist/);
});

test('replacing the binary of a running service fails as on Windows', async (t) => {
  const machine = await createTestMachine(t);
  // Any program that keeps running will do (kube-proxy's stand-in would exit without a network).
  machine.programs.register('kube-proxy.exe', { run: idleProgram });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'kube-proxy');
  const process = await machine.spawn({
    binaryPath: 'C:\\k\\kube-proxy.exe',
    args: [],
    stdout: () => {},
    stderr: () => {},
  });
  await assert.rejects(os.writeFile('C:\\k\\kube-proxy.exe', 'v2'), { code: 'EPERM' });
  await assert.rejects(os.removePath('C:\\k'), { code: 'EPERM' });
  process.kill();
  await process.exited;
  await os.writeFile('C:\\k\\kube-proxy.exe', 'v2');
});

test('HNS networks: listed and removed by id; a missing one is not an error', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  const network = machine.hns.ensure('winfleet', 'Overlay');
  assert.deepEqual(await os.listHnsNetworks(), [network]);
  await os.removeHnsNetwork(network.id.toLowerCase());
  await os.removeHnsNetwork(network.id);
  assert.deepEqual(await os.listHnsNetworks(), []);
});

test('files: streamed writes, hashes and copies, with the Windows rules of the machine', async (t) => {
  const machine = await createTestMachine(t);
  machine.programs.register('kube-proxy.exe', { run: idleProgram });
  const os = new SimHostOS(machine);
  async function* chunks(...parts: string[]) {
    for (const part of parts) yield Buffer.from(part);
  }
  assert.equal(
    await os.writeFileFromStream('C:\\k\\winfleet\\payload\\kube-proxy.exe', chunks('v', '2')),
    2,
  );
  assert.equal(
    await os.fileSha256('C:\\K\\WINFLEET\\PAYLOAD\\KUBE-PROXY.EXE'),
    createHash('sha256').update('v2').digest('hex'),
  );
  assert.equal(await os.fileSha256('C:\\k\\missing.exe'), undefined);
  await installBinary(machine, 'kube-proxy');
  const process = await machine.spawn({
    binaryPath: 'C:\\k\\kube-proxy.exe',
    args: [],
    stdout: () => {},
    stderr: () => {},
  });
  // A running image is read (hashed) but not replaced by a copy.
  assert.match((await os.fileSha256('C:\\k\\kube-proxy.exe')) ?? '', /^[0-9a-f]{64}$/);
  await assert.rejects(
    os.copyFile('C:\\k\\winfleet\\payload\\kube-proxy.exe', 'C:\\k\\kube-proxy.exe'),
    {
      code: 'EPERM',
    },
  );
  process.kill();
  await process.exited;
  await os.copyFile('C:\\k\\winfleet\\payload\\kube-proxy.exe', 'C:\\k\\kube-proxy.exe');
  assert.equal((await os.readFile('C:\\k\\kube-proxy.exe'))?.toString(), 'v2');
  await assert.rejects(os.copyFile('C:\\k\\nothing.exe', 'C:\\k\\x.exe'), { code: 'ENOENT' });
  assert.equal(await os.readFile('C:\\k\\x.exe'), undefined);
  assert.deepEqual(
    (await os.listDirectory('C:\\k'))?.filter((n) => n.endsWith('.tmp')),
    [],
    'no temporary file is left',
  );
});

test('HNS cmdlets come with the Containers feature: without it the agent hears WF_HNS_UNAVAILABLE, as the script reports', async (t) => {
  const machine = await createTestMachine(t, { features: { Containers: 'Available' } });
  const os = new SimHostOS(machine);
  await assert.rejects(os.listHnsNetworks(), (error: unknown) => {
    assert.equal((error as { code?: string }).code, 'WF_HNS_UNAVAILABLE');
    assert.match(
      (error as Error).message,
      /^Cannot list HNS networks: Get-HnsNetwork is not available \(tried "HostNetworkingService", "C:\\k\\hns\.v2\.psm1"\)/,
    );
    return true;
  });
  await assert.rejects(os.listHnsEndpoints(), { code: 'WF_HNS_UNAVAILABLE' });
  await assert.rejects(
    os.createHnsNetwork({
      name: 'winfleet',
      type: 'L2Bridge',
      addressPrefix: '10.244.1.0/24',
      gateway: '10.244.1.1',
    }),
    { code: 'WF_HNS_UNAVAILABLE' },
  );
  // The Containers feature's own state is readable without it (ServerManager is always there).
  assert.equal(await os.containersFeature(), 'Available');
});
