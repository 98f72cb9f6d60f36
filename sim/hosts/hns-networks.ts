/**
 * The Host Network Service of a simulated host: the networks CNI plugins create and the load
 * balancers kube-proxy programs on them (one per Service port: the cluster IP and port to the
 * ready endpoints, as pkg/proxy/winkernel's hns.getLoadBalancer asks HNS for). Like networks
 * and policies made through the HNS API, they do not survive a reboot (flannel and the CNI
 * plugins create networks again when they start, kube-proxy its load balancers); the machine
 * clears them at shutdown. Removing a network removes its load balancers (their endpoints go
 * with it).
 *
 * Networks carry HCN's network policies as flannel's Windows backends and win-overlay read and
 * write them (github.com/Microsoft/hcsshim hcn/hcnpolicy.go; flannel pkg/backend/vxlan
 * device_windows.go, vxlan_network_windows.go): an Overlay network gets, from HNS itself, a
 * DrMacAddress (the distributed router's MAC, which flannel publishes as the node's VtepMAC)
 * and a ProviderAddress (the host's management IP); flannel adds HostRoute and one
 * RemoteSubnetRoute per remote node's lease. Listeners hear of every change (the packet world
 * in sim/netlab renders the model into a network namespace).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { HnsNetwork } from '../../src/windows/hns-objects.ts';

/** An HNS network's subnet: its address prefix and gateway (as Get-HnsNetwork shows them). */
export interface HnsSubnet {
  addressPrefix: string;
  gateway: string;
}

/** A network policy as HCN holds it: a type and its settings (hcn.NetworkPolicy). */
export type HnsNetworkPolicy =
  | { Type: 'DrMacAddress'; Settings: { Address: string } }
  | { Type: 'ProviderAddress'; Settings: { ProviderAddress: string } }
  | { Type: 'HostRoute'; Settings: Record<string, never> }
  | {
      Type: 'RemoteSubnetRoute';
      Settings: {
        IsolationId: number;
        DistributedRouterMacAddress: string;
        ProviderAddress: string;
        DestinationPrefix: string;
      };
    };

/** What a network is created with beyond its name and type (hcn.HostComputeNetwork). */
export interface HnsNetworkOptions {
  subnets?: HnsSubnet[];
  /** The VSID subnet policy's IsolationId (Overlay networks: the VXLAN VNI). */
  vsid?: number;
  /** The host's address the network is bound to (its management IP, ProviderAddress). */
  managementIp?: string;
}

/** A change to the model, for listeners (the packet world renders each one). */
export type HnsChange =
  | { kind: 'network-added' | 'network-removed' | 'policies-changed'; networkId: string }
  | { kind: 'endpoint-added' | 'endpoint-removed'; endpointId: string; networkId: string }
  | { kind: 'load-balancers-changed' }
  | { kind: 'cleared' };

/** A MAC in HNS's notation (upper case, dashes), locally administered and unicast. */
export function randomHnsMac(): string {
  const bytes = randomBytes(6);
  bytes[0] = (bytes[0]! & 0xfc) | 0x02;
  return [...bytes].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join('-');
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
  /**
   * The policy's SourceVIP (hcn LoadBalancer SourceVIP): the address VFP gives load-balanced
   * packets as their source, unless DSR. winkernel sets kube-proxy's --source-vip on an Overlay
   * network (the node's IP when an endpoint is the node or outside every remote subnet); absent
   * when kube-proxy has none.
   */
  sourceVip?: string;
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
  /** The sandbox (container) id it belongs to ('' for a host endpoint). */
  containerId: string;
  /**
   * A host endpoint's own name (flannel host-gw's `<network>_ep`); a container's endpoint is
   * named `<container id>_<network>` as the CNI plugins name it.
   */
  name?: string;
  /** Attached to the host's compartment (HNSEndpoint.HostAttach): the host answers its address. */
  hostAttached?: boolean;
}

export class HnsNetworks {
  readonly #networks = new Map<string, HnsNetwork>();
  readonly #policies = new Map<string, HnsNetworkPolicy[]>();
  readonly #vsids = new Map<string, number>();
  readonly #listeners = new Set<(change: HnsChange) => void>();
  readonly #endpoints = new Map<string, HnsEndpoint>();
  readonly #loadBalancers = new Map<string, HnsLoadBalancer>();
  /** Subnets by network id, for networks created with them (CNI plugins do). */
  readonly #subnets = new Map<string, HnsSubnet[]>();

  list(): HnsNetwork[] {
    return [...this.#networks.values()].map((n) => ({ ...n }));
  }

  /** Calls `listener` with every change from now on; returns what stops it. */
  onChange(listener: (change: HnsChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(change: HnsChange): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
      } catch {
        // A listener's failure is its own: the model goes on.
      }
    }
  }

