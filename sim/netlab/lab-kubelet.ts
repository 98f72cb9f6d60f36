/**
 * The kubelet's part for the pods of a Linux lab node (test code): a kwok Linux Node kept by the
 * second kwok (hostNodeAnnotation), which runs a pod's containers only once it has a podIP, and
 * whose Lease the lab renews; the lab wires each pod bound to it with the real CNI plugins on
 * the node (LinuxFlannelNode.addPod) and reports the address as the kubelet's status manager
 * does. runLabPod (cluster-dns.ts) does it for one pod; LabKubelet for every pod bound to the
 * node, as long as it runs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { hostNodeAnnotation } from '../cluster/start-cluster.ts';
import { renewNodeLease } from '../hosts/node-lease.ts';
import { kubeletConditions } from '../hosts/node-status.ts';
import { createLinuxNode } from '../testkit/nodes.ts';
import type { LinuxFlannelNode } from './linux-flannel-node.ts';
import { waitForPodCidr } from './linux-flannel-node.ts';
import type { LabPod } from './net-lab.ts';

/** kwok's default capacity (sim/cluster/kwok-stages.yaml node-initialize). */
const labNodeResources = { cpu: '32', memory: '128Gi', pods: '110' };

/**
 * A Linux Node whose pods are the lab's to run: registered for the second kwok, which does not
 * speak for its status (as for the simulated hosts' Nodes), so the lab posts the kubelet's
 * conditions (Ready) once and renews its Lease until `signal` aborts, which keeps the node
 * lifecycle controller from marking it Unknown; resolves with its spec.podCIDR.
 */
export async function createLabPodsNode(
  kc: k8s.KubeConfig,
  name: string,
  signal: AbortSignal,
): Promise<string> {
  await createLinuxNode(kc, {
    name,
    annotations: { [hostNodeAnnotation.key]: hostNodeAnnotation.value },
    waitReady: false,
  });
  void renewNodeLease({ kc, nodeName: name, signal, apiTimeoutMs: 10_000, log: () => {} });
  await kc.makeApiClient(k8s.CoreV1Api).patchNodeStatus(
    {
      name,
      body: {
        status: {
          conditions: kubeletConditions([], { ready: true }, new Date()),
          // What kwok's node-initialize stage gives its own nodes, so the scheduler places pods.
          capacity: labNodeResources,
          allocatable: labNodeResources,
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  return waitForPodCidr(kc, name);
}

/** Wires `pod` (bound to `linux`'s Node) in a pod namespace `label` and sets its podIP. */
export async function wireBoundPod(
  core: k8s.CoreV1Api,
  linux: LinuxFlannelNode,
  pod: k8s.V1Pod,
  label: string,
): Promise<LabPod & { name: string }> {
  const wired = await linux.addPod(label);
  const hostIP = linux.node.address;
  await core.patchNamespacedPodStatus(
    {
      name: pod.metadata!.name!,
      namespace: pod.metadata!.namespace!,
      body: {
        status: {
          hostIP,
          hostIPs: [{ ip: hostIP }],
          podIP: wired.address,
          podIPs: [{ ip: wired.address }],
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  return { ...wired, name: pod.metadata!.name! };
}

/**
 * Plays the kubelet's part for every pod bound to `linux`'s Node (created with
 * createLabPodsNode): each new pod without a podIP is wired in a namespace `<prefix>-<n>`.
 * A pod that fails to wire is retried on the next round. Stops with `stop()`; the namespaces
 * stay until the lab's teardown.
 */
export class LabKubelet {
  readonly #core: k8s.CoreV1Api;
  readonly #linux: LinuxFlannelNode;
  readonly #prefix: string;
  readonly #stopped = new AbortController();
  /** Wired pods by uid. */
  readonly #served = new Map<string, LabPod & { name: string; namespace: string }>();
  #next = 0;
  #loop: Promise<void>;

  constructor(kc: k8s.KubeConfig, linux: LinuxFlannelNode, prefix: string) {
    this.#core = kc.makeApiClient(k8s.CoreV1Api);
    this.#linux = linux;
    this.#prefix = prefix;
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    const signal = this.#stopped.signal;
    while (!signal.aborted) {
      try {
        const pods = await this.#core.listPodForAllNamespaces({
          fieldSelector: `spec.nodeName=${this.#linux.nodeName}`,
        });
        for (const pod of pods.items) {
          const uid = pod.metadata?.uid;
          if (!uid || this.#served.has(uid) || pod.metadata?.deletionTimestamp) continue;
          if (pod.status?.podIP || signal.aborted) continue;
          const wired = await wireBoundPod(
            this.#core,
            this.#linux,
            pod,
            `${this.#prefix}-${++this.#next}`,
          );
          this.#served.set(uid, { ...wired, namespace: pod.metadata!.namespace! });
        }
      } catch {
        // The next round retries.
      }
      await sleep(500, undefined, { signal }).catch(() => {});
    }
  }

  /** The wired pod `name` in `namespace`, once it is; `name` may be a label selector's match. */
  async pod(
    namespace: string,
    match: { name: string } | { labelSelector: string },
    timeoutMs = 30_000,
  ): Promise<LabPod & { name: string }> {
    return waitFor(
      async () => {
        const names =
          'name' in match
            ? [match.name]
            : (
                await this.#core.listNamespacedPod({
                  namespace,
                  labelSelector: match.labelSelector,
                })
              ).items.map((p) => p.metadata!.name!);
        return [...this.#served.values()].find(
          (p) => p.namespace === namespace && names.includes(p.name),
        );
      },
      {
        description: `a pod ${JSON.stringify(match)} in ${namespace} wired on ${this.#linux.nodeName}`,
        timeoutMs,
      },
    );
  }

  async stop(): Promise<void> {
    this.#stopped.abort();
    await this.#loop;
  }
}
