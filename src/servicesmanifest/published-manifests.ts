/**
 * The record of the services manifests the operator published: one ConfigMap in the
 * operator's namespace mapping each manifest ConfigMap's name to the SHA-256 of its manifest
 * text. Nodes may read it but not write it (RBAC gives system:nodes `get` on it and on the
 * recorded manifests by name, nothing else), so a node that names another ConfigMap in its
 * own Node's desired-version annotation — a node may write its own Node's annotations — or a
 * user who creates a labelled ConfigMap of their own gets a manifest the agent refuses.
 *
 * Why a ConfigMap and not the agent's own config on the host: the operator upgrades a node by
 * annotating its Node, without an SSH session, so the record has to reach the agent through
 * the API server; the digest (not just the name) is recorded so that a ConfigMap replaced
 * under a recorded name is refused as well.
 */
import { createHash } from 'node:crypto';

/** The ConfigMap (in the operator's namespace) holding the record. */
export const publishedManifestsConfigMapName = 'winfleet-published-manifests';

/** SHA-256 (lower-case hex) of a manifest ConfigMap's `manifest.json` text. */
export function manifestDigest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Whether `record` (the record ConfigMap's data) lists `name` with the digest of `text`. */
export function isPublishedManifest(
  record: Record<string, string> | undefined,
  name: string,
  text: string,
): boolean {
  return record?.[name] !== undefined && record[name] === manifestDigest(text);
}
