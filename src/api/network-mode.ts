/**
 * The pod network a Windows node joins (`network.mode` of winfleet-config), as resolved from
 * the configuration and what the cluster runs (resolve-network.ts): the types the operator,
 * `winfleet check` and the node side share, and the numbers Windows fixes.
 *
 * Sources of the numbers:
 * - Flannel VXLAN on Windows: flannel-io/flannel pkg/backend/vxlan/vxlan_windows.go
 *   (`defaultVNI = 4096`, `vxlanPort = 4789`; `cfg.VNI < defaultVNI` and `cfg.Port != vxlanPort`
 *   are refused; the lease carries `uint16(cfg.VNI)`), Documentation/backends.md ("On Windows
 *   should be greater than or equal to 4096", "on Windows, must be 4789"). Linux flanneld's
 *   defaults are VNI 1 (pkg/backend/vxlan/vxlan.go `defaultVNI = 1`) and the kernel's port 8472.
 * - OVN-Kubernetes hybrid overlay: go-controller/hybrid-overlay/pkg/types/types.go
 *   `HybridOverlayVNI = 4097`.
 */

/** The modes a node can join with; `auto` (configuration only) picks one from the cluster. */
export type NetworkMode =
  | 'flannel-vxlan'
  | 'flannel-host-gw'
  | 'external'
  | 'ovn-hybrid'
  | 'routed';

/** Every mode, in the order messages list them. */
export const networkModes: readonly NetworkMode[] = [
  'flannel-vxlan',
  'flannel-host-gw',
  'external',
  'ovn-hybrid',
  'routed',
];

/** `network.mode` as configured: a mode, or `auto`. */
export type ConfiguredNetworkMode = NetworkMode | 'auto';

export interface ResolvedNetwork {
  mode: NetworkMode;
  /** What was seen in the cluster, for messages ("Flannel VXLAN (ConfigMap kube-flannel/kube-flannel-cfg)"). */
  detected: string;
  flannel?: {
    backend: 'vxlan' | 'host-gw';
    vni: number;
    port: number;
    /** net-conf Network, the cluster pod CIDR. */
    network: string;
    /** The net-conf.json text as read. */
    netConf: string;
    /** Where net-conf.json was read: "ConfigMap kube-flannel/kube-flannel-cfg". */
    source: string;
  };
  external?: {
    /** The CNI: "Calico", "Antrea", "Flannel", or "the CNI of DaemonSet <ns>/<name>". */
    cni: string;
    /** Windows paths (C:\...) containerd's conf_dir and bin_dir are set to. */
    cniConfDir: string;
    cniBinDir: string;
    /** Whether winfleet runs its own kube-proxy on the node. */
    kubeProxy: boolean;
    /** The HNS network name or regex the CNI makes (health checks, kube-proxy). */
    networkName?: string;
    /** The CNI's Windows DaemonSet, namespace/name. */
    windowsDaemonSet?: string;
    /** Whether the CNI's Windows data plane is an HNS Overlay (VXLAN) network: true, false, or not known. */
    overlay?: boolean;
  };
  ovnHybrid?: {
    hybridOverlayVni: number /* 4097 */;
    /** hybridOverlayConfig.hybridOverlayVXLANPort, when the cluster sets one. */
    vxlanPort?: number;
  };
}

export type NetworkResolution =
  | {
      ok: true;
      network: ResolvedNetwork;
      /** What could not be verified, or looks risky, though nothing refuses the join. */
      warnings?: string[];
    }
  | {
      ok: false;
      /** A JoinFailureReason: NetworkModeMismatch or NetworkUnsupported. */
      reason: string;
      /** What was seen and the fix, in one text (conditions and Events). */
      message: string;
      /** What was seen (the configured mode, what the cluster runs, where). */
      seen: string;
      /** What to do. */
      fix: string;
    };

/** Flannel's Windows VXLAN requirements (vxlan_windows.go). */
export const windowsVxlan = {
  /** The lowest VNI flanneld on Windows accepts (and its default). */
  minVni: 4096,
  /** The lease carries `uint16(cfg.VNI)`: a larger VNI is cut. */
  maxVni: 65535,
  /** The only UDP port flanneld on Windows accepts (and its default). */
  port: 4789,
} as const;

/** Linux flanneld's VXLAN defaults (vxlan.go; the kernel's port). */
export const linuxVxlanDefaults = { vni: 1, port: 8472 } as const;

/** OVN-Kubernetes hybrid overlay's VNI (hybrid-overlay/pkg/types/types.go). */
export const hybridOverlayVni = 4097;

/**
 * Whether the node's pod network is an HNS Overlay (VXLAN) network, which needs KB4489899 on
 * Windows Server 2019 (src/windows/patch-levels.ts): flannel-vxlan and ovn-hybrid yes,
 * flannel-host-gw and routed no (L2Bridge), external as the CNI's data plane is (undefined:
 * not known).
 */
export function usesHnsOverlay(network: ResolvedNetwork): boolean | undefined {
  switch (network.mode) {
    case 'flannel-vxlan':
    case 'ovn-hybrid':
      return true;
    case 'flannel-host-gw':
    case 'routed':
      return false;
    case 'external':
      return network.external?.overlay;
  }
}

/** The overlay a mode alone implies, without the cluster (external: not known). */
export function modeUsesHnsOverlay(mode: NetworkMode): boolean | undefined {
  return mode === 'external' ? undefined : usesHnsOverlay({ mode, detected: '' });
}
