/**
 * The payload pull secret (--payload-pull-secret): a kubernetes.io/dockerconfigjson Secret in
 * the operator's namespace with credentials for the payload registry and its mirrors. The
 * operator reads it when it talks to the registry (cached a few seconds, never logged), and
 * hosts that pull the payload read the same Secret by name.
 */
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import type { DockerConfigSource } from '../images/docker-config.ts';
import { isNotFound } from '../kube/client.ts';

/** Reads the Secret `name` of `namespace` as a Docker config; cached for `ttlMs` (5 s). */
export function payloadPullSecret(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  ttlMs = 5000,
): () => Promise<DockerConfigSource> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let cached: { at: number; value: Promise<DockerConfigSource> } | undefined;
  const where = `Secret ${namespace}/${name} (--payload-pull-secret)`;
  const read = async (): Promise<DockerConfigSource> => {
    let secret: k8s.V1Secret;
    try {
      secret = await core.readNamespacedSecret({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      throw new WinfleetError(
        'WF_PAYLOAD_DOWNLOAD',
        `${where} does not exist; create it: kubectl -n ${namespace} create secret docker-registry ${name} --docker-server=REGISTRY --docker-username=USER --docker-password=PASSWORD`,
      );
    }
    const data = secret.data?.['.dockerconfigjson'];
    if (secret.type !== 'kubernetes.io/dockerconfigjson' || !data) {
      throw new WinfleetError(
        'WF_PAYLOAD_DOWNLOAD',
        `${where} is of type ${secret.type ?? '(none)'} without .dockerconfigjson; make it a kubernetes.io/dockerconfigjson Secret (kubectl create secret docker-registry)`,
      );
    }
    return {
      source: `secret ${namespace}/${name}`,
      config: Buffer.from(data, 'base64').toString('utf8'),
    };
  };
  return () => {
    if (cached && Date.now() - cached.at < ttlMs) return cached.value;
    const value = read();
    cached = { at: Date.now(), value };
    value.catch(() => {
      if (cached?.value === value) cached = undefined;
    });
    return value;
  };
}
