/**
 * flannel-host-gw's bridge endpoint address, kept from pods. flanneld's host-gw backend gives the
 * host's bridge endpoint `<network>_ep` the lease's second address (flannel v0.28.10
 * pkg/backend/hostgw/hostgw_windows.go RegisterNetwork), and win-bridge gives every pod that
 * address as its gateway; but flannel's CNI plugin hands win-bridge host-local IPAM over the
 * whole lease (containernetworking/plugins v0.9.1 plugins/meta/flannel flannel_windows.go
 * doCmdAdd), whose first free address is that same .2 (host-local skips only the gateway, .1).
 * So the agent reserves .2 in host-local's store of the network before it writes the CNI config,
 * as it reserves kube-proxy's source VIP on an overlay (source-vip.ts): no pod then gets the
 * host's address. An address a pod already holds (a node that ran pods before) is said in the
 * log and left: deleting that pod frees it.
 */
import type * as k8s from '@kubernetes/client-node';
import { formatIpv4, parseIpv4Cidr } from '../net/ipv4-cidr.ts';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import { paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';

/** The id the reservation is held under (CNI_CONTAINERID). */
export const bridgeEndpointHolder = 'winfleet-bridge-endpoint';

const reserved = new WeakMap<AgentContext, string>();

/** The lease's bridge endpoint address (.2) of a pod CIDR, if it is an IPv4 network of /30 or larger. */
export function bridgeEndpointAddress(podCIDR: string): string | undefined {
  const cidr = parseIpv4Cidr(podCIDR);
  if (!cidr || cidr.address !== cidr.network || cidr.prefix > 30) return undefined;
  return formatIpv4(cidr.network + 2);
}

/** Reserves the bridge endpoint's address on a flannel-host-gw node; true when it is held. */
export async function syncBridgeEndpointAddress(
  context: AgentContext,
  node: k8s.V1Node | undefined,
  network: NodeNetwork,
): Promise<boolean> {
  if (network.mode !== 'flannel-host-gw') return false;
  const podCIDR = node?.spec?.podCIDR;
  if (!podCIDR) return false;
  const address = bridgeEndpointAddress(podCIDR);
  if (!address) return false;
  const key = `${network.networkName}|${podCIDR}`;
  if (reserved.get(context) === key) return true;
  try {
    await context.hostOS.reserveCniAddress({
      binDir: paths.cniBin,
      network: network.networkName,
      subnet: podCIDR,
      containerId: bridgeEndpointHolder,
      address,
    });
    reserved.set(context, key);
    context.stderr(
      `The bridge endpoint ${network.networkName}_ep's address ${address} is reserved in host-local's store: no pod gets it\n`,
    );
    return true;
  } catch (error) {
    context.stderr(
      `Cannot reserve the bridge endpoint's address ${address} on ${network.networkName} in host-local's store (${(error as Error).message}): a pod holding it is unreachable and its node's pods lose their gateway; delete that pod\n`,
    );
    return false;
  }
}
