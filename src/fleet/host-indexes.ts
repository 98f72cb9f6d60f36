/**
 * The WindowsHost cache's indexes, so that what one Node or CSR touches is found with one
 * lookup instead of a walk over every host:
 * - by node name: every name a host has (status.nodeName) or claims (claimedNodeName); a Node
 *   no host names (a kwok node, a Linux node) finds none;
 * - by bootstrap token id (derived from the host's uid): a bootstrap CSR finds its host.
 */
import type * as k8s from '@kubernetes/client-node';
import { isPullHost, type WindowsHost } from '../api/windows-host.ts';
import type { Informer } from '../controller-runtime/informer.ts';
import { ownTokenId } from '../join/bootstrap-tokens.ts';
import { claimedNodeName, type NameRefusal, nameRefusal } from './node-claims.ts';

export const hostsByNodeIndex = 'nodeName';

/** The node names a host is filed under. */
export function nodeNamesOf(host: WindowsHost): string[] {
  const names = new Set<string>();
  if (host.status?.nodeName) names.add(host.status.nodeName);
  const claimed = claimedNodeName(host);
  if (claimed) names.add(claimed);
  return [...names];
}

/** Adds the index to `hosts` (once) and returns a lookup of the hosts naming a node. */
export function hostsByNode(hosts: Informer<WindowsHost>): (nodeName: string) => WindowsHost[] {
  hosts.addIndex(hostsByNodeIndex, nodeNamesOf);
  return (nodeName) => hosts.byIndex(hostsByNodeIndex, nodeName);
}

export const hostsByTokenIdIndex = 'bootstrapTokenId';

function tokenIdsOf(host: WindowsHost): string[] {
  // A Pull host joined with a join token and never had a bootstrap token of its own.
  if (isPullHost(host)) return [];
  const id = ownTokenId(host);
  return id ? [id] : [];
}

/**
 * Adds the index to `hosts` (once) and returns a lookup of the host a bootstrap token id
 * belongs to (see ownTokenId).
 */
export function hostByTokenId(
  hosts: Informer<WindowsHost>,
): (tokenId: string) => WindowsHost | undefined {
  hosts.addIndex(hostsByTokenIdIndex, tokenIdsOf);
  return (tokenId) => hosts.firstByIndex(hostsByTokenIdIndex, tokenId);
}

/**
 * Why `host` may not have the node name `name` (nameRefusal), from the caches: the rivals for
 * the name come from the node-name index, not a walk over every host.
 */
export function nameRefusalFromCaches(
  caches: { hosts: Informer<WindowsHost>; nodes: Informer<k8s.V1Node> },
  host: WindowsHost,
  name: string,
): NameRefusal | undefined {
  return nameRefusal(host, name, hostsByNode(caches.hosts)(name), caches.nodes.get(name));
}
