/**
 * A host without the Windows Containers feature: the join says so (and how to fix it) when it
 * may not install it, installs it and restarts the host when it may, and refuses a host whose
 * feature files were removed. Real API server, operator, SSH and agent; simulated hosts whose
 * Containers feature starts Available or Removed (sim/hosts/windows-features.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { writeOperatorConfig } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('a host without the Containers feature: refused while winfleet may not install it, installed (with a restart) once it may', async (t) => {
  const hostsConfig = { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 };
  const world = await joinWorld(t, {
    releases: ['2022', '2022'],
    config: { hosts: { ...hostsConfig, installContainersFeature: false } },
  });
  const [available, removed] = world.fleet.hosts;
  available!.machine.features.set('Containers', 'Available');
  removed!.machine.features.set('Containers', 'Removed');
  await createWindowsHosts(world.kc, world.namespace, world.fleet.hosts);
  const byAddress = async (address: string): Promise<WindowsHost | undefined> =>
    (await listWindowsHosts(world.kc, world.namespace)).find((h) => h.spec.address === address);
  const condition = (host: WindowsHost | undefined, type: string) =>
    host?.status?.conditions?.find((c) => c.type === type);
  const missing = (address: string) =>
    waitFor(
      async () => {
        const host = await byAddress(address);
        const degraded = condition(host, ConditionType.Degraded);
        return degraded?.reason === ConditionReason.ContainersFeatureMissing
          ? { host: host!, degraded }
          : undefined;
      },
      { description: `Degraded=ContainersFeatureMissing for ${address}`, timeoutMs: 60_000 },
    );

  const refused = await missing(available!.address);
  assert.equal(refused.degraded.status, 'True');
  assert.match(
    refused.degraded.message,
    /The Windows Containers feature is not installed on .* \(InstallState Available\), and hosts\.installContainersFeature is false; run Install-WindowsFeature -Name Containers on the host and restart it, or set hosts\.installContainersFeature: true/,
  );
  const ready = condition(refused.host, ConditionType.Ready);
  assert.equal(ready?.status, 'False');
  assert.equal(ready?.reason, ConditionReason.ContainersFeatureMissing);
  assert.equal(refused.host.status?.lastError?.step, 'containers-feature');
  assert.equal(available!.machine.features.get('Containers')?.state, 'Available', 'untouched');
  assert.equal(available!.machine.scm.query('kubelet'), undefined, 'nothing was installed');

  // The administrator lets winfleet install it: it does, restarts the host, and the join goes on.
  const bootId = available!.machine.bootId;
  await writeOperatorConfig(world.kc, world.namespace, { hosts: hostsConfig });
  let last: WindowsHost | undefined;
  await waitFor(
    async () => {
      last = await byAddress(available!.address);
      return last && hostReady(last) ? last : undefined;
    },
    { description: 'the host Ready once the feature is installed', timeoutMs: 120_000 },
  ).catch(async (error: Error) => {
    const node = last?.status?.nodeName
      ? await world.kc
          .makeApiClient(k8s.CoreV1Api)
          .readNode({ name: last.status.nodeName })
          .catch(() => undefined)
      : undefined;
    const nodeReady = node?.status?.conditions?.find((c) => c.type === 'Ready');
    throw new Error(
      `${error.message}; the host's conditions: ${JSON.stringify(last?.status?.conditions)}; its Node's Ready: ${JSON.stringify(nodeReady)}`,
    );
  });
  assert.equal(available!.machine.features.get('Containers')?.state, 'Installed');
  assert.notEqual(available!.machine.bootId, bootId, 'the host restarted to finish the install');
  const events = await world.kc.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({
    namespace: world.namespace,
    fieldSelector: `reason=${EventReason.InstallingContainersFeature}`,
  });
  assert.ok(
    events.items.some((e) =>
      /Installed the Windows Containers feature on .*; the host restarts to finish it/.test(
        e.message ?? '',
      ),
    ),
    'a Normal Event says the host restarts for the feature',
  );

  // A host whose feature files were removed cannot get it from winfleet: it says what to do.
  const still = await missing(removed!.address);
  assert.match(
    still.degraded.message,
    /its files were removed from the host \(InstallState Removed\).*Install-WindowsFeature -Name Containers -Source/,
  );
  assert.equal(removed!.machine.features.get('Containers')?.state, 'Removed');
});
