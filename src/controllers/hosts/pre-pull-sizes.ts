/**
 * The compressed sizes of a pool's spec.prePull images for one Windows build, so that the
 * agent's disk check (src/agent/pre-pull.ts) has something to count: each image is looked up
 * through the image resolver the webhook and `migrate plan` use (mirrors, the address policy,
 * the lookup budget), the Windows variant containerd would pull on that build is chosen
 * (chooseWindowsVariant), and its layers' compressed sizes are summed.
 *
 * Answers are cached per image and build (a pool's list × the builds of its hosts): a size for
 * sizeTtlMs, a failure for failureTtlMs; a host's pass asks the registry only when the cache
 * has no answer. A failure leaves the image's size out (the agent pulls it without the disk
 * check), or keeps the size known before (a Node's list changed by a registry's blip would
 * start its agent's pulls again), and is logged once per lookup; it never blocks a node.
 */
import type * as k8s from '@kubernetes/client-node';
import type { ImagePlatform, ImagePlatformResolver } from '../../images/image-platforms.ts';
import { formatImageReference, parseImageReference } from '../../images/image-reference.ts';
import type { Logger } from '../../log/logger.ts';
import { windowsBuildLabel } from '../../windows/builds.ts';
import {
  compareWindowsVersions,
  isCompatibleBuild,
  parseWindowsVersion,
} from '../../windows/compatibility.ts';

/**
 * The Windows variant containerd pulls for a host of `build` among an image's platforms:
 * windows/amd64 entries the build runs under process isolation (isCompatibleBuild), the one of
 * the host's own major.minor.build first (containerd's Windows matcher, platforms'
 * defaults_windows.go, orders an exact build match before other runnable entries), then the
 * newest; undefined when none runs there. Throws for a malformed `build`.
 * @package
 */
export function chooseWindowsVariant(
  platforms: readonly ImagePlatform[],
  build: string,
): ImagePlatform | undefined {
  const host = parseWindowsVersion(build, 'host Windows build');
  const runnable = platforms.filter((p) => {
    if (p.os !== 'windows' || p.architecture !== 'amd64') return false;
    try {
      return isCompatibleBuild(build, p.osVersion ?? '');
    } catch {
      return false; // A malformed os.version runs nowhere.
    }
  });
  const rank = (p: ImagePlatform) => {
    if (!p.osVersion) return { same: false, version: undefined };
    const v = parseWindowsVersion(p.osVersion);
    return {
      same: v.major === host.major && v.minor === host.minor && v.build === host.build,
      version: v,
    };
  };
  let best:
    | { platform: ImagePlatform; same: boolean; version: ReturnType<typeof rank>['version'] }
    | undefined;
  for (const platform of runnable) {
    const r = rank(platform);
    const better =
      !best ||
      (r.same && !best.same) ||
      (r.same === best.same &&
        r.version !== undefined &&
        (best.version === undefined || compareWindowsVersions(r.version, best.version) > 0));
    if (better) best = { platform, ...r };
  }
  return best?.platform;
}

/** The Windows build of a Node: its node.kubernetes.io/windows-build label, else the kernel's. */
export function nodeWindowsBuild(node: k8s.V1Node): string | undefined {
  const label = node.metadata?.labels?.[windowsBuildLabel];
  if (label) return label;
  const kernel = node.status?.nodeInfo?.kernelVersion;
  const match = kernel ? /^(\d+\.\d+\.\d+)/.exec(kernel) : null;
  return match?.[1];
}

/** Looks up sizes (see the header). */
export interface PrePullSizes {
  /** Compressed bytes by normalised reference, for the images whose size is known on `build`. */
  sizes(images: readonly string[], build: string | undefined): Promise<Map<string, number>>;
}

export interface PrePullSizesOptions {
  /** The shared resolver (read at each lookup: the configuration may have changed it). */
  resolver: () => ImagePlatformResolver;
  log: Logger;
  /** How long a size is kept (default 10 min; a tag moves). */
  sizeTtlMs?: number;
  /** How long a failure is kept before the registry is asked again (default 60 s). */
  failureTtlMs?: number;
  /** Most entries kept (default 1024). */
  maxEntries?: number;
  now?: () => number;
}

type SizeAnswer = { bytes: number } | { failure: string };

/** A PrePullSizes with its cache (one per operator). */
export function createPrePullSizes(options: PrePullSizesOptions): PrePullSizes {
  const now = options.now ?? Date.now;
  const sizeTtlMs = options.sizeTtlMs ?? 10 * 60_000;
  const failureTtlMs = options.failureTtlMs ?? 60_000;
  const maxEntries = options.maxEntries ?? 1024;
  const cache = new Map<string, { answer: SizeAnswer; until: number }>();
  const inFlight = new Map<string, Promise<SizeAnswer>>();

  const lookup = async (reference: string, build: string): Promise<SizeAnswer> => {
    const resolver = options.resolver();
    const platforms = await resolver.resolveImagePlatforms(reference);
    if (platforms.status !== 'resolved') return { failure: platforms.message };
    let variant: ImagePlatform | undefined;
    try {
      variant = chooseWindowsVariant(platforms.platforms, build);
    } catch (error) {
      return { failure: (error as Error).message };
    }
    if (!variant) return { failure: `it has no Windows variant that build ${build} runs` };
    if (!variant.manifestDigest) return { failure: 'its registry named no manifest digest' };
    const layers = await resolver.manifestLayerBytes(reference, variant.manifestDigest);
    if (layers.status !== 'resolved') return { failure: layers.message };
    // What the agent parses strictly (parsePrePullCommand): a whole number it can count.
    if (!Number.isSafeInteger(layers.bytes) || layers.bytes < 0)
      return { failure: `its registry declares ${layers.bytes} bytes of layers` };
    return { bytes: layers.bytes };
  };

  const answer = (reference: string, build: string): Promise<SizeAnswer> => {
    const key = `${reference}|${build}`;
    const cached = cache.get(key);
    if (cached && cached.until > now()) return Promise.resolve(cached.answer);
    let shared = inFlight.get(key);
    if (!shared) {
      shared = lookup(reference, build)
        .catch((error: unknown): SizeAnswer => ({ failure: (error as Error).message }))
        .then((result) => {
          const known = cache.get(key)?.answer;
          if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
          cache.delete(key);
          if ('bytes' in result) {
            cache.set(key, { answer: result, until: now() + sizeTtlMs });
            return result;
          }
          // A size known before stays (asked again after the failure TTL): a registry that
          // stops answering for a while must not change every Node's list, which would start
          // their agents' pulls again.
          const kept = known && 'bytes' in known ? known : result;
          cache.set(key, { answer: kept, until: now() + failureTtlMs });
          options.log.warn(
            kept === result
              ? 'cannot look up the size of a pre-pull image; its node pulls it without the disk check'
              : 'cannot look up the size of a pre-pull image again; the size known before is kept',
            { image: reference, build, error: result.failure },
          );
          return kept;
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, shared);
    }
    return shared;
  };

  return {
    async sizes(images, build) {
      const sizes = new Map<string, number>();
      if (!build) return sizes;
      const references = images.map((image) => formatImageReference(parseImageReference(image)));
      const answers = await Promise.all(references.map((r) => answer(r, build)));
      answers.forEach((a, i) => {
        if ('bytes' in a) sizes.set(references[i]!, a.bytes);
      });
      return sizes;
    },
  };
}
