/**
 * The agent's own repairs (issue 13, rung 1 of the remediation ladder), run on each pass of the
 * run loop after problem detection, for the conditions the agent published True (so that one
 * odd reading is never acted on):
 * - a stopped node service: converge already starts it (not one in a restart loop:
 *   node-health.ts servicesNotToRestart); nothing more here;
 * - HNSNetworkMissing: the CNI's HNS network is created again from the CNI config the agent
 *   wrote for this Node (its name, sdnbridge's L2Bridge type, the subnet and gateway of its
 *   ipam), as sdnbridge's getOrCreateNetwork would at the next pod. Pods that were on the old
 *   network stay without network: their endpoints went with it, and the kubelet sets a
 *   sandbox's network up only when it creates the sandbox; they must be recreated;
 * - StaleHNSEndpoints: the endpoints the last check found left behind on winfleet's own pod
 *   network (no pod on the node has their address, over two checks staleEndpointSeconds apart:
 *   src/node-health/stale-endpoints.ts) are removed (Remove-HnsEndpoint), each only while it still
 *   has the address it was found with; an address a pod has is never removed, even when two
 *   endpoints hold it (reported only), and a CNI's network (external) is never touched;
 * - ClockSkew: the Windows Time service resyncs the clock (w32tm /resync /force);
 * - SystemDiskLow: no local repair. What could be freed safely (unused container images, old
 *   logs) is the kubelet's image garbage collection and the log rotation's to decide; deleting
 *   files on a guess risks user data, so a person frees space.
 *
 * A repair acts only on what this host's own files and its own Node say, checked strictly: the
 * Node's spec.podCIDR must be an IPv4 network inside the cluster's pod CIDR (node-files.ts
 * nodePodSubnet) and the CNI config on disk must be exactly the one rendered for it, else
 * nothing is created and the log says why.
 */

import type * as k8s from '@kubernetes/client-node';
import { NodeHealthCondition } from '../api/reasons.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { cniNetworkName } from '../servicesmanifest/host-paths.ts';
import {
  defaultNodeNetwork,
  type NodeNetwork,
  networkServiceName,
  podNetworkName,
  winfleetOwnsNetwork,
} from '../servicesmanifest/node-network.ts';
import type { HnsNetworkSpec } from '../windows/hns-objects.ts';
import { type AgentConfig, paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { cniConfig, nodePodSubnet } from './node-files.ts';
import { staleEndpointsToRemove } from './node-health.ts';

/** What one repair did. */
export interface LocalRepair {
  condition: NodeHealthCondition;
  /** done: repaired; refused: the input was not exactly as expected; failed: the host said no. */
  outcome: 'done' | 'refused' | 'failed';
  message: string;
}

/** The last message logged per condition and agent, so a repeated refusal is logged once. */
const lastLogged = new WeakMap<AgentContext, Map<string, string>>();

function log(context: AgentContext, repair: LocalRepair): void {
  let said = lastLogged.get(context);
  if (!said) {
    said = new Map();
    lastLogged.set(context, said);
  }
  // Done repairs are always logged; a refusal or failure once until it changes.
  if (repair.outcome !== 'done' && said.get(repair.condition) === repair.message) return;
  said.set(repair.condition, repair.message);
  context.stderr(`health repair (${repair.condition}): ${repair.message}\n`);
}

function errorText(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).replace(/\s+/g, ' ').slice(0, 300);
}

/**
 * The HNS network the CNI config on disk describes, when it is exactly the config this agent
 * renders for `node`'s pod CIDR; otherwise a WinfleetError saying why not.
 */
export async function cniNetworkSpec(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
): Promise<HnsNetworkSpec> {
  const podCIDR = node.spec?.podCIDR;
  if (typeof podCIDR !== 'string' || podCIDR === '') {
    throw new WinfleetError(
      'WF_AGENT_STEP_FAILED',
      `Node ${config.nodeName} has no spec.podCIDR, so this node has no pod network to recreate`,
    );
  }
  // Refuses a pod CIDR that is not an IPv4 network inside the cluster's (hosts.podCIDR).
  const subnet = nodePodSubnet(config, podCIDR);
  const wanted = cniConfig(config, podCIDR);
  const onDisk = (await context.hostOS.readFile(paths.cniConfig))?.toString('utf8');
  if (onDisk === undefined) {
    throw new WinfleetError(
      'WF_AGENT_STEP_FAILED',
      `${paths.cniConfig} is missing, so nothing says how to create the pod network; the run loop writes it from the Node's spec.podCIDR: check the agent log for why it did not`,
    );
  }
  if (onDisk !== wanted) {
    throw new WinfleetError(
      'WF_AGENT_STEP_FAILED',
      `${paths.cniConfig} is not the config for this Node's pod CIDR ${podCIDR}; the run loop rewrites it on its next pass`,
    );
  }
  // The config on disk is exactly the one rendered for this pod CIDR: its network is winfleet's
  // sdnbridge network (L2Bridge) on the Node's subnet and gateway.
  return {
    name: cniNetworkName,
    type: 'L2Bridge',
    addressPrefix: subnet.cidr,
    gateway: subnet.gateway,
  };
}

