/**
 * The inbound firewall rule for the kubelet's API port. The API server connects to the kubelet
 * there for `kubectl logs`, `exec`, `attach`, `port-forward` and metrics; Windows Server blocks
 * inbound connections by default, so without the rule all of those time out. Bootstrap creates
 * it (WMCO's hosts get one too, "ContainerLogsPort", and sig-windows-tools' preflight checks for
 * it); cleanup removes it.
 */
import type { InboundFirewallRule } from './host-os.ts';

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
