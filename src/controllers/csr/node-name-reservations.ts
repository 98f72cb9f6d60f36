/**
 * The operator's table of node names that a join by command is claiming right now: a name is
 * reserved for one CSR between the check that it is fresh and the moment its WindowsHost is in
 * the informer cache. Creating the WindowsHost is atomic only within its namespace; two CSRs
 * for one name in two pools' namespaces would both succeed, so the leader (the only replica
 * that decides CSRs) also holds the name here, checked and set with no await in between.
 * Entries go after `ttlMs` (by then the host is in the cache, which the check reads) or when
 * the claim is undone.
 * @package
 */
export class NodeNameReservations {
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #held = new Map<string, { csrUid: string; at: number }>();

  constructor(options: { ttlMs?: number; now?: () => number } = {}) {
    this.#ttlMs = options.ttlMs ?? 10 * 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** Reserves `nodeName` for `csrUid`; false when another CSR holds it. */
  reserve(nodeName: string, csrUid: string): boolean {
    const now = this.#now();
    for (const [name, entry] of this.#held) {
      if (now - entry.at >= this.#ttlMs) this.#held.delete(name);
    }
    const entry = this.#held.get(nodeName);
    if (entry && entry.csrUid !== csrUid) return false;
    this.#held.set(nodeName, { csrUid, at: entry?.at ?? now });
    return true;
  }

  /** Gives `nodeName` up, if `csrUid` holds it. */
  release(nodeName: string, csrUid: string): void {
    if (this.#held.get(nodeName)?.csrUid === csrUid) this.#held.delete(nodeName);
  }
}
