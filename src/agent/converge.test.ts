import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  callsOf,
  createAgentTestHost,
  prepareAsOperator,
  serviceStates,
  testManifest,
} from '../../sim/hosts/agent-test-host.ts';
import { errorCode } from '../errors/catalog.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { emptyState, readState, writeState } from './agent-state.ts';
import { convergeServices, installPayloadFiles, sha256 } from './converge.ts';
import { nodeVariableValues } from './node-files.ts';
import { removeStaleCopiesOf } from './replace-executable.ts';
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

test('a service in a restart loop is not started again, nor its dependents; others are', async (t) => {
  const { machine, calls, context } = await runningHost(t);
  const config = parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString());
  const before = pids(machine);
  assert.ok(machine.scm.crash('kubelet'));
  assert.ok(machine.scm.crash('kube-proxy'));
  assert.ok(machine.scm.crash('csi-proxy'));
  const converge = (restart?: Set<string>) =>
    convergeServices(context.hostOS, testManifest(), nodeVariableValues(config), emptyState(), {
      start: 'all',
      doNotRestart: new Set(['kubelet']),
      ...(restart ? { restart } : {}),
    });
  const result = await converge();
  assert.deepEqual(
    result.started,
    ['csi-proxy'],
    'kubelet and kube-proxy (which needs it) stay down',
  );
  assert.deepEqual(callsOf(calls, 'startService'), ['csi-proxy']);
  assert.equal(pids(machine).containerd, before.containerd, 'containerd untouched');
  assert.deepEqual(serviceStates(machine, ['kubelet', 'kube-proxy'] as const), {
    kubelet: 'stopped',
    'kube-proxy': 'stopped',
  });
  // A change of its files or registration (an explicit restart) may be the fix: it starts.
  const again = await converge(new Set(['kubelet']));
  assert.deepEqual(again.started, ['kubelet', 'kube-proxy']);
});

test('a held-back service that runs is stopped and not started again, with its dependents', async (t) => {
  const { machine, calls, context } = await runningHost(t);
  const config = parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString());
  const result = await convergeServices(
    context.hostOS,
    testManifest(),
    nodeVariableValues(config),
    emptyState(),
    { start: 'all', holdBack: new Set(['kube-proxy']) },
  );
  assert.deepEqual(result.started, []);
  assert.deepEqual(callsOf(calls, 'stopService'), ['kube-proxy']);
  assert.deepEqual(serviceStates(machine, allServices), {
    containerd: 'running',
    kubelet: 'running',
    'kube-proxy': 'stopped',
    'csi-proxy': 'running',
  });
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

  // Windows refuses to replace a running executable: the copy only succeeds after the stops.
  const written = await installPayloadFiles(context.hostOS, next, emptyState());
  assert.deepEqual(written, ['C:\\k\\kubelet.exe']);
  assert.deepEqual(
    calls.filter((c) => /^(stopService|copyFile) /.test(c)),
    ['stopService kube-proxy', 'stopService kubelet', `copyFile ${paths.payload}\\kubelet.exe`],
  );
  assert.deepEqual(await machine.fs.readFile('C:\\k\\kubelet.exe'), kubelet);
});

test('a service whose binary on disk differs from its manifest digest is not started', async (t) => {
  const { machine, calls, converge } = await runningHost(t);
  // Someone with write access to C:\k swaps the kubelet for their own program once it exits.
  assert.ok(machine.scm.crash('kubelet'));
  await machine.fs.writeFileAtomic('C:\\k\\kubelet.exe', 'winfleet-standin kubelet evil\n');

  await assert.rejects(converge(), (error: Error) => {
    assert.equal(errorCode(error), 'WF_SERVICE_BINARY_MISMATCH');
    assert.match(
      error.message,
      /^Not starting service kubelet: C:\\k\\kubelet\.exe has SHA-256 [0-9a-f]{64}, its manifest 1\.0\.0 says [0-9a-f]{64}/,
    );
    return true;
  });
  assert.deepEqual(callsOf(calls, 'startService'), []);
  assert.notEqual(serviceStates(machine, allServices).kubelet, 'running');
});

/** testManifest plus containerd's runhcs shim, a payload file no service runs. */
async function withShim(
  machine: Awaited<ReturnType<typeof runningHost>>['machine'],
  version: string,
  content: string,
) {
  const data = Buffer.from(content);
  await machine.fs.writeFileAtomic(`${paths.payload}\\containerd-shim-runhcs-v1.exe`, data);
  const manifest = testManifest(version);
  manifest.files.push({
    payload: 'containerd-shim-runhcs-v1.exe',
    path: shimPath,
    sha256: sha256(data),
  });
  return manifest;
}

const shimPath = 'C:\\k\\containerd-shim-runhcs-v1.exe';

/** A pod's shim: started by containerd, owned by no service, running the shim executable. */
const startShim = (machine: Awaited<ReturnType<typeof runningHost>>['machine']) =>
  machine.spawn({ binaryPath: shimPath, args: ['serve'], stdout: () => {}, stderr: () => {} });

