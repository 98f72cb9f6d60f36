/**
 * Host Network Service objects as winfleet reads and makes them: networks and endpoints
 * (Get-HnsNetwork, Get-HnsEndpoint; HCN's JSON), shapes shared by the agent, its health checks
 * and the simulated hosts.
 */

/** A Host Network Service network (created by CNI plugins / kube-proxy). */
export interface HnsNetwork {
  id: string;
  name: string;
  type: string;
}

/**
 * A Host Network Service endpoint (Get-HnsEndpoint, windows/hns.ts): what a CNI plugin makes for
 * each pod sandbox, kube-proxy for its source VIP, and, on an overlay, kube-proxy for each
 * remote pod it balances to (those are `remote`).
 */
export interface HnsEndpoint {
  /** A GUID. */
  id: string;
  name: string;
  /** The id (GUID) of the network it is on; '' when HNS did not say. */
  networkId: string;
  /** Its IPv4 address, dotted; '' when it has none (IPv6 only). */
  ipAddress: string;
  /** A remote endpoint (IsRemoteEndpoint, or HCN's RemoteEndpoint flag): another node's pod. */
  remote: boolean;
}

/**
 * An HNS network to create, as a CNI plugin creates its own (sdnbridge's getOrCreateNetwork):
 * an L2Bridge network with one subnet and its gateway.
 */
export interface HnsNetworkSpec {
  name: string;
  type: 'L2Bridge';
  /** The subnet, an IPv4 CIDR such as 10.244.1.0/24. */
  addressPrefix: string;
  /** The subnet's gateway, an IPv4 address inside it. */
  gateway: string;
}
