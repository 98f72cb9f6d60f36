/**
 * The agent's side of issue 12 against a real control plane: a joined simulated host with a
 * patch catalog (two security updates, one needing a reboot, and one other) reports what
 * Windows Update offers; the Node annotations the rollout engine writes make it install the
 * Security ones and reboot once per token, and the Node then shows the new OS revision.
 *
 * The operator joins the host and is then stopped, so that only the agent acts on the
 * annotations this test writes by hand (the operator's rollout engine is tested on its own).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sampleCatalog } from '../../sim/hosts/windows-update.ts';
import { annotateAsOperator, joinThenStopOperator } from '../../sim/testkit/agent-alone.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import {
  installUpdatesAnnotation,
  rebootRequestAnnotation,
  windowsUpdatesAnnotation,
} from '../api/node-annotations.ts';
import { parseWindowsUpdateReport, type WindowsUpdateReport } from '../api/windows-updates.ts';
import { waitFor } from '../kube/wait-for.ts';
import { agentServiceName } from './converge.ts';

test('the agent reports, installs the Security updates and reboots once per token', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const sim = world.fleet.hosts[0]!;
  sim.machine.windowsUpdate.publish(...sampleCatalog(2700));
  const nodeName = await joinThenStopOperator(world);

  // Written as the operator writes them: signed with its key (src/api/node-commands.ts).
  const annotate = (annotations: Record<string, string | null>) =>
    annotateAsOperator(kc, world.namespace, nodeName, annotations);
  /** The Node and its report once `accept` holds for both. */
  const reportWhen = (
    description: string,
    accept: (report: WindowsUpdateReport, node: k8s.V1Node) => boolean,
  ) =>
    waitFor(
      async () => {
        const node = await core.readNode({ name: nodeName });
        const text = node.metadata?.annotations?.[windowsUpdatesAnnotation];
        if (!text) return undefined;
        const report = parseWindowsUpdateReport(text);
        return accept(report, node) ? { report, node } : undefined;
      },
      { description, timeoutMs: 90_000 },
    );
  const sameBoot = (r: WindowsUpdateReport, n: k8s.V1Node) =>
    r.bootId === n.status?.nodeInfo?.bootID;

  const first = await reportWhen('the report with 3 updates', (r, n) => sameBoot(r, n));
  assert.deepEqual(first.report.available.map((u) => u.kb).sort(), [
    'KB5040437',
    'KB5041160',
    'KB890830',
  ]);
  assert.equal(first.report.rebootPending, false);
  assert.deepEqual(first.report.installed, []);
  const boot0 = first.node.status!.nodeInfo!.bootID;
  assert.equal(first.node.status?.nodeInfo?.kernelVersion, '10.0.20348.2582');

  await annotate({ [installUpdatesAnnotation]: 'Security' });
  const installed = await reportWhen(
    'the Security updates installed',
    (r, n) => sameBoot(r, n) && r.installed.length === 2,
  );
  assert.deepEqual(installed.report.installed.sort(), ['KB5040437', 'KB5041160']);
  assert.equal(installed.report.rebootPending, true);
  assert.deepEqual(
    installed.report.available.map((u) => u.kb),
    ['KB890830'],
  );
  assert.equal(installed.node.status?.nodeInfo?.bootID, boot0, 'no reboot without a request');
  assert.equal(
    installed.node.status?.nodeInfo?.kernelVersion,
    '10.0.20348.2582',
    'the new revision waits for the reboot',
  );

  let shutdowns = 0;
  sim.machine.onShutdown(() => {
    shutdowns++;
  });
  await annotate({ [rebootRequestAnnotation]: 't1' });
  const rebooted = await reportWhen(
    'the reboot, the new revision and a report of the new boot',
    (r, n) =>
      n.status?.nodeInfo?.bootID !== boot0 &&
      n.status?.nodeInfo?.kernelVersion === '10.0.20348.2700' &&
      sameBoot(r, n),
  );
  assert.equal(rebooted.report.rebootPending, false);
  assert.equal(shutdowns, 1);
  const boot1 = rebooted.node.status!.nodeInfo!.bootID;
  assert.equal(boot1, sim.machine.bootId);

  // The same token again, to a fresh agent process: it finds t1 in state.json. (Its search
  // gets a later searchedAt, which has whole seconds: let the second of the last one pass.)
  await waitFor(
    () => new Date().toISOString().slice(0, 19) > rebooted.report.searchedAt.slice(0, 19),
    { description: 'the next second', timeoutMs: 5_000, intervalMs: 50 },
  );
  const hostOS = sim.hostOS();
  await hostOS.stopService(agentServiceName);
  await hostOS.startService(agentServiceName);
  await reportWhen(
    'a search by the restarted agent',
    (r, n) => sameBoot(r, n) && r.searchedAt > rebooted.report.searchedAt,
  );
  // A later pass of the same agent (it installs the rest): the earlier one called for no reboot.
  await annotate({ [installUpdatesAnnotation]: 'All' });
  const later = await reportWhen(
    'the remaining update installed',
    (r, n) => sameBoot(r, n) && r.installed.includes('KB890830'),
  );
  assert.equal(later.node.status?.nodeInfo?.bootID, boot1);
  assert.equal(sim.machine.rebootScheduled, false, 'no second reboot for t1');
  assert.equal(sim.machine.bootId, boot1);
  assert.equal(shutdowns, 1);
});