test('an upgrade replaces an executable that processes of no service run: the old one moves aside', async (t) => {
  const { machine, context } = await runningHost(t);
  const host = context.hostOS;
  await installPayloadFiles(host, await withShim(machine, '1.0.1', 'shim v1\n'), emptyState());
  const pod1 = await startShim(machine);
  await machine.scm.stop('kube-proxy');
  await machine.scm.stop('kubelet');
  await machine.scm.stop('containerd');
  assert.ok(pod1.alive, 'stopping containerd leaves its shims running');

  // Windows will not overwrite the running shim (today's main failed here with EPERM).
  const written = await installPayloadFiles(
    host,
    await withShim(machine, '1.1.0', 'shim v2\n'),
    emptyState(),
  );
  assert.deepEqual(written, [shimPath]);
  assert.equal((await machine.fs.readFile(shimPath)).toString(), 'shim v2\n');
  const aside = (await host.listDirectory('C:\\k'))!.filter((n) => n.includes('.old'));
  assert.equal(aside.length, 1);
  assert.match(aside[0]!, /^containerd-shim-runhcs-v1\.exe\.old-\d+$/);
  assert.equal((await machine.fs.readFile(`C:\\k\\${aside[0]}`)).toString(), 'shim v1\n');

  // A second upgrade while the first pod still runs the oldest shim: a name of its own.
  const pod2 = await startShim(machine);
  await installPayloadFiles(host, await withShim(machine, '1.2.0', 'shim v3\n'), emptyState());
  const twoAside = (await host.listDirectory('C:\\k'))!.filter((n) => n.includes('.old'));
  assert.equal(twoAside.length, 2, `two copies aside: ${twoAside.join(', ')}`);
  assert.equal((await machine.fs.readFile(shimPath)).toString(), 'shim v3\n');

  // Once the pods end, the next pass removes the stale copies.
  pod1.kill();
  pod2.kill();
  assert.deepEqual(await removeStaleCopiesOf(host, [shimPath]), []);
  assert.deepEqual(
    (await host.listDirectory('C:\\k'))!.filter((n) => n.includes('.old')),
    [],
  );
});

test('a stale copy still running stays; one nothing runs goes at the next replacement', async (t) => {
  const { machine, context } = await runningHost(t);
  const host = context.hostOS;
  await installPayloadFiles(host, await withShim(machine, '1.0.1', 'shim v1\n'), emptyState());
  const pod = await startShim(machine);
  await installPayloadFiles(host, await withShim(machine, '1.1.0', 'shim v2\n'), emptyState());
  const [aside] = (await host.listDirectory('C:\\k'))!.filter((n) => n.includes('.old'));
  assert.deepEqual(await removeStaleCopiesOf(host, [shimPath]), [`C:\\k\\${aside}`]);
  // A copy left by an earlier agent under the fixed name is stale too.
  await machine.fs.writeFileAtomic(`${shimPath}.old`, 'older');
  pod.kill();
  await installPayloadFiles(host, await withShim(machine, '1.2.0', 'shim v3\n'), emptyState());
  assert.deepEqual(
    (await host.listDirectory('C:\\k'))!.filter((n) => n.includes('.old')),
    [],
  );
});

test('a changed service environment is a registration change: the service restarts and sees it', async (t) => {
  const { machine, calls, context } = await runningHost(t);
  const seen: (string | undefined)[] = [];
  machine.programs.register('kube-proxy.exe', {
    run: async (process) => {
      seen.push(process.env.get('KUBE_NETWORK'));
      return new Promise<number>((resolve) =>
        process.signal.addEventListener('abort', () => resolve(0), { once: true }),
      );
    },
  });
  const config = parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString());
  const manifest = testManifest();
  manifest.services = manifest.services.map((s) =>
    s.name === 'kube-proxy' ? { ...s, env: { KUBE_NETWORK: 'winfleet-{{nodeName}}' } } : s,
  );
  const result = await convergeServices(
    context.hostOS,
    manifest,
    nodeVariableValues(config),
    emptyState(),
    { start: 'all' },
  );
  assert.deepEqual(result.changed, ['kube-proxy']);
  assert.deepEqual(callsOf(calls, 'stopService'), ['kube-proxy']);
  assert.deepEqual(seen, [`winfleet-${config.nodeName}`]);
  assert.deepEqual(await context.hostOS.queryServiceEnvironment('kube-proxy'), {
    CONTAINERD_LOG_LEVEL: 'info',
    KUBE_NETWORK: `winfleet-${config.nodeName}`,
  });
  // The same environment again changes nothing.
  calls.length = 0;
  const again = await convergeServices(
    context.hostOS,
    manifest,
    nodeVariableValues(config),
    emptyState(),
    { start: 'all' },
  );
  assert.deepEqual(again, { changed: [], started: [] });
  assert.deepEqual(callsOf(calls, 'stopService'), []);
});

test('the environment winfleet wrote is recorded: a second pass does not query it', async (t) => {
  const { machine, calls, context } = await runningHost(t);
  const config = parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString());
  const manifest = testManifest();
  manifest.services = manifest.services.map((s) =>
    s.name === 'kube-proxy' ? { ...s, env: { KUBE_NETWORK: 'winfleet-{{nodeName}}' } } : s,
  );
  const state = emptyState();
  const pass = () =>
    convergeServices(context.hostOS, manifest, nodeVariableValues(config), state, {
      start: 'all',
    });
  assert.deepEqual((await pass()).changed, ['kube-proxy']);
  assert.deepEqual(state.serviceEnvironments?.['kube-proxy'], {
    CONTAINERD_LOG_LEVEL: 'info',
    KUBE_NETWORK: `winfleet-${config.nodeName}`,
  });
  calls.length = 0;
  assert.deepEqual(await pass(), { changed: [], started: [] });
  assert.deepEqual(callsOf(calls, 'queryServiceEnvironment'), []);
  // The record survives the state file, so the next run loop pass reads no environment either.
  await writeState(context.hostOS, state);
  const reread = await readState(context.hostOS);
  calls.length = 0;
  await convergeServices(context.hostOS, manifest, nodeVariableValues(config), reread, {
    start: 'all',
  });
  assert.deepEqual(callsOf(calls, 'queryServiceEnvironment'), []);
});
