import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentServiceConfig } from '../../src/agent/converge.ts';
import { serviceCommandLine } from '../../src/agent/windows/command-line.ts';
import { isServiceControlError } from '../../src/agent/windows/sc-output.ts';
import { serviceShimArgs } from '../../src/agent/windows/service-shim.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import { defaultPrograms, idleProgram, parseServiceShimArgs } from './programs.ts';
import { serviceLog } from './service-logs.ts';
import { SimHostOS } from './sim-host-os.ts';
import type { ProgramContext } from './sim-process.ts';
import { standInBinary } from './stand-in-binary.ts';
import {
  createTestMachine,
  installBinary,
  recordingProgram,
  serviceConfig,
} from './test-machine.ts';

function scError(code: number, args: RegExp) {
  return (error: unknown) => isServiceControlError(error, code) && args.test(error.message);
}

test('a service is stored with the command line the Windows HostOS would register', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  const config = serviceConfig('kubelet', {
    binaryPath: 'C:\\k\\kubelet.exe',
    args: ['--config=C:\\k\\kubelet-config.yaml', '--node-labels=a=b c', '--windows-service'],
  });
  await os.createService(config);
  const service = await os.queryService('KUBELET');
  assert.equal(service?.commandLine, serviceCommandLine(config.binaryPath, config.args));
  assert.equal(service?.state, 'stopped');
  assert.equal(service?.exitCode, 1077, 'never started');
  assert.equal(service?.pid, undefined);
  await assert.rejects(os.createService(config), scError(1073, /sc\.exe create kubelet/));
  assert.equal(await os.queryService('missing'), undefined);
  await assert.rejects(os.createService({ ...config, name: 'bad/name' }), { code: 'WF_INVARIANT' });
});

test('starting a service whose executable is missing fails with error 2', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  await os.createService(serviceConfig('containerd', { args: ['--run-service'] }));
  await assert.rejects(os.startService('containerd'), (e: unknown) =>
    scError(2, /The system cannot find the file specified/)(e),
  );
  assert.equal((await os.queryService('containerd'))?.state, 'stopped');
  await installBinary(machine, 'containerd');
  await os.startService('containerd');
  const running = await os.queryService('containerd');
  assert.equal(running?.state, 'running');
  assert.ok(running?.pid && running.pid > 0);
  await os.startService('containerd'); // 1056 is tolerated, as on Windows
});

test('dependencies start first; a running dependent blocks the stop with 1051', async (t) => {
  const machine = await createTestMachine(t);
  // This is about the SCM's order, not kube-proxy: its stand-in would need a network and an API.
  machine.programs.register('kube-proxy.exe', {
    run: idleProgram,
    serviceFlag: '--windows-service',
  });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'containerd');
  await installBinary(machine, 'kube-proxy');
  await os.createService(serviceConfig('containerd', { args: ['--run-service'] }));
  await os.createService(
    serviceConfig('kube-proxy', { args: ['--windows-service'], dependencies: ['containerd'] }),
  );
  const starts: string[] = [];
  machine.onServiceStarted((name) => starts.push(name));
  await os.startService('kube-proxy');
  assert.deepEqual(starts, ['containerd', 'kube-proxy']);
  await assert.rejects(os.stopService('containerd'), scError(1051, /sc\.exe stop containerd/));
  await os.stopService('kube-proxy');
  await os.stopService('containerd');
  assert.equal((await os.queryService('containerd'))?.state, 'stopped');
  assert.equal((await os.queryService('containerd'))?.exitCode, 0);
  await os.stopService('containerd'); // already stopped: not an error
});

test('missing, deleted and disabled dependencies fail the start with 1075 and 1068', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  await installBinary(machine, 'a');
  await installBinary(machine, 'b');
  await os.createService(serviceConfig('a', { dependencies: ['b'] }));
  await assert.rejects(os.startService('a'), scError(1075, /start a/));
  await os.createService(serviceConfig('b', { startType: 'disabled' }));
  await assert.rejects(os.startService('b'), scError(1058, /disabled/));
  await assert.rejects(os.startService('a'), scError(1068, /start a/));
});

