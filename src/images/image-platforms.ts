/**
 * What the admission webhook asks about an image: which platforms (os, architecture,
 * os.version) does it offer? `createImagePlatformResolver` answers from a bounded TTL'd cache or
 * from the registry (through its mirrors), within a time budget, with the pod's pull secrets.
 * It never throws for registry trouble: a lookup that cannot finish yields
 * `{ status: 'unknown', reason }`, and the webhook decides whether to warn or reject.
 *
 * @example
 * const resolver = createImagePlatformResolver({ mirrors: { 'mcr.microsoft.com': [{ endpoint: 'https://mirror.example.com' }] } });
 * const result = await resolver.resolveImagePlatforms('mcr.microsoft.com/windows/servercore:ltsc2022', { pullSecrets }, AbortSignal.timeout(2000));
 * if (result.status === 'resolved') windowsOsVersions(result.platforms); // ['10.0.20348.2582']
 */
import { createHash } from 'node:crypto';
import { createAddressPolicy } from './address-policy.ts';
import { type DockerConfigSource, findRegistryCredentials } from './docker-config.ts';
import {
  checkDigest,
  formatImageReference,
  type ImageReference,
  parseImageReference,
} from './image-reference.ts';
import {
  type ImagePlatform,
  type IndexEntry,
  isIndexType,
  isManifestType,
  parseImageConfig,
  parseManifest,
} from './manifest-platforms.ts';
import { RegistryClient, type RepositoryAccess } from './registry-client.ts';
import {
  type LookupFailureReason,
  lookupErrorFrom,
  registryLookupError,
} from './registry-lookup-error.ts';
import {
  type CompiledRouting,
  compileRegistryRouting,
  configuredOrigins,
  type LookupTarget,
  lookupTargets,
  type RegistryRouting,
} from './registry-mirrors.ts';
import { type CacheStats, TtlLruCache } from './ttl-lru-cache.ts';

export type { ImagePlatform } from './manifest-platforms.ts';
export type { LookupFailureReason } from './registry-lookup-error.ts';

/** The platforms of an image, as its registry lists them. */
export interface ResolvedImagePlatforms {
  status: 'resolved';
  /** The image as the pod wrote it. */
  image: string;
  /** Normalised: "mcr.microsoft.com/windows/servercore:ltsc2022". */
  reference: string;
  /** Digest of the top-level manifest (the index for multi-platform images). */
  digest: string;
  mediaType: string;
  /** One per runnable index entry (attestations skipped), or the one of a single manifest. */
  platforms: ImagePlatform[];
  /** "cache" when answered from the cache. */
  source: 'registry' | 'cache';
  /** The endpoint that answered, e.g. "http://127.0.0.1:5000" for a mirror. */
  endpoint: string;
  /** The repository at that endpoint (with a mirror's path prefix). */
  repository: string;
}

/** One endpoint tried and why it gave no answer. */
export interface LookupAttempt {
  endpoint: string;
  repository: string;
  reason: LookupFailureReason;
  message: string;
}

/** No answer: the image may still run; the webhook warns (or rejects under `enforce`). */
export interface UnknownImagePlatforms {
  status: 'unknown';
  image: string;
  reason: LookupFailureReason;
  /** Says what failed for each endpoint tried. */
  message: string;
  attempts: LookupAttempt[];
  source: 'registry' | 'cache';
}

/** @package */
export type ImagePlatformsResult = ResolvedImagePlatforms | UnknownImagePlatforms;

/** Plain callbacks for metrics (see `prometheusLookupObserver`). */
export interface ImageLookupObserver {
  /** Once per `resolveImagePlatforms` call. `outcome` is "resolved" or the failure reason. */
  lookup?(event: {
    outcome: 'resolved' | LookupFailureReason;
    source: 'registry' | 'cache';
    durationMs: number;
  }): void;
  /** Once per cache consultation. */
  cache?(result: 'hit' | 'miss'): void;
}

