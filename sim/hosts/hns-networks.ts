/**
 * The Host Network Service of a simulated host: the networks CNI plugins and kube-proxy
 * create. Like networks made through the HNS API, they do not survive a reboot (flannel and
 * the CNI plugins create them again when they start); the machine clears them at shutdown.
 */
import { randomUUID } from 'node:crypto';
import type { HnsNetwork } from '../../src/agent/host-os.ts';

export class HnsNetworks {
  readonly #networks = new Map<string, HnsNetwork>();

  list(): HnsNetwork[] {
    return [...this.#networks.values()].map((n) => ({ ...n }));
  }

  /** The network named `name` (case-insensitive), creating it when missing. */
  ensure(name: string, type: string): HnsNetwork {
    const existing = [...this.#networks.values()].find(
      (n) => n.name.toLowerCase() === name.toLowerCase(),
    );
    if (existing) return { ...existing };
    const network = { id: randomUUID().toUpperCase(), name, type };
    this.#networks.set(network.id, network);
    return { ...network };
  }

  /** Removes a network by id (case-insensitive); false when there was none. */
  remove(id: string): boolean {
    const key = [...this.#networks.keys()].find((k) => k.toLowerCase() === id.toLowerCase());
    return key !== undefined && this.#networks.delete(key);
  }

  clear(): void {
    this.#networks.clear();
  }
}