  /**
   * The network named `name` (case-insensitive), creating it when missing (with `subnets`,
   * when given); an existing network is returned as it is, whatever its type and subnets.
   * A new Overlay network gets a DrMacAddress and, with a management IP, a ProviderAddress
   * from HNS, as Windows gives every overlay network its distributed router.
   */
  ensure(
    name: string,
    type: string,
    subnets?: HnsSubnet[],
    options: HnsNetworkOptions = {},
  ): HnsNetwork {
    const existing = [...this.#networks.values()].find(
      (n) => n.name.toLowerCase() === name.toLowerCase(),
    );
    if (existing) return { ...existing };
    const network = { id: randomUUID().toUpperCase(), name, type };
    this.#networks.set(network.id, network);
    const given = subnets ?? options.subnets;
    if (given)
      this.#subnets.set(
        network.id,
        given.map((s) => ({ ...s })),
      );
    if (options.vsid !== undefined) this.#vsids.set(network.id, options.vsid);
    const policies: HnsNetworkPolicy[] = [];
    if (type.toLowerCase() === 'overlay') {
      policies.push({ Type: 'DrMacAddress', Settings: { Address: randomHnsMac() } });
      if (options.managementIp)
        policies.push({
          Type: 'ProviderAddress',
          Settings: { ProviderAddress: options.managementIp },
        });
    }
    this.#policies.set(network.id, policies);
    this.#changed({ kind: 'network-added', networkId: network.id });
    return { ...network };
  }

  #key(id: string): string | undefined {
    return [...this.#networks.keys()].find((k) => k.toLowerCase() === id.toLowerCase());
  }

  /** The network's policies (hcn's network.Policies), in the order they were added. */
  policies(id: string): HnsNetworkPolicy[] {
    const key = this.#key(id);
    return key ? structuredClone(this.#policies.get(key) ?? []) : [];
  }

  /** The VSID of the network's subnet (its VXLAN VNI), if it was created with one. */
  vsid(id: string): number | undefined {
    const key = this.#key(id);
    return key ? this.#vsids.get(key) : undefined;
  }

  /**
   * Adds policies to a network (hcn AddPolicy); throws naming the network when there is none.
   * A policy equal to one the network has is not added twice.
   */
  addPolicies(id: string, policies: readonly HnsNetworkPolicy[]): void {
    const key = this.#key(id);
    if (!key) throw new Error(`HNS network ${id} not found: cannot add its policies`);
    const held = this.#policies.get(key) ?? [];
    for (const policy of policies)
      if (!held.some((p) => JSON.stringify(p) === JSON.stringify(policy)))
        held.push(structuredClone(policy));
    this.#policies.set(key, held);
    this.#changed({ kind: 'policies-changed', networkId: key });
  }

  /** Removes the policies equal to these (hcn RemovePolicy); a missing one is no error. */
  removePolicies(id: string, policies: readonly HnsNetworkPolicy[]): void {
    const key = this.#key(id);
    if (!key) throw new Error(`HNS network ${id} not found: cannot remove its policies`);
    const drop = new Set(policies.map((p) => JSON.stringify(p)));
    this.#policies.set(
      key,
      (this.#policies.get(key) ?? []).filter((p) => !drop.has(JSON.stringify(p))),
    );
    this.#changed({ kind: 'policies-changed', networkId: key });
  }

  /** The subnets of the network with this id ([] when it was created without any). */
  subnets(id: string): HnsSubnet[] {
    const key = [...this.#subnets.keys()].find((k) => k.toLowerCase() === id.toLowerCase());
    return (key ? (this.#subnets.get(key) ?? []) : []).map((s) => ({ ...s }));
  }

  /** Removes a network by id (case-insensitive); false when there was none. */
  remove(id: string): boolean {
    const key = [...this.#networks.keys()].find((k) => k.toLowerCase() === id.toLowerCase());
    if (key === undefined) return false;
    this.#subnets.delete(key);
    this.#policies.delete(key);
    this.#vsids.delete(key);
    for (const lb of this.#loadBalancers.values())
      if (lb.networkId === key) this.#loadBalancers.delete(lb.id);
    for (const endpoint of this.#endpoints.values())
      if (endpoint.networkId === key) this.#endpoints.delete(endpoint.id);
    this.#networks.delete(key);
    this.#changed({ kind: 'network-removed', networkId: key });
    return true;
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
    this.#changed({ kind: 'endpoint-added', endpointId: endpoint.id, networkId });
    return { ...endpoint };
  }

  /**
   * A host endpoint named `name` with this address on the network (hcsshim HNSEndpoint.Create,
   * as flannel's host-gw backend makes its bridge endpoint); throws when the network is gone or
   * an endpoint of that name exists.
   */
  createHostEndpoint(networkId: string, name: string, ip: string): HnsEndpoint {
    if (!this.#networks.has(networkId))
      throw new Error(
        `HNS network ${networkId} not found: create the network before its endpoints`,
      );
    if (this.findEndpoint(name)) throw new Error(`HNS endpoint ${name} already exists`);
    const endpoint: HnsEndpoint = {
      id: randomUUID().toUpperCase(),
      networkId,
      ip,
      containerId: '',
      name,
    };
    this.#endpoints.set(endpoint.id, endpoint);
    this.#changed({ kind: 'endpoint-added', endpointId: endpoint.id, networkId });
    return { ...endpoint };
  }

  /** The endpoint of this name (case-insensitive: GetHNSEndpointByName), if any. */
  findEndpoint(name: string): HnsEndpoint | undefined {
    const network = (e: HnsEndpoint) => this.#networks.get(e.networkId)?.name ?? '';
    const found = [...this.#endpoints.values()].find(
      (e) => (e.name ?? `${e.containerId}_${network(e)}`).toLowerCase() === name.toLowerCase(),
    );
    return found && { ...found };
  }

  /** HostAttach(1): the endpoint joins the host's compartment; false when there is none. */
  attachToHost(id: string): boolean {
    const endpoint = this.#endpoints.get(id);
    if (!endpoint) return false;
    endpoint.hostAttached = true;
    return true;
  }

  /** Removes the endpoints of `containerId` (CNI DEL); none is not an error. */
  removeEndpointsOf(containerId: string): void {
    for (const endpoint of this.#endpoints.values())
      if (endpoint.containerId === containerId && containerId !== '') {
        this.#endpoints.delete(endpoint.id);
        this.#changed({
          kind: 'endpoint-removed',
          endpointId: endpoint.id,
          networkId: endpoint.networkId,
        });
      }
  }

  /**
   * Removes one endpoint by id (case-insensitive), as `Remove-HnsEndpoint` does; false when there
   * was none. Its pod's address stops answering here.
   */
  removeEndpoint(id: string): boolean {
    const endpoint = [...this.#endpoints.values()].find(
      (e) => e.id.toLowerCase() === id.toLowerCase(),
    );
    if (!endpoint) return false;
    this.#endpoints.delete(endpoint.id);
    this.#changed({
      kind: 'endpoint-removed',
      endpointId: endpoint.id,
      networkId: endpoint.networkId,
    });
    return true;
  }

  endpoints(): HnsEndpoint[] {
    return [...this.#endpoints.values()].map((e) => ({ ...e }));
  }

  /**
   * The endpoints as the HostNetworkingService module's Get-HnsEndpoint gives them: HNS v1
   * endpoint objects with hcsshim's field names (internal/hns/hnsendpoint.go HNSEndpoint): ID,
   * Name (the CNI plugins name an endpoint `<container id>_<network name>`, hns
   * ConstructEndpointName), VirtualNetwork, VirtualNetworkName, IPAddress, PrefixLength,
   * GatewayAddress, SharedContainers; IsRemoteEndpoint is left out when false (omitempty), and
   * no simulated endpoint is remote.
   */
  getHnsEndpoint(): Record<string, unknown>[] {
    return [...this.#endpoints.values()].map((e) => {
      const network = this.#networks.get(e.networkId);
      const subnet = this.#subnets.get(e.networkId)?.[0];
      return {
        ID: e.id,
        Name: e.name ?? `${e.containerId}_${network?.name ?? ''}`,
        VirtualNetwork: e.networkId,
        VirtualNetworkName: network?.name ?? '',
        IPAddress: e.ip,
        ...(subnet
          ? {
              PrefixLength: Number(subnet.addressPrefix.split('/')[1]),
              GatewayAddress: subnet.gateway,
            }
          : {}),
        SharedContainers: e.containerId ? [e.containerId] : [],
      };
    });
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
    this.#changed({ kind: 'load-balancers-changed' });
    return { ...lb, frontendVips: [...lb.frontendVips], endpoints: [...lb.endpoints] };
  }

  /** Removes a load balancer by id; false when there was none. */
  removeLoadBalancer(id: string): boolean {
    const removed = this.#loadBalancers.delete(id);
    if (removed) this.#changed({ kind: 'load-balancers-changed' });
    return removed;
  }

  /** Removes every load balancer (kube-proxy does at start: DeleteAllHnsLoadBalancerPolicy). */
  removeAllLoadBalancers(): void {
    if (this.#loadBalancers.size === 0) return;
    this.#loadBalancers.clear();
    this.#changed({ kind: 'load-balancers-changed' });
  }

  clear(): void {
    this.#networks.clear();
    this.#endpoints.clear();
    this.#subnets.clear();
    this.#policies.clear();
    this.#vsids.clear();
    this.#loadBalancers.clear();
    this.#changed({ kind: 'cleared' });
  }
}
