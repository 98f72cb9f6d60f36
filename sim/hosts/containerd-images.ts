/**
 * containerd's image store on a simulated host (the k8s.io namespace), as the agent's pre-pull
 * meets it through HostOS.hasImage/pullImage:
 * - the registry side is a table of the images that exist (normalised reference → compressed
 *   bytes); a reference not in it fails as containerd's client fails on a registry's 404:
 *   `failed to resolve reference "<ref>": <ref>: not found` (containerd client/pull.go fetch,
 *   wrapping core/remotes/docker/resolver.go Resolve's `%s: %w` of errdefs.ErrNotFound);
 * - a pull takes time proportional to the image's size: its compressed bytes at
 *   `pullBytesPerSecond` (the fetch: containerd downloads each layer blob, then unpacks it into
 *   a snapshot, and reports the image only when every layer is unpacked — client/pull.go Pull
 *   with WithPullUnpack, as the CRI and ctr do), plus the unpack at `unpackBytesPerSecond`
 *   over the same bytes. No image is in the store before its pull ends; a pull stopped part
 *   way leaves none;
 * - the store lives on disk (C:\ProgramData\containerd): it outlives reboots and upgrades.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface SimContainerdImagesOptions {
  /** The images the registry has: normalised reference → compressed bytes. */
  registry?: Record<string, number>;
  /** The link's rate for layer downloads, bytes per second. Default 100 MB/s. */
  pullBytesPerSecond?: number;
  /** How fast layers are unpacked, bytes (compressed) per second. Default 200 MB/s. */
  unpackBytesPerSecond?: number;
}

export class SimContainerdImages {
  readonly #registry: Map<string, number>;
  readonly #images = new Set<string>();
  readonly pullBytesPerSecond: number;
  readonly unpackBytesPerSecond: number;

  constructor(options: SimContainerdImagesOptions = {}) {
    this.#registry = new Map(Object.entries(options.registry ?? {}));
    this.pullBytesPerSecond = rate(options.pullBytesPerSecond ?? 100e6, 'pullBytesPerSecond');
    this.unpackBytesPerSecond = rate(options.unpackBytesPerSecond ?? 200e6, 'unpackBytesPerSecond');
  }

  /** Puts an image in the registry (or changes its size). */
  publish(reference: string, bytes: number): void {
    this.#registry.set(reference, bytes);
  }

  has(reference: string): boolean {
    return this.#images.has(reference);
  }

  /** Removes an image from the store (crictl rmi). */
  remove(reference: string): void {
    this.#images.delete(reference);
  }

  /** How long a pull of `reference` takes, in ms; undefined when the registry lacks it. */
  pullMs(reference: string): number | undefined {
    const bytes = this.#registry.get(reference);
    if (bytes === undefined) return undefined;
    return (bytes / this.pullBytesPerSecond + bytes / this.unpackBytesPerSecond) * 1000;
  }

  /** Fetches and unpacks the image (see the header); rejects as containerd does. */
  async pull(reference: string, signal: AbortSignal): Promise<void> {
    const ms = this.pullMs(reference);
    if (ms === undefined)
      throw new Error(`failed to resolve reference "${reference}": ${reference}: not found`);
    await sleep(ms, undefined, { signal });
    this.#images.add(reference);
  }
}

function rate(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0)
    throw new RangeError(`Cannot use ${name} ${value}; give bytes per second above 0`);
  return value;
}
