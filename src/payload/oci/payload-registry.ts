/**
 * The registry side of a payload artifact, on the HTTP, auth and address policy of src/images:
 * reading its manifest and payload.json (bounded, verified against their digests), streaming
 * one file's blob with its SHA-256 and size checked as the bytes arrive (never held whole), and
 * pushing: HEAD to skip blobs the registry has, POST + PUT to upload one streamed from disk,
 * then the manifest by tag.
 *
 * The payload registry and its mirrors are configured by whoever runs winfleet (a flag, the
 * chart, the operator's configuration), so their origins are trusted by the address policy:
 * loopback and private addresses are allowed for them, and for token realms and redirects that
 * stay on their hosts; anything else they send us to must be a public address. Credentials never
 * follow a redirect or an upload location to another origin.
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { WinfleetError } from '../../errors/catalog.ts';
import { createAddressPolicy } from '../../images/address-policy.ts';
import type { RegistryCredentials } from '../../images/docker-config.ts';
import {
  type CredentialWording,
  RegistryAuth,
  type RegistryEndpoint,
  type RepositoryActions,
} from '../../images/registry-auth.ts';
import { type HttpResponse, RegistryHttp, type StreamedBody } from '../../images/registry-http.ts';
import {
  isRegistryLookupError,
  lookupErrorFrom,
  registryLookupError,
} from '../../images/registry-lookup-error.ts';
import { isNotFoundStatus, isOkStatus, isRefusedStatus } from '../../net/http-status.ts';
import type { Payload } from '../payload.ts';
import { type PayloadLimits, payloadLimits, payloadMediaTypes } from './media-types.ts';
import { parsePayloadConfig } from './payload-config.ts';
import {
  type PayloadLayer,
  type PayloadManifest,
  parsePayloadManifest,
} from './payload-manifest.ts';

/** One place a payload is read from or pushed to: a mirror or the registry itself. */
export interface PayloadTarget {
  endpoint: RegistryEndpoint;
  /** The repository on that endpoint (a mirror's path prefix included). */
  repository: string;
  credentials?: RegistryCredentials;
  /** How messages speak of credentials for this target. */
  wording?: CredentialWording;
  /** True for a mirror. */
  mirror: boolean;
}

export interface PayloadRegistryOptions {
  /** Origins of the configured registry and mirrors: trusted by the address policy. */
  trustedOrigins: Iterable<string>;
  userAgent?: string;
  /** A connection silent this long fails (default 60 s), so a stalled registry is noticed. */
  idleTimeoutMs?: number;
  limits?: PayloadLimits;
}

/** What a target is called in messages: `registry "https://…"` or `mirror "http://…"`. */
export function targetName(target: PayloadTarget): string {
  return `${target.mirror ? 'mirror' : 'registry'} "${target.endpoint.origin}"`;
}

/** The error for content that does not match what pins it: never retried. */
function invalidContent(message: string): WinfleetError {
  return new WinfleetError('WF_PAYLOAD_INVALID', message);
}

/** Reads and writes payload artifacts; share one so connections and tokens are reused. */
export class PayloadRegistry {
  readonly #http: RegistryHttp;
  readonly #auth: RegistryAuth;
  readonly #idleTimeoutMs: number;
  readonly #limits: PayloadLimits;

