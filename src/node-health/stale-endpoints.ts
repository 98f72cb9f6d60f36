/**
 * Stale HNS endpoints (issue 31 item 4), pure: which endpoints on the node's pod network were
 * left behind by a pod that is gone, and which addresses two endpoints hold at once. A CNI DEL
 * that did not finish leaves them: win-overlay's cmdDel releases the address in host-local
 * before it removes the endpoint (containernetworking/plugins plugins/main/windows/win-overlay
 * cmdDel), so a crash or a reboot in between leaves an endpoint whose address host-local may
 * hand to the next pod; two endpoints then hold one address and the new pod is unreachable
 * (microsoft/Windows-Containers#631, projectcalico/calico#12795, kubernetes/kubernetes#130963).
 *
 * No I/O and no clock: the agent (src/agent/node-health.ts) reads the networks, the endpoints,
 * the pods on its own node and the reserved source VIP, and passes `now`.
 *
 * Rules:
 * - Only a network winfleet owns is looked at (routed's `winfleet`, flannel-vxlan's
 *   `flannel.<VNI>`, flannel-host-gw's `cbr0`: node-network.ts winfleetOwnsNetwork); in `external` mode the CNI's network
 *   is its own and nothing is decided.
 * - A read that failed (networks, endpoints, the pods), a Node without spec.podCIDR, or an
 *   overlay whose source VIP is not known this pass decides nothing, and the memory stays as it
 *   was (nothing is confirmed, nothing reset).
 * - A pod endpoint is a local one (not `remote`: kube-proxy's endpoints for other nodes' pods on
 *   an overlay) with an IPv4 address inside the Node's pod CIDR that is not the subnet's network
 *   address, its gateway (the first address, which host-local never hands out), its last address
 *   or kube-proxy's source VIP (reserved in host-local's store: source-vip.ts), and not
 *   flannel-host-gw's bridge endpoint `<network>_ep` (the host's own, which flanneld makes).
 *   Nothing else is ever called stale.
 * - A pod endpoint is stale when no pod on this node (any phase: a pod the API still lists may
 *   still use its sandbox) has its address in status.podIPs/podIP, on every successful check for
 *   at least `staleAfterSeconds` and on two checks at least (a pod being created has its endpoint
 *   before the API shows its address).
 * - Two or more endpoints holding one address, seen so on checks `staleAfterSeconds` apart: when
 *   no pod has the address they are all stale by the rule above; when a pod has it, they are
 *   reported and none is removed: nothing the agent reads tells which one the pod's sandbox uses
 *   (the API does not show the sandbox id the endpoint is named after). Deleting the pod removes
 *   its own endpoint (its CNI DEL); the other one then has no pod and goes by the first rule.
 * - What may be removed: the stale endpoints (never one whose address a pod has).
 */

import {
  cidrContains,
  formatIpv4,
  lastAddress,
  parseIpv4,
  parseIpv4Cidr,
} from '../net/ipv4-cidr.ts';
import {
  bridgeEndpointName,
  type NodeNetwork,
  needsSourceVip,
  podNetworkName,
  winfleetOwnsNetwork,
} from '../servicesmanifest/node-network.ts';
import type { HnsEndpoint, HnsNetwork } from '../windows/hns-objects.ts';

/** How long an endpoint must look left behind before it is, by default (hosts.agentHealth). */
export const defaultStaleEndpointSeconds = 60;

/** What one check read. Each undefined: the read failed. */
export interface StaleEndpointReads {
  network: NodeNetwork;
  networks: readonly HnsNetwork[] | undefined;
  endpoints: readonly HnsEndpoint[] | undefined;
  /** Every address in status.podIPs (and status.podIP) of the pods on this node. */
  podIPs: ReadonlySet<string> | undefined;
  /** The Node's spec.podCIDR. */
  podCIDR: string | undefined;
  /** kube-proxy's source VIP, when the mode needs one (flannel-vxlan). */
  sourceVip: string | undefined;
}

/** What the checks remember: since when each endpoint, and each shared address, looked so. */
export interface StaleEndpointMemory {
  /** By endpoint id: its address and when it was first seen without a pod (ms). */
  suspects: Record<string, { ip: string; since: number }>;
  /** By address: the endpoint ids holding it (sorted, joined) and since when (ms). */
  shared: Record<string, { ids: string; since: number }>;
}

export const emptyStaleEndpointMemory = (): StaleEndpointMemory => ({ suspects: {}, shared: {} });

