/**
 * The IPv4 route table of a simulated host, as far as flannel's host-gw backend uses it
 * (flannel v0.28.10 pkg/routing/router_windows.go through pkg/backend/route_network_windows.go:
 * GetAllRoutes, GetRoutesFromInterfaceToSubnet, CreateRoute, DeleteRoute): routes a program
 * added, each a destination prefix, a next hop and an interface index. Like `New-NetRoute` in
 * the active store they do not survive a reboot: the table is emptied at shutdown. The host's
 * own connected and default routes are not here (ip-configuration.ts reports those); nothing
 * forwards packets by this table (docs/fidelity-ledger.md).
 */
import type { SimMachine } from './machine.ts';

export interface IpRoute {
  /** e.g. 10.244.1.0/24 */
  destinationPrefix: string;
  /** The gateway's address. */
  nextHop: string;
  interfaceIndex: number;
}

export class IpRoutes {
  readonly #routes: IpRoute[] = [];

  list(): IpRoute[] {
    return this.#routes.map((r) => ({ ...r }));
  }

  /** The routes to `destinationPrefix` on the interface (GetRoutesFromInterfaceToSubnet). */
  to(interfaceIndex: number, destinationPrefix: string): IpRoute[] {
    return this.list().filter(
      (r) => r.interfaceIndex === interfaceIndex && r.destinationPrefix === destinationPrefix,
    );
  }

  /** Adds the route; one that exists already is refused, as New-NetRoute refuses it. */
  add(route: IpRoute): void {
    if (this.#routes.some((r) => sameRoute(r, route)))
      throw new Error(
        `Instance MSFT_NetRoute already exists: ${route.destinationPrefix} via ${route.nextHop} on interface ${route.interfaceIndex}`,
      );
    this.#routes.push({ ...route });
  }

  /** Removes the route; false when there was none. */
  remove(route: IpRoute): boolean {
    const at = this.#routes.findIndex((r) => sameRoute(r, route));
    if (at < 0) return false;
    this.#routes.splice(at, 1);
    return true;
  }

  clear(): void {
    this.#routes.length = 0;
  }
}

export function sameRoute(a: IpRoute, b: IpRoute): boolean {
  return (
    a.destinationPrefix === b.destinationPrefix &&
    a.nextHop === b.nextHop &&
    a.interfaceIndex === b.interfaceIndex
  );
}

/** The machine's route table (emptied whenever the machine shuts down). */
export function ipRoutes(machine: SimMachine): IpRoutes {
  return machine.state('ip-routes', () => {
    const routes = new IpRoutes();
    machine.onShutdown(() => routes.clear());
    return routes;
  });
}
