/**
 * Publishes each services manifest version once, as an immutable ConfigMap in the operator's
 * namespace, records its digest in the published-manifests record (which only the operator
 * writes), and lets nodes read exactly the recorded ConfigMaps and the record (RBAC by name).
 * A ConfigMap someone else creates, label or not, is neither node-readable nor accepted by an
 * agent (src/servicesmanifest/published-manifests.ts).
 */
import * as k8s from '@kubernetes/client-node';
import { servicesManifestConfigMapName, servicesManifestKey } from '../../api/node-annotations.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { isAlreadyExists, isNotFound } from '../../kube/client.ts';
import {
  manifestDigest,
  publishedManifestsConfigMapName,
} from '../../servicesmanifest/published-manifests.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';
import { applyJoinRbac } from './cluster-rbac.ts';

export const manifestLabel = 'winfleet.io/services-manifest';

const labels = { [manifestLabel]: 'true', 'app.kubernetes.io/managed-by': 'winfleet' };

export function createManifestPublisher(
  kc: k8s.KubeConfig,
  namespace: string,
  options: { clusterBindings?: boolean } = {},
) {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const published = new Set<string>();
  let rbacFor = '';

  /** Adds `name` → `digest` to the record (a merge patch: other entries stay). */
  async function record(name: string, digest: string): Promise<Record<string, string>> {
    try {
      const patched = await core.patchNamespacedConfigMap(
        { name: publishedManifestsConfigMapName, namespace, body: { data: { [name]: digest } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      return patched.data ?? {};
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    try {
      const created = await core.createNamespacedConfigMap({
        namespace,
        body: {
          metadata: {
            name: publishedManifestsConfigMapName,
            namespace,
            labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
          },
          data: { [name]: digest },
        },
      });
      return created.data ?? {};
    } catch (error) {
      // Created meanwhile by another publish: patch it.
      if (!isAlreadyExists(error)) throw error;
      return record(name, digest);
    }
  }

  return async function publish(manifest: ServicesManifest): Promise<string> {
    const name = servicesManifestConfigMapName(manifest.version);
    const data = JSON.stringify(manifest);
    if (!published.has(name)) {
      try {
        await core.createNamespacedConfigMap({
          namespace,
          body: {
            metadata: { name, namespace, labels },
            immutable: true,
            data: { [servicesManifestKey]: data },
          },
        });
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
        const existing = await core.readNamespacedConfigMap({ name, namespace });
        if (existing.data?.[servicesManifestKey] !== data) {
          throw new WinfleetError(
            'WF_MANIFEST_VERSION_REUSED',
            `ConfigMap ${namespace}/${name} already holds a different manifest for version ${manifest.version}; a published version never changes, so give the payload a new version`,
          );
        }
      }
    }
    const recorded = await record(name, manifestDigest(data));
    published.add(name);
    const names = Object.keys(recorded).sort();
    const key = names.join(',');
    if (key !== rbacFor) {
      await applyJoinRbac(kc, namespace, [...names, publishedManifestsConfigMapName], options);
      rbacFor = key;
    }
    return name;
  };
}
