/**
 * A list-then-watch cache of one resource type that keeps itself correct: it re-lists on 410
 * Gone, resumes a watch that ends or times out from the last resourceVersion, restarts with
 * jittered backoff after errors (client-node's informer gives up on them), and re-lists when
 * nothing at all arrived for a while (a stalled watch). Objects can be slimmed before they
 * are cached, so large kinds like Node stay cheap.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { type IndexFunction, IndexStore } from '../controller-runtime/index-store.ts';
import { isGone } from '../kube/client.ts';
import { quietWatch, watchTimeoutSeconds } from '../kube/watch.ts';
import { isGoneStatus } from '../net/http-status.ts';

/** Which objects to watch. */
export interface ResourceType {
  apiVersion: string;
  kind: string;
  /** Lower-case plural used in the URL, e.g. "nodes". */
  plural: string;
}

/** @package */
export interface InformerOptions<T extends k8s.KubernetesObject> {
  resource: ResourceType;
  /** Only this namespace; all namespaces by default. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Keep only what the controllers read (default: the whole object). */
  transform?: (object: T) => T;
  /** Re-list when no event (bookmarks included) arrived for this long (default 5 min). */
  stallTimeoutMs?: number;
  /** Longest wait between failed attempts (default 30 s). */
  maxBackoffMs?: number;
  onError?: (error: unknown) => void;
}

type Handler<T> = (object: T, old?: T) => void;
type WatchOutcome = 'gone' | 'ended' | 'stalled' | { error: unknown };

/** The cache key of an object: "namespace/name", or "name" when cluster-scoped. */
export function objectKey(object: k8s.KubernetesObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : `${name}`;
}

function resourceVersionOf(object: k8s.KubernetesObject): string | undefined {
  return object.metadata?.resourceVersion;
}

/** A self-healing cache of one resource type, with add/update/delete notifications. */
export class Informer<T extends k8s.KubernetesObject> {
  readonly #kc: k8s.KubeConfig;
  readonly #options: InformerOptions<T>;
  readonly #store = new IndexStore<T>();
  readonly #events = new EventEmitter();
  #client: k8s.KubernetesObjectApi | undefined;
  #resourceVersion = '';
  #abort: AbortController | undefined;
  #stopped = false;
  #synced: Promise<void>;
  #resolveSynced!: () => void;
  #lastEventAt = Date.now();
  /** Lists done so far; tests use it to see a re-list happen. */
  listCount = 0;

