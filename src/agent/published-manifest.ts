/**
 * Fetching the services manifest a Node's desired-version annotation names — an annotation
 * the node itself may write, so the name alone proves nothing. The agent takes a manifest
 * only when the operator's record (published-manifests.ts, which nodes cannot write) lists
 * its ConfigMap with the digest of its text; anything else is WF_MANIFEST_UNPUBLISHED.
 */
import type * as k8s from '@kubernetes/client-node';
import { servicesManifestConfigMapName, servicesManifestKey } from '../api/node-annotations.ts';
import { WinfleetError } from '../errors/catalog.ts';
import {
  isPublishedManifest,
  publishedManifestsConfigMapName,
} from '../servicesmanifest/published-manifests.ts';
import {
  parseServicesManifest,
  type ServicesManifest,
} from '../servicesmanifest/services-manifest.ts';

/** The published manifest of `version`, verified against the operator's record. */
export async function fetchPublishedManifest(
  core: k8s.CoreV1Api,
  namespace: string,
  version: string,
  namedBy = "this Node's desired-version annotation",
): Promise<ServicesManifest> {
  const name = servicesManifestConfigMapName(version);
  const refuse = (why: string) =>
    new WinfleetError(
      'WF_MANIFEST_UNPUBLISHED',
      `Refusing services manifest ${version} (ConfigMap ${namespace}/${name}), named by ${namedBy}: ${why}; no service was changed. Only the operator publishes manifests: check who wrote ${namedBy}`,
    );
  const record = await core.readNamespacedConfigMap({
    name: publishedManifestsConfigMapName,
    namespace,
  });
  if (record.data?.[name] === undefined)
    throw refuse(`the operator's record ${publishedManifestsConfigMapName} does not list it`);
  const cm = await core.readNamespacedConfigMap({ name, namespace });
  const text = cm.data?.[servicesManifestKey] ?? '';
  if (!isPublishedManifest(record.data, name, text))
    throw refuse(
      `its content differs from the digest the operator recorded in ${publishedManifestsConfigMapName}`,
    );
  const manifest = parseServicesManifest(text);
  if (manifest.version !== version)
    throw new WinfleetError(
      'WF_MANIFEST_INVALID',
      `ConfigMap ${name} holds services manifest ${manifest.version}, not ${version}; the operator publishes each version under its own name, so delete the ConfigMap and let the operator publish it again`,
    );
  return manifest;
}