/** @package */
export interface ImagePlatformResolverOptions extends RegistryRouting {
  /** Docker configs tried after the pod's pull secrets, e.g. the operator's own for mirrors. */
  defaultDockerConfigs?: readonly DockerConfigSource[];
  /**
   * CIDRs never contacted besides loopback, private and link-local ranges: the cluster's service
   * and pod CIDRs. Configured mirrors and registries are contacted wherever they are.
   */
  blockedCidrs?: readonly string[];
  /** Time budget of one registry lookup, across all endpoints (default 2000 ms). */
  lookupTimeoutMs?: number;
  cache?: {
    /** Default 2000. */
    maxEntries?: number;
    /** How long a tag lookup is kept (default 10 min); tags move. */
    tagTtlMs?: number;
    /** How long a digest lookup is kept (default 24 h); digests never change. */
    digestTtlMs?: number;
    /** How long a failed lookup is kept (default 15 s), so a dead registry costs one budget per interval. */
    failureTtlMs?: number;
  };
  observer?: ImageLookupObserver;
  userAgent?: string;
  /** Most child manifests fetched for index entries that lack a platform (default 16). */
  maxChildManifests?: number;
  now?: () => number;
}

export interface ResolveContext {
  /** The decoded `.dockerconfigjson` of the pod's imagePullSecrets and its service account's. */
  pullSecrets?: readonly DockerConfigSource[];
}

export interface ImagePlatformResolver {
  /**
   * The platforms of `image`. Resolves within the lookup budget or when `signal` aborts,
   * whichever is first; never rejects.
   */
  resolveImagePlatforms(
    image: string,
    context?: ResolveContext,
    signal?: AbortSignal,
  ): Promise<ImagePlatformsResult>;
  /**
   * The compressed size of one single-platform manifest of `image` (`manifestDigest`, a resolved
   * platform's): the sum of its layers' sizes as the manifest declares them, what a pull
   * downloads. Read through the same endpoints (mirrors, the address policy), credentials and
   * time budget as the platforms, cached by digest (the content never changes; a failure for
   * the failure TTL). Never rejects.
   */
  manifestLayerBytes(
    image: string,
    manifestDigest: string,
    context?: ResolveContext,
    signal?: AbortSignal,
  ): Promise<LayerBytesResult>;
  cacheStats(): CacheStats;
  /** Closes pooled connections; pending lookups end with "unreachable" or "aborted". */
  close(): void;
}

/** What manifestLayerBytes found: the layers' compressed bytes, or why it could not tell. */
export type LayerBytesResult =
  | { status: 'resolved'; bytes: number }
  | { status: 'unknown'; message: string };

type LookupOutcome =
  | Omit<ResolvedImagePlatforms, 'image' | 'source'>
  | Omit<UnknownImagePlatforms, 'image' | 'source'>;

/**
 * The os.versions of the Windows platforms in `platforms` for `architecture` (default amd64),
 * deduplicated; "" stands for an entry without os.version, which runs on any Windows host.
 * Feed the result of each image to `compatibleNodeBuilds` (src/windows/compatibility.ts).
 */
export function windowsOsVersions(
  platforms: readonly ImagePlatform[],
  architecture = 'amd64',
): string[] {
  const versions = platforms
    .filter((p) => p.os === 'windows' && p.architecture === architecture)
    .map((p) => p.osVersion ?? '');
  return [...new Set(versions)];
}

/** Everything one resolver keeps between calls: its settings, client, cache and counters. */
interface ResolverState {
  routing: CompiledRouting;
  now: () => number;
  client: RegistryClient;
  lookupTimeoutMs: number;
  tagTtlMs: number;
  digestTtlMs: number;
  failureTtlMs: number;
  maxChildManifests: number;
  cache: TtlLruCache<string, LookupOutcome>;
  /** manifestLayerBytes' answers by registry/repository@digest (and pull secrets, for failures). */
  sizes: TtlLruCache<string, LayerBytesResult>;
  inFlight: Map<string, Promise<LookupOutcome>>;
  observer: ImageLookupObserver;
  defaults: readonly DockerConfigSource[];
  counts: { hits: number; misses: number };
  // Admission asks about the same few images over and over: keep their parsed references and
  // cache keys (bounded) instead of parsing each time.
  references: Map<string, ImageReference>;
  keys: WeakMap<ImageReference, string>;
}

