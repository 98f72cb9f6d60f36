/** Annotations and labels winfleet puts on Nodes and the objects it publishes for them. */

/** The services version the operator wants on the node. */
export const desiredServicesVersionAnnotation = 'winfleet.io/desired-services-version';
/** The services version the agent applied; written only once the node is Ready. */
export const servicesVersionAnnotation = 'winfleet.io/services-version';
/** "namespace/name" of the WindowsHost behind the node. */
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
