/**
 * Removing a WindowsHost that never got anything from winfleet needs no SSH: a host that was
 * never reachable, or whose key Secret never existed, is deleted at once instead of waiting
 * for a connection that cannot come.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../../../sim/cluster/free-port.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { listWindowsHosts, windowsHostFor } from '../../../sim/testkit/windows-hosts.ts';
import { ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('a host that never joined is removed without SSH', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const objects = k8s.KubernetesObjectApi.makeApiClient(world.kc);
  const closedPort = await freePort();
  const unreachable = windowsHostFor(
    { name: 'never-reached', address: '127.0.0.1', port: closedPort },
    world.namespace,
  );
  const noSecret = windowsHostFor(
    { name: 'no-secret', address: '127.0.0.1', port: closedPort },
    world.namespace,
    { sshKeySecretRef: { name: 'does-not-exist' } },
  );
  for (const host of [unreachable, noSecret]) await objects.create(host);

  // The operator has looked at both (each has a Reachable condition), so each carries the
  // finalizer and its join has failed at least once.
  await waitFor(
    async () => {
      const hosts = await listWindowsHosts(world.kc, world.namespace);
      return (
        hosts.length === 2 &&
        hosts.every(
          (h) =>
            h.metadata.finalizers?.length &&
            h.status?.conditions?.some((c) => c.type === ConditionType.Reachable),
        )
      );
    },
    { description: 'both hosts to be tried', timeoutMs: 60_000 },
  );
  for (const host of await listWindowsHosts(world.kc, world.namespace)) {
    assert.equal(host.status?.bootstrapTokenId, undefined);
    await objects.delete(host);
  }
  // SSH backoff is minutes long; without the rule both would still be here.
  await waitFor(
    async () => {
      for (const host of [unreachable, noSecret]) {
        try {
          await objects.read<WindowsHost>(host);
          return false;
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      }
      return true;
    },
    { description: 'both hosts to be gone', timeoutMs: 20_000 },
  );
});