async function recreateHnsNetwork(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
): Promise<LocalRepair> {
  const condition = NodeHealthCondition.HNSNetworkMissing;
  let spec: HnsNetworkSpec;
  try {
    spec = await cniNetworkSpec(context, config, node);
  } catch (error) {
    return {
      condition,
      outcome: 'refused',
      message: `not recreating HNS network ${cniNetworkName}: ${errorText(error)}`,
    };
  }
  try {
    const existing = (await context.hostOS.listHnsNetworks()).find(
      (n) => n.name.toLowerCase() === spec.name.toLowerCase(),
    );
    if (existing) {
      return {
        condition,
        outcome: 'done',
        message: `HNS network ${spec.name} exists again (${existing.id}); nothing to create`,
      };
    }
    const network = await context.hostOS.createHnsNetwork(spec);
    return {
      condition,
      outcome: 'done',
      message: `recreated HNS network ${spec.name} (${spec.type}, ${spec.addressPrefix}, gateway ${spec.gateway}, id ${network.id}) from ${paths.cniConfig}; new pods get endpoints on it, but pods that were on the old network have none and stay without network until they are recreated (kubectl delete pod; their controllers create them again)`,
    };
  } catch (error) {
    return {
      condition,
      outcome: 'failed',
      message: `cannot recreate HNS network ${spec.name}: ${errorText(error)}; restart the host, or recreate a pod so that the CNI plugin creates it`,
    };
  }
}

async function resyncClock(context: AgentContext): Promise<LocalRepair> {
  const condition = NodeHealthCondition.ClockSkew;
  try {
    await context.hostOS.resyncClock();
    return {
      condition,
      outcome: 'done',
      message:
        'asked the Windows Time service to resync the clock from its time source (w32tm /resync /force)',
    };
  } catch (error) {
    return {
      condition,
      outcome: 'failed',
      message: `cannot resync the clock: ${errorText(error)}`,
    };
  }
}

/**
 * The pod network gone, by mode: winfleet's own L2Bridge network is made again from its CNI
 * config; flanneld (hybrid-overlay-node) makes flannel's (the hybrid overlay's) again when it
 * starts, so it is restarted; a CNI's own network
 * (external) is never touched: its Windows agent owns it.
 */
async function repairPodNetwork(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
  network: NodeNetwork,
): Promise<LocalRepair> {
  const condition = NodeHealthCondition.HNSNetworkMissing;
  if (network.mode === 'routed') return recreateHnsNetwork(context, config, node);
  const name = podNetworkName(network) ?? 'the CNI’s network';
  if (!winfleetOwnsNetwork(network))
    return {
      condition,
      outcome: 'refused',
      message: `not recreating HNS network ${name}: the cluster's CNI owns it (network mode external); its Windows agent makes it again`,
    };
  const service = networkServiceName(network) ?? 'flanneld';
  try {
    await context.hostOS.stopService(service).catch(() => undefined);
    await context.hostOS.startService(service);
    return {
      condition,
      outcome: 'done',
      message: `restarted ${service}, which makes HNS network ${name} again when it starts; pods that were on the old network stay without network until they are recreated`,
    };
  } catch (error) {
    return {
      condition,
      outcome: 'failed',
      message: `cannot restart ${service} to make HNS network ${name} again: ${errorText(error)}; restart the host`,
    };
  }
}

/** Removes the endpoints the last check found left behind (node-health.ts staleEndpointsToRemove). */
async function removeStaleEndpoints(
  context: AgentContext,
  network: NodeNetwork,
): Promise<LocalRepair> {
  const condition = NodeHealthCondition.StaleHNSEndpoints;
  if (!winfleetOwnsNetwork(network))
    return {
      condition,
      outcome: 'refused',
      message: `not removing HNS endpoints on ${podNetworkName(network) ?? 'the CNI’s network'}: the cluster's CNI owns it (network mode external)`,
    };
  const stale = staleEndpointsToRemove(context);
  // Nothing removable: logged once (a refusal), not on every pass while the condition clears.
  if (stale.length === 0)
    return {
      condition,
      outcome: 'refused',
      message:
        'no HNS endpoint to remove: those left behind are gone, or a pod on this node has the address (two endpoints holding one are never removed: delete that pod)',
    };
  const removed: string[] = [];
  const gone: string[] = [];
  const failed: string[] = [];
  for (const endpoint of stale) {
    try {
      if (await context.hostOS.removeHnsEndpoint(endpoint.id, endpoint.ip))
        removed.push(`${endpoint.ip} (${endpoint.id})`);
      else gone.push(endpoint.ip);
    } catch (error) {
      failed.push(`${endpoint.ip}: ${errorText(error)}`);
    }
  }
  const parts = [
    removed.length > 0
      ? `removed ${removed.length} HNS endpoint(s) left behind on ${stale[0]!.network}: ${removed.join(', ')}`
      : '',
    gone.length > 0 ? `already gone or readdressed: ${gone.join(', ')}` : '',
    failed.length > 0 ? `cannot remove ${failed.join('; ')}` : '',
  ].filter((p) => p !== '');
  return {
    condition,
    outcome: failed.length > 0 ? 'failed' : 'done',
    message: parts.join('; '),
  };
}

/**
 * The local repairs for the problems published True (node-health.ts publishedProblems). Each is
 * logged; none throws.
 * @package
 */
export async function repairLocally(
  context: AgentContext,
  config: AgentConfig,
  node: k8s.V1Node,
  problems: ReadonlySet<NodeHealthCondition>,
  network: NodeNetwork = defaultNodeNetwork,
): Promise<LocalRepair[]> {
  const done: LocalRepair[] = [];
  if (problems.has(NodeHealthCondition.HNSNetworkMissing))
    done.push(await repairPodNetwork(context, config, node, network));
  if (problems.has(NodeHealthCondition.StaleHNSEndpoints))
    done.push(await removeStaleEndpoints(context, network));
  if (problems.has(NodeHealthCondition.ClockSkew)) done.push(await resyncClock(context));
  for (const repair of done) log(context, repair);
  return done;
}
