/**
 * Windows features on a simulated host: the Containers feature's InstallState, what
 * Install-WindowsFeature and a restart do to it, and the catalog scripts the operator runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { remoteCommand } from '../../src/hostaccess/remote-scripts.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { parsePowerShellJson, powerShellErrorText } from '../../src/powershell/powershell.ts';
import { createTestMachine, runOnHost } from './test-machine.ts';
import { WindowsFeatures } from './windows-features.ts';

test('a feature is Installed by default; states are checked; a boot finishes pending changes', () => {
  assert.equal(new WindowsFeatures().get('containers')?.state, 'Installed');
  const features = new WindowsFeatures({ Containers: 'UninstallPending' });
  assert.equal(features.isInstalled('Containers'), false);
  features.boot();
  assert.equal(features.get('Containers')?.state, 'Available');
  assert.deepEqual(features.install('Containers'), {
    success: true,
    restartNeeded: 'Yes',
    exitCode: 'SuccessRestartRequired',
  });
  assert.equal(features.install('Containers').exitCode, 'NoChangeNeeded');
  features.boot();
  assert.deepEqual(features.install('containers'), {
    success: true,
    restartNeeded: 'No',
    exitCode: 'NoChangeNeeded',
  });
  assert.throws(
    () => features.install('Hyper-V2'),
    /The role, role service, or feature name is not valid: 'Hyper-V2'/,
  );
  assert.throws(
    () => new WindowsFeatures({ Containers: 'Enabled' as never }),
    /Cannot give feature Containers the state "Enabled"; use one of Installed, Available/,
  );
});

test('host-facts reports the Containers feature; install-windows-feature and restart-host install it', async (t) => {
  const machine = await createTestMachine(t, { features: { Containers: 'Available' } });
  const facts = async () =>
    (
      parsePowerShellJson(
        (await runOnHost(machine, remoteCommand('host-facts', {}))).stdout,
        'facts',
      ) as {
        containersFeature: string;
      }
    ).containersFeature;
  assert.equal(await facts(), 'Available');
  const install = await runOnHost(
    machine,
    remoteCommand('install-windows-feature', { name: 'Containers' }),
  );
  assert.equal(install.code, 0, install.stderr);
  assert.deepEqual(parsePowerShellJson(install.stdout, 'install'), {
    success: true,
    restartNeeded: 'Yes',
    exitCode: 'SuccessRestartRequired',
  });
  assert.equal(await facts(), 'InstallPending');
  const bootId = machine.bootId;
  assert.equal((await runOnHost(machine, remoteCommand('restart-host', {}))).code, 0);
  await waitFor(() => machine.bootId !== bootId && machine.powerState === 'up', {
    description: 'the restart',
    timeoutMs: 5000,
    intervalMs: 20,
  });
  assert.equal(await facts(), 'Installed');
});

test('install-windows-feature fails as Install-WindowsFeature does for a removed payload', async (t) => {
  const machine = await createTestMachine(t, { features: { Containers: 'Removed' } });
  const result = await runOnHost(
    machine,
    remoteCommand('install-windows-feature', { name: 'Containers' }),
  );
  assert.equal(result.code, 1);
  assert.match(
    powerShellErrorText(result.stderr),
    /The source files could not be found\. Use the "Source" option/,
  );
  assert.match(powerShellErrorText(result.stderr), /0x800f081f/);
});
