/**
 * The inbound firewall rule for the kubelet's API port. The API server connects to the kubelet
 * there for `kubectl logs`, `exec`, `attach`, `port-forward` and metrics; Windows Server blocks
 * inbound connections by default, so without the rule all of those time out. Bootstrap creates
 * it (WMCO's hosts get one too, "ContainerLogsPort", and sig-windows-tools' preflight checks for
 * it); cleanup removes it.
 */
import { encapsulationPort, type NodeNetwork } from '../servicesmanifest/node-network.ts';
import type { HostOS, InboundFirewallRule } from './host-os.ts';

/** The kubelet's default --port, which winfleet's KubeletConfiguration keeps. */
export const kubeletPort = 10250;

export const kubeletFirewallRule: InboundFirewallRule = {
  name: 'winfleet-kubelet',
  displayName: `winfleet kubelet API (TCP ${kubeletPort})`,
  description:
    'Lets the Kubernetes API server reach the kubelet (kubectl logs, exec, port-forward, metrics); winfleet removes it when it removes the node',
  protocol: 'TCP',
  localPort: kubeletPort,
};

/** The name of the encapsulation rule, whatever the mode (cleanup removes it). */
export const encapsulationFirewallRuleName = 'winfleet-vxlan';

/**
 * The inbound rule a network mode's encapsulation needs: VXLAN (UDP 4789) for flannel-vxlan,
 * whose packets from other nodes Windows' firewall would otherwise drop. None for the others.
 */
export function encapsulationFirewallRule(network: NodeNetwork): InboundFirewallRule | undefined {
  const port = encapsulationPort(network);
  if (port === undefined) return undefined;
  return {
    name: encapsulationFirewallRuleName,
    displayName: `winfleet pod network VXLAN (UDP ${port})`,
    description:
      'Lets other nodes’ VXLAN packets (the pod network’s overlay) reach this node; winfleet removes it when the node leaves the overlay or is removed',
    protocol: 'UDP',
    localPort: port,
  };
}

/** Creates the mode's encapsulation rule, or removes one left from another mode. */
export async function syncEncapsulationRule(
  host: Pick<HostOS, 'ensureInboundFirewallRule' | 'removeFirewallRule'>,
  network: NodeNetwork | undefined,
): Promise<void> {
  const rule = network && encapsulationFirewallRule(network);
  if (rule) await host.ensureInboundFirewallRule(rule);
  else await host.removeFirewallRule(encapsulationFirewallRuleName);
}
