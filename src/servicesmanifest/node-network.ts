/**
 * What a Windows node's pod network is, as the operator hands it to the agent (in the
 * bootstrap config and winfleet-join) and the services manifest is built for: one of the
 * network modes, with what that mode needs on the node. The agent and the manifest read only
 * this; how a mode is chosen and checked against the cluster is resolve-network's.
 *
 * - routed: winfleet's own L2Bridge network `winfleet` (sdnbridge, host-local on the Node's
 *   spec.podCIDR); something outside routes each node's pod CIDR.
 * - flannel-vxlan: flanneld (kube subnet manager) makes the Overlay network `flannel.<VNI>` and
 *   the remote-subnet routes; pods through flannel's CNI plugin delegating to win-overlay;
 *   kube-proxy on that network with a source VIP (winkernel needs one on an overlay).
 * - flannel-host-gw: flanneld's host-gw backend makes the L2Bridge network (`cbr0` unless
 *   net-conf.json's Backend.Name says otherwise) with the host's bridge endpoint at the lease's
 *   .2 and one host route per remote lease (flannel pkg/backend/hostgw/hostgw_windows.go,
 *   route_network_windows.go); pods through flannel's CNI plugin delegating to win-bridge;
 *   kube-proxy on that network without a source VIP (winkernel reads --source-vip only on an
 *   Overlay network: kubernetes v1.36.5 pkg/proxy/winkernel/proxier.go NewProxier).
 * - ovn-hybrid: OVN-Kubernetes' hybrid overlay (OpenShift): hybrid-overlay-node.exe (a winfleet
 *   service, as WMCO runs it) makes the Overlay network OVNKubernetesHybridOverlayNetwork (VNI
 *   4097) on the subnet OVN's master writes into the Node's `k8s.ovn.org/hybrid-overlay-node-subnet`
 *   (not spec.podCIDR, which OpenShift does not allocate), annotates the Node with its
 *   distributed-router MAC, and keeps one RemoteSubnetRoute per other node; pods through
 *   win-overlay with host-local on that subnet; kube-proxy on that network with a source VIP.
 * - external: the cluster's CNI brings its own Windows agent (a HostProcess DaemonSet):
 *   winfleet writes no CNI config and makes no network; containerd uses the CNI's directories.
 */

export type NodeNetwork =
  | { mode: 'routed' }
  | {
      mode: 'flannel-vxlan';
      /** The VXLAN network identifier (net-conf.json Backend.VNI): the network is flannel.<vni>. */
      vni: number;
      /** net-conf.json as the cluster's flannel has it, for flanneld on the node. */
      netConf: string;
    }
  | {
      mode: 'flannel-host-gw';
      /** The L2Bridge network flanneld makes (net-conf.json Backend.Name, default cbr0). */
      networkName: string;
      /** net-conf.json as the cluster's flannel has it, for flanneld on the node. */
      netConf: string;
    }
  | {
      mode: 'ovn-hybrid';
      /**
       * The VXLAN port of the hybrid overlay when the cluster sets one
       * (hybridOverlayConfig.hybridOverlayVXLANPort); absent: 4789.
       */
      vxlanPort?: number;
    }
  | {
      mode: 'external';
      /** containerd's CNI directories: where the CNI's DaemonSet installs. */
      cniConfDir: string;
      cniBinDir: string;
      /** winfleet's kube-proxy runs (on `networkName`) only when the CNI brings none. */
      kubeProxy: boolean;
      /** The HNS network the CNI makes, when known (health checks, kube-proxy). */
      networkName?: string;
      /**
       * The CNI's Windows data plane is VXLAN (an HNS Overlay network, Calico's VXLAN pools):
       * the node opens UDP 4789 inbound, as the CNI's docs ask of the host. Present only when
       * true (an older agent refuses a field it does not know).
       */
      overlay?: true;
    };

export type NodeNetworkMode = NodeNetwork['mode'];

/**
 * The hybrid overlay's names and numbers (ovn-org/ovn-kubernetes go-controller/hybrid-overlay:
 * pkg/types/types.go `HybridOverlayNodeSubnet`, `HybridOverlayDRMAC`, `HybridOverlayVNI = 4097`;
 * pkg/controller/node_windows.go `networkName`).
 */
export const ovnHybrid = {
  networkName: 'OVNKubernetesHybridOverlayNetwork',
  vni: 4097,
  subnetAnnotation: 'k8s.ovn.org/hybrid-overlay-node-subnet',
  drMacAnnotation: 'k8s.ovn.org/hybrid-overlay-distributed-router-gateway-mac',
} as const;

/** routed's HNS network and CNI network name. */
export const routedNetworkName = 'winfleet';

