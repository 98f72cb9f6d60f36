/**
 * An OCI distribution v2 client for reading manifests and blobs, with the registry auth flows
 * of registry-auth.ts (anonymous, basic, bearer tokens for `repository:<name>:pull`).
 * Every failure is a WF_REGISTRY_LOOKUP error with a reason in its details. Error messages
 * carry the status code and the host, never what the server sent (they end up in admission
 * warnings any pod creator reads), and connections go through the address policy.
 */
import { createHash } from 'node:crypto';
import { isNotFoundStatus, isOkStatus, isRefusedStatus } from '../net/http-status.ts';
import type { AddressPolicy } from './address-policy.ts';
import { manifestAccept } from './manifest-platforms.ts';
import { RegistryAuth, type RepositoryAccess } from './registry-auth.ts';
import { type HttpResponse, RegistryHttp } from './registry-http.ts';
import { registryLookupError } from './registry-lookup-error.ts';

export type { RegistryEndpoint, RepositoryAccess } from './registry-auth.ts';

export interface FetchedContent {
  digest: string;
  /** The Content-Type the registry served. */
  contentType?: string;
  body: Buffer;
}

export interface RegistryClientOptions {
  userAgent?: string;
  /** Largest manifest read (default 4 MiB, the limit registries apply). */
  maxManifestBytes?: number;
  /** Largest config blob read (default 4 MiB). */
  maxConfigBytes?: number;
  now?: () => number;
  /** Which addresses may be contacted (default: public addresses only, nothing trusted). */
  addressPolicy?: AddressPolicy;
}

function hashOf(body: Uint8Array, algorithm: string): string {
  return `${algorithm}:${createHash(algorithm).update(body).digest('hex')}`;
}

/** A registry client; share one across lookups so connections and tokens are reused. */
export class RegistryClient {
  readonly #http: RegistryHttp;
  readonly #auth: RegistryAuth;
  readonly #maxManifestBytes: number;
  readonly #maxConfigBytes: number;

  constructor(options: RegistryClientOptions = {}) {
    this.#http = new RegistryHttp(
      options.userAgent ?? 'winfleet-image-resolver',
      options.addressPolicy,
    );
    this.#maxManifestBytes = options.maxManifestBytes ?? 4 * 1024 * 1024;
    this.#maxConfigBytes = options.maxConfigBytes ?? 4 * 1024 * 1024;
    this.#auth = new RegistryAuth(this.#http, options.now ?? Date.now);
  }

  /** Fetches a manifest by tag or digest and checks its digest. */
  async fetchManifest(access: RepositoryAccess, reference: string): Promise<FetchedContent> {
    const what = `manifest "${access.repository}:${reference}" at ${access.endpoint.origin}`;
    const response = await this.#get(
      access,
      `/v2/${access.repository}/manifests/${reference}`,
      manifestAccept,
      this.#maxManifestBytes,
    );
    this.#expectOk(response, what);
    const contentType = response.headers['content-type'];
    const digest = this.#verify(response, reference.includes(':') ? reference : undefined, what);
    return { digest, body: response.body, ...(contentType ? { contentType } : {}) };
  }

  /** Fetches a blob (an image config) by digest, following redirects, and checks its digest. */
  async fetchBlob(
    access: RepositoryAccess,
    digest: string,
    maxBytes = this.#maxConfigBytes,
  ): Promise<FetchedContent> {
    const what = `blob "${digest}" of "${access.repository}" at ${access.endpoint.origin}`;
    const response = await this.#get(
      access,
      `/v2/${access.repository}/blobs/${digest}`,
      '*/*',
      maxBytes,
    );
    this.#expectOk(response, what);
    this.#verify(response, digest, what);
    return { digest, body: response.body };
  }

  close(): void {
    this.#http.close();
  }

  #expectOk(response: HttpResponse, what: string): void {
    const status = response.status;
    if (isOkStatus(status)) return;
    if (isNotFoundStatus(status)) throw registryLookupError('not-found', `No ${what} (HTTP 404)`);
    if (isRefusedStatus(status)) {
      throw registryLookupError(
        'unauthorized',
        `Not allowed to read ${what} (HTTP ${status}); check the pod's imagePullSecrets`,
      );
    }
    throw registryLookupError('registry-error', `Reading ${what} failed with HTTP ${status}`);
  }

  /** Checks the body against `expected` (or the registry's digest header); returns the digest. */
  #verify(response: HttpResponse, expected: string | undefined, what: string): string {
    const header = response.headers['docker-content-digest'];
    const claimed = expected ?? (typeof header === 'string' && header !== '' ? header : undefined);
    const algorithm = claimed?.split(':')[0] ?? 'sha256';
    if (!['sha256', 'sha384', 'sha512'].includes(algorithm)) {
      throw registryLookupError(
        'invalid-manifest',
        `Cannot verify ${what}: digest algorithm "${algorithm}" is not supported`,
      );
    }
    const actual = hashOf(response.body, algorithm);
    if (claimed !== undefined && claimed !== actual) {
      throw registryLookupError(
        'invalid-manifest',
        `The content of ${what} does not match its digest: expected "${claimed}", got "${actual}"`,
      );
    }
    return actual;
  }

  /** GETs `path`, answering one auth challenge if the registry sends one. */
  #get(
    access: RepositoryAccess,
    path: string,
    accept: string,
    maxBytes: number,
  ): Promise<HttpResponse> {
    const { endpoint, signal } = access;
    const what = `registry "${endpoint.origin}"`;
    const url = `${endpoint.origin}${path}`;
    return this.#auth.send(access, (authorization) =>
      this.#http.send({
        url,
        headers: { accept, ...(authorization ? { authorization } : {}) },
        ...(endpoint.tls ? { tls: endpoint.tls } : {}),
        maxBytes,
        ...(signal ? { signal } : {}),
        what,
      }),
    );
  }
}
