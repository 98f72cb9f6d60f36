/**
 * The node's CNI config follows its network mode and its Node: the run loop writes it once the
 * Node is registered (routed: once it has a pod CIDR, spec.podCIDR from kube-controller-manager,
 * rewritten when that changes and removed while the Node has none; flannel: its config and
 * flanneld's net-conf.json; external: none of winfleet's). Until a config exists containerd
 * reports NetworkPluginNotReady and the kubelet keeps the node NotReady, as on any node whose
 * pod network is not configured yet; bootstrap writes none.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  defaultNodeNetwork,
  type NodeNetwork,
  ovnHybrid,
} from '../servicesmanifest/node-network.ts';
import { type AgentConfig, paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import {
  cniConfig,
  flannelCniConfig,
  flannelHostGwCniConfig,
  flannelNetConfPath,
  nodeSubnetFor,
  ovnHybridCniConfig,
} from './node-files.ts';

/** What syncCniConfig did. */
export type CniConfigSync = 'written' | 'unchanged' | 'removed' | 'absent' | 'refused';

/** The last thing said about the CNI config, per agent, so each change is logged once. */
const lastSaid = new WeakMap<AgentContext, string>();

function sayOnce(context: AgentContext, message: string): void {
  if (lastSaid.get(context) === message) return;
  lastSaid.set(context, message);
  context.stderr(`${message}\n`);
}

/**
 * Brings the node's CNI files in line with its network mode and `node` (this host's Node as
 * the API server has it):
 * - routed: sdnbridge's config on the Node's pod CIDR, removed while the Node has none; a pod
 *   CIDR the config cannot use (not IPv4, too small, outside hosts.podCIDR) leaves no config and
 *   says why: handing out addresses the cluster did not give this node would duplicate pod IPs;
 * - flannel-vxlan: the cluster's net-conf.json where flanneld reads it, and flannel's CNI
 *   config (flannel itself takes the subnet it leased, from the Node's pod CIDR);
 * - flannel-host-gw: the same, with flannel's config delegating to win-bridge on flanneld's
 *   L2Bridge network;
 * - ovn-hybrid: win-overlay's config on the hybrid overlay subnet OVN's master wrote on the Node
 *   (k8s.ovn.org/hybrid-overlay-node-subnet), removed while it has none, refused (none written)
 *   when it is not a usable subnet;
 * - external: none of winfleet's (one left from an earlier mode goes): the cluster's CNI
 *   writes its own into the directories containerd names.
 * @package
 */
export async function syncCniConfig(
  context: AgentContext,
  settings: AgentConfig,
  node: k8s.V1Node,
  network: NodeNetwork = defaultNodeNetwork,
): Promise<CniConfigSync> {
  const host = context.hostOS;
  const existing = (await host.readFile(paths.cniConfig))?.toString('utf8');
  if (network.mode === 'external') {
    if (existing !== undefined) await host.removePath(paths.cniConfig);
    sayOnce(
      context,
      `The cluster's CNI configures this node's pod network: its Windows agent writes its config into ${network.cniConfDir}, which containerd reads`,
    );
    return existing !== undefined ? 'removed' : 'absent';
  }
  if (network.mode === 'flannel-vxlan' || network.mode === 'flannel-host-gw') {
    const netConf = (await host.readFile(flannelNetConfPath))?.toString('utf8');
    if (netConf !== network.netConf) await host.writeFile(flannelNetConfPath, network.netConf);
    const wanted =
      network.mode === 'flannel-vxlan'
        ? flannelCniConfig(settings, network.vni)
        : flannelHostGwCniConfig(settings, network.networkName);
    if (existing === wanted && netConf === network.netConf) return 'unchanged';
    await host.writeFile(paths.cniConfig, wanted);
    sayOnce(
      context,
      `Wrote ${paths.cniConfig} for flannel (${network.mode === 'flannel-vxlan' ? `VNI ${network.vni}` : `host-gw, network ${network.networkName}`}) and ${flannelNetConfPath} for flanneld`,
    );
    return 'written';
  }
  if (network.mode === 'ovn-hybrid') {
    let wanted: string | undefined;
    try {
      const subnet = nodeSubnetFor(settings, node, network);
      wanted = subnet ? ovnHybridCniConfig(settings, subnet) : undefined;
    } catch (error) {
      if (existing !== undefined) await host.removePath(paths.cniConfig);
      sayOnce(context, `No CNI config for this node: ${(error as Error).message}`);
      return 'refused';
    }
    if (wanted === undefined) {
      if (existing !== undefined) await host.removePath(paths.cniConfig);
      sayOnce(
        context,
        `Node ${settings.nodeName} has no ${ovnHybrid.subnetAnnotation} yet, so this node has no pod network (containerd reports NetworkPluginNotReady): OVN-Kubernetes' master writes it on Windows nodes when the cluster has hybridOverlayConfig.hybridClusterNetwork`,
      );
      return existing !== undefined ? 'removed' : 'absent';
    }
    if (existing === wanted) return 'unchanged';
    await host.writeFile(paths.cniConfig, wanted);
    sayOnce(
      context,
      `Wrote ${paths.cniConfig} for the hybrid overlay subnet ${node.metadata?.annotations?.[ovnHybrid.subnetAnnotation]}`,
    );
    return 'written';
  }
  const podCIDR = node.spec?.podCIDR;
  let wanted: string;
  if (!podCIDR) {
    if (existing !== undefined) await host.removePath(paths.cniConfig);
    sayOnce(
      context,
      `Node ${settings.nodeName} has no spec.podCIDR yet, so this node has no pod network (containerd reports NetworkPluginNotReady): kube-controller-manager allocates one with --allocate-node-cidrs=true --cluster-cidr=${settings.podCIDR}`,
    );
    return existing !== undefined ? 'removed' : 'absent';
  }
  try {
    wanted = cniConfig(settings, podCIDR);
  } catch (error) {
    if (existing !== undefined) await host.removePath(paths.cniConfig);
    sayOnce(context, `No CNI config for this node: ${(error as Error).message}`);
    return 'refused';
  }
  if (existing === wanted) return 'unchanged';
  await host.writeFile(paths.cniConfig, wanted);
  sayOnce(context, `Wrote ${paths.cniConfig} for this node's pod CIDR ${podCIDR}`);
  return 'written';
}
