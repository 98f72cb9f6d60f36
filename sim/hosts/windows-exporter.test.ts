/** The simulated windows_exporter v0.31.3: its collectors, its flags and its log. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../../src/kube/wait-for.ts';
import { SimHostOS } from './sim-host-os.ts';
import { createTestMachine, installBinary, serviceConfig } from './test-machine.ts';
import { expandEnabledCollectors } from './windows-exporter.ts';

const logFile = 'C:\\k\\logs\\windows_exporter.log';

/** Starts windows_exporter as a service with `args`; resolves when it runs or has stopped. */
async function exporterService(t: Parameters<typeof createTestMachine>[0], args: string[]) {
  const machine = await createTestMachine(t);
  await installBinary(machine, 'windows_exporter');
  await machine.fs.mkdir('C:\\k\\logs', { recursive: true });
  const os = new SimHostOS(machine);
  await os.createService(serviceConfig('windows_exporter', { args }));
  await os.startService('windows_exporter');
  const log = async () => (await machine.fs.tryReadFile(logFile))?.toString() ?? '';
  return { machine, os, log };
}

test('with the collectors of the services manifest before this fix it exits: unknown collector cs', async (t) => {
  // The list src/payload/node-services.ts had: v0.31.3 has no "cs" collector (it went in v0.30).
  const { os, log } = await exporterService(t, [
    '--collectors.enabled=cpu,cs,logical_disk,memory,net,os,service,system,container',
    `--log.file=${logFile}`,
  ]);
  const stopped = await waitFor(
    async () => {
      const s = await os.queryService('windows_exporter');
      return s?.state === 'stopped' ? s : undefined;
    },
    { description: 'windows_exporter to exit', timeoutMs: 5000, intervalMs: 20 },
  );
  assert.equal(stopped.exitCode, 1);
  assert.match(
    await log(),
    /^time=\S+ level=ERROR source=main\.go:\d+ msg="couldn't enable collectors" err="unknown collector cs"$/m,
  );
});

test('with collectors v0.31.3 has, it runs and logs to its --log.file', async (t) => {
  const { os, log } = await exporterService(t, [
    '--collectors.enabled=cpu,cpu_info,container,logical_disk,memory,net,os,service,system',
    `--log.file=${logFile}`,
  ]);
  assert.equal((await os.queryService('windows_exporter'))?.state, 'running');
  await waitFor(async () => (await log()).includes('Enabled collectors: cpu, cpu_info'), {
    description: 'the exporter to log its collectors',
    timeoutMs: 5000,
    intervalMs: 20,
  });
  await os.stopService('windows_exporter');
  assert.match(await log(), /msg="Shutting down windows_exporter via service control"/);
  assert.equal((await os.queryService('windows_exporter'))?.exitCode, 0);
});

test('a flag v0.31.3 does not have stops it before its logger exists: the message is lost', async (t) => {
  const { machine, os } = await exporterService(t, [
    '--collectors.enabled=cpu',
    `--log.file=${logFile}`,
    '--collector.cs.enabled=true',
  ]);
  const stopped = await waitFor(
    async () => {
      const s = await os.queryService('windows_exporter');
      return s?.state === 'stopped' ? s : undefined;
    },
    { description: 'windows_exporter to exit', timeoutMs: 5000, intervalMs: 20 },
  );
  assert.equal(stopped.exitCode, 1);
  // kingpin's "unknown long flag" goes to slog's default logger on standard error, which a
  // service does not have: nothing reaches the log file.
  assert.equal((await machine.fs.tryReadFile(logFile))?.toString() ?? '', '');
});

test('"[defaults]" expands to the default collectors; repeats next to each other collapse', () => {
  assert.deepEqual(expandEnabledCollectors('[defaults],cpu_info', 'cpu,os'), [
    'cpu',
    'os',
    'cpu_info',
  ]);
  assert.deepEqual(expandEnabledCollectors('cpu,cpu,os,cpu', 'x'), ['cpu', 'os', 'cpu']);
});
