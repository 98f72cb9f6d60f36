/**
 * Services run under kube-log-runner.exe (the manifest's logRunner): the registration, the
 * SHA-256 check of both executables before a start, and upgrades of either.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  callsOf,
  createAgentTestHost,
  prepareAsOperator,
  serviceStates,
  testManifest,
} from '../../sim/hosts/agent-test-host.ts';
import { standInBinary } from '../../sim/hosts/stand-in-binary.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { emptyState } from './agent-state.ts';
import { convergeServices, installPayloadFiles, sha256 } from './converge.ts';
import { nodeVariableValues } from './node-files.ts';
import { runAgent } from './run-agent.ts';

const runnerPath = 'C:\\k\\kube-log-runner.exe';
const runner = standInBinary('kube-log-runner', 'v1.36.5');

/** testManifest with the kubelet and kube-proxy under kube-log-runner.exe. */
function manifestWithRunner(version = '1.0.0', runnerData = runner): ServicesManifest {
  const manifest = testManifest(version);
  manifest.files.push({
    payload: 'kube-log-runner.exe',
    path: runnerPath,
    sha256: sha256(runnerData),
  });
  for (const service of manifest.services) {
    if (service.name === 'kubelet' || service.name === 'kube-proxy')
      service.logRunner = { binary: runnerPath, logFile: `C:\\k\\logs\\${service.name}.log` };
  }
  return manifest;
}

async function runningHost(t: Parameters<typeof createAgentTestHost>[0]) {
  const host = await createAgentTestHost(t);
  const manifest = manifestWithRunner();
  await prepareAsOperator(host.machine, manifest);
  await host.machine.fs.writeFileAtomic(`${paths.payload}\\kube-log-runner.exe`, runner);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  const config = parseAgentConfig((await host.machine.fs.readFile(paths.agentConfig)).toString());
  const values = nodeVariableValues(config);
  const converge = (next: ServicesManifest = manifest) =>
    convergeServices(host.context.hostOS, next, values, emptyState(), { start: 'all' });
  await converge();
  assert.deepEqual(serviceStates(host.machine, ['kubelet', 'kube-proxy']), {
    kubelet: 'running',
    'kube-proxy': 'running',
  });
  host.calls.length = 0;
  return { ...host, converge };
}

test('a service with a log runner is registered as kube-log-runner.exe running its program', async (t) => {
  const { machine } = await runningHost(t);
  assert.equal(
    machine.scm.query('kubelet')?.commandLine,
    `"${runnerPath}" -log-file=C:\\k\\logs\\kubelet.log C:\\k\\kubelet.exe --hostname-override=win-agent-test --cert-dir=C:\\k\\pki`,
  );
  assert.equal(
    machine.scm.query('containerd')?.commandLine,
    '"C:\\k\\containerd.exe"',
    'a service without a log runner runs its program directly',
  );
});

test('a service is not started when its kube-log-runner.exe differs from the manifest', async (t) => {
  const { machine, calls, converge } = await runningHost(t);
  // Someone with write access to C:\k swaps the runner once nothing runs it any more.
  assert.ok(machine.scm.crash('kube-proxy'));
  assert.ok(machine.scm.crash('kubelet'));
  await machine.fs.writeFileAtomic(runnerPath, 'winfleet-standin kube-log-runner evil\n');

  await assert.rejects(converge(), (error: Error) => {
    assert.match(
      error.message,
      /^Not starting service kubelet: C:\\k\\kube-log-runner\.exe has SHA-256 [0-9a-f]{64}, its manifest 1\.0\.0 says [0-9a-f]{64}/,
    );
    return true;
  });
  assert.deepEqual(callsOf(calls, 'startService'), []);
});

test('a new kube-log-runner.exe stops the services it runs before it is written; a new kubelet.exe still restarts the kubelet', async (t) => {
  const { machine, calls, context, converge } = await runningHost(t);
  const newRunner = standInBinary('kube-log-runner', 'v1.36.6');
  await machine.fs.writeFileAtomic(`${paths.payload}\\kube-log-runner.exe`, newRunner);
  const next = manifestWithRunner('1.1.0', newRunner);

  // Windows refuses to replace a running executable: the copy succeeds only after the stops.
  assert.deepEqual(await installPayloadFiles(context.hostOS, next, emptyState()), [runnerPath]);
  assert.deepEqual(
    calls.filter((c) => /^(stopService|copyFile) /.test(c)),
    [
      'stopService kube-proxy',
      'stopService kubelet',
      `copyFile ${paths.payload}\\kube-log-runner.exe`,
    ],
  );
  assert.deepEqual(await machine.fs.readFile(runnerPath), newRunner);
  await converge(next);
  assert.deepEqual(serviceStates(machine, ['kubelet', 'kube-proxy']), {
    kubelet: 'running',
    'kube-proxy': 'running',
  });

  calls.length = 0;
  const kubelet = standInBinary('kubelet', 'v1.36.6');
  await machine.fs.writeFileAtomic(`${paths.payload}\\kubelet.exe`, kubelet);
  const third = manifestWithRunner('1.2.0', newRunner);
  third.files = third.files.map((f) =>
    f.payload === 'kubelet.exe' ? { ...f, sha256: sha256(kubelet) } : f,
  );
  assert.deepEqual(await installPayloadFiles(context.hostOS, third, emptyState()), [
    'C:\\k\\kubelet.exe',
  ]);
  assert.deepEqual(
    calls.filter((c) => /^(stopService|copyFile) /.test(c)),
    ['stopService kube-proxy', 'stopService kubelet', `copyFile ${paths.payload}\\kubelet.exe`],
  );
});
