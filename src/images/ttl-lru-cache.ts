/**
 * A bounded in-memory cache: least recently used entries go first when it is full, and every
 * entry expires after its own time to live. It counts hits and misses for the metrics.
 */
import { WinfleetError } from '../errors/catalog.ts';

export interface TtlLruCacheOptions {
  /** Most entries kept; the least recently used goes first. */
  maxEntries: number;
  /** Clock in milliseconds; Date.now by default (tests pass a fake one). */
  now?: () => number;
}

/** Counters of a cache since it was created. */
export interface CacheStats {
  hits: number;
  misses: number;
  evictions: number;
  size: number;
  maxEntries: number;
}

interface Entry<V> {
  value: V;
  expiresAt: number;
}

/** A size-bounded LRU map whose entries expire. */
export class TtlLruCache<K, V> {
  readonly maxEntries: number;
  readonly #now: () => number;
  // A Map iterates in insertion order; re-inserting on use keeps the oldest use first.
  readonly #entries = new Map<K, Entry<V>>();
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(options: TtlLruCacheOptions) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 1) {
      throw new WinfleetError(
        'WF_INVARIANT',
        `Cache maxEntries must be a whole number ≥ 1, got "${options.maxEntries}"`,
      );
    }
    this.maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  /** The live value for `key`, counted as a hit or a miss; a hit becomes most recently used. */
  get(key: K): V | undefined {
    const value = this.peek(key);
    if (value === undefined) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    const entry = this.#entries.get(key)!;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return value;
  }

  /** The live value for `key` without counting or reordering. */
  peek(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Stores `value` for `ttlMs` milliseconds; a TTL ≤ 0 stores nothing (and drops `key`). */
  set(key: K, value: V, ttlMs: number): void {
    this.#entries.delete(key);
    if (!(ttlMs > 0)) return;
    this.#entries.set(key, { value, expiresAt: this.#now() + ttlMs });
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value as K;
      this.#entries.delete(oldest);
      this.#evictions++;
    }
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Entries held, including expired ones not yet dropped. */
  get size(): number {
    return this.#entries.size;
  }

  stats(): CacheStats {
    return {
      hits: this.#hits,
      misses: this.#misses,
      evictions: this.#evictions,
      size: this.#entries.size,
      maxEntries: this.maxEntries,
    };
  }
}
