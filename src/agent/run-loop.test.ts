import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  callsOf,
  createAgentTestHost,
  prepareAsOperator,
  serviceStates,
} from '../../sim/hosts/agent-test-host.ts';
import { SimHostOS } from '../../sim/hosts/sim-host-os.ts';
import { standInBinary } from '../../sim/hosts/stand-in-binary.ts';
import { desiredServicesVersionAnnotation } from '../api/node-annotations.ts';
import { commandAnnotations, signatureAnnotation } from '../api/node-commands.ts';
import { waitFor } from '../kube/wait-for.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { readState } from './agent-state.ts';
import { agentServiceName } from './converge.ts';
import { runAgent } from './run-agent.ts';
import {
  agentReplacedExitCode,
  checkOnce,
  environmentAwaitingReboot,
  stopWhenInputEnds,
  watchedFields,
} from './run-loop.ts';

// Without C:\k\kubeconfig (no kubelet ever bootstraps here) the run loop has no cluster
// client: these tests cover what it does on the host alone. What it does with the Node and
// the manifest ConfigMaps is covered end to end (src/controllers/hosts/*.e2e.test.ts).

const allServices = ['containerd', 'kubelet', 'kube-proxy', 'csi-proxy'] as const;

async function bootstrapped(t: Parameters<typeof createAgentTestHost>[0], signal?: AbortSignal) {
  const host = await createAgentTestHost(t, signal ? { signal } : {});
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  host.calls.length = 0;
  return host;
}

test('one check starts the services bootstrap left stopped and records the applied version', async (t) => {
  const { machine, calls, context } = await bootstrapped(t);
  const config = parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString());

  assert.equal(await checkOnce(context, config), '1.0.0');
  assert.deepEqual(callsOf(calls, 'startService'), ['kube-proxy', 'csi-proxy']);
  assert.deepEqual(serviceStates(machine, allServices), {
    containerd: 'running',
    kubelet: 'running',
    'kube-proxy': 'running',
    'csi-proxy': 'running',
  });
  assert.equal((await readState(context.hostOS)).version, '1.0.0');

  calls.length = 0;
  await checkOnce(context, config);
  assert.deepEqual(callsOf(calls, 'startService'), [], 'a second check starts nothing');
});

