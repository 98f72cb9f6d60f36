/** Kubernetes API clients from a kubeconfig, with the conventions winfleet uses everywhere. */
import { userAgents } from './user-agent.ts';
import { WinfleetKubeConfig } from './winfleet-kube-config.ts';

export { WinfleetKubeConfig } from './winfleet-kube-config.ts';

/**
 * Loads a kubeconfig file, or the default chain (KUBECONFIG, ~/.kube/config, in-cluster), as
 * the process's one KubeConfig: its requests share a connection pool, carry `userAgent`
 * (user-agent.ts; default the CLI's) and are counted (winfleet-kube-config.ts).
 */
export function loadKubeConfig(
  path?: string,
  userAgent: string = userAgents.cli,
): WinfleetKubeConfig {
  const kc = new WinfleetKubeConfig({ userAgent });
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/**
 * The HTTP status of a client-node error, if it carries one: `code` on an API call's
 * ApiException, `statusCode` on a failed watch.
 */
export function httpStatus(error: unknown): number | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const { code, statusCode } = error as { code?: unknown; statusCode?: unknown };
  if (typeof code === 'number') return code;
  return typeof statusCode === 'number' ? statusCode : undefined;
}

export const isNotFound = (error: unknown) => httpStatus(error) === 404;
/**
 * A JSON Patch whose `test` operation failed: the API server answers 422 Invalid with its
 * generic message and no causes (a patch the schema refuses is 422 too, but names its fields).
 */
export function isFailedPatchTest(error: unknown): boolean {
  if (httpStatus(error) !== 422) return false;
  const body = (error as { body?: unknown }).body;
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? '');
  return text.includes('the server rejected our request due to an error in our request');
}
/** Someone else changed the object since it was read (a stale resourceVersion). */
export const isConflict = (error: unknown) => httpStatus(error) === 409;
/** A create found the object there already. */
export const isAlreadyExists = (error: unknown) => httpStatus(error) === 409;
/** A watch's resourceVersion is too old: list again. */
export const isGone = (error: unknown) => httpStatus(error) === 410;
