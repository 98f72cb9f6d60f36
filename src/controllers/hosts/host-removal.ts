/**
 * Removing a WindowsHost (its finalizer): cordon the node, drain it through the Eviction API
 * (PodDisruptionBudgets are honoured: a refused eviction is retried, never forced), have the
 * agent stop and delete the services and undo its files, networks and environment, remove
 * winfleet's directory, delete the Node and the bootstrap token, and only then let the object
 * go. The host stays reachable and as it was before winfleet.
 */
import * as k8s from '@kubernetes/client-node';
import { cordonedByAnnotation } from '../../api/node-annotations.ts';
import { hostFinalizer, type WindowsHost } from '../../api/windows-host.ts';
import { openHostSession } from '../../hostaccess/host-session.ts';
import { RemoteHost } from '../../hostaccess/remote-host.ts';
import { agentExecutable, winfleetDirectory } from '../../hostaccess/remote-scripts.ts';
import { SshError, type SshSession } from '../../hostaccess/ssh-session.ts';
import { httpStatus } from '../../kube/client.ts';
import { deleteBootstrapToken } from './bootstrap-tokens.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { HostStatus, patchHostMetadata, writeHostStatus } from './host-status.ts';

/** Annotation a user sets when the host is gone for good: skip deconfiguring it. */
export const skipDeconfigureAnnotation = 'winfleet.io/skip-deconfigure';

function isDaemonSetPod(pod: k8s.V1Pod): boolean {
  return pod.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet') ?? false;
}
function isMirrorPod(pod: k8s.V1Pod): boolean {
  return pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined;
}

/** Cordons and evicts what can be evicted; true when only DaemonSet/mirror pods remain. */
export async function drainNode(
  kc: k8s.KubeConfig,
  nodeName: string,
): Promise<{ drained: boolean; blocked: string[] }> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const node = await core.readNode({ name: nodeName });
  if (!node.spec?.unschedulable) {
    await core.patchNode(
      {
        name: nodeName,
        body: {
          spec: { unschedulable: true },
          metadata: { annotations: { [cordonedByAnnotation]: 'winfleet' } },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }
  const pods = (
    await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` })
  ).items.filter(
    (p) =>
      !isDaemonSetPod(p) &&
      !isMirrorPod(p) &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed',
  );
  const blocked: string[] = [];
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue;
    try {
      await core.createNamespacedPodEviction({
        name: pod.metadata!.name!,
        namespace: pod.metadata!.namespace!,
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: pod.metadata!.name!, namespace: pod.metadata!.namespace! },
        },
      });
    } catch (error) {
      const status = httpStatus(error);
      if (status === 404) continue;
      if (status === 429) {
        blocked.push(`${pod.metadata!.namespace}/${pod.metadata!.name}`);
        continue;
      }
      throw error;
    }
  }
  return { drained: pods.length === 0, blocked };
}

export async function reconcileRemoval(
  deps: HostControllerDeps,
  host: WindowsHost,
): Promise<{ requeueAfterMs?: number }> {
  const hs = new HostStatus(host);
  try {
    return await removalPass(deps, host, hs);
  } finally {
    if (hs.changed()) await writeHostStatus(deps.kc, host, hs.status).catch(() => {});
  }
}

async function removalPass(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
): Promise<{ requeueAfterMs?: number }> {
  if (!host.metadata.finalizers?.includes(hostFinalizer)) return {};
  const core = deps.kc.makeApiClient(k8s.CoreV1Api);
  const nodeName = hs.status.nodeName;
  const node = nodeName
    ? await core.readNode({ name: nodeName }).catch(() => undefined)
    : undefined;
  if (node && nodeName) {
    const { drained, blocked } = await drainNode(deps.kc, nodeName);
    if (!drained) {
      const message =
        blocked.length > 0
          ? `Draining ${nodeName}: eviction refused by a PodDisruptionBudget for ${blocked.join(', ')}; retrying`
          : `Draining ${nodeName}: waiting for pods to leave`;
      hs.set('Ready', 'False', 'Draining', message);
      return { requeueAfterMs: 2000 };
    }
  }
  const skip = host.metadata.annotations?.[skipDeconfigureAnnotation] === 'true';
  if (!skip) {
    let session: SshSession;
    try {
      session = await openHostSession(deps.kc, deps.config(), host);
    } catch (error) {
      const message = `${(error as Error).message}; the host must be reachable to remove winfleet from it (annotate winfleet.io/skip-deconfigure=true if it is gone for good)`;
      hs.set(
        'Reachable',
        'False',
        error instanceof SshError && error.kind === 'host-key-mismatch'
          ? 'HostKeyMismatch'
          : 'Unreachable',
        message,
      );
      hs.error('deconfigure', message);
      throw error;
    }
    try {
      const remote = new RemoteHost(session, deps.config().hosts.commandTimeoutSeconds * 1000);
      const hashes = (await remote.script('file-hashes', { paths: [agentExecutable] })) as Record<
        string,
        string | null
      >;
      if (hashes[agentExecutable]) {
        const result = await remote.agent(['cleanup']);
        for (const path of (result.removeAfter as string[] | undefined) ?? [winfleetDirectory]) {
          await remote.script('remove-path', { path });
        }
      }
    } finally {
      session.close();
    }
    deps.events.record(
      host,
      'Normal',
      'Deconfigured',
      `Removed winfleet's services and files from ${host.spec.address}`,
    );
  }
  if (nodeName) {
    try {
      await core.deleteNode({ name: nodeName });
    } catch (error) {
      if (httpStatus(error) !== 404) throw error;
    }
  }
  await deleteBootstrapToken(deps.kc, host.metadata.uid!);
  await patchHostMetadata(deps.kc, host, {
    finalizers: (host.metadata.finalizers ?? []).filter((f) => f !== hostFinalizer),
  });
  deps.log.info('host removed', {
    host: `${host.metadata.namespace}/${host.metadata.name}`,
    node: nodeName,
  });
  return {};
}