test('a program that is not told it runs as a service never reports: 1053', async (t) => {
  // The SCM waits 30 s for the dispatcher on Windows; 200 ms here, as only the outcome counts.
  const machine = await createTestMachine(t, { timings: { serviceStartTimeoutMs: 200 } });
  // A program that keeps running without its service flag (the stand-in would exit: 1067).
  machine.programs.register('kube-proxy.exe', {
    run: idleProgram,
    serviceFlag: '--windows-service',
  });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'kube-proxy');
  await os.createService(serviceConfig('kube-proxy', { args: ['--v=2'] }));
  await assert.rejects(os.startService('kube-proxy'), scError(1053, /--windows-service/));
  const service = await os.queryService('kube-proxy');
  assert.equal(service?.state, 'stopped');
  assert.equal(service?.exitCode, 1053);
});

test('recovery restarts a failing service after the delay for that failure; the last repeats', async (t) => {
  const machine = await createTestMachine(t);
  const starts: number[] = [];
  machine.programs.register('flaky.exe', {
    run: recordingProgram(starts, { exitAfterMs: 20, code: 3 }),
  });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'flaky');
  await os.createService(
    serviceConfig('flaky', { recovery: { restartDelaysMs: [50, 1000], resetPeriodSeconds: 3600 } }),
  );
  await os.startService('flaky');
  await waitFor(() => starts.length >= 4, {
    description: 'four starts',
    timeoutMs: 15_000,
    intervalMs: 20,
  });
  await os.configureService(
    serviceConfig('flaky', { recovery: { restartDelaysMs: [], resetPeriodSeconds: 0 } }),
  );
  const gaps = starts.slice(1, 4).map((at, i) => at - starts[i]!);
  // The second delay is 20 times the first, so a loaded machine cannot make the first look like it.
  assert.ok(gaps[0]! >= 50 && gaps[0]! < 1000, `first restart after ${gaps[0]} ms`);
  assert.ok(gaps[1]! >= 1000, `second restart after ${gaps[1]} ms`);
  assert.ok(gaps[2]! >= 1000, `third restart after ${gaps[2]} ms (the last delay repeats)`);
  assert.ok(machine.scm.failureCount('flaky') >= 3);
  assert.ok(
    machine.scm
      .events()
      .some((e) => /flaky service terminated with the following service-specific error: 3/.test(e)),
  );
});

test('a crash counts as a failure; the count resets after the reset period', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  await installBinary(machine, 'containerd');
  await os.createService(
    serviceConfig('containerd', {
      args: ['--run-service'],
      recovery: { restartDelaysMs: [50], resetPeriodSeconds: 1 },
    }),
  );
  await os.startService('containerd');
  const firstPid = (await os.queryService('containerd'))!.pid;
  assert.equal(machine.scm.crash('containerd'), true);
  const crashed = await os.queryService('containerd');
  assert.equal(crashed?.state, 'stopped');
  assert.equal(crashed?.exitCode, 1067);
  const restarted = await waitFor(
    async () => {
      const s = await os.queryService('containerd');
      return s?.state === 'running' && s.pid !== firstPid ? s : undefined;
    },
    { description: 'containerd restarted', timeoutMs: 3000, intervalMs: 20 },
  );
  assert.notEqual(restarted.pid, firstPid);
  assert.equal(machine.scm.failureCount('containerd'), 1);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  machine.scm.crash('containerd');
  assert.equal(machine.scm.failureCount('containerd'), 1, 'reset after resetPeriodSeconds');
});

