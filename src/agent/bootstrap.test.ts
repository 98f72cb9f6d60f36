import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  callsOf,
  createAgentTestHost,
  prepareAsOperator,
  serviceStates,
  testManifest,
  testNodeName,
} from '../../sim/hosts/agent-test-host.ts';
import { errorCode } from '../errors/catalog.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { emptyState, readState } from './agent-state.ts';
import { bootstrap, failedStep } from './bootstrap.ts';
import { agentServiceName, convergeServices, defaultRecovery } from './converge.ts';
import { nodeVariableValues } from './node-files.ts';
import { runAgent } from './run-agent.ts';

const allServices = ['containerd', 'kubelet', 'kube-proxy', 'csi-proxy'] as const;

test('bootstrap writes the node files, registers every service in start order with recovery and starts the bootstrap ones', async (t) => {
  const { machine, calls, context, stdout } = await createAgentTestHost(t);
  await prepareAsOperator(machine);

  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  assert.deepEqual(JSON.parse(stdout.join('')), {
    version: '1.0.0',
    nodeName: testNodeName,
    changed: [...allServices],
    started: ['containerd', 'kubelet'],
  });

  for (const file of [
    paths.caCert,
    paths.bootstrapKubeconfig,
    paths.kubeletConfig,
    paths.containerdConfig,
    paths.agentConfig,
    'C:\\k\\kubelet.exe',
  ]) {
    assert.ok(await machine.fs.tryReadFile(file), `${file} was not written`);
  }
  // The CNI config needs the Node's pod CIDR: the run loop writes it once the Node has one.
  assert.equal(await machine.fs.tryReadFile(paths.cniConfig), undefined);
  const kubeconfig = (await machine.fs.readFile(paths.bootstrapKubeconfig)).toString();
  assert.match(kubeconfig, /token: abcdef\.0123456789abcdef/);
  assert.match((await machine.fs.readFile(paths.kubeletConfig)).toString(), /maxPods: 110/);
  const agentConfig = (await machine.fs.readFile(paths.agentConfig)).toString();
  assert.doesNotMatch(
    agentConfig,
    /bootstrapToken|BEGIN CERTIFICATE/,
    'agent.json keeps no secret',
  );
  assert.equal(machine.env.get('KUBE_NETWORK'), 'winfleet');

  // Registered in start order (priorities, not manifest order), the agent itself last.
  assert.deepEqual(callsOf(calls, 'createService'), [...allServices, agentServiceName]);
  assert.deepEqual(callsOf(calls, 'startService'), ['containerd', 'kubelet', agentServiceName]);
  for (const name of [...allServices, agentServiceName]) {
    assert.deepEqual(machine.scm.config(name)?.recovery, defaultRecovery, name);
  }
  assert.deepEqual(machine.scm.config('kubelet')?.dependencies, ['containerd']);
  assert.match(
    machine.scm.config('kubelet')?.commandLine ?? '',
    /--hostname-override=win-agent-test/,
  );
  assert.deepEqual(serviceStates(machine, [...allServices, agentServiceName]), {
    containerd: 'running',
    kubelet: 'running',
    'kube-proxy': 'stopped',
    'csi-proxy': 'stopped',
    [agentServiceName]: 'running',
  });

  const state = await readState(context.hostOS);
  assert.equal(state.version, '1.0.0');
  assert.deepEqual(state.env.sort(), ['CONTAINERD_LOG_LEVEL', 'KUBE_NETWORK']);
  assert.ok(state.createdDirectories.includes('C:\\k\\pki'), state.createdDirectories.join());
});

