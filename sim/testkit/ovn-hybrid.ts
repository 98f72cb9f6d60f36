/**
 * OVN-Kubernetes with hybrid networking in a test cluster, as OpenShift makes it, for the
 * operator's detection (src/network/detect-cluster-network.ts) and for the Windows side:
 * - the objects: the openshift-ovn-kubernetes/ovnkube-node DaemonSet (selecting no node here),
 *   the operator.openshift.io Network CRD (served, schema left open) and its `cluster` object
 *   with spec.defaultNetwork.ovnKubernetesConfig.hybridOverlayConfig.hybridClusterNetwork
 *   (OpenShift's cluster-network-03-config.yml);
 * - what OVN's masters do for the hybrid overlay, played by this test code since no OVN runs
 *   here: the hybrid overlay master (go-controller/hybrid-overlay/pkg/controller/master.go
 *   AddNode) gives every node the cluster network operator marks as having no OVN host subnet
 *   (--no-hostsubnet-nodes=kubernetes.io/os=windows, util.IsHybridOverlayNode) a subnet of
 *   hybridClusterNetwork's hostPrefix in `k8s.ovn.org/hybrid-overlay-node-subnet`, and every
 *   other (Linux) node, which OVN's cluster manager gave `k8s.ovn.org/node-subnets`, the DR MAC
 *   of its hybrid overlay port (handleOverlayPort: util.IPAddrToHWAddr of the subnet's .3,
 *   GetNodeHybridOverlayIfAddr, i.e. 0a:58 and the address' four bytes).
 */
import * as k8s from '@kubernetes/client-node';
import { isAlreadyExists } from '../../src/kube/client.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { formatIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import { reflect } from '../hosts/api-reflector.ts';
import { hybridOverlayAnnotations } from '../hosts/hybrid-overlay-standin.ts';

export interface HybridClusterNetwork {
  cidr: string;
  hostPrefix: number;
}

/** The DaemonSet, the Network CRD and `cluster` with this hybrid cluster network. */
export async function installOvnHybridObjects(
  kc: k8s.KubeConfig,
  hybrid: HybridClusterNetwork & { vxlanPort?: number },
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const ignoreExisting = (error: unknown) => {
    if (!isAlreadyExists(error)) throw error;
  };
  await core
    .createNamespace({ body: { metadata: { name: 'openshift-ovn-kubernetes' } } })
    .catch(ignoreExisting);
  await kc
    .makeApiClient(k8s.AppsV1Api)
    .createNamespacedDaemonSet({
      namespace: 'openshift-ovn-kubernetes',
      body: {
        metadata: { name: 'ovnkube-node' },
        spec: {
          selector: { matchLabels: { app: 'ovnkube-node' } },
          template: {
            metadata: { labels: { app: 'ovnkube-node' } },
            spec: {
              hostNetwork: true,
              nodeSelector: { 'kubernetes.io/os': 'linux', 'winfleet.io/test-cni': 'no-node' },
              containers: [{ name: 'ovnkube-controller', image: 'quay.io/openshift/ovn:4.20' }],
            },
          },
        },
      },
    })
    .catch(ignoreExisting);
  const extensions = kc.makeApiClient(k8s.ApiextensionsV1Api);
  await extensions
    .createCustomResourceDefinition({
      body: {
        metadata: { name: 'networks.operator.openshift.io' },
        spec: {
          group: 'operator.openshift.io',
          scope: 'Cluster',
          names: {
            plural: 'networks',
            singular: 'network',
            kind: 'Network',
            listKind: 'NetworkList',
          },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
              },
            },
          ],
        },
      },
    })
    .catch(ignoreExisting);
  const objects = kc.makeApiClient(k8s.CustomObjectsApi);
  const body = {
    apiVersion: 'operator.openshift.io/v1',
    kind: 'Network',
    metadata: { name: 'cluster' },
    spec: {
      defaultNetwork: {
        type: 'OVNKubernetes',
        ovnKubernetesConfig: {
          hybridOverlayConfig: {
            hybridClusterNetwork: [{ cidr: hybrid.cidr, hostPrefix: hybrid.hostPrefix }],
            ...(hybrid.vxlanPort ? { hybridOverlayVXLANPort: hybrid.vxlanPort } : {}),
          },
        },
      },
    },
  };
  // The CRD is served a moment after it is created.
  await waitFor(
    async () => {
      try {
        await objects.createClusterCustomObject({
          group: 'operator.openshift.io',
          version: 'v1',
          plural: 'networks',
          body,
        });
        return true;
      } catch (error) {
        return isAlreadyExists(error) ? true : undefined;
      }
    },
    { description: 'the Network operator.openshift.io cluster object created', timeoutMs: 30_000 },
  );
}