test('a service that exits 0 on its own is not restarted', async (t) => {
  const machine = await createTestMachine(t);
  const starts: number[] = [];
  machine.programs.register('once.exe', {
    run: recordingProgram(starts, { exitAfterMs: 10, code: 0 }),
  });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'once');
  await os.createService(
    serviceConfig('once', { recovery: { restartDelaysMs: [10], resetPeriodSeconds: 60 } }),
  );
  await os.startService('once');
  // The SCM decides on recovery when the process exits: once the exit is logged, a restart
  // would have been scheduled (and logged) already.
  await waitFor(
    () => machine.scm.events().some((e) => e.includes('once service exited on its own')),
    { description: 'the exit of once to be logged', timeoutMs: 3000, intervalMs: 10 },
  );
  assert.deepEqual(
    machine.scm.events().filter((e) => e.includes('corrective action')),
    [],
  );
  assert.equal(starts.length, 1);
  assert.equal((await os.queryService('once'))?.exitCode, 0);
});

test('deleting a running service marks it for deletion until it stops', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  await installBinary(machine, 'idle');
  await os.createService(serviceConfig('idle'));
  await os.startService('idle');
  machine.scm.delete('idle');
  assert.equal(machine.scm.isMarkedForDeletion('idle'), true);
  await assert.rejects(os.startService('idle'), scError(1072, /start idle/));
  await assert.rejects(os.configureService(serviceConfig('idle')), scError(1072, /config idle/));
  await os.stopService('idle');
  assert.equal(await os.queryService('idle'), undefined);
  await os.createService(serviceConfig('idle'));
  await os.deleteService('idle');
  await os.deleteService('idle'); // missing: not an error
  assert.equal(await os.queryService('idle'), undefined);
});

test('a program that ignores the stop control is killed after the stop timeout', async (t) => {
  const machine = await createTestMachine(t);
  machine.programs.register('stubborn.exe', {
    run: async () => {
      await new Promise((resolve) => setTimeout(resolve, 5000).unref());
      return 0;
    },
  });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'stubborn');
  await os.createService(serviceConfig('stubborn'));
  await os.startService('stubborn');
  const started = Date.now();
  await os.stopService('stubborn');
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 450 && elapsed < 2000, `stopped after ${elapsed} ms`);
  assert.equal((await os.queryService('stubborn'))?.state, 'stopped');
});

test('a new configuration applies at the next start', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  await installBinary(machine, 'svc');
  await os.createService(serviceConfig('svc', { args: ['--one'] }));
  await os.startService('svc');
  await os.configureService(serviceConfig('svc', { args: ['--two'], startType: 'auto' }));
  const process = machine.processes().find((p) => p.imageName === 'svc.exe')!;
  assert.match(process.commandLine, /--one/);
  await os.stopService('svc');
  await os.startService('svc');
  const next = machine.processes().find((p) => p.imageName === 'svc.exe')!;
  assert.match(next.commandLine, /--two/);
  assert.equal((await os.queryService('svc'))?.startType, 'auto');
});

// The agent's service: winfleet-agent.exe is a Node program that never calls the service
// dispatcher; winfleet-service.exe (the Go shim, simulated in programs.ts) does, and runs it.

/** The agent's files, and an agent program that records how each run ended. */
async function withAgentFiles(
  machine: Awaited<ReturnType<typeof createTestMachine>>,
  agent: (context: ProgramContext) => Promise<number>,
) {
  await machine.fs.writeFileAtomic(hostPaths.agentExe, standInBinary('winfleet-agent', 'v1'));
  await machine.fs.writeFileAtomic(hostPaths.serviceExe, standInBinary('winfleet-service', 'v1'));
  machine.programs.register('winfleet-agent.exe', { run: agent, neverReportsToScm: true });
}

const processNames = (machine: Awaited<ReturnType<typeof createTestMachine>>) =>
  machine
    .processes()
    .map((p) => p.imageName)
    .sort();

