/**
 * Which Node holds an address, from the Node cache without a walk over every Node: a serving
 * certificate may not name another Node's name or address (serving-addresses.ts), and with
 * 10,000 Nodes a walk per kubelet serving CSR, or per allow-serving-addresses annotation, is
 * 10,000 reads where one or two do.
 *
 * A Node's name is its cache key (Node names are lowercase, so already canonical); its
 * status.addresses are filed in an index, canonical, except an address equal to its name (the
 * Hostname address, usually), which the key already finds.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Informer } from '../../controller-runtime/informer.ts';
import { canonicalAddress } from '../../fleet/serving-addresses.ts';

export const nodesByAddressIndex = 'address';

/** The canonical addresses a Node is filed under (not its name). */
export function indexedAddressesOf(node: k8s.V1Node): string[] {
  const addresses = node.status?.addresses;
  if (!addresses || addresses.length === 0) return [];
  const name = node.metadata?.name;
  const out: string[] = [];
  for (const { address } of addresses) {
    const canonical = canonicalAddress(address);
    if (canonical !== name && !out.includes(canonical)) out.push(canonical);
  }
  return out;
}

/**
 * Adds the index to `nodes` (once) and returns a lookup: the name of a Node other than
 * `exceptNode` that holds `address` (canonical), or undefined. Costs the Nodes holding that
 * address, not the cache.
 */
export function nodeHoldingAddress(
  nodes: Informer<k8s.V1Node>,
): (address: string, exceptNode: string | undefined) => string | undefined {
  nodes.addIndex(nodesByAddressIndex, indexedAddressesOf);
  return (address, exceptNode) => {
    if (address !== exceptNode && nodes.get(address)) return address;
    return nodes.findByIndex(
      nodesByAddressIndex,
      address,
      (node) => node.metadata?.name !== exceptNode,
    )?.metadata?.name;
  };
}
