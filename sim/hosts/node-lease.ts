/**
 * The kubelet's node heartbeat: its Lease kube-node-lease/<node>, held by the node, owned by its
 * Node, renewed every quarter of its 40 s duration with the node's own credentials while the
 * kubelet runs (kubelet v1.36 kubelet.go nodeLeaseRenewIntervalFraction, component-helpers
 * apimachinery/lease). When the kubelet stops the renewals stop, and the node lifecycle
 * controller marks the Node Unknown once the lease has lapsed, as with a dead kubelet.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../src/kube/client.ts';
import { callOptions } from './kubelet-kubeconfig.ts';

export const nodeLeaseNamespace = 'kube-node-lease';
/** The kubelet's default nodeLeaseDurationSeconds. */
export const nodeLeaseDurationSeconds = 40;

export interface NodeLeaseOptions {
  /** The node's own credentials. */
  kc: k8s.KubeConfig;
  nodeName: string;
  signal: AbortSignal;
  apiTimeoutMs: number;
  log: (severity: 'I' | 'W' | 'E', message: string) => void;
  /** Renew interval; a quarter of the duration by default (10 s). */
  renewMs?: number;
}

/** A MicroTime as the API server parses it (RFC 3339 with six fractional digits). */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Renews the node's Lease until the signal aborts; failures are logged and retried. */
export async function renewNodeLease(options: NodeLeaseOptions): Promise<void> {
  const { kc, nodeName, signal, apiTimeoutMs, log } = options;
  const renewMs = options.renewMs ?? (nodeLeaseDurationSeconds * 1000) / 4;
  const leases = kc.makeApiClient(k8s.CoordinationV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let failing = false;
  while (!signal.aborted) {
    try {
      await renewOnce(leases, core, nodeName, (patch = false) =>
        callOptions(signal, apiTimeoutMs, patch),
      );
      if (failing) log('I', `Node lease "${nodeName}" renewed again`);
      failing = false;
    } catch (error) {
      if (signal.aborted) break;
      if (!failing) log('W', `Failed to update lease "${nodeName}": ${(error as Error).message}`);
      failing = true;
    }
    await sleep(failing ? Math.min(renewMs, 1000) : renewMs, undefined, { signal }).catch(() => {});
  }
}

async function renewOnce(
  leases: k8s.CoordinationV1Api,
  core: k8s.CoreV1Api,
  nodeName: string,
  call: (mergePatch?: boolean) => k8s.ConfigurationOptions,
): Promise<void> {
  const renew = () =>
    leases.patchNamespacedLease(
      {
        name: nodeName,
        namespace: nodeLeaseNamespace,
        body: {
          spec: {
            holderIdentity: nodeName,
            leaseDurationSeconds: nodeLeaseDurationSeconds,
            renewTime: microTime(new Date()),
          },
        },
      },
      call(true),
    );
  try {
    await renew();
    return;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  // The first renewal: create it, owned by the Node (SetNodeOwnerFunc), then renew.
  const node = await core.readNode({ name: nodeName }, call());
  await leases.createNamespacedLease(
    {
      namespace: nodeLeaseNamespace,
      body: {
        metadata: {
          name: nodeName,
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata!.uid! },
          ],
        },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: nodeLeaseDurationSeconds },
      },
    },
    call(),
  );
  await renew();
}
