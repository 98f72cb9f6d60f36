/**
 * An upgrade while pods run (issue 11, item 6): every running pod sandbox has its own
 * containerd-shim-runhcs-v1.exe, which no service owns and which stopping containerd leaves
 * running, so Windows will not overwrite the shim executable. The agent moves it aside and
 * installs the new one; the old copy goes once its pods are gone. Real API server, operator,
 * SSH and agent; simulated hosts whose shims lock their image (sim/hosts/containerd-standin.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import {
  podSandboxes,
  runhcsShimImageName,
  runPodSandbox,
  stopPodSandbox,
} from '../../../sim/hosts/containerd-standin.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';

const shimPath = `${hostPaths.containerdDir}\\${runhcsShimImageName}`;

test('a new payload installs while pod shims run the old shim executable; its copy goes once they end', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const sim = world.fleet.hosts[0]!;
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const [joined] = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, world.namespace);
      return list.length === 1 && list.every(hostReady) ? list : undefined;
    },
    { description: 'the host Ready', timeoutMs: 90_000 },
  );
  const nodeName = joined!.status!.nodeName!;
  const oldShim = await sim.machine.fs.readFile(shimPath);

  // Two pods run: each has a shim, started by containerd from the installed executable.
  const shims = [
    await runPodSandbox(sim.machine, 'pod-a'),
    await runPodSandbox(sim.machine, 'pod-b'),
  ];
  assert.deepEqual(podSandboxes(sim.machine).sort(), ['pod-a', 'pod-b']);

  const next = await writeStandInPayload(world.payloadDir, {
    kubernetesVersion: 'v1.36.6',
    version: '1.36.6-wf.1',
  });
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await waitFor(
    async () => {
      const node = await core.readNode({ name: nodeName });
      return node.metadata?.annotations?.[servicesVersionAnnotation] === next.version;
    },
    // Today's main never gets here: install-payload fails with EPERM on the running shim.
    { description: `Node ${nodeName} on services ${next.version}`, timeoutMs: 120_000 },
  );
  const newShim = await sim.machine.fs.readFile(shimPath);
  assert.notDeepEqual(newShim, oldShim, 'the new shim executable is installed');
  assert.ok(
    shims.every((s) => s.alive),
    'the pods kept running: an upgrade does not stop shims',
  );
  const copies = async () =>
    (await sim.machine.fs.list(hostPaths.containerdDir))
      .map((e) => e.name)
      .filter((n) => n.toLowerCase().startsWith(`${runhcsShimImageName}.old`));
  const aside = await copies();
  assert.equal(aside.length, 1, `the running shim moved aside: ${aside.join(', ')}`);
  assert.match(aside[0]!, /^containerd-shim-runhcs-v1\.exe\.old-\d+$/);
  assert.deepEqual(
    await sim.machine.fs.readFile(`${hostPaths.containerdDir}\\${aside[0]}`),
    oldShim,
  );

  // A new pod starts the new shim; once the old pods end, the agent's next pass removes the copy.
  const fresh = await runPodSandbox(sim.machine, 'pod-c');
  assert.equal(fresh.alive, true);
  await stopPodSandbox(sim.machine, 'pod-a');
  await stopPodSandbox(sim.machine, 'pod-b');
  await waitFor(async () => ((await copies()).length === 0 ? true : undefined), {
    description: 'the old shim copy removed by the agent',
    timeoutMs: 30_000,
  });
});
