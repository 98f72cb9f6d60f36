/**
 * A world where only the agent acts: the fleet's hosts are joined by the operator, which is
 * stopped once the first host is Ready and its agent has recorded its services version.
 * Returns that host's Node name.
 */
import { createPrivateKey } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { servicesVersionAnnotation } from '../../src/api/node-annotations.ts';
import {
  type CommandAnnotation,
  commandAnnotations,
  commandKeyDataKey,
  commandSigningSecretName,
} from '../../src/api/node-commands.ts';
import { CommandSigner } from '../../src/fleet/command-signer.ts';
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

/**
 * Writes `annotations` on Node `nodeName` as the stopped operator would: each command of
 * src/api/node-commands.ts signed with the operator's key (read from its Secret with `kc`'s
 * rights) for the Node as it is now; null removes a command and its signature.
 */
export async function annotateAsOperator(
  kc: k8s.KubeConfig,
  namespace: string,
  nodeName: string,
  annotations: Record<string, string | null>,
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const secret = await core.readNamespacedSecret({ name: commandSigningSecretName, namespace });
  const pem = Buffer.from(secret.data![commandKeyDataKey]!, 'base64').toString('utf8');
  const signer = new CommandSigner(createPrivateKey(pem));
  const node = await core.readNode({ name: nodeName });
  const body: Record<string, string | null> = {};
  for (const [key, value] of Object.entries(annotations)) {
    Object.assign(
      body,
      (commandAnnotations as readonly string[]).includes(key)
        ? signer.annotations(node, key as CommandAnnotation, value)
        : { [key]: value },
    );
  }
  await core.patchNode(
    { name: nodeName, body: { metadata: { annotations: body } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}
