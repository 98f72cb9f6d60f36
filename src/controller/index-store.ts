/**
 * The informer's cache: objects by key, plus secondary indexes kept up to date on every add,
 * update, delete and re-list (client-go's Indexer, learned from, not copied). An index maps an
 * object to zero or more values ("the build of a Ready Windows node", "the node name a host
 * claims"); a lookup by value costs the size of its answer, not the size of the cache, so a
 * controller can find what one event touches without scanning every object.
 */

/** The values an object is filed under in one index; [] files it nowhere. */
export type IndexFunction<T> = (object: T) => readonly string[];

export class IndexStore<T> {
  readonly #items = new Map<string, T>();
  readonly #indexers = new Map<string, IndexFunction<T>>();
  /** Index name → value → key → object. Empty buckets are dropped. */
  readonly #indices = new Map<string, Map<string, Map<string, T>>>();

  /** Objects in the store. */
  get size(): number {
    return this.#items.size;
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  values(): IterableIterator<T> {
    return this.#items.values();
  }

  entries(): IterableIterator<[string, T]> {
    return this.#items.entries();
  }

  list(): T[] {
    return [...this.#items.values()];
  }

  /** Adds or replaces the object at `key`, moving it between index buckets as needed. */
  set(key: string, object: T): void {
    const old = this.#items.get(key);
    this.#items.set(key, object);
    for (const [name, fn] of this.#indexers) this.#refile(name, fn, key, old, object);
  }

  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    if (old === undefined) return undefined;
    this.#items.delete(key);
    for (const [name, fn] of this.#indexers) this.#refile(name, fn, key, old, undefined);
    return old;
  }

  /** Replaces every object (a re-list); indexes are rebuilt from the new contents. */
  replace(entries: Iterable<[string, T]>): void {
    this.#items.clear();
    for (const [key, object] of entries) this.#items.set(key, object);
    for (const [name, fn] of this.#indexers) this.#rebuild(name, fn);
  }

  /** Adds an index; objects already stored are filed at once. A name is added once. */
  addIndex(name: string, fn: IndexFunction<T>): void {
    if (this.#indexers.has(name)) return;
    this.#indexers.set(name, fn);
    this.#rebuild(name, fn);
  }

  hasIndex(name: string): boolean {
    return this.#indexers.has(name);
  }

  /** The objects filed under `value` in index `name` ([] for an unknown index or value). */
  byIndex(name: string, value: string): T[] {
    const bucket = this.#indices.get(name)?.get(value);
    return bucket ? [...bucket.values()] : [];
  }

  /** One object filed under `value`, or undefined: O(1). */
  firstByIndex(name: string, value: string): T | undefined {
    const bucket = this.#indices.get(name)?.get(value);
    if (!bucket) return undefined;
    for (const object of bucket.values()) return object;
    return undefined;
  }

  /** How many objects are filed under `value`: O(1). */
  countByIndex(name: string, value: string): number {
    return this.#indices.get(name)?.get(value)?.size ?? 0;
  }

  /** The values of index `name` that at least one object is filed under. */
  indexValues(name: string): string[] {
    return [...(this.#indices.get(name)?.keys() ?? [])];
  }

  #rebuild(name: string, fn: IndexFunction<T>): void {
    this.#indices.set(name, new Map());
    for (const [key, object] of this.#items) this.#refile(name, fn, key, undefined, object);
  }

  #refile(
    name: string,
    fn: IndexFunction<T>,
    key: string,
    old: T | undefined,
    object: T | undefined,
  ): void {
    const index = this.#indices.get(name)!;
    const before = old === undefined ? [] : fn(old);
    const after = object === undefined ? [] : fn(object);
    for (const value of before) {
      if (after.includes(value)) continue;
      const bucket = index.get(value);
      bucket?.delete(key);
      if (bucket?.size === 0) index.delete(value);
    }
    if (object === undefined) return;
    for (const value of after) {
      let bucket = index.get(value);
      if (!bucket) {
        bucket = new Map();
        index.set(value, bucket);
      }
      bucket.set(key, object);
    }
  }
}
