/**
 * The WindowsHost cache's index by node name: every name a host has (status.nodeName) or
 * claims (claimedNodeName). A Node event finds the hosts behind it with one lookup instead of
 * a walk over every host, and a Node no host names (a kwok node, a Linux node) finds none.
 */
import type { WindowsHost } from '../../api/windows-host.ts';
import type { Informer } from '../../controller/informer.ts';
import { claimedNodeName } from './node-claims.ts';

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
