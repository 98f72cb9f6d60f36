/**
 * The simulated kube-log-runner.exe, and what a service's output becomes: a service has no
 * console, so only what a program writes to a file is kept.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isServiceControlError } from '../../src/agent/windows/sc-output.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { parseKubeLogRunnerArgs } from './kube-log-runner.ts';
import { defaultPrograms, idleProgram } from './programs.ts';
import { serviceLog } from './service-logs.ts';
import { SimHostOS } from './sim-host-os.ts';
import type { SimProgram } from './sim-process.ts';
import { createTestMachine, installBinary, serviceConfig } from './test-machine.ts';

const runner = 'C:\\k\\kube-log-runner.exe';
const logFile = 'C:\\k\\logs\\talker.log';

/** Prints to both streams, reports to the SCM, runs until stopped, exits with --exit. */
const talker: SimProgram = async (context) => {
  context.stdout('talker: to stdout\n');
  context.stderr('talker: to stderr\n');
  await idleProgram(context);
  context.stdout('talker: stopping\n');
  const exit = context.argv.find((a) => a.startsWith('--exit='));
  return exit ? Number(exit.slice(7)) : 0;
};

async function machineWithTalker(t: Parameters<typeof createTestMachine>[0]) {
  const machine = await createTestMachine(t, {
    programs: defaultPrograms().register('talker.exe', { run: talker }),
  });
  await installBinary(machine, 'kube-log-runner');
  await installBinary(machine, 'talker');
  await machine.fs.mkdir('C:\\k\\logs', { recursive: true });
  return { machine, os: new SimHostOS(machine) };
}

const logText = async (machine: Awaited<ReturnType<typeof machineWithTalker>>['machine']) =>
  (await machine.fs.tryReadFile(logFile))?.toString() ?? '';

test('a service’s own output is lost; under kube-log-runner it lands in the log file', async (t) => {
  const { machine, os } = await machineWithTalker(t);
  await os.createService(serviceConfig('bare', { binaryPath: 'C:\\k\\talker.exe' }));
  await os.createService(
    serviceConfig('logged', {
      binaryPath: runner,
      args: [`-log-file=${logFile}`, 'C:\\k\\talker.exe'],
    }),
  );
  await os.startService('bare');
  await os.startService('logged');
  await waitFor(async () => (await logText(machine)).includes('to stderr'), {
    description: 'the output in the log file',
    timeoutMs: 3000,
    intervalMs: 20,
  });
  // stdout and, by default (-redirect-stderr=true), stderr go to the file; nothing else.
  assert.equal(await logText(machine), 'talker: to stdout\ntalker: to stderr\n');
  assert.deepEqual(await serviceLog(machine, 'logged'), ['talker: to stdout', 'talker: to stderr']);
  assert.deepEqual(await serviceLog(machine, 'bare'), [], 'no console, no log file');

  // A command run over SSH keeps its output.
  const output: string[] = [];
  const process = await machine.spawn({
    binaryPath: 'C:\\k\\talker.exe',
    args: [],
    stdout: (text) => output.push(text),
    stderr: (text) => output.push(text),
  });
  process.requestStop();
  await process.exited;
  assert.deepEqual(output, ['talker: to stdout\n', 'talker: to stderr\n', 'talker: stopping\n']);
});

test('a stop reaches the program; the runner exits 0 after it, or 1 when it fails', async (t) => {
  const { machine, os } = await machineWithTalker(t);
  for (const [name, code, expected] of [
    ['ok', 0, 0],
    ['failing', 3, 1],
  ] as const) {
    await os.createService(
      serviceConfig(name, {
        binaryPath: runner,
        args: [`-log-file=C:\\k\\logs\\${name}.log`, 'C:\\k\\talker.exe', `--exit=${code}`],
      }),
    );
    await os.startService(name);
    await os.stopService(name);
    const service = await os.queryService(name);
    assert.equal(service?.state, 'stopped');
    assert.equal(service?.exitCode, expected, name);
    assert.match(
      (await machine.fs.readFile(`C:\\k\\logs\\${name}.log`)).toString(),
      /talker: stopping\n$/,
    );
  }
  assert.deepEqual(
    machine.processes().map((p) => p.imageName),
    [],
    'the runner and its program ended',
  );
});

