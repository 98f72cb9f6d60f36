/**
 * A read from the API server made while an admission waits (a pod's pull secrets, its service
 * account's), cached for `ttlMs`, and never holding the admission longer than `deadlineMs`: an
 * API server that does not answer (overloaded, unreachable from this replica, a watch
 * connection gone) must not hang the webhook, whose caller gives up after its own timeout.
 *
 * - A fresh value is served from the cache.
 * - Otherwise one read per key is in flight at a time; callers wait for it until `deadlineMs`
 *   after it started (one deadline for all of them: later callers do not wait again), then get
 *   the last value read, however old, or `fallback` if there was none.
 * - A failed read keeps the last value (a transient error does not drop a pull secret) and
 *   counts as a read for the TTL, so a failing API server is not asked again on every pod.
 */
export interface CachedApiReadOptions<T> {
  ttlMs: number;
  deadlineMs: number;
  fallback: T;
  /** Entries kept at most; the oldest goes first. */
  maxEntries: number;
}

interface Entry<T> {
  at: number;
  value?: { v: T };
  inflight?: Promise<T>;
  /** When the read in flight stops being waited for. */
  deadlineAt?: number;
}

export function cachedApiRead<T>(
  load: (key: string) => Promise<T>,
  options: CachedApiReadOptions<T>,
): (key: string) => Promise<T> {
  const entries = new Map<string, Entry<T>>();
  const known = (entry: Entry<T>) => (entry.value ? entry.value.v : options.fallback);
  return (key) => {
    let entry = entries.get(key);
    if (entry?.value && Date.now() - entry.at < options.ttlMs)
      return Promise.resolve(entry.value.v);
    if (!entry) {
      entry = { at: 0 };
      entries.set(key, entry);
      if (entries.size > options.maxEntries) entries.delete(entries.keys().next().value!);
    }
    const current = entry;
    if (!current.inflight) current.deadlineAt = Date.now() + options.deadlineMs;
    current.inflight ??= load(key).then(
      (v) => {
        current.value = { v };
        current.at = Date.now();
        current.inflight = undefined;
        return v;
      },
      () => {
        current.at = Date.now();
        current.value ??= { v: options.fallback };
        current.inflight = undefined;
        return known(current);
      },
    );
    const waitMs = (current.deadlineAt ?? 0) - Date.now();
    if (waitMs <= 0) return Promise.resolve(known(current));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(known(current)), waitMs);
      timer.unref();
    });
    return Promise.race([current.inflight, deadline]).finally(() => clearTimeout(timer));
  };
}
