/** Kubernetes API clients from a kubeconfig, with the conventions winfleet uses everywhere. */
import * as k8s from '@kubernetes/client-node';

/** Loads a kubeconfig file, or the default chain (KUBECONFIG, ~/.kube/config, in-cluster). */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/** The HTTP status of a client-node error, if it carries one. */
export function httpStatus(error: unknown): number | undefined {
  if (error && typeof error === 'object' && 'code' in error && typeof error.code === 'number') {
    return error.code;
  }
  return undefined;
}

export const isNotFound = (error: unknown) => httpStatus(error) === 404;
export const isConflict = (error: unknown) => httpStatus(error) === 409;
export const isAlreadyExists = (error: unknown) => httpStatus(error) === 409;
