import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  podSandboxes,
  runhcsShimImageName,
  runPodSandbox,
  stopPodSandbox,
} from './containerd-standin.ts';
import { SimHostOS } from './sim-host-os.ts';
import { createTestMachine, installBinary, serviceConfig } from './test-machine.ts';

const shimPath = `C:\\k\\containerd\\${runhcsShimImageName}`;

async function withContainerd(t: Parameters<typeof createTestMachine>[0], features = {}) {
  const machine = await createTestMachine(t, { features });
  await installBinary(machine, 'containerd', 'C:\\k\\containerd\\containerd.exe');
  await installBinary(machine, 'containerd-shim-runhcs-v1', shimPath);
  const os = new SimHostOS(machine);
  await os.createService(
    serviceConfig('containerd', {
      binaryPath: 'C:\\k\\containerd\\containerd.exe',
      args: ['--run-service'],
    }),
  );
  await os.startService('containerd');
  return { machine, os };
}

test('a pod shim outlives containerd, keeps its executable locked, and dies at reboot', async (t) => {
  const { machine, os } = await withContainerd(t);
  const shim = await runPodSandbox(machine, 'sandbox-1');
  assert.equal(shim.imageName, runhcsShimImageName);
  await os.stopService('containerd');
  assert.ok(shim.alive, 'stopping containerd does not stop its shims');
  assert.deepEqual(podSandboxes(machine), ['sandbox-1']);
  await assert.rejects(machine.fs.writeFileAtomic(shimPath, 'v2'), { code: 'EPERM' });
  await assert.rejects(machine.fs.writeFile(shimPath, 'v2'), { code: 'EBUSY' });
  await assert.rejects(os.removePath(shimPath), { code: 'EPERM' });
  assert.equal(await os.removeFileIfUnused(shimPath), false);
  // Windows renames a running image: that is how an upgrade replaces it.
  await os.renamePath(shimPath, `${shimPath}.old-1`);
  await os.writeFile(shimPath, 'v2');
  assert.equal(await os.removeFileIfUnused(`${shimPath}.old-1`), false, 'still running');
  await machine.reboot();
  assert.equal(shim.alive, false);
  assert.deepEqual(podSandboxes(machine), []);
  assert.equal(await os.removeFileIfUnused(`${shimPath}.old-1`), true);
});

test('stopping a sandbox ends its shim; a sandbox needs a running containerd', async (t) => {
  const { machine, os } = await withContainerd(t);
  const shim = await runPodSandbox(machine, 'a');
  assert.equal(await runPodSandbox(machine, 'a'), shim, 'one shim per sandbox');
  await stopPodSandbox(machine, 'a');
  assert.equal(shim.alive, false);
  await os.writeFile(shimPath, 'v2');
  await os.stopService('containerd');
  await assert.rejects(
    runPodSandbox(machine, 'b'),
    /code = Unavailable .*pipe\\\\containerd-containerd: The system cannot find the file specified/,
  );
  await assert.rejects(runPodSandbox(machine, 'bad id'), RangeError);
});

test('without the Containers feature containerd runs but no sandbox starts: vmcompute.dll is missing', async (t) => {
  const { machine, os } = await withContainerd(t, { Containers: 'Available' });
  assert.equal((await os.queryService('containerd'))?.state, 'running');
  await assert.rejects(
    runPodSandbox(machine, 'pod-1'),
    /failed to create shim task: hcs::CreateComputeSystem pod-1: The specified module could not be found\.: unknown/,
  );
  assert.deepEqual(podSandboxes(machine), []);
  assert.equal(machine.features.install('Containers').restartNeeded, 'Yes');
  await assert.rejects(runPodSandbox(machine, 'pod-1'), /module could not be found/);
  await machine.reboot();
  assert.equal(machine.features.get('containers')?.state, 'Installed');
  await os.startService('containerd');
  await runPodSandbox(machine, 'pod-1');
});
