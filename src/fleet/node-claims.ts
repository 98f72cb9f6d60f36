/**
 * Who may have a node name. A WindowsHost names a Node (spec.nodeName, else the host's own
 * hostname); without these rules any WindowsHost could name the Linux node or another host's
 * node, have the operator annotate it as its own, and have it drained and deleted on removal.
 *
 * - Names are unique across WindowsHosts. Of two hosts claiming one name, the one whose
 *   identity the Node carries keeps it; otherwise the older (creationTimestamp, then uid), so
 *   every operator replica and restart decides the same from the API alone.
 * - A Node is this host's only when it carries the host's identity (hostAnnotation,
 *   "namespace/name/uid"). The one exception is the Node the host's own kubelet registers
 *   during a join: no identity yet, winfleet's managed label, and the host has the name on
 *   record with a bootstrap token out. Any other Node is refused and never touched.
 */
import type * as k8s from '@kubernetes/client-node';
import { hostAnnotation, hostIdentity, managedNodeLabel } from '../api/node-annotations.ts';
import { ConditionReason } from '../api/reasons.ts';
import type { WindowsHost } from '../api/windows-host.ts';

/** The node name a host claims as far as the API tells: spec, then status, then its hostname. */
export function claimedNodeName(host: WindowsHost): string | undefined {
  return host.spec.nodeName ?? host.status?.nodeName ?? host.status?.hostname?.toLowerCase();
}

/** Whether the Node carries this host's identity. */
export function carriesIdentity(node: k8s.V1Node, host: WindowsHost): boolean {
  const value = node.metadata?.annotations?.[hostAnnotation];
  if (value === hostIdentity(host)) return true;
  // Written by winfleet before identities carried the uid: accepted only for the Node the
  // host already joined, and rewritten in full when the node is next annotated.
  return (
    value === `${host.metadata.namespace}/${host.metadata.name}` &&
    host.status?.nodeName === node.metadata?.name
  );
}

/** Older first: creationTimestamp, then uid. */
function olderThan(a: WindowsHost, b: WindowsHost): boolean {
  const time = (h: WindowsHost) => {
    const t = h.metadata.creationTimestamp;
    return t === undefined ? Number.POSITIVE_INFINITY : new Date(t).getTime();
  };
  if (time(a) !== time(b)) return time(a) < time(b);
  return (a.metadata.uid ?? '') < (b.metadata.uid ?? '');
}

/**
 * The WindowsHost that holds `name` instead of `host`, if any: another host claiming it that
 * the Node (if there is one) names, or that is older while the Node names neither.
 */
export function nameHolder(
  host: WindowsHost,
  name: string,
  hosts: WindowsHost[],
  node: k8s.V1Node | undefined,
): WindowsHost | undefined {
  const rivals = hosts.filter(
    (h) => h.metadata.uid !== host.metadata.uid && claimedNodeName(h) === name,
  );
  if (node) {
    const owner = rivals.find((h) => carriesIdentity(node, h));
    if (owner) return owner;
    if (carriesIdentity(node, host)) return undefined;
  }
  return rivals.find((h) => olderThan(h, host));
}

/**
 * Whether `host` may treat `node` as its own: it carries the host's identity, or it is the
 * Node the host's kubelet registered during the join in flight (see the module comment).
 * @package
 */
export function mayAdopt(node: k8s.V1Node, host: WindowsHost): boolean {
  if (carriesIdentity(node, host)) return true;
  const annotations = node.metadata?.annotations ?? {};
  return (
    annotations[hostAnnotation] === undefined &&
    node.metadata?.labels?.[managedNodeLabel] === 'true' &&
    host.status?.nodeName === node.metadata?.name &&
    Boolean(host.status?.bootstrapTokenId)
  );
}

/** "namespace/name" of a host, for messages. */
export function hostRef(host: WindowsHost): string {
  return `${host.metadata.namespace}/${host.metadata.name}`;
}

/** Why `host` may not have `name`: the reason and a message naming the holder and the fix. */
export interface NameRefusal {
  reason: typeof ConditionReason.NodeNameTaken | typeof ConditionReason.NodeNotOwned;
  message: string;
}

/** Refuses `name` to `host` when another WindowsHost holds it or its Node is not the host's. */
export function nameRefusal(
  host: WindowsHost,
  name: string,
  hosts: WindowsHost[],
  node: k8s.V1Node | undefined,
): NameRefusal | undefined {
  const holder = nameHolder(host, name, hosts, node);
  if (holder) {
    return {
      reason: ConditionReason.NodeNameTaken,
      message: `Node name ${name} is held by WindowsHost ${hostRef(holder)}; nothing is done on this host or that Node. Set spec.nodeName to a free name, or delete one of the two WindowsHosts`,
    };
  }
  if (!node || mayAdopt(node, host)) return undefined;
  const carried = node.metadata?.annotations?.[hostAnnotation];
  const carries = carried === undefined ? 'no winfleet.io/host' : `winfleet.io/host=${carried}`;
  const fix =
    host.status?.nodeName === name
      ? `this host joined it, but its identity was removed or changed (a node may edit its own Node): if Node ${name} is this host's, run kubectl annotate node ${name} ${hostAnnotation}=${hostIdentity(host)} --overwrite`
      : `set spec.nodeName to a free name`;
  return {
    reason: ConditionReason.NodeNotOwned,
    message: `Node ${name} exists and carries ${carries}, not this host's identity ${hostIdentity(host)}; winfleet will not join, annotate, drain or delete it. ${fix[0]!.toUpperCase()}${fix.slice(1)}`,
  };
}
