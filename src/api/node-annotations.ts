/** Annotations and labels winfleet puts on Nodes and the objects it publishes for them. */

/** The services version the operator wants on the node. */
export const desiredServicesVersionAnnotation = 'winfleet.io/desired-services-version';
/** The services version the agent applied; written only once the node is Ready. */
export const servicesVersionAnnotation = 'winfleet.io/services-version';
/**
 * The identity of the WindowsHost behind the node, "namespace/name/uid" (hostIdentity). The
 * operator writes it when it adopts the Node its host's kubelet registered, and drains,
 * deletes or annotates only Nodes that carry it: a WindowsHost naming someone else's Node
 * gets nothing of it. The uid keeps a re-created WindowsHost of the same name from inheriting
 * a Node. (NodeRestriction lets a node edit its own Node only, so a node can strip or forge
 * this on itself alone.)
 */
export const hostAnnotation = 'winfleet.io/host';
/** Set while winfleet holds the node cordoned, so it only ever uncordons what it cordoned. */
export const cordonedByAnnotation = 'winfleet.io/cordoned-by';
/** Label on nodes winfleet manages. */
export const managedNodeLabel = 'winfleet.io/managed';

/** ConfigMap holding services manifest `version` (immutable). */
export function servicesManifestConfigMapName(version: string): string {
  return `winfleet-services-${version.toLowerCase().replace(/[^a-z0-9.-]/g, '-')}`;
}
export const servicesManifestKey = 'manifest.json';

/** The value of hostAnnotation for a WindowsHost: "namespace/name/uid". */
export function hostIdentity(host: {
  metadata: { namespace?: string; name?: string; uid?: string };
}): string {
  return `${host.metadata.namespace}/${host.metadata.name}/${host.metadata.uid}`;
}
