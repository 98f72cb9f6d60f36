/**
 * A rebuilt host: its OS was reinstalled (new host key or not) while its Node still exists.
 * Its kubelet has no client certificate any more and can only ask for one with the bootstrap
 * token, which the CSR approver refuses while a Node of that name exists — so bootstrapping it
 * again would loop on "Node already exists". Deleting the Node would let it rejoin, but the
 * operator cannot tell a rebuilt host from one whose name is being taken over, so it waits for
 * the administrator's winfleet.io/rejoin, and the status gives the command.
 */
import * as k8s from '@kubernetes/client-node';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import { rejoinAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { type HostStatus, removeHostAnnotation } from '../../fleet/host-status.ts';
import { carriesIdentity } from '../../fleet/node-claims.ts';
import type { RemoteHost } from '../../hostaccess/remote-host.ts';
import { isConflict, isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';
import type { HostControllerDeps } from './host-deps.ts';

/** True when the host still has the kubelet's own kubeconfig (its node credentials). */
async function hasNodeCredentials(remote: RemoteHost): Promise<boolean> {
  const hashes = (await remote.script('file-hashes', { paths: [hostPaths.kubeconfig] })) as Record<
    string,
    string | null
  >;
  return Boolean(hashes[hostPaths.kubeconfig]);
}

/**
 * Before bootstrapping `nodeName` again: when the host's Node exists but the host has no node
 * credentials, refuses (WF_HOST_REBUILT, NodeExistsRebuilt with the command to run) unless the
 * administrator set winfleet.io/rejoin; then deletes the stale Node — only one carrying this
 * host's identity — waits for it to leave the cache the CSR approver reads, and removes the
 * annotation.
 * @package
 */
export async function clearStaleNode(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  remote: RemoteHost,
  nodeName: string,
): Promise<void> {
  const node = deps.nodes.get(nodeName);
  if (!node || !carriesIdentity(node, host)) return;
  if (await hasNodeCredentials(remote)) return;
  const rejoin = host.metadata.annotations?.[rejoinAnnotation];
  if (rejoin === undefined) {
    const ref = `-n ${host.metadata.namespace} ${host.metadata.name}`;
    const message = `Node ${nodeName} still exists but ${host.spec.address} has no credentials for it (${hostPaths.kubeconfig} is missing): the host was rebuilt. To delete the stale Node and join the host again, run: kubectl annotate windowshost ${ref} ${rejoinAnnotation}=true`;
    // Ready and the Warning Event come with the error (join-failure.ts).
    hs.set(ConditionType.NodeRegistered, 'False', ConditionReason.NodeExistsRebuilt, message);
    throw new WinfleetError('WF_HOST_REBUILT', message);
  }
  const core = deps.kc.makeApiClient(k8s.CoreV1Api);
  try {
    // The uid precondition: only the Node looked at above, never one re-created meanwhile.
    await core.deleteNode({ name: nodeName, body: { preconditions: { uid: node.metadata?.uid } } });
  } catch (error) {
    // 409: the uid no longer matches; the Node now there is checked again on the next pass.
    if (!isNotFound(error) && !isConflict(error)) throw error;
  }
  await waitFor(() => deps.nodes.get(nodeName) === undefined, {
    description: `Node ${nodeName} to leave the cache`,
    timeoutMs: 30_000,
    intervalMs: 100,
  });
  deps.events.record(
    host,
    'Normal',
    EventReason.Rejoining,
    `Deleted the stale Node ${nodeName} of the rebuilt host on ${rejoinAnnotation}=${rejoin}; joining it again`,
  );
  await removeHostAnnotation(deps.kc, host, rejoinAnnotation, rejoin);
}