  constructor(options: PayloadRegistryOptions) {
    this.#http = new RegistryHttp(
      options.userAgent ?? 'winfleet-payload',
      createAddressPolicy({ trustedOrigins: options.trustedOrigins }),
    );
    this.#auth = new RegistryAuth(this.#http);
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
    this.#limits = options.limits ?? payloadLimits;
  }

  close(): void {
    this.#http.close();
  }

  // Reading.

  /**
   * The manifest at `digest`, its bytes checked against the digest and parsed strictly
   * (payload-manifest.ts). `document` names the artifact in messages.
   */
  async fetchManifest(
    target: PayloadTarget,
    digest: string,
    document: string,
    signal?: AbortSignal,
  ): Promise<PayloadManifest> {
    const what = `manifest ${digest} of "${target.repository}" at ${targetName(target)}`;
    const response = await this.#request(target, 'pull', signal, {
      path: `/manifests/${digest}`,
      accept: payloadMediaTypes.manifest,
      maxBytes: this.#limits.maxManifestBytes,
      what,
    });
    expectStatus(response, [200], what, target);
    return parsePayloadManifest(response.body, digest, document, this.#limits);
  }

  /** payload.json of `manifest`, checked against it (payload-config.ts). */
  async fetchConfig(
    target: PayloadTarget,
    manifest: PayloadManifest,
    document: string,
    signal?: AbortSignal,
  ): Promise<{ payload: Payload; bytes: Buffer }> {
    const what = `payload.json (blob ${manifest.config.digest}) of "${target.repository}" at ${targetName(target)}`;
    const response = await this.#request(target, 'pull', signal, {
      path: `/blobs/${manifest.config.digest}`,
      accept: payloadMediaTypes.config,
      maxBytes: manifest.config.size,
      what,
    });
    expectStatus(response, [200], what, target);
    return { payload: parsePayloadConfig(response.body, manifest, document), bytes: response.body };
  }

  /**
   * The bytes of one file's blob as they arrive, each chunk counted and hashed: more bytes
   * than `layer.size` end the stream at once, and it ends with an error (WF_PAYLOAD_INVALID)
   * unless exactly `layer.size` bytes hashing to `layer.digest` came, so a consumer that puts
   * the file in place only when the stream ends cleanly never keeps an unverified file. A cut
   * connection or a stall is WF_REGISTRY_LOOKUP (reason "unreachable" or "timeout").
   */
  async openBlob(
    target: PayloadTarget,
    layer: PayloadLayer,
    signal?: AbortSignal,
  ): Promise<AsyncGenerator<Buffer>> {
    const what = `${layer.name} (blob ${layer.digest}) of "${target.repository}" at ${targetName(target)}`;
    const response = await this.#auth.send(this.#access(target, signal), (authorization) =>
      this.#http.stream({
        url: `${target.endpoint.origin}/v2/${target.repository}/blobs/${layer.digest}`,
        headers: { accept: '*/*', ...(authorization ? { authorization } : {}) },
        ...this.#common(target, signal),
        maxBytes: layer.size,
        what: `${targetName(target)}`,
      }),
    );
    if (!isOkStatus(response.status)) {
      response.body.destroy();
      expectStatus(response, [200], what, target);
    }
    const declared = response.headers['content-length'];
    if (declared !== undefined && Number(declared) !== layer.size) {
      response.body.destroy();
      throw invalidContent(
        `${what} is declared with ${declared} bytes, the payload manifest says ${layer.size}`,
      );
    }
    return verifiedChunks(response.body, layer, what, signal);
  }

  /**
   * Downloads one file's blob to `path` on this machine: into a temporary file beside it,
   * renamed to `path` only once verified, and removed otherwise.
   */
  async downloadBlob(
    target: PayloadTarget,
    layer: PayloadLayer,
    path: string,
    signal?: AbortSignal,
  ): Promise<void> {
    await saveVerified(await this.openBlob(target, layer, signal), path);
  }

  // Pushing.

  /** Whether the repository has the blob (HEAD), so that it need not be uploaded. */
  async hasBlob(target: PayloadTarget, digest: string, signal?: AbortSignal): Promise<boolean> {
    const what = `blob ${digest} of "${target.repository}" at ${targetName(target)}`;
    const response = await this.#request(target, 'pull,push', signal, {
      method: 'HEAD',
      path: `/blobs/${digest}`,
      maxBytes: 0,
      what,
    });
    if (isNotFoundStatus(response.status)) return false;
    expectStatus(response, [200], what, target);
    return true;
  }

  /**
   * Uploads a blob of `length` bytes from `open()` (opened again if the upload must be sent
   * again): POST for an upload location, then one PUT with the whole body and its digest.
   */
  async uploadBlob(
    target: PayloadTarget,
    digest: string,
    body: StreamedBody | Buffer,
    signal?: AbortSignal,
  ): Promise<void> {
    const what = `upload of blob ${digest} to "${target.repository}" at ${targetName(target)}`;
    const started = await this.#request(target, 'pull,push', signal, {
      method: 'POST',
      path: '/blobs/uploads/',
      body: '',
      maxBytes: 64 * 1024,
      what,
    });
    expectStatus(started, [202], what, target);
    const location = started.headers.location;
    let url: URL;
    try {
      url = new URL(String(location ?? ''), target.endpoint.origin);
    } catch {
      throw registryLookupError('registry-error', `${what}: the registry gave no upload location`);
    }
    url.searchParams.set('digest', digest);
    // The upload URL is the registry's answer: credentials go only to the registry's own origin.
    const sameOrigin = url.origin === target.endpoint.origin;
    const finished = await this.#auth.send(
      this.#access(target, signal),
      (authorization) =>
        this.#http.send({
          method: 'PUT',
          url: url.href,
          headers: {
            'content-type': 'application/octet-stream',
            ...(authorization && sameOrigin ? { authorization } : {}),
          },
          body,
          ...this.#common(target, signal),
          maxBytes: 64 * 1024,
          referrer: target.endpoint.origin,
          what: targetName(target),
        }),
      'pull,push',
    );
    expectStatus(finished, [201], what, target);
    const stored = finished.headers['docker-content-digest'];
    if (typeof stored === 'string' && stored !== '' && stored !== digest) {
      throw invalidContent(`${what}: the registry stored it as ${stored}`);
    }
  }

  /** Puts the manifest under `tag`; checks that the registry stored it under `digest`. */
  async putManifest(
    target: PayloadTarget,
    tag: string,
    manifest: { bytes: Buffer; digest: string },
    signal?: AbortSignal,
  ): Promise<void> {
    const what = `manifest "${target.repository}:${tag}" at ${targetName(target)}`;
    const response = await this.#request(target, 'pull,push', signal, {
      method: 'PUT',
      path: `/manifests/${tag}`,
      contentType: payloadMediaTypes.manifest,
      body: manifest.bytes,
      maxBytes: 64 * 1024,
      what,
    });
    expectStatus(response, [201], what, target);
    const stored = response.headers['docker-content-digest'];
    if (typeof stored === 'string' && stored !== '' && stored !== manifest.digest) {
      throw invalidContent(
        `${what}: the registry stored the manifest as ${stored}, not as ${manifest.digest}; it rewrote the manifest, so the pinned reference would not match`,
      );
    }
  }

  // Requests.

  #access(target: PayloadTarget, signal: AbortSignal | undefined) {
    return {
      endpoint: target.endpoint,
      repository: target.repository,
      ...(target.credentials ? { credentials: target.credentials } : {}),
      ...(target.wording ? { wording: target.wording } : {}),
      ...(signal ? { signal } : {}),
    };
  }

  #common(target: PayloadTarget, signal: AbortSignal | undefined) {
    return {
      ...(target.endpoint.tls ? { tls: target.endpoint.tls } : {}),
      ...(signal ? { signal } : {}),
      idleTimeoutMs: this.#idleTimeoutMs,
    };
  }

  /** A buffered request to `/v2/<repository><path>`, answering one auth challenge. */
  #request(
    target: PayloadTarget,
    actions: RepositoryActions,
    signal: AbortSignal | undefined,
    req: {
      method?: 'GET' | 'HEAD' | 'POST' | 'PUT';
      path: string;
      accept?: string;
      contentType?: string;
      body?: string | Buffer;
      maxBytes: number;
      what: string;
    },
  ): Promise<HttpResponse> {
    return this.#auth.send(
      this.#access(target, signal),
      (authorization) =>
        this.#http.send({
          ...(req.method ? { method: req.method } : {}),
          url: `${target.endpoint.origin}/v2/${target.repository}${req.path}`,
          headers: {
            ...(req.accept ? { accept: req.accept } : {}),
            ...(req.contentType ? { 'content-type': req.contentType } : {}),
            ...(authorization ? { authorization } : {}),
          },
          ...(req.body !== undefined ? { body: req.body } : {}),
          ...this.#common(target, signal),
          maxBytes: req.maxBytes,
          what: targetName(target),
        }),
      actions,
    );
  }
}

