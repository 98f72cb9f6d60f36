/**
 * The Host Network Service of a simulated host: the networks CNI plugins create and the load
 * balancers kube-proxy programs on them (one per Service port: the cluster IP and port to the
 * ready endpoints, as pkg/proxy/winkernel's hns.getLoadBalancer asks HNS for). Like networks
 * and policies made through the HNS API, they do not survive a reboot (flannel and the CNI
 * plugins create networks again when they start, kube-proxy its load balancers); the machine
 * clears them at shutdown. Removing a network removes its load balancers (their endpoints go
 * with it).
 */
import { randomUUID } from 'node:crypto';
import type { HnsNetwork } from '../../src/agent/host-os.ts';

/** An HNS network's subnet: its address prefix and gateway (as Get-HnsNetwork shows them). */
export interface HnsSubnet {
  addressPrefix: string;
  gateway: string;
}

/** HNS protocol numbers of a load balancer's port mapping (IANA protocol numbers). */
export const hnsProtocol = { TCP: 6, UDP: 17, SCTP: 132 } as const;

/** A load balancer: what kube-proxy gives HNS for one Service port. */
export interface HnsLoadBalancer {
  id: string;
  /** The network whose endpoints receive the traffic. */
  networkId: string;
  /** The Service's cluster IP. */
  frontendVips: string[];
  /** hnsProtocol number. */
  protocol: number;
  /** The Service port. */
  externalPort: number;
  /** The endpoints' port. */
  internalPort: number;
  /** The endpoints' IP addresses. */
  endpoints: string[];
}

/**
 * A container's endpoint on a network: what sdnbridge creates for each pod sandbox (CNI ADD)
 * and deletes at CNI DEL. An endpoint lives on its network: removing the network removes its
 * endpoints, and a network created again (a new id) does not bring them back.
 */
export interface HnsEndpoint {
  id: string;
  networkId: string;
  /** The pod's address. */
  ip: string;
  /** The sandbox (container) id it belongs to. */
  containerId: string;
}

export class HnsNetworks {
  readonly #networks = new Map<string, HnsNetwork>();
  readonly #endpoints = new Map<string, HnsEndpoint>();
  readonly #loadBalancers = new Map<string, HnsLoadBalancer>();
  /** Subnets by network id, for networks created with them (CNI plugins do). */
  readonly #subnets = new Map<string, HnsSubnet[]>();

  list(): HnsNetwork[] {
    return [...this.#networks.values()].map((n) => ({ ...n }));
  }

  /**
   * The network named `name` (case-insensitive), creating it when missing (with `subnets`,
   * when given); an existing network is returned as it is, whatever its type and subnets.
   */
  ensure(name: string, type: string, subnets?: HnsSubnet[]): HnsNetwork {
    const existing = [...this.#networks.values()].find(
      (n) => n.name.toLowerCase() === name.toLowerCase(),
    );
    if (existing) return { ...existing };
    const network = { id: randomUUID().toUpperCase(), name, type };
    this.#networks.set(network.id, network);
    if (subnets)
      this.#subnets.set(
        network.id,
        subnets.map((s) => ({ ...s })),
      );
    return { ...network };
  }

  /** The subnets of the network with this id ([] when it was created without any). */
  subnets(id: string): HnsSubnet[] {
    const key = [...this.#subnets.keys()].find((k) => k.toLowerCase() === id.toLowerCase());
    return (key ? (this.#subnets.get(key) ?? []) : []).map((s) => ({ ...s }));
  }

  /** Removes a network by id (case-insensitive); false when there was none. */
  remove(id: string): boolean {
    const key = [...this.#networks.keys()].find((k) => k.toLowerCase() === id.toLowerCase());
    if (key !== undefined) this.#subnets.delete(key);
    for (const lb of this.#loadBalancers.values())
      if (lb.networkId === key) this.#loadBalancers.delete(lb.id);
    for (const endpoint of this.#endpoints.values())
      if (endpoint.networkId === key) this.#endpoints.delete(endpoint.id);
    return key !== undefined && this.#networks.delete(key);
  }

  /** The network named `name` (case-insensitive), if there is one. */
  find(name: string): HnsNetwork | undefined {
    const found = [...this.#networks.values()].find(
      (n) => n.name.toLowerCase() === name.toLowerCase(),
    );
    return found && { ...found };
  }

  /**
   * The endpoint of `containerId` on the network with this id, created unless it exists;
   * throws naming the network when there is none.
   */
  ensureEndpoint(networkId: string, containerId: string, ip: string): HnsEndpoint {
    if (!this.#networks.has(networkId)) {
      throw new Error(
        `HNS network ${networkId} not found: create the network before its endpoints`,
      );
    }
    const existing = [...this.#endpoints.values()].find(
      (e) => e.networkId === networkId && e.containerId === containerId,
    );
    if (existing) return { ...existing };
    const endpoint = { id: randomUUID().toUpperCase(), networkId, ip, containerId };
    this.#endpoints.set(endpoint.id, endpoint);
    return { ...endpoint };
  }

  /** Removes the endpoints of `containerId` (CNI DEL); none is not an error. */
  removeEndpointsOf(containerId: string): void {
    for (const endpoint of this.#endpoints.values())
      if (endpoint.containerId === containerId) this.#endpoints.delete(endpoint.id);
  }

  endpoints(): HnsEndpoint[] {
    return [...this.#endpoints.values()].map((e) => ({ ...e }));
  }

  /**
   * Whether a pod address is reachable on this host: an endpoint with that address exists on
   * a network that exists. Without one, traffic to the address goes nowhere (on Windows the
   * container's vNIC went with its endpoint).
   */
  answers(ip: string): boolean {
    return [...this.#endpoints.values()].some(
      (e) => e.ip === ip && this.#networks.has(e.networkId),
    );
  }

  loadBalancers(): HnsLoadBalancer[] {
    return [...this.#loadBalancers.values()].map((lb) => ({
      ...lb,
      frontendVips: [...lb.frontendVips],
      endpoints: [...lb.endpoints],
    }));
  }

  /** Creates a load balancer on an existing network; throws naming the network otherwise. */
  createLoadBalancer(fields: Omit<HnsLoadBalancer, 'id'>): HnsLoadBalancer {
    if (!this.#networks.has(fields.networkId)) {
      throw new Error(
        `HNS network ${fields.networkId} not found: create the network before its load balancers`,
      );
    }
    const lb = {
      ...fields,
      id: randomUUID().toUpperCase(),
      frontendVips: [...fields.frontendVips],
      endpoints: [...fields.endpoints],
    };
    this.#loadBalancers.set(lb.id, lb);
    return { ...lb, frontendVips: [...lb.frontendVips], endpoints: [...lb.endpoints] };
  }

  /** Removes a load balancer by id; false when there was none. */
  removeLoadBalancer(id: string): boolean {
    return this.#loadBalancers.delete(id);
  }

  /** Removes every load balancer (kube-proxy does at start: DeleteAllHnsLoadBalancerPolicy). */
  removeAllLoadBalancers(): void {
    this.#loadBalancers.clear();
  }

  clear(): void {
    this.#networks.clear();
    this.#endpoints.clear();
    this.#subnets.clear();
    this.#loadBalancers.clear();
  }
}