test('kubelet and kube-proxy report to the SCM only when pflag reads --windows-service as true', () => {
  const programs = defaultPrograms();
  for (const image of ['kubelet.exe', 'kube-proxy.exe']) {
    assert.equal(programs.reportsToScm(image, ['--windows-service']), true, image);
    assert.equal(programs.reportsToScm(image, ['--windows-service=1']), true, image);
    assert.equal(programs.reportsToScm(image, ['--windows-service=false']), false, image);
    assert.equal(programs.reportsToScm(image, ['--windows-service=0']), false, image);
    assert.equal(
      programs.reportsToScm(image, ['--windows-service', '--windows-service=F']),
      false,
      `${image}: the last one given wins`,
    );
    assert.equal(programs.reportsToScm(image, []), false, image);
    assert.equal(
      programs.reportsToScm(image, ['--windows-service', '--no-such-flag']),
      false,
      `${image}: pflag refuses the command line before the dispatcher is called`,
    );
  }
});

test('winfleet-agent.exe registered directly never reports to the SCM: 1053, as on Windows', async (t) => {
  assert.equal(defaultPrograms().reportsToScm('winfleet-agent.exe', ['run']), false);
  assert.equal(defaultPrograms().reportsToScm('winfleet-service.exe', []), true);
  // The SCM waits 30 s for the dispatcher on Windows; 200 ms here, as only the outcome counts.
  const machine = await createTestMachine(t, { timings: { serviceStartTimeoutMs: 200 } });
  await withAgentFiles(machine, idleProgram);
  const os = new SimHostOS(machine);
  await os.createService({
    ...agentServiceConfig(),
    binaryPath: hostPaths.agentExe,
    args: ['run'],
  });
  await assert.rejects(os.startService('winfleet-agent'), scError(1053, /start winfleet-agent/));
  const service = await os.queryService('winfleet-agent');
  assert.equal(service?.state, 'stopped');
  assert.equal(service?.exitCode, 1053);
  assert.deepEqual(processNames(machine), [], 'the agent was killed');
});

test('through winfleet-service.exe the agent runs as a service, and a stop stops both', async (t) => {
  const machine = await createTestMachine(t);
  const runs: { argv: string[]; ended?: string }[] = [];
  await withAgentFiles(machine, async (context) => {
    const run: (typeof runs)[number] = { argv: context.argv };
    runs.push(run);
    await idleProgram(context);
    run.ended = String((context.signal.reason as Error).message);
    return 0;
  });
  const os = new SimHostOS(machine);
  await os.createService(agentServiceConfig());
  await os.startService('winfleet-agent');
  const running = await os.queryService('winfleet-agent');
  assert.equal(running?.state, 'running');
  assert.equal(
    running?.commandLine,
    serviceCommandLine(hostPaths.serviceExe, agentServiceConfig().args),
  );
  // The simulated SCM reports RUNNING on its own clock; the shim may still be starting its child.
  await waitFor(() => processNames(machine).length === 2, {
    description: 'the shim and its agent',
    timeoutMs: 2000,
    intervalMs: 10,
  });
  assert.deepEqual(processNames(machine), ['winfleet-agent.exe', 'winfleet-service.exe']);
  assert.deepEqual(runs, [{ argv: ['run'] }], 'the agent runs as the shim child, with "run"');
  const shim = machine.processes().find((p) => p.imageName === 'winfleet-service.exe')!;
  assert.equal(running?.pid, shim.pid, 'the service process is the shim');

  await os.stopService('winfleet-agent');
  const stopped = await os.queryService('winfleet-agent');
  assert.equal(stopped?.state, 'stopped');
  assert.equal(stopped?.exitCode, 0);
  assert.deepEqual(processNames(machine), [], 'both processes ended');
  assert.equal(runs[0]?.ended, 'standard input closed', 'the agent was asked to stop, not killed');
  // No console: the shim's lines are in its log file, each after its UTC time.
  const log = await serviceLog(machine, 'winfleet-agent');
  assert.ok(
    log.some((l) =>
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z winfleet-service: started C:\\k\\winfleet\\winfleet-agent\.exe run \(pid \d+\)$/.test(
        l,
      ),
    ),
    log.join('\n'),
  );
});

