/**
 * The node's CNI config follows its Node: the run loop writes it once the Node is registered and
 * has a pod CIDR (spec.podCIDR, from kube-controller-manager), rewrites it when that changes (a
 * Node deleted and registered again gets another one), and removes it while the Node has none.
 * Until it exists containerd reports NetworkPluginNotReady and the kubelet keeps the node
 * NotReady, as on any node whose pod network is not configured yet; bootstrap writes none.
 */
import type * as k8s from '@kubernetes/client-node';
import { type AgentConfig, paths } from './agent-config.ts';
import { cniConfig } from './node-files.ts';
import type { AgentContext } from './run-agent.ts';

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
 * Brings the CNI config file in line with `node` (this host's Node as the API server has it). A
 * pod CIDR the config cannot use (not IPv4, too small, outside hosts.podCIDR) leaves no config
 * and says why: handing out addresses the cluster did not give this node would duplicate pod IPs.
 */
export async function syncCniConfig(
  context: AgentContext,
  settings: AgentConfig,
  node: k8s.V1Node,
): Promise<CniConfigSync> {
  const host = context.hostOS;
  const existing = (await host.readFile(paths.cniConfig))?.toString('utf8');
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