test('bootstrap again changes nothing but restarting the bootstrap services', async (t) => {
  const { machine, calls, context, stdout } = await createAgentTestHost(t);
  await prepareAsOperator(machine);
  assert.equal(await runAgent(['bootstrap'], context), 0);
  const agentPid = machine.scm.query(agentServiceName)?.pid;
  calls.length = 0;
  stdout.length = 0;

  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  const result = JSON.parse(stdout.join('')) as { changed: string[]; started: string[] };
  assert.deepEqual(result.changed, []);
  assert.deepEqual(result.started, ['containerd', 'kubelet']);
  assert.deepEqual(callsOf(calls, 'createService'), []);
  assert.deepEqual(callsOf(calls, 'configureService'), []);
  // A kubelet whose Node was deleted registers it again only when it starts: dependents stop
  // first, and start again in order.
  assert.deepEqual(callsOf(calls, 'stopService'), ['kubelet', 'containerd']);
  assert.deepEqual(callsOf(calls, 'startService'), ['containerd', 'kubelet']);
  assert.equal(machine.scm.query(agentServiceName)?.pid, agentPid, 'the agent kept running');
});

test('a re-bootstrap without the kube-proxy kubeconfig stops kube-proxy and does not start it', async (t) => {
  const { machine, calls, context, stdout } = await createAgentTestHost(t);
  const manifest = testManifest();
  const proxy = manifest.services.find((s) => s.name === 'kube-proxy')!;
  proxy.args = [`--kubeconfig=${paths.kubeProxyKubeconfig}`];
  await prepareAsOperator(machine, manifest);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  // As the run loop leaves it once the kubeconfig was written: everything runs.
  await machine.fs.writeFileAtomic(paths.kubeProxyKubeconfig, 'kubeconfig');
  const config = parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString());
  await convergeServices(context.hostOS, manifest, nodeVariableValues(config), emptyState(), {
    start: 'all',
  });
  assert.equal(serviceStates(machine, allServices)['kube-proxy'], 'running');
  // The re-bootstrap finds the kubeconfig gone (a reset, a cleanup).
  await machine.fs.remove(paths.kubeProxyKubeconfig);
  calls.length = 0;
  stdout.length = 0;
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  assert.ok(callsOf(calls, 'stopService').includes('kube-proxy'));
  assert.ok(!callsOf(calls, 'startService').includes('kube-proxy'));
  assert.equal(serviceStates(machine, allServices)['kube-proxy'], 'stopped');
  assert.equal(serviceStates(machine, allServices).kubelet, 'running');
});

test('a bootstrap that cannot read its config names the step and the file', async (t) => {
  const { context, stdout } = await createAgentTestHost(t);
  assert.equal(await runAgent(['bootstrap'], context), 1);
  const result = JSON.parse(stdout.join('')) as { error: string; step: string };
  assert.equal(result.step, 'read-config');
  assert.match(result.error, /bootstrap\.json does not exist/);
});

test('a payload file whose hash differs from the manifest is refused before any service changes', async (t) => {
  const { machine, calls, context, stdout } = await createAgentTestHost(t);
  await prepareAsOperator(machine);
  await machine.fs.writeFileAtomic(`${paths.payload}\\kubelet.exe`, 'tampered');
  assert.equal(await runAgent(['bootstrap'], context), 1);
  const result = JSON.parse(stdout.join('')) as { error: string; step: string };
  assert.equal(result.step, 'install-payload');
  assert.match(result.error, /kubelet\.exe has SHA-256 [0-9a-f]{64}, the manifest says/);
  assert.deepEqual(callsOf(calls, 'createService'), []);
  assert.deepEqual(machine.scm.names(), []);
});

test('a failed bootstrap step is WF_AGENT_STEP_FAILED carrying the step, which the one-shot output reports', async (t) => {
  const { machine, context } = await createAgentTestHost(t);
  await prepareAsOperator(machine);
  await machine.fs.writeFileAtomic(`${paths.payload}\\kubelet.exe`, 'tampered');
  const error = await bootstrap(context).then(
    () => assert.fail('the tampered payload was installed'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_AGENT_STEP_FAILED');
  assert.equal(failedStep(error), 'install-payload');
  assert.match((error as Error).message, /^install-payload: .*kubelet\.exe has SHA-256/);
  assert.equal(failedStep(new Error('not a step')), undefined);
});
