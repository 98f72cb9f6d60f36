import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SimHostOS } from './sim-host-os.ts';
import { createTestMachine } from './test-machine.ts';
import { SimWindowsUpdate, sampleCatalog, standInMsu } from './windows-update.ts';

const catalog = sampleCatalog();

test('search lists what is not installed; a reboot-needing update raises the UBR only at the next boot', async (t) => {
  const machine = await createTestMachine(t, { windowsUpdates: catalog });
  const host = new SimHostOS(machine);
  assert.equal(machine.kernelVersion, '10.0.20348.2582');
  assert.deepEqual(
    (await host.searchUpdates()).map((u) => [u.kb, u.rebootRequired]),
    [
      ['KB5040437', true],
      ['KB5041160', false],
      ['KB890830', false],
    ],
  );
  assert.equal(await host.rebootPending(), false);

  const result = await host.installUpdates(['KB5040437', 'KB5041160']);
  assert.deepEqual(result, {
    installed: ['KB5040437', 'KB5041160'],
    failed: [],
    rebootRequired: true,
  });
  assert.deepEqual(
    (await host.searchUpdates()).map((u) => u.kb),
    ['KB890830'],
  );
  assert.equal(await host.rebootPending(), true);
  assert.equal(machine.windowsUpdate.registry.componentBasedServicingRebootPending, true);
  assert.equal(machine.kernelVersion, '10.0.20348.2582', 'not before the reboot');

  const bootId = machine.bootId;
  await machine.reboot();
  assert.notEqual(machine.bootId, bootId);
  assert.equal(machine.kernelVersion, '10.0.20348.2700');
  assert.equal(await host.rebootPending(), false, 'the boot finished servicing');
  assert.deepEqual(machine.windowsUpdate.installed(), ['KB5040437', 'KB5041160']);
});

test('an update that fails keeps its HRESULT and stays available; unknown or installed KBs are not found', () => {
  const os = { major: 10, minor: 0, build: 20348, ubr: 2582, productName: 'x' };
  const wu = new SimWindowsUpdate(os, [
    { ...catalog[0]!, failsWith: '0x80240022' },
    { ...catalog[2]!, ubr: 2590 },
  ]);
  const result = wu.install(['KB5040437', 'KB890830', 'KB1234567']);
  assert.deepEqual(result.installed, ['KB890830']);
  assert.equal(result.rebootRequired, false);
  assert.equal(os.ubr, 2590, 'an update without a reboot applies at once');
  assert.match(result.failed[0]!.error, /^install failed: 0x80240022 \(WU_E_ALL_UPDATES_FAILED/);
  assert.equal(result.failed[0]!.kb, 'KB5040437');
  assert.match(result.failed[1]!.error, /not found by the search/);
  assert.deepEqual(
    wu.search().map((u) => u.kb),
    ['KB5040437'],
  );
  assert.equal(wu.rebootPending(), false);
  assert.match(wu.install(['KB890830']).failed[0]!.error, /not found by the search/);
});

test('from a remote session WUA download and install fail with E_ACCESSDENIED', () => {
  const os = { major: 10, minor: 0, build: 20348, ubr: 2582, productName: 'x' };
  const wu = new SimWindowsUpdate(os, catalog);
  assert.equal(wu.search().length, 3, 'the search works remotely');
  assert.throws(
    () => wu.install(['KB5040437'], 'remote'),
    /download failed with 0x80070005 \(E_ACCESSDENIED: .*remote session/,
  );
  assert.deepEqual(wu.installed(), []);
});

test('a pending file rename is no pending reboot: it is carried out and cleared at the next boot', async (t) => {
  const machine = await createTestMachine(t);
  const host = new SimHostOS(machine);
  await machine.fs.writeFileAtomic('C:\\k\\old.exe', 'x');
  machine.windowsUpdate.registry.pendingFileRenameOperations = ['\\??\\C:\\k\\old.exe', ''];
  assert.equal(await host.rebootPending(), false);
  machine.windowsUpdate.registry.windowsUpdateRebootRequired = true;
  assert.equal(await host.rebootPending(), true, 'WU RebootRequired is');
  await machine.reboot();
  assert.equal(await host.rebootPending(), false);
  assert.deepEqual(machine.windowsUpdate.registry.pendingFileRenameOperations, []);
  assert.equal(await machine.fs.stat('C:\\k\\old.exe'), undefined);
});

test('the catalog refuses bad entries, naming the field', () => {
  const os = { major: 10, minor: 0, build: 20348, ubr: 2582, productName: 'x' };
  assert.throws(
    () => new SimWindowsUpdate(os, [{ ...catalog[0]!, kb: '5040437' }]),
    /catalog update kb: "5040437" is not a KB number/,
  );
  assert.throws(
    () => new SimWindowsUpdate(os, [{ ...catalog[0]!, failsWith: '80240022' }]),
    /catalog update KB5040437 failsWith: "80240022" is not an HRESULT/,
  );
  assert.throws(
    () => new SimWindowsUpdate(os, [{ ...catalog[0]!, ubr: -1 }]),
    /catalog update KB5040437 ubr: give a whole number from 0/,
  );
});

test('an air-gapped host installs the payload’s .msu files; one for another build is not applicable', async (t) => {
  const machine = await createTestMachine(t, { windowsUpdates: catalog });
  machine.windowsUpdate.online = false;
  const host = new SimHostOS(machine);
  await assert.rejects(
    host.searchUpdates(),
    /search failed with 0x8024402C \(WU_E_PT_WINHTTP_NAME_NOT_RESOLVED/,
  );
  const payload = 'C:\\k\\winfleet\\payload';
  await machine.fs.writeFileAtomic(
    `${payload}\\windows10.0-kb5040437-x64.msu`,
    standInMsu({ kb: 'KB5040437', build: 20348, ubr: 2700 }),
  );
  await machine.fs.writeFileAtomic(
    `${payload}\\windows10.0-kb5040438-x64.msu`,
    standInMsu({ kb: 'KB5040438', build: 17763, ubr: 6900 }),
  );
  await machine.fs.writeFileAtomic(`${payload}\\windows10.0-kb5040439-x64.msu`, 'not an msu');
  assert.deepEqual(
    (await host.searchUpdates()).map((u) => u.kb),
    ['KB5040437', 'KB5040438', 'KB5040439'],
  );
  const result = await host.installUpdates(['KB5040437', 'KB5040438', 'KB5040439']);
  assert.deepEqual(result.installed, ['KB5040437']);
  assert.equal(result.rebootRequired, true);
  assert.match(
    result.failed[0]!.error,
    /^dism\.exe \/online \/add-package \/packagepath:C:\\k\\winfleet\\msu-KB5040438\\Windows10\.0-KB5040438-x64\.cab \/quiet \/norestart failed with 0x800F081E \(CBS_E_NOT_APPLICABLE/,
  );
  assert.match(
    result.failed[1]!.error,
    /windows10\.0-kb5040439-x64\.msu holds no update \.cab file/,
  );
  assert.equal(machine.windowsUpdate.registry.componentBasedServicingRebootPending, true);
  assert.equal(machine.windowsUpdate.registry.windowsUpdateRebootRequired, false, 'DISM, not WUA');
  assert.deepEqual(
    (await host.searchUpdates()).map((u) => u.kb),
    ['KB5040438', 'KB5040439'],
    'installed is no longer offered',
  );
  await machine.reboot();
  assert.equal(machine.kernelVersion, '10.0.20348.2700');
  assert.equal(await host.rebootPending(), false);
});
