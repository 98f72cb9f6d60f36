/** Multi-document YAML manifests: parsing and applying them the way `kubectl apply` does. */
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { WinfleetError } from '../errors/catalog.ts';

/** Parses multi-document YAML into objects, skipping empty documents. */
export function parseManifests(text: string): k8s.KubernetesObject[] {
  const objects: k8s.KubernetesObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0)
      throw new WinfleetError('WF_SCHEMA_INVALID', `Invalid YAML: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        'Each YAML document must be a Kubernetes object (a mapping)',
      );
    }
    objects.push(value as k8s.KubernetesObject);
  }
  return objects;
}

/**
 * Applies objects with server-side apply under `fieldManager`, in `namespace` when they name
 * none, and returns what the server stored.
 */
export async function applyManifests(
  kc: k8s.KubeConfig,
  objects: k8s.KubernetesObject[],
  options: { namespace?: string; fieldManager: string; force?: boolean },
): Promise<k8s.KubernetesObject[]> {
  const client = objectClient(kc, options.namespace);
  const applied: k8s.KubernetesObject[] = [];
  for (const object of objects) {
    applied.push(
      await client.patch(
        structuredClone(object),
        undefined,
        undefined,
        options.fieldManager,
        options.force ?? true,
        k8s.PatchStrategy.ServerSideApply,
      ),
    );
  }
  return applied;
}

/** A generic object client whose namespaced objects default to `namespace`. */
export function objectClient(kc: k8s.KubeConfig, namespace?: string): k8s.KubernetesObjectApi {
  const client = kc.makeApiClient(NamespacedObjectApi);
  client.useNamespace(namespace ?? kc.getContextObject(kc.currentContext)?.namespace ?? 'default');
  return client;
}

class NamespacedObjectApi extends k8s.KubernetesObjectApi {
  useNamespace(namespace: string): void {
    this.defaultNamespace = namespace;
  }
}
