/** Secrets a test writes the way a user would (`kubectl apply` of a Secret with stringData). */
import * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../src/kube/client.ts';

/**
 * Writes Secret `namespace`/`name` with `stringData` (and `options`' annotations and type),
 * replacing it when it exists.
 */
export async function writeSecret(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  stringData: Record<string, string>,
  options: { annotations?: Record<string, string>; type?: string } = {},
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const body: k8s.V1Secret = {
    metadata: {
      name,
      namespace,
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    stringData,
    ...(options.type ? { type: options.type } : {}),
  };
  try {
    await core.replaceNamespacedSecret({ name, namespace, body });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await core.createNamespacedSecret({ namespace, body });
  }
}
