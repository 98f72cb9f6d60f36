import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containerdConfig } from '../../src/agent/node-files.ts';
import {
  hyperVFeature,
  hyperVNotInstalled,
  runhcsShimImageName,
  runPodSandbox,
} from './containerd-standin.ts';
import { SimHostOS } from './sim-host-os.ts';
import { createTestMachine, installBinary, serviceConfig } from './test-machine.ts';

const configPath = 'C:\\k\\containerd\\config.toml';

async function withContainerd(
  t: Parameters<typeof createTestMachine>[0],
  options: { hyperVRole: boolean; hyperVHandler: boolean },
) {
  const machine = await createTestMachine(t, {
    virtualization: { vm: true, extensions: true },
    features: options.hyperVRole
      ? { Containers: 'Installed', [hyperVFeature]: 'Installed' }
      : { Containers: 'Installed' },
  });
  await installBinary(machine, 'containerd', 'C:\\k\\containerd\\containerd.exe');
  await installBinary(
    machine,
    'containerd-shim-runhcs-v1',
    `C:\\k\\containerd\\${runhcsShimImageName}`,
  );
  await machine.fs.writeFileAtomic(
    configPath,
    containerdConfig(undefined, { hyperV: options.hyperVHandler }),
  );
  const os = new SimHostOS(machine);
  await os.createService(
    serviceConfig('containerd', {
      binaryPath: 'C:\\k\\containerd\\containerd.exe',
      args: ['--run-service', '--config', configPath],
    }),
  );
  await os.startService('containerd');
  return machine;
}

test('runhcs-wcow-hypervisor runs a sandbox where it is configured and the Hyper-V role is installed', async (t) => {
  const machine = await withContainerd(t, { hyperVRole: true, hyperVHandler: true });
  const shim = await runPodSandbox(machine, 'hv-1', 'runhcs-wcow-hypervisor');
  assert.ok(shim.alive);
  assert.ok((await runPodSandbox(machine, 'p-1', 'runhcs-wcow-process')).alive);
  assert.ok((await runPodSandbox(machine, 'p-2')).alive, 'no handler: the default');
});

test('a handler containerd does not declare fails as containerd says', async (t) => {
  const machine = await withContainerd(t, { hyperVRole: true, hyperVHandler: false });
  await assert.rejects(runPodSandbox(machine, 'hv-1', 'runhcs-wcow-hypervisor'), {
    message: 'failed to get sandbox runtime: no runtime for "runhcs-wcow-hypervisor" is configured',
  });
  assert.ok((await runPodSandbox(machine, 'p-1')).alive);
});

test('without the Hyper-V role the utility VM cannot start', async (t) => {
  const machine = await withContainerd(t, { hyperVRole: false, hyperVHandler: true });
  await assert.rejects(runPodSandbox(machine, 'hv-1', 'runhcs-wcow-hypervisor'), (error: Error) =>
    error.message.includes(`hcs::CreateComputeSystem hv-1@vm: ${hyperVNotInstalled}`),
  );
  assert.ok((await runPodSandbox(machine, 'p-1')).alive, 'process isolation still runs');
});

test('a VM without nested virtualization cannot start the utility VM, even with the role', async (t) => {
  const machine = await createTestMachine(t, {
    virtualization: { vm: true, extensions: false },
    features: { Containers: 'Installed', [hyperVFeature]: 'Installed' },
  });
  await installBinary(machine, 'containerd', 'C:\\k\\containerd\\containerd.exe');
  await installBinary(
    machine,
    'containerd-shim-runhcs-v1',
    `C:\\k\\containerd\\${runhcsShimImageName}`,
  );
  await machine.fs.writeFileAtomic(configPath, containerdConfig(undefined, { hyperV: true }));
  const os = new SimHostOS(machine);
  await os.createService(
    serviceConfig('containerd', {
      binaryPath: 'C:\\k\\containerd\\containerd.exe',
      args: ['--run-service', '--config', configPath],
    }),
  );
  await os.startService('containerd');
  await assert.rejects(runPodSandbox(machine, 'hv-1', 'runhcs-wcow-hypervisor'), (error: Error) =>
    error.message.includes(hyperVNotInstalled),
  );
});