test('an agent that exits non-zero fails the service, and recovery starts it again', async (t) => {
  const machine = await createTestMachine(t);
  const starts: number[] = [];
  await withAgentFiles(machine, recordingProgram(starts, { exitAfterMs: 20, code: 3 }));
  const os = new SimHostOS(machine);
  await os.createService({
    ...agentServiceConfig(),
    recovery: { restartDelaysMs: [30], resetPeriodSeconds: 3600 },
  });
  await os.startService('winfleet-agent');
  await waitFor(() => starts.length >= 3, {
    description: 'three agent starts',
    timeoutMs: 5000,
    intervalMs: 10,
  });
  await os.configureService({
    ...agentServiceConfig(),
    recovery: { restartDelaysMs: [], resetPeriodSeconds: 0 },
  });
  assert.ok(machine.scm.failureCount('winfleet-agent') >= 2);
  assert.ok(
    machine.scm
      .events()
      .some((e) =>
        /winfleet-agent service terminated with the following service-specific error: 3\. .*Restart the service/.test(
          e,
        ),
      ),
    machine.scm.events().join('\n'),
  );
});

test('an agent that ignores the stop is killed after --stop-timeout; the shim reports 1067', async (t) => {
  const machine = await createTestMachine(t, { timings: { stopTimeoutMs: 10_000 } });
  // Ignores the stop request: its process ends only when killed.
  await withAgentFiles(machine, () => new Promise<number>(() => {}));
  const os = new SimHostOS(machine, { stopTimeoutMs: 10_000 });
  const config = agentServiceConfig();
  await os.createService({
    ...config,
    args: serviceShimArgs(
      { logDir: hostPaths.agentLogs, stopTimeoutSeconds: 1 },
      hostPaths.agentExe,
      ['run'],
    ),
  });
  await os.startService('winfleet-agent');
  await os.stopService('winfleet-agent');
  assert.equal((await os.queryService('winfleet-agent'))?.exitCode, 1067);
  assert.deepEqual(processNames(machine), []);
  const log = await serviceLog(machine, 'winfleet-agent');
  assert.ok(
    log.some((l) => l.includes('did not stop within 1000 ms: killing it')),
    log.join('\n'),
  );
});

test('when the shim process dies, its agent dies with it (the job object)', async (t) => {
  const machine = await createTestMachine(t);
  await withAgentFiles(machine, idleProgram);
  const os = new SimHostOS(machine);
  await os.createService(agentServiceConfig());
  await os.startService('winfleet-agent');
  assert.equal(machine.scm.crash('winfleet-agent'), true);
  await waitFor(() => processNames(machine).length === 0, {
    description: 'the agent to end with its shim',
    timeoutMs: 2000,
    intervalMs: 10,
  });
});

test('a wrong shim command line stops the service at once with 87, saying why', async (t) => {
  const machine = await createTestMachine(t);
  await withAgentFiles(machine, idleProgram);
  const os = new SimHostOS(machine);
  await os.createService({
    ...agentServiceConfig(),
    args: ['--log-dir', hostPaths.agentLogs, hostPaths.agentExe, 'run'],
  });
  await os.startService('winfleet-agent');
  const service = await waitFor(
    async () => {
      const s = await os.queryService('winfleet-agent');
      return s?.state === 'stopped' ? s : undefined;
    },
    { description: 'the shim to stop', timeoutMs: 2000, intervalMs: 10 },
  );
  assert.equal(service.exitCode, 87);
  assert.deepEqual(processNames(machine), [], 'no agent was started');
  // As a service the shim reports 87 to the SCM and writes nothing: the message goes to a
  // console it does not have (main_windows.go), and no log file was opened yet.
  assert.deepEqual(await serviceLog(machine, 'winfleet-agent'), []);
  assert.equal(await machine.fs.stat(`${hostPaths.agentLogs}\\winfleet-agent.log`), undefined);
});