/** Creates a resolver; share one per process so its cache, tokens and connections are reused. */
export function createImagePlatformResolver(
  options: ImagePlatformResolverOptions = {},
): ImagePlatformResolver {
  const state = resolverState(options);
  return {
    resolveImagePlatforms: (image, context, signal) =>
      resolveImagePlatformsWith(state, image, context, signal),
    manifestLayerBytes: (image, digest, context, signal) =>
      layerBytesWith(state, image, digest, context, signal),
    // One consultation counts once, though failures and platforms have separate keys.
    cacheStats: () => ({ ...state.cache.stats(), ...state.counts }),
    close: () => state.client.close(),
  };
}

/** The resolver's state from its options, with every default filled in. */
function resolverState(options: ImagePlatformResolverOptions): ResolverState {
  const routing = compileRegistryRouting(options);
  const now = options.now ?? Date.now;
  const client = new RegistryClient({
    ...(options.userAgent ? { userAgent: options.userAgent } : {}),
    now,
    addressPolicy: createAddressPolicy({
      trustedOrigins: configuredOrigins(routing),
      blockedCidrs: options.blockedCidrs ?? [],
    }),
  });
  return {
    routing,
    now,
    client,
    lookupTimeoutMs: options.lookupTimeoutMs ?? 2000,
    tagTtlMs: options.cache?.tagTtlMs ?? 10 * 60_000,
    digestTtlMs: options.cache?.digestTtlMs ?? 24 * 60 * 60_000,
    failureTtlMs: options.cache?.failureTtlMs ?? 15_000,
    maxChildManifests: options.maxChildManifests ?? 16,
    cache: new TtlLruCache<string, LookupOutcome>({
      maxEntries: options.cache?.maxEntries ?? 2000,
      now,
    }),
    sizes: new TtlLruCache<string, LayerBytesResult>({
      maxEntries: options.cache?.maxEntries ?? 2000,
      now,
    }),
    inFlight: new Map(),
    observer: options.observer ?? {},
    defaults: options.defaultDockerConfigs ?? [],
    counts: { hits: 0, misses: 0 },
    references: new Map(),
    keys: new WeakMap(),
  };
}

/** The platforms behind one index entry (a child manifest or a nested index). */
async function platformsOf(
  state: ResolverState,
  access: RepositoryAccess,
  entryDigest: string,
  mediaType: string,
  budget: { children: number },
  depth: number,
): Promise<ImagePlatform[]> {
  if (budget.children <= 0) {
    throw registryLookupError(
      'invalid-manifest',
      `Index of "${access.repository}" needs more than ${state.maxChildManifests} child manifests read; entries should declare their platform`,
    );
  }
  budget.children--;
  const fetched = await state.client.fetchManifest(access, entryDigest);
  const manifest = parseManifest(
    fetched.body,
    fetched.contentType ?? mediaType,
    `manifest "${entryDigest}"`,
  );
  if (manifest.kind === 'index')
    return platformsOfIndex(state, access, manifest.entries, budget, depth + 1);
  return [
    await configPlatform(state, access, manifest.config.digest, manifest.config.size, entryDigest),
  ];
}

/** The platform an image config declares (at most 4 MiB read). */
async function configPlatform(
  state: ResolverState,
  access: RepositoryAccess,
  digest: string,
  size: number,
  manifestDigest: string,
): Promise<ImagePlatform> {
  if (size > 4 * 1024 * 1024) {
    throw registryLookupError(
      'invalid-manifest',
      `Config "${digest}" of "${access.repository}" declares ${size} bytes, more than 4 MiB`,
    );
  }
  const blob = await state.client.fetchBlob(access, digest);
  return {
    ...parseImageConfig(blob.body, `image config "${digest}" of "${access.repository}"`),
    manifestDigest,
  };
}

