import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultPrograms, idleProgram } from '../../sim/hosts/programs.ts';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { connectedSimHost } from '../../sim/testkit/ssh-host.ts';
import { agentServiceConfig } from '../agent/converge.ts';
import type { Payload } from '../payload/payload.ts';
import { payloadFileOnDisk } from '../payload/payload-file.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import { syncPayload } from './payload-sync.ts';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

test('the operator copies the agent and its service shim, checked by SHA-256, and swaps both while they run', async (t) => {
  const { host, remote } = await connectedSimHost(t, {
    address: '127.0.0.151',
    // The agent idles (it is not bootstrapped here); it still never reports to the SCM.
    programs: () =>
      defaultPrograms().register('winfleet-agent.exe', {
        run: idleProgram,
        neverReportsToScm: true,
      }),
  });
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-payload-sync-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));

  const onHost = async (payload: Payload, name: string, path: string) => {
    const expected = payload.files.find((f) => f.name === name)!.sha256;
    assert.equal(sha256(await host.machine.fs.readFile(path)), expected, path);
  };

  const first = await writeStandInPayload(dir, { version: '1.36.5-wf.1' });
  const copied = await syncPayload(remote, first, (f) => payloadFileOnDisk(dir, f));
  assert.equal(copied.length, first.files.length);
  assert.equal(copied.at(-1), hostPaths.agentExe, 'the agent last');
  assert.equal(copied[0], hostPaths.serviceExe, 'its shim first');
  await onHost(first, 'winfleet-service.exe', hostPaths.serviceExe);
  await onHost(first, 'winfleet-agent.exe', hostPaths.agentExe);
  await onHost(first, 'kubelet.exe', `${hostPaths.payload}\\kubelet.exe`);
  assert.deepEqual(
    await syncPayload(remote, first, (f) => payloadFileOnDisk(dir, f)),
    [],
    'nothing differs: nothing copied',
  );

  // The agent service runs both files (Windows would refuse to overwrite them).
  const os = host.hostOS();
  await os.createService(agentServiceConfig());
  await os.startService('winfleet-agent');
  const next = await writeStandInPayload(dir, { version: '1.36.6-wf.1' });
  const replaced = await syncPayload(remote, next, (f) => payloadFileOnDisk(dir, f));
  assert.ok(replaced.includes(hostPaths.serviceExe) && replaced.includes(hostPaths.agentExe));
  await onHost(next, 'winfleet-service.exe', hostPaths.serviceExe);
  await onHost(next, 'winfleet-agent.exe', hostPaths.agentExe);
  // The running shim moved aside under a name of its own (replace-file), and stays while it runs.
  const aside = (await host.machine.fs.list('C:\\k\\winfleet'))
    .map((e) => e.name)
    .filter((n) => /^winfleet-service\.exe\.old-\d+$/.test(n));
  assert.equal(aside.length, 1, 'one copy aside');
  await onHost(first, 'winfleet-service.exe', `C:\\k\\winfleet\\${aside[0]}`);
  assert.equal((await os.queryService('winfleet-agent'))?.state, 'running');
});
