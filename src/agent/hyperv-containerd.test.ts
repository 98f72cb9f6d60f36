import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse as parseToml } from 'smol-toml';
import { createAgentTestHost, testManifest } from '../../sim/hosts/agent-test-host.ts';
import { paths } from './agent-config.ts';
import { readState } from './agent-state.ts';
import { applyHostSettings } from './host-settings.ts';
import { containerdConfig, declaresHyperV, hyperVLabelled } from './node-files.ts';

type Toml = Record<string, Record<string, Record<string, Record<string, unknown>>>>;

test('with Hyper-V, config.toml declares runhcs-wcow-hypervisor with SandboxIsolation = 1', () => {
  const parsed = JSON.parse(
    JSON.stringify(parseToml(containerdConfig(undefined, { hyperV: true }))),
  ) as Toml;
  const containerd = parsed.plugins!['io.containerd.grpc.v1.cri']!.containerd as {
    default_runtime_name: string;
    runtimes: Record<string, { runtime_type: string; options?: Record<string, unknown> }>;
  };
  assert.equal(containerd.default_runtime_name, 'runhcs-wcow-process');
  assert.deepEqual(containerd.runtimes['runhcs-wcow-hypervisor'], {
    runtime_type: 'io.containerd.runhcs.v1',
    options: { SandboxIsolation: 1 },
  });
  assert.deepEqual(containerd.runtimes['runhcs-wcow-process'], {
    runtime_type: 'io.containerd.runhcs.v1',
  });
  assert.ok(declaresHyperV(containerdConfig(undefined, { hyperV: true })));
  assert.ok(!declaresHyperV(containerdConfig()));
  assert.ok(!/hypervisor/.test(containerdConfig()), 'nothing without the opt-in');
  assert.equal(hyperVLabelled({ 'winfleet.io/hyperv-isolation': 'true' }), true);
  assert.equal(hyperVLabelled({ 'winfleet.io/hyperv-isolation': 'True' }), false);
  assert.equal(hyperVLabelled(undefined), false);
});

test('the Node label adds and removes the handler (containerd restarted once); no Node read, nothing changes', async (t) => {
  const { machine, context } = await createAgentTestHost(t);
  const host = context.hostOS;
  await machine.fs.writeFileAtomic(paths.containerdConfig, containerdConfig());
  const state = await readState(host);
  const read = async () => (await machine.fs.readFile(paths.containerdConfig)).toString();
  const restarts = async (hyperV: boolean | undefined) => [
    ...(await applyHostSettings(host, testManifest(), state, { hyperV })).restart,
  ];
  assert.deepEqual(await restarts(undefined), []);
  assert.ok(!declaresHyperV(await read()));
  assert.deepEqual(await restarts(true), ['containerd']);
  assert.ok(declaresHyperV(await read()));
  assert.deepEqual(await restarts(true), [], 'once');
  assert.deepEqual(await restarts(undefined), [], 'the Node not read: kept');
  assert.ok(declaresHyperV(await read()));
  assert.deepEqual(await restarts(false), ['containerd']);
  assert.ok(!declaresHyperV(await read()));
});