/** An endpoint decided on: its id, address and network's name. */
export interface DecidedEndpoint {
  id: string;
  ip: string;
  network: string;
}

/** What the detector gets (src/node-health/detector.ts hnsEndpoints). */
export interface StaleEndpointsObservation {
  network: string;
  staleAfterSeconds: number;
  /** Left behind: no pod has their address. */
  stale: DecidedEndpoint[];
  /** Addresses a pod has that more than one endpoint holds. */
  duplicates: { ip: string; ids: string[] }[];
}

export interface StaleEndpointDecision {
  /** Undefined: nothing decided this check. */
  observation?: StaleEndpointsObservation;
  /** The endpoints a repair may remove (the stale ones). */
  removable: DecidedEndpoint[];
  memory: StaleEndpointMemory;
}

/**
 * One check. `previous` is the memory the last check returned (emptyStaleEndpointMemory() at
 * first); it is not modified.
 */
export function decideStaleEndpoints(
  reads: StaleEndpointReads,
  previous: StaleEndpointMemory,
  now: number,
  staleAfterSeconds: number,
): StaleEndpointDecision {
  const nothing = (memory: StaleEndpointMemory): StaleEndpointDecision => ({
    removable: [],
    memory,
  });
  if (!winfleetOwnsNetwork(reads.network)) return nothing(emptyStaleEndpointMemory());
  const name = podNetworkName(reads.network);
  const { networks, endpoints, podIPs } = reads;
  if (!name || !networks || !endpoints || !podIPs) return nothing(previous);
  const subnet = reads.podCIDR ? parseIpv4Cidr(reads.podCIDR) : undefined;
  if (!subnet || subnet.address !== subnet.network) return nothing(previous);
  if (needsSourceVip(reads.network) && !reads.sourceVip) return nothing(previous);

  const wait = Math.max(1, staleAfterSeconds) * 1000;
  const observation: StaleEndpointsObservation = {
    network: name,
    staleAfterSeconds,
    stale: [],
    duplicates: [],
  };
  const memory = emptyStaleEndpointMemory();
  const network = networks.find((n) => n.name.toLowerCase() === name.toLowerCase());
  if (!network) return { observation, removable: [], memory };

  const notPods = new Set([
    formatIpv4(subnet.network),
    formatIpv4(subnet.network + 1),
    formatIpv4(lastAddress(subnet)),
    ...(reads.sourceVip ? [reads.sourceVip] : []),
  ]);
  // flannel-host-gw: the host's own bridge endpoint (<network>_ep, the lease's .2) is no pod's.
  const bridge = bridgeEndpointName(reads.network)?.toLowerCase();
  const podEndpoints = endpoints.filter((e) => {
    if (e.remote || e.networkId.toLowerCase() !== network.id.toLowerCase()) return false;
    if (bridge !== undefined && e.name.toLowerCase() === bridge) return false;
    const ip = parseIpv4(e.ipAddress);
    return ip !== undefined && cidrContains(subnet, ip) && !notPods.has(e.ipAddress);
  });

  for (const e of podEndpoints) {
    if (podIPs.has(e.ipAddress)) continue;
    const key = e.id.toLowerCase();
    const before = previous.suspects[key];
    const since = before?.ip === e.ipAddress ? before.since : now;
    memory.suspects[key] = { ip: e.ipAddress, since };
    if (before?.ip === e.ipAddress && now - since >= wait)
      observation.stale.push({ id: e.id, ip: e.ipAddress, network: network.name });
  }

  const holders = new Map<string, string[]>();
  for (const e of podEndpoints)
    holders.set(e.ipAddress, [...(holders.get(e.ipAddress) ?? []), e.id]);
  for (const [ip, ids] of holders) {
    if (ids.length < 2 || !podIPs.has(ip)) continue;
    const sorted = ids.map((id) => id.toLowerCase()).sort();
    const before = previous.shared[ip];
    const since = before?.ids === sorted.join(',') ? before.since : now;
    memory.shared[ip] = { ids: sorted.join(','), since };
    if (before?.ids === sorted.join(',') && now - since >= wait)
      observation.duplicates.push({ ip, ids: [...ids].sort() });
  }

  const byIp = (a: { ip: string }, b: { ip: string }) =>
    (parseIpv4(a.ip) ?? 0) - (parseIpv4(b.ip) ?? 0);
  observation.stale.sort(byIp);
  observation.duplicates.sort(byIp);
  return { observation, removable: [...observation.stale], memory };
}