  constructor(kc: k8s.KubeConfig, options: InformerOptions<T>) {
    this.#kc = kc;
    this.#options = options;
    this.#synced = new Promise((resolve) => {
      this.#resolveSynced = resolve;
    });
    this.#events.setMaxListeners(50);
  }

  on(event: 'add' | 'delete', handler: (object: T) => void): this;
  on(event: 'update', handler: (object: T, old: T) => void): this;
  on(event: 'add' | 'update' | 'delete', handler: (object: T, old: T) => void): this {
    this.#events.on(event, handler);
    return this;
  }

  /** The cached object with this key ("namespace/name" or "name"). */
  get(key: string): T | undefined {
    return this.#store.get(key);
  }

  /** Every cached object. */
  list(): T[] {
    return this.#store.list();
  }

  /** How many objects are cached. */
  get size(): number {
    return this.#store.size;
  }

  /**
   * Adds a secondary index, kept up to date on every event and re-list; objects already
   * cached are filed at once. Adding a name twice keeps the first.
   */
  addIndex(name: string, fn: IndexFunction<T>): this {
    this.#store.addIndex(name, fn);
    return this;
  }

  hasIndex(name: string): boolean {
    return this.#store.hasIndex(name);
  }

  /** The cached objects filed under `value` in index `name`. */
  byIndex(name: string, value: string): T[] {
    return this.#store.byIndex(name, value);
  }

  /** One cached object filed under `value`, or undefined. */
  firstByIndex(name: string, value: string): T | undefined {
    return this.#store.firstByIndex(name, value);
  }

  /** The first cached object filed under `value` that `accept` takes (it stops there). */
  findByIndex(name: string, value: string, accept: (object: T) => boolean): T | undefined {
    return this.#store.findByIndex(name, value, accept);
  }

  /** Files every cached object again under index `name` (its function's inputs changed). */
  reindex(name: string): void {
    this.#store.reindex(name);
  }

  /** How many cached objects are filed under `value`. */
  countByIndex(name: string, value: string): number {
    return this.#store.countByIndex(name, value);
  }

  /** The values of index `name` with at least one object. */
  indexValues(name: string): string[] {
    return this.#store.indexValues(name);
  }

  /** Resolves once the first list is in the cache. */
  whenSynced(): Promise<void> {
    return this.#synced;
  }

  /** Starts listing and watching; resolves when the first list is cached. */
  start(): Promise<void> {
    void this.#run();
    return this.#synced;
  }

  stop(): void {
    this.#stopped = true;
    this.#abort?.abort();
  }

  #emit(event: 'add' | 'update' | 'delete', object: T, old?: T): void {
    for (const handler of this.#events.listeners(event) as Handler<T>[]) {
      try {
        handler(object, old);
      } catch (error) {
        this.#options.onError?.(error);
      }
    }
  }

  #slim(object: T): T {
    return this.#options.transform ? this.#options.transform(object) : object;
  }

  #watchPath(): string {
    const { apiVersion, plural } = this.#options.resource;
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const ns = this.#options.namespace ? `/namespaces/${this.#options.namespace}` : '';
    return `${base}${ns}/${plural}`;
  }

  async #list(): Promise<void> {
    const { resource, namespace, labelSelector, fieldSelector } = this.#options;
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      this.#client ??= k8s.KubernetesObjectApi.makeApiClient(this.#kc);
      const page = await this.#client.list<T>(
        resource.apiVersion,
        resource.kind,
        namespace,
        undefined,
        undefined,
        undefined,
        fieldSelector,
        labelSelector,
        500,
        continueToken,
      );
      // Slimmed page by page: a re-list of 10,000 Nodes never holds them all whole at once.
      for (const item of page.items) {
        item.apiVersion ??= resource.apiVersion;
        item.kind ??= resource.kind;
        fresh.set(objectKey(item), this.#slim(item));
      }
      continueToken = page.metadata?._continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? '';
    } while (continueToken);
    this.listCount++;
    this.#replaceSlimmed(fresh);
    this.#resourceVersion = resourceVersion;
  }

  /**
   * Replaces the cache with `objects` (a list's items, before slimming) and tells handlers
   * what changed while nobody was watching. Tests feed it directly.
   */
  replace(objects: Iterable<T>): void {
    const fresh = new Map<string, T>();
    for (const object of objects) fresh.set(objectKey(object), this.#slim(object));
    this.#replaceSlimmed(fresh);
  }

  #replaceSlimmed(fresh: Map<string, T>): void {
    const old = new Map(this.#store.entries());
    this.#store.replace(fresh);
    for (const [key, object] of fresh) {
      const previous = old.get(key);
      if (!previous) this.#emit('add', object);
      else if (resourceVersionOf(previous) !== resourceVersionOf(object))
        this.#emit('update', object, previous);
    }
    for (const [key, object] of old) if (!fresh.has(key)) this.#emit('delete', object);
  }

  /**
   * Applies one watch event (ADDED, MODIFIED or DELETED) to the cache and tells handlers.
   * The watch uses it; tests feed it directly.
   */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void {
    const key = objectKey(object);
    if (type === 'DELETED') {
      const previous = this.#store.delete(key);
      this.#emit('delete', previous ?? this.#slim(object));
      return;
    }
    const previous = this.#store.get(key);
    const slim = this.#slim(object);
    this.#store.set(key, slim);
    if (previous) this.#emit('update', slim, previous);
    else this.#emit('add', slim);
  }

  /** Watches from the current resourceVersion until the watch ends; resolves with why. */
  #watch(): Promise<WatchOutcome> {
    return new Promise((resolve) => {
      let outcome: WatchOutcome = 'ended';
      const stallMs = this.#options.stallTimeoutMs ?? 5 * 60_000;
      this.#lastEventAt = Date.now();
      const watchdog = setInterval(
        () => {
          if (Date.now() - this.#lastEventAt > stallMs) {
            outcome = 'stalled';
            this.#abort?.abort();
          }
        },
        Math.min(stallMs, 5000),
      );
      watchdog.unref();
      const finish = (error?: unknown) => {
        clearInterval(watchdog);
        // An idle watch times out on the client side: that is a normal end, resumed at once.
        if (error && outcome === 'ended' && !isTimeout(error) && !this.#stopped) {
          outcome = isGone(error) ? 'gone' : { error };
        }
        resolve(outcome);
      };
      quietWatch(this.#kc)
        .watch(
          this.#watchPath(),
          {
            resourceVersion: this.#resourceVersion,
            allowWatchBookmarks: true,
            labelSelector: this.#options.labelSelector,
            fieldSelector: this.#options.fieldSelector,
            timeoutSeconds: watchTimeoutSeconds,
          },
          (type: string, object: T) => {
            this.#lastEventAt = Date.now();
            if (type === 'ERROR') {
              const status = object as unknown as k8s.V1Status;
              if (isGoneStatus(status.code)) outcome = 'gone';
              this.#abort?.abort();
              return;
            }
            const rv = resourceVersionOf(object);
            if (rv) this.#resourceVersion = rv;
            if (type === 'BOOKMARK') return;
            this.apply(type as 'ADDED' | 'MODIFIED' | 'DELETED', object);
          },
          finish,
        )
        .then(
          (abort) => {
            this.#abort = abort;
            if (this.#stopped) abort.abort();
          },
          (error: unknown) => finish(error),
        );
    });
  }

  async #run(): Promise<void> {
    let failures = 0;
    let needList = true;
    while (!this.#stopped) {
      try {
        if (needList) {
          await this.#list();
          needList = false;
          this.#resolveSynced();
        }
        const outcome = await this.#watch();
        if (typeof outcome === 'object') throw outcome.error;
        failures = 0;
        if (outcome !== 'ended') needList = true;
      } catch (error) {
        if (this.#stopped) break;
        failures++;
        this.#options.onError?.(error);
        // After errors, resume from a fresh list: events may have been missed.
        needList = true;
        const max = this.#options.maxBackoffMs ?? 30_000;
        const delay = Math.min(max, 100 * 2 ** Math.min(failures, 10));
        await sleep(delay * (0.5 + Math.random() * 0.5));
      }
    }
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}