/** The runnable platforms of an index's entries (attestations and artifacts skipped). */
async function platformsOfIndex(
  state: ResolverState,
  access: RepositoryAccess,
  entries: readonly IndexEntry[],
  budget: { children: number },
  depth: number,
): Promise<ImagePlatform[]> {
  if (depth > 2) {
    throw registryLookupError(
      'invalid-manifest',
      `Indexes of "${access.repository}" nest more than two deep`,
    );
  }
  const lists = await Promise.all(
    entries
      .filter((entry) => !entry.attestation)
      .map(async (entry) => {
        if (entry.platform) return [entry.platform];
        if (isIndexType(entry.mediaType) || isManifestType(entry.mediaType)) {
          return platformsOf(state, access, entry.digest, entry.mediaType, budget, depth);
        }
        return []; // Artifacts (signatures, SBOMs) are not runnable.
      }),
  );
  return lists.flat();
}

/** One lookup of `ref` at one endpoint (the registry or a mirror); throws what went wrong. */
async function lookupAt(
  state: ResolverState,
  ref: ImageReference,
  target: LookupTarget,
  credentials: ReturnType<typeof findRegistryCredentials>,
  signal: AbortSignal,
): Promise<LookupOutcome> {
  const access: RepositoryAccess = {
    endpoint: target.endpoint,
    repository: target.repository,
    ...(credentials ? { credentials: credentials.credentials } : {}),
    signal,
  };
  const fetched = await state.client.fetchManifest(access, ref.digest ?? ref.tag ?? 'latest');
  const what = `manifest "${target.repository}:${ref.digest ?? ref.tag}" at ${target.endpoint.origin}`;
  const manifest = parseManifest(fetched.body, fetched.contentType, what);
  const budget = { children: state.maxChildManifests };
  const platforms =
    manifest.kind === 'index'
      ? await platformsOfIndex(state, access, manifest.entries, budget, 1)
      : [
          await configPlatform(
            state,
            access,
            manifest.config.digest,
            manifest.config.size,
            fetched.digest,
          ),
        ];
  return {
    status: 'resolved',
    reference: formatImageReference(ref),
    digest: fetched.digest,
    mediaType: manifest.mediaType,
    platforms,
    endpoint: target.endpoint.origin,
    repository: target.repository,
  };
}

/** Tries each endpoint of `ref` in turn within the lookup budget; never throws. */
async function lookup(
  state: ResolverState,
  ref: ImageReference,
  pullSecrets: readonly DockerConfigSource[],
): Promise<LookupOutcome> {
  const signal = AbortSignal.timeout(state.lookupTimeoutMs);
  const attempts: LookupAttempt[] = [];
  const configs = [...pullSecrets, ...state.defaults];
  for (const target of lookupTargets(ref, state.routing)) {
    const credentials = findRegistryCredentials(target.credentialHost, target.repository, configs);
    try {
      return await lookupAt(state, ref, target, credentials, signal);
    } catch (error) {
      const failure = lookupErrorFrom(error, `registry "${target.endpoint.origin}"`, signal);
      attempts.push({
        endpoint: target.endpoint.origin,
        repository: target.repository,
        reason: failure.details.reason,
        message: failure.message,
      });
      if (signal.aborted) break;
    }
  }
  const last = attempts.at(-1)!;
  return {
    status: 'unknown',
    reason: last.reason,
    message: `Cannot read the platforms of "${formatImageReference(ref)}": ${attempts.map((a) => a.message).join('; ')}`,
    attempts,
  };
}

