/** Secrets a test writes the way a user would (`kubectl apply` of a Secret with stringData). */
import * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../src/kube/client.ts';

/** Writes Secret `namespace`/`name` with `stringData`, replacing it when it exists. */
export async function writeSecret(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  stringData: Record<string, string>,
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const body = { metadata: { name, namespace }, stringData };
  try {
    await core.replaceNamespacedSecret({ name, namespace, body });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await core.createNamespacedSecret({ namespace, body });
  }
}
