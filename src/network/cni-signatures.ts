/**
 * How each CNI shows itself in a cluster: the DaemonSets its manifests or operator create, the
 * namespaces they live in, its images, its Windows component and the HNS network that
 * component makes. A DaemonSet counts only in the namespaces its CNI uses, so nobody who can
 * create a DaemonSet in their own namespace can make winfleet believe in a CNI (one that is
 * not there, or a Windows component that is not there).
 *
 * Sources (names, namespaces, Windows components):
 * - Flannel: flannel-io/flannel Documentation/kube-flannel.yml (DaemonSet kube-flannel-ds in
 *   namespace kube-flannel, ConfigMap kube-flannel-cfg; older releases and kubeadm guides used
 *   kube-system), image flannel/flannel (Rancher: rancher/hardened-flannel);
 *   kubernetes-sigs/sig-windows-tools hostprocess/flannel (removed in 729ae7c) ran it on Windows
 *   as a DaemonSet selecting kubernetes.io/os=windows; its HNS network is flannel.<VNI>
 *   (vxlan_windows.go) or cbr0 (hostgw_windows.go).
 * - Calico: tigera/operator pkg/common (namespace calico-system, DaemonSets calico-node and
 *   calico-node-windows), pkg/render/windows.go (KUBE_NETWORK "Calico.*": the HNS network
 *   calico-node-windows makes is named Calico); Calico's own
 *   manifests put calico-node in kube-system.
 * - Antrea: antrea-io/antrea build/yamls/antrea.yml and antrea-windows-with-ovs.yml (DaemonSets
 *   antrea-agent and antrea-agent-windows in kube-system), pkg/agent/util/net_windows.go (HNS
 *   network antrea-hnsnetwork).
 * - Cilium: cilium/cilium install/kubernetes (DaemonSet cilium, in kube-system or cilium); no
 *   Windows data plane (cilium/cilium#34929).
 * - OVN-Kubernetes: openshift/cluster-network-operator (DaemonSet ovnkube-node in
 *   openshift-ovn-kubernetes); upstream ovn-org/ovn-kubernetes dist/ uses namespace
 *   ovn-kubernetes. Windows nodes join it through the hybrid overlay.
 * - Canal (Calico policy on Flannel): projectcalico canal.yaml and rke2-canal, DaemonSet canal
 *   or rke2-canal in kube-system; neither renders a Windows component.
 * - Weave Net (weave-net) and kube-router (kube-router), kube-system: Linux only.
 * - kube-proxy for Windows: sig-windows-tools hostprocess/calico/kube-proxy/kube-proxy.yml,
 *   DaemonSet kube-proxy-windows in kube-system.
 */
import type { DaemonSetView } from './cluster-view.ts';

/** @package */
export type CniId =
  | 'flannel'
  | 'calico'
  | 'antrea'
  | 'cilium'
  | 'ovn-kubernetes'
  | 'canal'
  | 'weave-net'
  | 'kube-router';

/** @package */
export interface CniSignature {
  id: CniId;
  /** For messages: "Calico". */
  title: string;
  /** The namespaces its DaemonSets live in; elsewhere a look-alike is ignored. */
  namespaces: readonly string[];
  /** Names of its node DaemonSets (any OS). */
  name: RegExp;
  /** Its images (the repository path, registry and tag included). */
  image?: RegExp;
  /** The name of its Windows DaemonSet, when it has a usual one. */
  windowsName?: string;
  /** Whether it has a Windows data plane at all. */
  windows: boolean;
  /** The HNS network name (or regex) its Windows component makes. */
  networkName?: string;
}

// The order matters: Canal's DaemonSet runs flannel's image too, so it is tried first.
/** @package */
export const cniSignatures: readonly CniSignature[] = [
  {
    id: 'canal',
    title: 'Canal (Calico policy on Flannel)',
    namespaces: ['kube-system'],
    name: /^(rke2-)?canal$/,
    windows: false,
  },
  {
    id: 'flannel',
    title: 'Flannel',
    namespaces: ['kube-flannel', 'kube-system'],
    name: /flannel/,
    image: /(^|\/)(hardened-)?flannel(:|@|$)/,
    windows: true,
  },
  {
    id: 'calico',
    title: 'Calico',
    namespaces: ['calico-system', 'kube-system'],
    name: /^calico-node(-windows)?$/,
    image: /(^|\/)calico\/(node|node-windows)(:|@|$)/,
    windowsName: 'calico-node-windows',
    windows: true,
    networkName: 'Calico',
  },
  {
    id: 'antrea',
    title: 'Antrea',
    namespaces: ['kube-system'],
    name: /^antrea-agent(-windows)?$/,
    image: /(^|\/)antrea\/antrea-(ubuntu|agent-ubuntu|windows)(:|@|$)/,
    windowsName: 'antrea-agent-windows',
    windows: true,
    networkName: 'antrea-hnsnetwork',
  },
  {
    id: 'cilium',
    title: 'Cilium',
    namespaces: ['kube-system', 'cilium'],
    name: /^cilium$/,
    image: /(^|\/)cilium\/cilium(:|@|$)/,
    windows: false,
  },
  {
    id: 'ovn-kubernetes',
    title: 'OVN-Kubernetes',
    namespaces: ['openshift-ovn-kubernetes', 'ovn-kubernetes'],
    name: /^ovnkube-node$/,
    windows: true,
  },
  {
    id: 'weave-net',
    title: 'Weave Net',
    namespaces: ['kube-system'],
    name: /^weave-net$/,
    windows: false,
  },
  {
    id: 'kube-router',
    title: 'kube-router',
    namespaces: ['kube-system'],
    name: /^kube-router$/,
    windows: false,
  },
];

/** The CNI a DaemonSet looks like by name or image, wherever it lives; undefined: none. */
export function lookalike(ds: DaemonSetView): CniSignature | undefined {
  return cniSignatures.find(
    (s) =>
      s.name.test(ds.name) || (s.image !== undefined && ds.images.some((i) => s.image!.test(i))),
  );
}

/** The namespace and name of the kube-proxy-windows DaemonSet (sig-windows-tools). */
export const kubeProxyWindows = { namespace: 'kube-system', name: /^kube-proxy-windows$/ };

/** A DaemonSet that runs kube-proxy on Windows nodes, in kube-system. */
export function isKubeProxyWindows(ds: DaemonSetView): boolean {
  if (ds.namespace !== kubeProxyWindows.namespace) return false;
  if (kubeProxyWindows.name.test(ds.name)) return true;
  return ds.os === 'windows' && ds.images.some((i) => /(^|\/)kube-proxy(:|@|$)/.test(i));
}