/** The resolver's `manifestLayerBytes`: the cache, else each endpoint in turn. */
async function layerBytesWith(
  state: ResolverState,
  image: string,
  manifestDigest: string,
  context: ResolveContext = {},
  signal?: AbortSignal,
): Promise<LayerBytesResult> {
  let ref: ImageReference;
  try {
    ref = parsedReference(state, image);
    checkDigest(manifestDigest);
  } catch (error) {
    return { status: 'unknown', message: (error as Error).message };
  }
  const pullSecrets = context.pullSecrets ?? [];
  const key = `${ref.registry}/${ref.repository}@${manifestDigest}`;
  const failureKey = `${key}|${secretsFingerprint(pullSecrets)}`;
  const cached = state.sizes.get(key) ?? state.sizes.get(failureKey);
  if (cached) return cached;
  const budget = AbortSignal.timeout(state.lookupTimeoutMs);
  const stop = signal ? AbortSignal.any([signal, budget]) : budget;
  const configs = [...pullSecrets, ...state.defaults];
  const failures: string[] = [];
  for (const target of lookupTargets(ref, state.routing)) {
    const credentials = findRegistryCredentials(target.credentialHost, target.repository, configs);
    const access: RepositoryAccess = {
      endpoint: target.endpoint,
      repository: target.repository,
      ...(credentials ? { credentials: credentials.credentials } : {}),
      signal: stop,
    };
    try {
      const fetched = await state.client.fetchManifest(access, manifestDigest);
      const what = `manifest "${target.repository}@${manifestDigest}" at ${target.endpoint.origin}`;
      const manifest = parseManifest(fetched.body, fetched.contentType, what);
      if (manifest.kind !== 'image')
        throw registryLookupError('invalid-manifest', `${what} is an index, not an image`);
      // Each size is a safe integer (parseDescriptor); their sum is kept one too: a registry
      // that declares more than can be counted gets the most that can.
      const bytes = Math.min(
        Number.MAX_SAFE_INTEGER,
        manifest.layers.reduce((sum, layer) => sum + layer.size, 0),
      );
      const result: LayerBytesResult = { status: 'resolved', bytes };
      state.sizes.set(key, result, state.digestTtlMs);
      return result;
    } catch (error) {
      failures.push(lookupErrorFrom(error, `registry "${target.endpoint.origin}"`, stop).message);
      if (stop.aborted) break;
    }
  }
  const result: LayerBytesResult = {
    status: 'unknown',
    message: `Cannot read the layers of "${key}": ${failures.join('; ') || 'no registry to ask'}`,
  };
  if (!signal?.aborted) state.sizes.set(failureKey, result, state.failureTtlMs);
  return result;
}

/** A short hash of the pull secrets, for the failure cache key ("none" without secrets). */
function secretsFingerprint(pullSecrets: readonly DockerConfigSource[]): string {
  if (pullSecrets.length === 0) return 'none';
  return createHash('sha256')
    .update(JSON.stringify(pullSecrets.map((s) => s.config)))
    .digest('hex')
    .slice(0, 32);
}

/** Waits for `promise` (which never rejects) unless `signal` aborts first. */
function settledOrAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
): Promise<{ done: true; value: T } | { done: false }> {
  const done = promise.then((value) => ({ done: true as const, value }));
  if (!signal) return done;
  if (signal.aborted) return Promise.resolve({ done: false });
  return new Promise((resolve) => {
    const onAbort = () => resolve({ done: false });
    signal.addEventListener('abort', onAbort, { once: true });
    void done.then((result) => {
      signal.removeEventListener('abort', onAbort);
      resolve(result);
    });
  });
}

/** Calls an observer callback, swallowing what it throws. */
function notify(call: () => void): void {
  try {
    call();
  } catch {
    // A broken metrics callback must not break admission.
  }
}

/** `image` parsed, from the bounded memo when seen before. */
function parsedReference(state: ResolverState, image: string): ImageReference {
  let ref = state.references.get(image);
  if (!ref) {
    ref = parseImageReference(image);
    if (state.references.size >= 4096) state.references.clear();
    state.references.set(image, ref);
  }
  return ref;
}

/** The cache key of `ref` (memoised per parsed reference). */
function cacheKeyOf(state: ResolverState, ref: ImageReference): string {
  let key = state.keys.get(ref);
  if (!key) {
    // A digest pins the content whatever the tag says.
    key = ref.digest
      ? `${ref.registry}/${ref.repository}@${ref.digest}`
      : formatImageReference(ref);
    state.keys.set(ref, key);
  }
  return key;
}