/**
 * Writes `chunks` (a verified blob stream, `openBlob`) to `path` on this machine: into a
 * temporary file beside it, renamed to `path` only once the chunks ended cleanly, removed
 * otherwise. The file is opened and closed here rather than by a stream: a write stream
 * destroyed by a failing source may still be opening its file when `pipeline` rejects, and
 * would create it after the removal, so "nothing is kept" would not hold when the caller hears
 * of the failure.
 */
export async function saveVerified(chunks: AsyncIterable<Buffer>, path: string): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const file = await open(temporary, 'wx');
  try {
    try {
      for await (const chunk of chunks) await file.writeFile(chunk);
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Throws the WF_REGISTRY_LOOKUP error that an unexpected status means. */
function expectStatus(
  response: { status: number },
  expected: readonly number[],
  what: string,
  target: PayloadTarget,
): void {
  const status = response.status;
  if (expected.includes(status)) return;
  if (isNotFoundStatus(status)) throw registryLookupError('not-found', `No ${what} (HTTP 404)`);
  if (isRefusedStatus(status)) {
    const fix = target.wording?.fix ?? 'give credentials that may read it';
    throw registryLookupError('unauthorized', `Not allowed: ${what} (HTTP ${status}); ${fix}`);
  }
  throw registryLookupError('registry-error', `${what} failed with HTTP ${status}`);
}

/** See `openBlob`: the body's chunks, counted and hashed as they pass. */
async function* verifiedChunks(
  body: Readable,
  layer: PayloadLayer,
  what: string,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer> {
  const hash = createHash('sha256');
  let size = 0;
  try {
    try {
      for await (const chunk of body) {
        const bytes = chunk as Buffer;
        size += bytes.length;
        if (size > layer.size)
          throw invalidContent(
            `${what} sent more than the ${layer.size} bytes the payload manifest declares`,
          );
        hash.update(bytes);
        yield bytes;
      }
    } catch (error) {
      // A stall is the registry client's lookup error (unreachable); any other winfleet error
      // (content that is not what the manifest declares) stands as it is.
      if (error instanceof WinfleetError && !isRegistryLookupError(error)) throw error;
      const why = lookupErrorFrom(error, what, signal);
      if (why.details.reason !== 'unreachable') throw why;
      throw registryLookupError(
        'unreachable',
        `the download of ${what} broke off after ${size} of ${layer.size} bytes (${(error as Error).message})`,
        { cause: error },
      );
    }
  } finally {
    body.destroy();
  }
  const actual = `sha256:${hash.digest('hex')}`;
  if (size !== layer.size || actual !== layer.digest) {
    throw invalidContent(
      `${what} has ${size} bytes hashing to ${actual}, the payload manifest says ${layer.size} bytes hashing to ${layer.digest}`,
    );
  }
}