/** `0a:58:` and the four bytes of an IPv4 address (util.IPAddrToHWAddr). */
export function ipToHardwareAddress(address: string): string {
  return [
    '0a',
    '58',
    ...address.split('.').map((b) => Number(b).toString(16).padStart(2, '0')),
  ].join(':');
}

/**
 * Plays the hybrid overlay master until the returned function is called: Windows nodes get a
 * subnet of `hybrid`, Linux nodes with `k8s.ovn.org/node-subnets` the DR MAC annotation.
 */
export function startOvnHybridMaster(kc: k8s.KubeConfig, hybrid: HybridClusterNetwork): () => void {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const cluster = parseIpv4Cidr(hybrid.cidr)!;
  const size = 2 ** (32 - hybrid.hostPrefix);
  const taken = new Set<number>();
  const assigned = new Map<string, number>();
  const nodes = new Map<string, k8s.V1Node>();
  const pending = new Set<string>();
  const abort = new AbortController();
  const annotate = (name: string, key: string, value: string) => {
    if (pending.has(`${name}/${key}`)) return;
    pending.add(`${name}/${key}`);
    void core
      .patchNode(
        { name, body: { metadata: { annotations: { [key]: value } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )
      .catch(() => undefined)
      .finally(() => pending.delete(`${name}/${key}`));
  };
  const apply = () => {
    for (const node of nodes.values()) {
      const subnet = node.metadata?.annotations?.[hybridOverlayAnnotations.nodeSubnet];
      const parsed = subnet ? parseIpv4Cidr(subnet) : undefined;
      if (parsed) taken.add(parsed.network);
    }
    for (const node of nodes.values()) {
      const name = node.metadata!.name!;
      const annotations = node.metadata?.annotations ?? {};
      if (node.metadata?.labels?.['kubernetes.io/os'] === 'windows') {
        if (annotations[hybridOverlayAnnotations.nodeSubnet]) continue;
        // One subnet per node, kept while its annotation is on the way (OVN's master allocates a
        // node's subnet once and keeps it): further events of the node before the watch shows
        // the annotation must not allocate, and patch, another.
        let network = assigned.get(name);
        if (network === undefined) {
          network = cluster.network;
          while (taken.has(network)) network += size;
          taken.add(network);
          assigned.set(name, network);
        }
        annotate(
          name,
          hybridOverlayAnnotations.nodeSubnet,
          `${formatIpv4(network)}/${hybrid.hostPrefix}`,
        );
        continue;
      }
      const ovnSubnets = annotations[hybridOverlayAnnotations.ovnNodeSubnets];
      if (!ovnSubnets || annotations[hybridOverlayAnnotations.drMac]) continue;
      const first = (JSON.parse(ovnSubnets) as { default: string | string[] }).default;
      const parsed = parseIpv4Cidr(Array.isArray(first) ? first[0]! : first);
      if (parsed)
        annotate(
          name,
          hybridOverlayAnnotations.drMac,
          ipToHardwareAddress(formatIpv4(parsed.network + 3)),
        );
    }
  };
  void reflect<k8s.V1Node>({
    kc,
    path: '/api/v1/nodes',
    list: () => core.listNode(),
    store: nodes,
    signal: abort.signal,
    watchTimeoutSeconds: 25,
    retryMinMs: 200,
    retryMaxMs: 2000,
    onChange: apply,
    onFailure: () => undefined,
  }).catch(() => undefined);
  return () => abort.abort();
}
