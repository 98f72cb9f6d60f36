/**
 * A world where only the agent acts: the fleet's hosts are joined by the operator, which is
 * stopped once the first host is Ready and its agent has recorded its services version.
 * Returns that host's Node name.
 */
import * as k8s from '@kubernetes/client-node';
import { servicesVersionAnnotation } from '../../src/api/node-annotations.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import type { JoinWorld } from './join-fixture.ts';
import { createWindowsHosts, hostReady, listWindowsHosts } from './windows-hosts.ts';

export async function joinThenStopOperator(world: JoinWorld): Promise<string> {
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const host = await waitFor(
    async () => {
      const [h] = await listWindowsHosts(kc, world.namespace);
      return h && hostReady(h) && h.status?.nodeName ? h : undefined;
    },
    { description: 'the host Ready', timeoutMs: 120_000 },
  );
  const nodeName = host.status!.nodeName!;
  await waitFor(
    async () =>
      (await core.readNode({ name: nodeName })).metadata?.annotations?.[servicesVersionAnnotation],
    { description: 'the agent to record its services version', timeoutMs: 60_000 },
  );
  await world.operator?.stop();
  world.operator = undefined;
  return nodeName;
}