test('the loop restarts a service that died, ends when a new agent executable is installed, and stops when asked', async (t) => {
  const stop = new AbortController();
  t.after(() => stop.abort());
  const { machine, calls, context, stderr } = await bootstrapped(t, stop.signal);
  const loop = runAgent(['run'], context);
  await waitFor(() => machine.scm.query('csi-proxy')?.state === 'running', {
    description: 'the run loop to start csi-proxy',
    timeoutMs: 10_000,
    intervalMs: 20,
  });

  // The SCM's own recovery waits 5 s; the loop looks again within its 0.1 s interval.
  const crashedAt = calls.length;
  assert.ok(machine.scm.crash('kube-proxy'));
  await waitFor(
    () =>
      calls.slice(crashedAt).includes('startService kube-proxy') &&
      machine.scm.query('kube-proxy')?.state === 'running',
    {
      description: 'the run loop to start kube-proxy again after it crashed',
      timeoutMs: 4_000,
      intervalMs: 20,
    },
  );

  // As the operator does: the agent service (not this loop) stops, the executable is replaced.
  await new SimHostOS(machine).stopService(agentServiceName);
  await machine.fs.writeFileAtomic(paths.agentExe, standInBinary('winfleet-agent', 'v0.2.0'));
  assert.equal(await loop, agentReplacedExitCode);
  assert.match(stderr.join(''), /a new winfleet-agent executable is installed/);

  // Run again with the new executable in place: it keeps going until the service stops it.
  const again = runAgent(['run'], context);
  const checksBefore = calls.length;
  await waitFor(() => calls.slice(checksBefore).includes(`writeFile ${paths.state}`), {
    description: 'the restarted run loop to complete a check',
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  stop.abort();
  assert.equal(await again, 0);
});

test('the loop also ends when a new service shim is installed, so the SCM runs the new one', async (t) => {
  const stop = new AbortController();
  t.after(() => stop.abort());
  const { machine, calls, context, stderr } = await bootstrapped(t, stop.signal);
  const loop = runAgent(['run'], context);
  await waitFor(() => calls.includes(`writeFile ${paths.state}`), {
    description: 'the run loop to complete a check',
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  await new SimHostOS(machine).stopService(agentServiceName);
  await machine.fs.writeFileAtomic(paths.serviceExe, standInBinary('winfleet-service', 'v0.2.0'));
  assert.equal(await loop, agentReplacedExitCode);
  assert.match(stderr.join(''), /a new winfleet-service executable is installed; restarting/);
});

test('run before bootstrap says what is missing and fails', async (t) => {
  const { context, stderr } = await createAgentTestHost(t);
  assert.equal(await runAgent(['run'], context), 1);
  assert.match(stderr.join(''), /agent\.json is missing; run bootstrap first/);
});

test('under the service shim (WINFLEET_STOP_ON_STDIN_EOF=1), the end of stdin stops the agent', async () => {
  const input = new PassThrough();
  const stop = new AbortController();
  assert.equal(stopWhenInputEnds(input, { WINFLEET_STOP_ON_STDIN_EOF: '1' }, stop), true);
  input.write('anything the shim might send is ignored\n');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(stop.signal.aborted, false);
  input.end(); // what closing the pipe's write end looks like to the agent
  await new Promise((resolve) => input.once('close', resolve));
  assert.equal(stop.signal.aborted, true);
});

test('without WINFLEET_STOP_ON_STDIN_EOF, the end of stdin does not stop the agent', async () => {
  for (const env of [{}, { WINFLEET_STOP_ON_STDIN_EOF: '' }]) {
    const input = new PassThrough();
    const stop = new AbortController();
    assert.equal(stopWhenInputEnds(input, env, stop), false);
    input.resume();
    input.end(); // stdin at NUL, or an interactive run whose terminal closes its input
    await new Promise((resolve) => input.once('close', resolve));
    assert.equal(stop.signal.aborted, false, JSON.stringify(env));
  }
});

test('WINFLEET_STOP_ON_STDIN_EOF with a value other than 1 is refused, naming the variable', () => {
  assert.throws(
    () =>
      stopWhenInputEnds(
        new PassThrough(),
        { WINFLEET_STOP_ON_STDIN_EOF: 'true' },
        new AbortController(),
      ),
    /^WinfleetError: WINFLEET_STOP_ON_STDIN_EOF is "true"; set it to 1 to stop when the standard input closes \(winfleet-service\.exe does\), or leave it unset$/,
  );
});

test('a proxy that left the configuration but that Windows read at boot restarts the agent once, then waits for a reboot (issue 32)', async (t) => {
  const stop = new AbortController();
  t.after(() => stop.abort());
  const host = await bootstrapped(t, stop.signal);
  assert.deepEqual(
    await host.context.hostOS.queryServiceEnvironment(agentServiceName),
    {},
    'the agent service has no proxy configured (it was removed)',
  );
  // The block the SCM gives the agent at each start: services.exe's boot-time machine
  // environment still has the proxy (KB 821761), and no Environment value can unset it.
  const block: Record<string, string> = {
    winfleet_stop_on_stdin_eof: '1',
    http_proxy: 'http://proxy.corp.example:3128',
    https_proxy: 'http://proxy.corp.example:3128',
  };
  const context = { ...host.context, env: (name: string) => block[name.toLowerCase()] };
  assert.equal(await runAgent(['run'], context), agentReplacedExitCode, 'restarted once');
  let ended: number | undefined;
  const second = runAgent(['run'], context).then((code) => {
    ended = code;
    return code;
  });
  await waitFor(() => environmentAwaitingReboot(context).length > 0, {
    description: 'the agent to report the variables only a reboot removes',
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  assert.deepEqual(environmentAwaitingReboot(context), ['HTTP_PROXY', 'HTTPS_PROXY']);
  assert.match(host.stderr.join(''), /HTTP_PROXY, HTTPS_PROXY left the configuration.*KB 821761/);
  // Two more passes (2 s apart without a cluster): no restart loop.
  await new Promise((resolve) => setTimeout(resolve, 4_500));
  assert.equal(ended, undefined, `the agent keeps running: ${host.stderr.join('')}`);
  stop.abort();
  assert.equal(await second, 0);
});

test('the watch starts a pass for the Node fields the agent acts on, and not for others', () => {
  const base = {
    metadata: {
      name: 'win-1',
      annotations: { 'example.com/unrelated': 'a' } as Record<string, string>,
    },
    spec: { podCIDR: '10.244.1.0/24' },
    status: {
      conditions: [{ type: 'Ready', status: 'False' }],
      nodeInfo: { bootID: 'boot-1' } as k8s.V1NodeSystemInfo,
    },
  } as k8s.V1Node;
  const seen = watchedFields(base);
  const changed = (edit: (node: k8s.V1Node) => void) => {
    const node = structuredClone(base);
    edit(node);
    return JSON.stringify(watchedFields(node)) !== JSON.stringify(seen);
  };
  assert.equal(
    changed((n) => {
      n.metadata!.annotations!['example.com/unrelated'] = 'b';
    }),
    false,
    'an annotation the agent does not act on',
  );
  assert.equal(
    changed((n) => {
      n.metadata!.annotations![desiredServicesVersionAnnotation] = '1.1.0';
    }),
    true,
    'a new desired version',
  );
  assert.equal(
    changed((n) => {
      n.status!.conditions![0]!.status = 'True';
    }),
    true,
    'the node turned Ready',
  );
  assert.equal(
    changed((n) => {
      n.spec!.podCIDR = '10.244.2.0/24';
    }),
    true,
    'another pod CIDR',
  );
  assert.equal(
    changed((n) => {
      n.status!.nodeInfo!.bootID = 'boot-2';
    }),
    true,
    'the node rebooted',
  );
  for (const annotation of commandAnnotations) {
    assert.equal(
      changed((n) => {
        n.metadata!.annotations![signatureAnnotation(annotation)] = 'sig';
      }),
      true,
      `a new signature of ${annotation}`,
    );
  }
});
