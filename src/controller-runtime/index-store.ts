/**
 * The informer's cache: objects by key, plus secondary indexes kept up to date on every add,
 * update, delete and re-list (client-go's Indexer, learned from, not copied). An index maps an
 * object to zero or more values ("the build of a Ready Windows node", "the node name a host
 * claims"); a lookup by value costs the size of its answer, not the size of the cache, so a
 * controller can find what one event touches without scanning every object.
 */

/** The values an object is filed under in one index; [] files it nowhere. */
export type IndexFunction<T> = (object: T) => readonly string[];

/**
 * The keys filed under one value: a lone key is kept as the string itself (most values of a
 * by-name or by-address index file one object), more as a Set. Keys, not objects: an update
 * that keeps an object's values touches no bucket, and a bucket costs no reference per object
 * beyond the key string the store already holds.
 */
type Bucket = string | Set<string>;

function bucketSize(bucket: Bucket | undefined): number {
  if (bucket === undefined) return 0;
  return typeof bucket === 'string' ? 1 : bucket.size;
}

function* bucketKeys(bucket: Bucket | undefined): Generator<string> {
  if (bucket === undefined) return;
  if (typeof bucket === 'string') yield bucket;
  else yield* bucket;
}

/** @package */
export class IndexStore<T> {
  readonly #items = new Map<string, T>();
  readonly #indexers = new Map<string, IndexFunction<T>>();
  /** Index name → value → the keys filed under it. Empty buckets are dropped. */
  readonly #indices = new Map<string, Map<string, Bucket>>();

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

  /**
   * Files every object again under index `name`: for an index whose function reads more than
   * the object (say, the pools that exist), after that changed. Costs the whole store.
   */
  reindex(name: string): void {
    const fn = this.#indexers.get(name);
    if (fn) this.#rebuild(name, fn);
  }

  /** The objects filed under `value` in index `name` ([] for an unknown index or value). */
  byIndex(name: string, value: string): T[] {
    const out: T[] = [];
    for (const key of bucketKeys(this.#bucket(name, value))) out.push(this.#items.get(key)!);
    return out;
  }

  /** One object filed under `value`, or undefined: O(1). */
  firstByIndex(name: string, value: string): T | undefined {
    for (const key of bucketKeys(this.#bucket(name, value))) return this.#items.get(key);
    return undefined;
  }

  /**
   * The first object filed under `value` that `accept` takes, or undefined; it stops at the
   * first one, so it costs what it looks at, not the bucket.
   */
  findByIndex(name: string, value: string, accept: (object: T) => boolean): T | undefined {
    for (const key of bucketKeys(this.#bucket(name, value))) {
      const object = this.#items.get(key)!;
      if (accept(object)) return object;
    }
    return undefined;
  }

  /** How many objects are filed under `value`: O(1). */
  countByIndex(name: string, value: string): number {
    return bucketSize(this.#bucket(name, value));
  }

  /** The values of index `name` that at least one object is filed under. */
  indexValues(name: string): string[] {
    return [...(this.#indices.get(name)?.keys() ?? [])];
  }

  #bucket(name: string, value: string): Bucket | undefined {
    return this.#indices.get(name)?.get(value);
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
      if (!after.includes(value)) unfile(index, value, key);
    }
    for (const value of after) {
      if (!before.includes(value)) file(index, value, key);
    }
  }
}

function file(index: Map<string, Bucket>, value: string, key: string): void {
  const bucket = index.get(value);
  if (bucket === undefined) index.set(value, key);
  else if (typeof bucket !== 'string') bucket.add(key);
  else if (bucket !== key) index.set(value, new Set([bucket, key]));
}

function unfile(index: Map<string, Bucket>, value: string, key: string): void {
  const bucket = index.get(value);
  if (bucket === undefined) return;
  if (typeof bucket === 'string') {
    if (bucket === key) index.delete(value);
    return;
  }
  bucket.delete(key);
  // A Set that shrank stays one (no churn for a value shared by one object, then two, ...).
  if (bucket.size === 0) index.delete(value);
}
