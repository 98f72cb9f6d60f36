/**
 * Publishes each services manifest version once, as an immutable ConfigMap in the operator's
 * namespace, and lets nodes read exactly those ConfigMaps (RBAC by name).
 */
import * as k8s from '@kubernetes/client-node';
import { servicesManifestConfigMapName, servicesManifestKey } from '../../api/node-annotations.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { isAlreadyExists } from '../../kube/client.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';
import { applyJoinRbac } from './cluster-rbac.ts';

export const manifestLabel = 'winfleet.io/services-manifest';

export function createManifestPublisher(kc: k8s.KubeConfig, namespace: string) {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const published = new Set<string>();
  let rbacFor = '';
  return async function publish(manifest: ServicesManifest): Promise<string> {
    const name = servicesManifestConfigMapName(manifest.version);
    if (!published.has(name)) {
      const data = JSON.stringify(manifest);
      try {
        await core.createNamespacedConfigMap({
          namespace,
          body: {
            metadata: {
              name,
              namespace,
              labels: { [manifestLabel]: 'true', 'app.kubernetes.io/managed-by': 'winfleet' },
            },
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
      published.add(name);
    }
    const all = (
      await core.listNamespacedConfigMap({ namespace, labelSelector: `${manifestLabel}=true` })
    ).items.map((c) => c.metadata!.name!);
    const key = all.sort().join(',');
    if (key !== rbacFor) {
      await applyJoinRbac(kc, namespace, all);
      rbacFor = key;
    }
    return name;
  };
}