test('the simulated shim reads the command line as the Go shim does', () => {
  assert.deepEqual(parseServiceShimArgs(agentServiceConfig().args), {
    logDir: 'C:\\k\\winfleet\\logs',
    stopTimeoutMs: 30_000,
    program: 'C:\\k\\winfleet\\winfleet-agent.exe',
    programArgs: ['run'],
  });
  for (const [duration, ms] of [
    ['1s', 1000],
    ['1m30s', 90_000],
    ['1.5m', 90_000],
    ['10m', 600_000],
    ['2500ms', 2500],
  ] as const) {
    const args = [
      '--stop-timeout',
      duration,
      '--log-dir',
      'D:/logs',
      '--',
      '\\\\host\\share\\x.exe',
    ];
    assert.equal(parseServiceShimArgs(args).stopTimeoutMs, ms, duration);
  }
  assert.deepEqual(
    parseServiceShimArgs(['--log-dir', 'C:\\l', '--', 'C:\\x.exe', '--', '--log-dir', ''])
      .programArgs,
    ['--', '--log-dir', ''],
  );
  // The refusals are compared with the Go shim's own in scripts/service-shim.test.ts.
  assert.throws(
    () => parseServiceShimArgs(['--log-dir', 'C:\\l', '--', 'x.exe']),
    /not an absolute path/,
  );
});

test('the SCM waits Windows’ 30 s for the dispatcher, but a program that exits first fails the start at once: 1067', async (t) => {
  const machine = await createTestMachine(t);
  machine.programs.register('early.exe', {
    serviceFlag: '--windows-service',
    run: async () => 2,
  });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'early');
  await os.createService(serviceConfig('early'));
  // Without the race against the exit this start would take the full 30 s default.
  await assert.rejects(os.startService('early'), scError(1067, /start early/));
  const service = await os.queryService('early');
  assert.equal(service?.state, 'stopped');
});

test('a held service runs none of its program at any start until released, and is not restarted meanwhile', async (t) => {
  const machine = await createTestMachine(t);
  const starts: number[] = [];
  const running: string[] = [];
  machine.onServiceStarted((name) => running.push(name));
  machine.programs.register('held.exe', { run: recordingProgram(starts) });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'held');
  await os.createService(
    serviceConfig('held', { recovery: { restartDelaysMs: [10], resetPeriodSeconds: 60 } }),
  );
  const release = machine.holdService('HELD');
  for (let attempt = 0; attempt < 3; attempt++) {
    // Each start is accepted, as StartService accepts one for a program that then gives up.
    await os.startService('held');
    await waitFor(async () => (await os.queryService('held'))?.state === 'stopped', {
      description: `start ${attempt} of the held service to end`,
      timeoutMs: 3000,
      intervalMs: 5,
    });
    assert.equal((await os.queryService('held'))?.exitCode, 0);
  }
  assert.deepEqual(starts, [], 'its program never ran');
  assert.deepEqual(running, [], 'never reported running');
  assert.deepEqual(
    machine.scm.events().filter((e) => e.includes('corrective action')),
    [],
    'stopping with exit code 0 is no failure',
  );
  release();
  release(); // a second release changes nothing
  await os.startService('held');
  assert.equal(starts.length, 1, 'released: the program runs');
  assert.equal((await os.queryService('held'))?.state, 'running');
  assert.deepEqual(running, ['held']);
});

test('holds on a service count: it runs only once every hold is released', async (t) => {
  const machine = await createTestMachine(t);
  const starts: number[] = [];
  machine.programs.register('twice.exe', { run: recordingProgram(starts) });
  const os = new SimHostOS(machine);
  await installBinary(machine, 'twice');
  await os.createService(serviceConfig('twice'));
  const first = machine.holdService('twice');
  const second = machine.holdService('twice');
  first();
  await os.startService('twice');
  await waitFor(async () => (await os.queryService('twice'))?.state === 'stopped', {
    description: 'the still-held start to end',
    timeoutMs: 3000,
    intervalMs: 5,
  });
  assert.deepEqual(starts, []);
  second();
  await os.startService('twice');
  assert.equal(starts.length, 1);
});
