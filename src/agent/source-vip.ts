/**
 * kube-proxy's source VIP on an overlay pod network. winkernel refuses to start on an Overlay
 * network without --source-vip ("source-vip flag not set", kubernetes v1.36.5
 * pkg/proxy/winkernel/proxier.go NewProxier); it is an address of the node's pod subnet that no
 * pod may get, so the agent reserves it in host-local's store of the pod network, as RKE2 and
 * sig-windows-tools do (windows/cni-address.ts). The reservation lives in host-local's files:
 * the same id gets the same address back after an agent restart or a reboot; a new pod subnet
 * (the Node registered again) gets a new one.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  type NodeNetwork,
  needsSourceVip,
  podNetworkName,
} from '../servicesmanifest/node-network.ts';
import { type AgentConfig, paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { nodeSubnetFor } from './node-files.ts';

/** The id the reservation is held under (CNI_CONTAINERID). */
export const sourceVipHolder = 'winfleet-source-vip';

/** The last reservation per agent, so that a pass does not run host-local again. */
const reserved = new WeakMap<AgentContext, { subnet: string; address: string }>();

/**
 * The node's source VIP: undefined when its network needs none, or when it cannot be had yet
 * (no pod CIDR, host-local failing: said in the log; kube-proxy then waits).
 * @package
 */
export async function syncSourceVip(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node | undefined,
  network: NodeNetwork,
): Promise<string | undefined> {
  if (!needsSourceVip(network)) return undefined;
  const name = podNetworkName(network);
  if (!name) return undefined;
  let subnet: string;
  try {
    const found = nodeSubnetFor(config, node, network);
    if (!found) return undefined;
    subnet = found.cidr;
  } catch (error) {
    context.stderr(`No source VIP for kube-proxy: ${(error as Error).message}\n`);
    return undefined;
  }
  const known = reserved.get(context);
  if (known?.subnet === subnet) return known.address;
  try {
    const address = await context.hostOS.reserveCniAddress({
      binDir: paths.cniBin,
      network: name,
      subnet,
      containerId: sourceVipHolder,
    });
    reserved.set(context, { subnet, address });
    context.stderr(
      `kube-proxy's source VIP on ${name}: ${address} (reserved in host-local's store)\n`,
    );
    return address;
  } catch (error) {
    context.stderr(
      `Cannot reserve kube-proxy's source VIP on ${name} in ${subnet}: ${(error as Error).message}; kube-proxy waits for it\n`,
    );
    return undefined;
  }
}
