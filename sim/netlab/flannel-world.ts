/**
 * The test world for flannel interop: a private control plane (flanneld acts on every Node, so
 * never the shared one), a lab of namespaces, flanneld's ServiceAccount, and Linux nodes each
 * with a kwok Node object (its podCIDR from the controller manager), a namespace on the LAN, an
 * API relay and the real flanneld. Other nodes join the same lab and cluster through
 * `addNodeObject` and `lab.addNode`; a simulated Windows host joined by the operator
 * (`joinWorld(t, { existingCluster: world.cluster })`) through its HNS model rendered into the
 * lab (windows-node.ts).
 */
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { Cluster } from '../cluster/start-cluster.ts';
import { createLinuxNode } from '../testkit/nodes.ts';
import { freshCluster, type TestCluster } from '../testkit/test-cluster.ts';
import type { ApiRelay } from './api-relay.ts';
import { createFlannelAccount, type FlannelAccount } from './flannel-account.ts';
import { type FlannelBackend, leasePatch, windowsVxlan } from './flannel-config.ts';
import { createLabPodsNode } from './lab-kubelet.ts';
import { LinuxFlannelNode, waitForPodCidr } from './linux-flannel-node.ts';
import { NetLab } from './net-lab.ts';
import { ensureNetlabBinaries } from './netlab-binaries.ts';
import { requireRoot } from './require-root.ts';

export interface FlannelWorld {
  cluster: Cluster & TestCluster;
  kc: k8s.KubeConfig;
  lab: NetLab;
  relay: ApiRelay;
  account: FlannelAccount;
  binDir: string;
  /** A kwok Linux Node (no flanneld); resolves with its spec.podCIDR. */
  addNodeObject(name: string): Promise<string>;
  /**
   * A Linux node with the real flanneld (default backend: VXLAN, VNI 4096, port 4789). With
   * `labPods`, the lab plays the kubelet's part for the Node's pods (see LinuxFlannelNode
   * runPod): the Node is kept by the second kwok (hostNodeAnnotation), which waits for a pod's
   * podIP before it runs the pod's containers, and the test renews the Node's Lease.
   */
  addLinuxNode(
    label: string,
    options: { address: string; backend?: FlannelBackend; labPods?: boolean },
  ): Promise<LinuxFlannelNode & { podCidr: string }>;
}

/** Sets up the world for test `t`; everything is removed when `t` ends, failed or not. */
export async function flannelWorld(t: {
  after(fn: () => Promise<void>): void;
  name: string;
}): Promise<FlannelWorld> {
  requireRoot(`the network test "${t.name}"`);
  const binDir = ensureNetlabBinaries();
  // The lab first: its teardown (flanneld stopped) then runs before the cluster's.
  const lab = await NetLab.create(t);
  const cluster = await freshCluster(t);
  const kc = cluster.kc;
  const relay = await lab.apiRelay(cluster.ports.apiserver);
  const account = await createFlannelAccount(kc, join(lab.dir, 'flannel.kubeconfig'));
  const addNodeObject = async (name: string, labPods = false) => {
    if (labPods) {
      const leases = new AbortController();
      t.after(async () => leases.abort());
      return createLabPodsNode(kc, name, leases.signal);
    }
    await createLinuxNode(kc, { name });
    return waitForPodCidr(kc, name);
  };
  return {
    cluster,
    kc,
    lab,
    relay,
    account,
    binDir,
    addNodeObject: (name) => addNodeObject(name),
    async addLinuxNode(label, options) {
      const podCidr = await addNodeObject(label, options.labPods);
      const node = await lab.addNode(label, { address: options.address });
      await relay.enter(node.netns);
      const flannel = await LinuxFlannelNode.start({
        lab,
        node,
        nodeName: label,
        kubeconfig: account.inNetnsKubeconfig,
        backend: options.backend ?? { type: 'vxlan', ...windowsVxlan },
        binDir,
      });
      return Object.assign(flannel, { podCidr });
    },
  };
}

/** The Node's annotations, as the API server has them now. */
export async function nodeAnnotations(
  kc: k8s.KubeConfig,
  name: string,
): Promise<Record<string, string>> {
  const node = await kc.makeApiClient(k8s.CoreV1Api).readNode({ name });
  return node.metadata?.annotations ?? {};
}

/**
 * Writes a lease's annotations on Node `name` as AcquireLease does: a strategic merge patch of
 * the annotations to the Node's status subresource (kube.go).
 */
export async function writeLeaseAnnotations(
  kc: k8s.KubeConfig,
  name: string,
  annotations: Record<string, string>,
): Promise<void> {
  await kc
    .makeApiClient(k8s.CoreV1Api)
    .patchNodeStatus(
      { name, body: leasePatch(annotations) },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
}
