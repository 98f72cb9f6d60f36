import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  callsOf,
  createAgentTestHost,
  prepareAsOperator,
  serviceStates,
  testManifest,
} from '../../sim/hosts/agent-test-host.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { emptyState } from './agent-state.ts';
import { convergeServices, installPayloadFiles, sha256 } from './converge.ts';
import { nodeVariableValues } from './node-files.ts';
import { runAgent } from './run-agent.ts';

const allServices = ['containerd', 'kubelet', 'kube-proxy', 'csi-proxy'] as const;

/** A bootstrapped host, then every service started, as the run loop's first pass leaves it. */
async function runningHost(t: Parameters<typeof createAgentTestHost>[0]) {
  const host = await createAgentTestHost(t);
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  const config = parseAgentConfig((await host.machine.fs.readFile(paths.agentConfig)).toString());
  const values = nodeVariableValues(config);
  const converge = (restart?: Set<string>) =>
    convergeServices(host.context.hostOS, testManifest(), values, emptyState(), {
      start: 'all',
      ...(restart ? { restart } : {}),
    });
  await converge();
  assert.deepEqual(serviceStates(host.machine, allServices), {
    containerd: 'running',
    kubelet: 'running',
    'kube-proxy': 'running',
    'csi-proxy': 'running',
  });
  host.calls.length = 0;
  return { ...host, converge };
}

const pids = (machine: Awaited<ReturnType<typeof runningHost>>['machine']) =>
  Object.fromEntries(allServices.map((n) => [n, machine.scm.query(n)?.pid]));

test('converge starts services that died, in start order, and leaves running ones alone', async (t) => {
  const { machine, calls, converge } = await runningHost(t);
  const before = pids(machine);
  assert.ok(machine.scm.crash('kube-proxy'));
  assert.ok(machine.scm.crash('containerd'));

  const result = await converge();
  assert.deepEqual(result, { changed: [], started: ['containerd', 'kube-proxy'] });
  assert.deepEqual(callsOf(calls, 'startService'), ['containerd', 'kube-proxy']);
  assert.deepEqual(callsOf(calls, 'stopService'), []);
  const after = pids(machine);
  assert.equal(after.kubelet, before.kubelet, 'kubelet was not restarted');
  assert.equal(after['csi-proxy'], before['csi-proxy'], 'csi-proxy was not restarted');
  assert.notEqual(after.containerd, before.containerd);
  assert.equal(serviceStates(machine, allServices).containerd, 'running');
});

test('restarting a service takes its dependents down first and brings all back in start order', async (t) => {
  const { machine, calls, converge } = await runningHost(t);
  const before = pids(machine);

  await converge(new Set(['containerd']));
  assert.deepEqual(callsOf(calls, 'stopService'), ['kube-proxy', 'kubelet', 'containerd']);
  assert.deepEqual(callsOf(calls, 'startService'), ['containerd', 'kubelet', 'kube-proxy']);
  const after = pids(machine);
  for (const name of ['containerd', 'kubelet', 'kube-proxy'])
    assert.notEqual(after[name], before[name], `${name} runs a new process`);
  assert.equal(after['csi-proxy'], before['csi-proxy'], 'an unrelated service kept running');
});

test('a new payload binary stops the services that run it and their dependents before it is written', async (t) => {
  const { machine, calls, context } = await runningHost(t);
  const next = testManifest('1.1.0');
  const kubelet = Buffer.from('winfleet-standin kubelet v1.36.6\n');
  await machine.fs.writeFileAtomic(`${paths.payload}\\kubelet.exe`, kubelet);
  next.files = next.files.map((f) =>
    f.payload === 'kubelet.exe' ? { ...f, sha256: sha256(kubelet) } : f,
  );

  // Windows refuses to replace a running executable: the write only succeeds after the stops.
  const written = await installPayloadFiles(context.hostOS, next, emptyState());
  assert.deepEqual(written, ['C:\\k\\kubelet.exe']);
  assert.deepEqual(
    calls.filter((c) => /^(stopService|writeFile) /.test(c)),
    ['stopService kube-proxy', 'stopService kubelet', 'writeFile C:\\k\\kubelet.exe'],
  );
  assert.deepEqual(await machine.fs.readFile('C:\\k\\kubelet.exe'), kubelet);
});

test('a service whose binary on disk differs from its manifest digest is not started', async (t) => {
  const { machine, calls, converge } = await runningHost(t);
  // Someone with write access to C:\k swaps the kubelet for their own program once it exits.
  assert.ok(machine.scm.crash('kubelet'));
  await machine.fs.writeFileAtomic('C:\\k\\kubelet.exe', 'winfleet-standin kubelet evil\n');

  await assert.rejects(converge(), (error: Error) => {
    assert.match(
      error.message,
      /^Not starting service kubelet: C:\\k\\kubelet\.exe has SHA-256 [0-9a-f]{64}, its manifest 1\.0\.0 says [0-9a-f]{64}/,
    );
    return true;
  });
  assert.deepEqual(callsOf(calls, 'startService'), []);
  assert.notEqual(serviceStates(machine, allServices).kubelet, 'running');
});