/** The HNS network pods are on, when the mode knows its name. */
export function podNetworkName(network: NodeNetwork): string | undefined {
  switch (network.mode) {
    case 'routed':
      return routedNetworkName;
    case 'flannel-vxlan':
      return `flannel.${network.vni}`;
    case 'flannel-host-gw':
      return network.networkName;
    case 'ovn-hybrid':
      return ovnHybrid.networkName;
    case 'external':
      return network.networkName;
  }
}

/**
 * Whether winfleet's own services make the pod network (so its repairs may make it again):
 * routed (sdnbridge), the flannel modes (flanneld) and ovn-hybrid (hybrid-overlay-node), each a
 * winfleet service. Never a CNI's own.
 */
export function winfleetOwnsNetwork(network: NodeNetwork): boolean {
  return network.mode !== 'external';
}

/** Whether kube-proxy runs on the node, and on which network. */
export function kubeProxyNetwork(network: NodeNetwork): string | undefined {
  if (network.mode === 'external' && !network.kubeProxy) return undefined;
  return podNetworkName(network) ?? undefined;
}

/** Whether the pod network is an overlay, on which winkernel needs --source-vip. */
export function needsSourceVip(network: NodeNetwork): boolean {
  return network.mode === 'flannel-vxlan' || network.mode === 'ovn-hybrid';
}

/** The UDP port an inbound firewall rule must open for the mode's encapsulation, if any. */
export function encapsulationPort(network: NodeNetwork): number | undefined {
  if (network.mode === 'flannel-vxlan') return 4789;
  if (network.mode === 'ovn-hybrid') return network.vxlanPort ?? 4789;
  return network.mode === 'external' && network.overlay ? 4789 : undefined;
}

/** flannel's host-gw network name when net-conf.json's Backend.Name gives none (hostgw_windows.go). */
export const flannelHostGwDefaultNetwork = 'cbr0';

/** Whether flanneld (a winfleet service) makes the pod network: the flannel modes. */
export function runsFlanneld(network: NodeNetwork): boolean {
  return network.mode === 'flannel-vxlan' || network.mode === 'flannel-host-gw';
}

/** Whether hybrid-overlay-node (a winfleet service) makes the pod network: ovn-hybrid. */
export function runsHybridOverlay(network: NodeNetwork): boolean {
  return network.mode === 'ovn-hybrid';
}

/**
 * The winfleet service that makes the pod network when it starts (restarted to make it again),
 * if one does: flanneld, hybrid-overlay-node; routed's network comes from its CNI config.
 */
export function networkServiceName(network: NodeNetwork): string | undefined {
  if (runsFlanneld(network)) return 'flanneld';
  return runsHybridOverlay(network) ? 'hybrid-overlay-node' : undefined;
}

/**
 * The host's own endpoint on a flannel-host-gw network: flanneld names it `<network>_ep` and
 * gives it the lease's second address (hostgw_windows.go RegisterNetwork); no pod has it.
 */
export function bridgeEndpointName(network: NodeNetwork): string | undefined {
  return network.mode === 'flannel-host-gw' ? `${network.networkName}_ep` : undefined;
}

/** The network of a node whose bootstrap config says none (an agent older than modes). */
export const defaultNodeNetwork: NodeNetwork = { mode: 'routed' };

/** NodeNetwork's JSON Schema, for the bootstrap config and winfleet-join (strict). */
export const nodeNetworkSchema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['mode'],
      properties: { mode: { const: 'routed' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['mode', 'vni', 'netConf'],
      properties: {
        mode: { const: 'flannel-vxlan' },
        vni: { type: 'integer', minimum: 4096, maximum: 16777215 },
        netConf: { type: 'string', minLength: 2, maxLength: 65536 },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['mode', 'networkName', 'netConf'],
      properties: {
        mode: { const: 'flannel-host-gw' },
        networkName: { type: 'string', minLength: 1, maxLength: 256 },
        netConf: { type: 'string', minLength: 2, maxLength: 65536 },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['mode'],
      properties: {
        mode: { const: 'ovn-hybrid' },
        vxlanPort: { type: 'integer', minimum: 1, maximum: 65535 },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['mode', 'cniConfDir', 'cniBinDir', 'kubeProxy'],
      properties: {
        mode: { const: 'external' },
        cniConfDir: { type: 'string', pattern: '^[A-Za-z]:\\\\', maxLength: 260 },
        cniBinDir: { type: 'string', pattern: '^[A-Za-z]:\\\\', maxLength: 260 },
        kubeProxy: { type: 'boolean' },
        networkName: { type: 'string', minLength: 1, maxLength: 256 },
        overlay: { const: true },
      },
    },
  ],
} as const;
