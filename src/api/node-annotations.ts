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
/**
 * Set while winfleet holds the node cordoned. The node itself (or any patch-nodes principal)
 * can write it too, so it is never enough on its own: winfleet uncordons only a Node its
 * record in the WindowsHost's status also names (status.rollout.cordoned,
 * status.remediation.cordoned).
 */
export const cordonedByAnnotation = 'winfleet.io/cordoned-by';
/**
 * Who in winfleet holds the cordon: a rollout change or a host's removal ("winfleet"), or
 * remediation that ended in RemediationFailed ("remediation"). Each lifts only its own.
 */
export const cordonedByValues = { rollout: 'winfleet', remediation: 'remediation' } as const;
/** Label on nodes winfleet manages. */
export const managedNodeLabel = 'winfleet.io/managed';
/** Label with the WindowsHost's spec.pool on its node. */
export const poolNodeLabel = 'winfleet.io/pool';

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

/**
 * Every command below (and desiredServicesVersionAnnotation) is signed by the operator beside
 * it, and the agent obeys none without a valid signature (src/api/node-commands.ts).
 *
 * Rollout levels the operator sets on a Node while its pool's rollout engine has the host in
 * a change (src/rollout), and the agent acts on. Levels, not commands: the agent compares them
 * with what it has done, so reading one twice (a restart, a re-sent watch event) does nothing
 * twice.
 *
 * installUpdatesAnnotation: "Security" or "All" — install the Windows updates of that policy
 * that the agent's last search found (updatesFor in src/rollout/pending-changes.ts). Set in the
 * change's Apply step, removed when the change ends; without it the agent installs nothing.
 */
export const installUpdatesAnnotation = 'winfleet.io/install-updates';
/**
 * A reboot the rollout engine asks for: a token (1–63 of [a-z0-9-]). The agent records the
 * token in its state before it calls for the restart and reboots once per token, never again
 * for the same one (after the reboot it finds the token recorded).
 */
export const rebootRequestAnnotation = 'winfleet.io/reboot-request';
/**
 * The agent's Windows Update report, JSON (WindowsUpdateReport in src/api/windows-updates.ts),
 * written by the agent with the node's own credentials. The operator parses it strictly and
 * believes it only when its bootId is the Node's current status.nodeInfo.bootID.
 */
export const windowsUpdatesAnnotation = 'winfleet.io/windows-updates';
/**
 * The removal of a Pull-mode host asks its agent to deconfigure itself with this annotation on
 * its Node: the WindowsHost's uid (a [a-z0-9-] token), written by the operator once the node is
 * drained. The agent removes winfleet from the host, reports on deconfiguredAnnotation, drops
 * its credentials and its own service. Any patch-nodes principal can write the annotation, so
 * the agent obeys it only with the operator's signature for its Node, and never on an SSH host
 * (src/api/node-commands.ts).
 */
export const deconfigureRequestAnnotation = 'winfleet.io/deconfigure-requested';
/**
 * The agent's report that it deconfigured its host, JSON (DeconfigureReport in
 * src/api/deconfigure-report.ts), written with the node's own credentials just before it drops
 * them. The operator believes it only for its own request and only on the host's own Node.
 */
export const deconfiguredAnnotation = 'winfleet.io/deconfigured';
/**
 * Whether the host can run gMSA pods ("true" or "false"), set by the agent on its own Node with
 * the node's credentials (src/agent/gmsa-readiness.ts); the webhook sends pods that name a gMSA
 * credential spec only to nodes labelled "true". NodeRestriction lets a node label only itself,
 * so a node can claim readiness for itself alone, never for another.
 */
export const gmsaReadyLabel = 'winfleet.io/gmsa-ready';
/**
 * Why gmsaReadyLabel is what it is: "<Reason>: <message>", one line, written with the label
 * (reasons: GmsaReadinessReason in reasons.ts).
 */
export const gmsaReadinessAnnotation = 'winfleet.io/gmsa-readiness';