/** Reports one finished `resolveImagePlatforms` call to the observer and returns its result. */
function finishLookup(
  state: ResolverState,
  started: number,
  result: ImagePlatformsResult,
): ImagePlatformsResult {
  notify(() =>
    state.observer.lookup?.({
      outcome: result.status === 'resolved' ? 'resolved' : result.reason,
      source: result.source,
      durationMs: state.now() - started,
    }),
  );
  return result;
}

/** The resolver's `resolveImagePlatforms`: the cache, else a shared registry lookup. */
async function resolveImagePlatformsWith(
  state: ResolverState,
  image: string,
  context: ResolveContext = {},
  signal?: AbortSignal,
): Promise<ImagePlatformsResult> {
  const started = state.now();
  let ref: ImageReference;
  try {
    ref = parsedReference(state, image);
  } catch (error) {
    const message = (error as Error).message;
    return finishLookup(state, started, {
      status: 'unknown',
      image,
      reason: 'invalid-reference',
      message,
      attempts: [],
      source: 'registry',
    });
  }
  const key = cacheKeyOf(state, ref);
  const pullSecrets = context.pullSecrets ?? [];
  // Platforms do not depend on who asks; failures do (a pod without the right pull secret is
  // refused), so they are cached per set of pull secrets.
  const positive = state.cache.get(key);
  const failureKey = positive ? '' : `${key}|${secretsFingerprint(pullSecrets)}`;
  const cached = positive ?? state.cache.get(failureKey);
  if (cached) state.counts.hits++;
  else state.counts.misses++;
  notify(() => state.observer.cache?.(cached ? 'hit' : 'miss'));
  if (cached)
    return finishLookup(state, started, {
      ...cached,
      image,
      source: 'cache',
    } as ImagePlatformsResult);

  const shared = sharedLookup(state, ref, key, failureKey, pullSecrets);
  const outcome = await settledOrAborted(shared, signal);
  if (!outcome.done) {
    const failure = lookupErrorFrom(signal?.reason, `the registry of "${key}"`, signal);
    return finishLookup(state, started, {
      status: 'unknown',
      image,
      reason: failure.details.reason,
      message: `${failure.message}; the lookup goes on and fills the cache for later pods`,
      attempts: [],
      source: 'registry',
    });
  }
  return finishLookup(state, started, {
    ...outcome.value,
    image,
    source: 'registry',
  } as ImagePlatformsResult);
}

/** The lookup in flight for `failureKey`, or a new one that fills the cache when it ends. */
function sharedLookup(
  state: ResolverState,
  ref: ImageReference,
  key: string,
  failureKey: string,
  pullSecrets: readonly DockerConfigSource[],
): Promise<LookupOutcome> {
  let shared = state.inFlight.get(failureKey);
  if (!shared) {
    shared = lookup(state, ref, pullSecrets)
      .catch(
        (error): LookupOutcome => ({
          status: 'unknown',
          reason: 'registry-error',
          message: `Looking up "${key}" failed unexpectedly: ${(error as Error)?.message ?? error}`,
          attempts: [],
        }),
      )
      .then((outcome) => cacheOutcome(state, ref, key, failureKey, outcome))
      .finally(() => state.inFlight.delete(failureKey));
    state.inFlight.set(failureKey, shared);
  }
  return shared;
}

/** Caches a lookup's outcome: platforms by reference (and by digest), failures per secrets. */
function cacheOutcome(
  state: ResolverState,
  ref: ImageReference,
  key: string,
  failureKey: string,
  outcome: LookupOutcome,
): LookupOutcome {
  if (outcome.status === 'resolved') {
    state.cache.set(key, outcome, ref.digest ? state.digestTtlMs : state.tagTtlMs);
    if (!ref.digest) {
      // The digest of a tag answers later lookups by that digest too.
      const pinned = `${ref.registry}/${ref.repository}@${outcome.digest}`;
      state.cache.set(pinned, { ...outcome, reference: pinned }, state.digestTtlMs);
    }
  } else {
    state.cache.set(failureKey, outcome, state.failureTtlMs);
  }
  return outcome;
}
