/**
 * Watches that stay open while nothing happens. client-node's Watch aborts a watch that has
 * received no bytes for 30 s (its `requestTimeoutMs`), and a watch at rest is quiet by nature:
 * every informer would reopen its watch twice a minute, which is polling by another name.
 * winfleet asks the API server to end each watch after `watchTimeoutSeconds` (a clean end the
 * caller resumes from its resourceVersion, as client-go's reflector does with its 5–10 min
 * timeouts) and sets the client-side limit just above it, so that only a dead connection,
 * not a quiet one, trips it.
 */
import * as k8s from '@kubernetes/client-node';

/** The server-side timeout (the `timeoutSeconds` query parameter) of winfleet's watches. */
export const watchTimeoutSeconds = 240;
/** The client-side idle limit: the server ends a healthy watch before this. */
export const watchIdleLimitMs = (watchTimeoutSeconds + 30) * 1000;

/**
 * A client-node Watch with `idleLimitMs` as its idle limit. client-node keeps the limit in a
 * private field with no setter; watch.test.ts fails if an upgrade renames it.
 */
export function quietWatch(kc: k8s.KubeConfig, idleLimitMs = watchIdleLimitMs): k8s.Watch {
  const watch = new k8s.Watch(kc);
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = idleLimitMs;
  return watch;
}
