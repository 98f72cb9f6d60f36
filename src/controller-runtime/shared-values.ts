/**
 * One shared copy of each repeated value in a cache. JSON.parse gives every object its own copy
 * of each string longer than a few characters and of each nested object: 10,000 Nodes hold
 * 10,000 copies of "kubelet is posting ready status", of their Windows build and kubelet
 * version, of the same five conditions. An informer's transform passes such values through a
 * SharedValues so the cached objects share one copy; the parsed originals are garbage as soon
 * as the event is handled.
 *
 * - string(): the shared copy of a string.
 * - frozen(): the shared copy of a plain JSON value (object or array), frozen, so that no
 *   holder can change what the others see. Equal by JSON text, so property order counts; build
 *   the value the same way each time.
 *
 * Bounded: each kind remembers at most `capacity` values and forgets them all when full (a
 * value nothing else repeats, a uid or a boot id, must not pin memory). What it forgot stays
 * shared by the objects that already hold it; the next copy seen becomes the shared one.
 *
 * @example
 * const shared = new SharedValues();
 * shared.string(JSON.parse('"kubelet is posting ready status"')); // the first copy, kept
 * shared.frozen([{ type: 'InternalIP', address: '127.0.0.1' }]); // one frozen array for all
 * @package
 */
export class SharedValues {
  readonly #capacity: number;
  #strings = new Map<string, string>();
  #values = new Map<string, unknown>();

  /** `capacity`: values of each kind remembered at most (default 4,096). */
  constructor(capacity = 4096) {
    this.#capacity = capacity;
  }

  /** The shared copy of `value` (undefined stays undefined). */
  string<T extends string | undefined>(value: T): T {
    if (value === undefined) return value;
    const known = this.#strings.get(value);
    if (known !== undefined) return known as T;
    if (this.#strings.size >= this.#capacity) this.#strings = new Map();
    this.#strings.set(value, value);
    return value;
  }

  /**
   * The shared, deeply frozen copy of `value`, a plain JSON value whose strings already went
   * through string() (undefined stays undefined).
   */
  frozen<T extends object | undefined>(value: T): T {
    if (value === undefined) return value;
    const key = JSON.stringify(value);
    const known = this.#values.get(key);
    if (known !== undefined) return known as T;
    if (this.#values.size >= this.#capacity) this.#values = new Map();
    deepFreeze(value);
    this.#values.set(key, value);
    return value;
  }

  /** Values remembered now, of both kinds. */
  get size(): number {
    return this.#strings.size + this.#values.size;
  }
}

function deepFreeze(value: object): void {
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === 'object') deepFreeze(inner);
  }
  Object.freeze(value);
}
