/** Kubernetes API clients from a kubeconfig, with the conventions winfleet uses everywhere. */
import {
  isConflictStatus,
  isForbiddenStatus,
  isGoneStatus,
  isNotFoundStatus,
  isServerErrorStatus,
  isTooManyRequestsStatus,
  isUnauthorizedStatus,
  isUnprocessableStatus,
} from '../net/http-status.ts';
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

/** 404: the object (or its kind) does not exist. */
export const isNotFound = (error: unknown) => isNotFoundStatus(httpStatus(error));
/**
 * A JSON Patch whose `test` operation failed: the API server answers 422 Invalid with its
 * generic message and no causes (a patch the schema refuses is 422 too, but names its fields).
 */
export function isFailedPatchTest(error: unknown): boolean {
  if (!isInvalid(error)) return false;
  const body = (error as { body?: unknown }).body;
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? '');
  return text.includes('the server rejected our request due to an error in our request');
}
/** Someone else changed the object since it was read (a stale resourceVersion). */
export const isConflict = (error: unknown) => isConflictStatus(httpStatus(error));
/** A create found the object there already. */
export const isAlreadyExists = (error: unknown) => isConflictStatus(httpStatus(error));
/** A watch's resourceVersion is too old: list again. */
export const isGone = (error: unknown) => isGoneStatus(httpStatus(error));
/** 422 Invalid: the object does not pass validation (or a JSON Patch test failed). */
export const isInvalid = (error: unknown) => isUnprocessableStatus(httpStatus(error));
/** 401: the credentials were refused. */
export const isUnauthorized = (error: unknown) => isUnauthorizedStatus(httpStatus(error));
/** 403: authenticated, but RBAC (or an admission plugin) does not allow it. */
export const isForbidden = (error: unknown) => isForbiddenStatus(httpStatus(error));
/** 429: throttled, or an eviction a PodDisruptionBudget holds. */
export const isTooManyRequests = (error: unknown) => isTooManyRequestsStatus(httpStatus(error));
/** 5xx: the API server failed; retrying may help. */
export const isServerError = (error: unknown) => isServerErrorStatus(httpStatus(error));
