/**
 * HTTP statuses winfleet acts on, by name (RFC 9110, section 15): code compares a status
 * through these checks, never with a number, so a reader sees what is meant and a guard
 * (src/net/http-status.test.ts) can tell. Each takes undefined (no status: the request never
 * got an answer) and says false.
 */

type Status = number | undefined;

const is = (expected: number) => (status: Status) => status === expected;
const within = (low: number, high: number) => (status: Status) =>
  status !== undefined && status >= low && status <= high;

/** 200 OK. */
export const isOkStatus = is(200);
/** 201 Created. */
export const isCreatedStatus = is(201);
/** 200 OK or 201 Created: a create or an update the server took. */
export const isOkOrCreatedStatus = (status: Status) =>
  isOkStatus(status) || isCreatedStatus(status);
/** Any 2xx: the request succeeded. */
export const isSuccessStatus = within(200, 299);
/** A final answer (not 1xx informational): 200 and above. */
export const isFinalStatus = (status: Status) => status !== undefined && status >= 200;
/** 301 Moved Permanently or 302 Found: a client may turn a POST into a GET (RFC 9110 15.4.2-3). */
export const isMovedOrFoundStatus = within(301, 302);
/** 301, 302, 303, 307 or 308: a redirect to the Location (RFC 9110 15.4). */
export const isRedirectStatus = (status: Status) =>
  isMovedOrFoundStatus(status) || isSeeOtherStatus(status) || within(307, 308)(status);
/** 303 See Other: the answer is a GET of the Location. */
export const isSeeOtherStatus = is(303);
/** 401 Unauthorized: the credentials (or their absence) were refused. */
export const isUnauthorizedStatus = is(401);
/** 403 Forbidden: authenticated, but not allowed. */
export const isForbiddenStatus = is(403);
/** 401 or 403: the caller may not have this, with these credentials or any. */
export const isRefusedStatus = (status: Status) =>
  isUnauthorizedStatus(status) || isForbiddenStatus(status);
/** 404 Not Found. */
export const isNotFoundStatus = is(404);
/** 409 Conflict (Kubernetes: AlreadyExists on a create, Conflict on a stale update). */
export const isConflictStatus = is(409);
/** 410 Gone (Kubernetes: a watch's resourceVersion is too old). */
export const isGoneStatus = is(410);
/** 422 Unprocessable Content (Kubernetes: Invalid). */
export const isUnprocessableStatus = is(422);
/** 429 Too Many Requests (Kubernetes: also an eviction a PodDisruptionBudget holds). */
export const isTooManyRequestsStatus = is(429);
/** Any 5xx: the server failed. */
export const isServerErrorStatus = within(500, 599);