test('the service starts only if the program it runs calls the dispatcher (no --windows-service: 1053)', async (t) => {
  const machine = await createTestMachine(t, {
    programs: defaultPrograms().register('daemon.exe', {
      run: idleProgram,
      serviceFlag: '--windows-service',
    }),
    timings: { serviceStartTimeoutMs: 200 },
  });
  await installBinary(machine, 'kube-log-runner');
  await installBinary(machine, 'daemon');
  await machine.fs.mkdir('C:\\k\\logs', { recursive: true });
  const os = new SimHostOS(machine);
  for (const [name, flags] of [
    ['console', []],
    ['service', ['--windows-service']],
  ] as const) {
    await os.createService(
      serviceConfig(name, {
        binaryPath: runner,
        args: [`-log-file=C:\\k\\logs\\${name}.log`, 'C:\\k\\daemon.exe', ...flags],
      }),
    );
  }
  await assert.rejects(os.startService('console'), (error: unknown) => {
    assert.ok(isServiceControlError(error, 1053), String(error));
    return true;
  });
  await os.startService('service');
  assert.equal((await os.queryService('service'))?.state, 'running');
  // Arguments that start no program: nothing calls the dispatcher.
  assert.equal(machine.programs.reportsToScm('kube-log-runner.exe', ['-log-file=x.log']), false);
});

test('flags are parsed as Go’s flag package parses them; a wrong one exits 2, a missing log directory 1', async (t) => {
  const parsed = parseKubeLogRunnerArgs([
    '--log-file',
    'C:\\k\\logs\\a.log',
    '-log-file-size=100M',
    '-also-stdout',
    '-redirect-stderr=false',
    '-log-file-age=168h',
    'C:\\k\\kubelet.exe',
    '--v=2',
    '-also-stdout',
  ]);
  assert.equal(parsed.logFile, 'C:\\k\\logs\\a.log');
  assert.equal(parsed.logFileSize, 100e6);
  assert.equal(parsed.logFileAgeMs, 168 * 3.6e6);
  assert.equal(parsed.alsoStdout, true);
  assert.equal(parsed.redirectStderr, false);
  assert.deepEqual(parsed.command, ['C:\\k\\kubelet.exe', '--v=2', '-also-stdout']);
  for (const [argv, message] of [
    [['-log_file=x', 'p.exe'], 'flag provided but not defined: -log_file'],
    [['-log-file'], 'flag needs an argument: -log-file'],
    [['-flush-interval=5', 'p.exe'], 'invalid value "5" for flag -flush-interval: parse error'],
    [['-also-stdout=yes', 'p.exe'], 'invalid boolean value "yes" for -also-stdout: parse error'],
    [['---log-file=x', 'p.exe'], 'bad flag syntax: ---log-file=x'],
  ] as const) {
    assert.throws(() => parseKubeLogRunnerArgs(argv), { message }, argv.join(' '));
  }

  const { machine, os } = await machineWithTalker(t);
  const exitOf = async (name: string, args: string[]) => {
    await os.createService(serviceConfig(name, { binaryPath: runner, args }));
    await os.startService(name).catch(() => {});
    return waitFor(
      async () => {
        const s = await os.queryService(name);
        return s?.state === 'stopped' ? s.exitCode : undefined;
      },
      { description: `${name} to stop`, timeoutMs: 3000, intervalMs: 20 },
    );
  };
  // As on Windows the runner itself never calls the dispatcher; the SCM sees the exit first.
  assert.equal(await exitOf('bad-flag', ['-logfile=x', 'C:\\k\\talker.exe']), 2);
  assert.equal(await exitOf('no-dir', ['-log-file=C:\\k\\missing\\x.log', 'C:\\k\\talker.exe']), 1);
  assert.equal(await machine.fs.stat('C:\\k\\missing'), undefined);
});
