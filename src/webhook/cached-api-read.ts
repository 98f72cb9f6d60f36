/**
 * A read from the API server made while an admission waits (a pod's pull secrets, its service
 * account's), cached for `ttlMs`, and never holding the admission longer than `deadlineMs`: an
 * API server that does not answer (overloaded, unreachable from this replica, a watch
 * connection gone) must not hang the webhook, whose caller gives up after its own timeout.
 *
 * - A value read before is served at once. When it is older than `ttlMs`, it is read again
 *   in the background (one read per key in flight), and served until that read answers: an
 *   API server that takes 0.9 s to answer under load otherwise put 0.9 s on every admission
 *   that came while the entry was being refreshed (bench:scale, 5,000 nodes: webhook p99 872
 *   ms against the no-op server's 142).
 * - A key never read: callers wait for the one read in flight until `deadlineMs` after it
 *   started (one deadline for all of them: later callers do not wait again), then get
 *   `fallback`.
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
  /** When the first read in flight stops being waited for. */
  deadlineAt?: number;
}

/** @package */
export function cachedApiRead<T>(
  load: (key: string) => Promise<T>,
  options: CachedApiReadOptions<T>,
): (key: string) => Promise<T> {
  const entries = new Map<string, Entry<T>>();
  const known = (entry: Entry<T>) => (entry.value ? entry.value.v : options.fallback);
  /** Starts a read of `key` into `entry` unless one is in flight. */
  const refresh = (key: string, entry: Entry<T>): Promise<T> => {
    entry.inflight ??= load(key).then(
      (v) => {
        entry.value = { v };
        entry.at = Date.now();
        entry.inflight = undefined;
        return v;
      },
      () => {
        entry.at = Date.now();
        entry.value ??= { v: options.fallback };
        entry.inflight = undefined;
        return known(entry);
      },
    );
    return entry.inflight;
  };
  return (key) => {
    let entry = entries.get(key);
    if (entry?.value) {
      if (Date.now() - entry.at >= options.ttlMs) void refresh(key, entry);
      return Promise.resolve(entry.value.v);
    }
    if (!entry) {
      entry = { at: 0 };
      entries.set(key, entry);
      if (entries.size > options.maxEntries) entries.delete(entries.keys().next().value!);
    }
    const current = entry;
    if (!current.inflight) current.deadlineAt = Date.now() + options.deadlineMs;
    const inflight = refresh(key, current);
    const waitMs = (current.deadlineAt ?? 0) - Date.now();
    if (waitMs <= 0) return Promise.resolve(known(current));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(known(current)), waitMs);
      timer.unref();
    });
    return Promise.race([inflight, deadline]).finally(() => clearTimeout(timer));
  };
}
