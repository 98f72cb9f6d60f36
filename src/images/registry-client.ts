/**
 * An OCI distribution v2 client for reading manifests and blobs, with the registry auth flows:
 * anonymous, HTTP basic, and bearer tokens (a 401 with `WWW-Authenticate: Bearer realm=…` sends
 * us to the token service for `repository:<name>:pull`, with basic credentials or an OAuth2
 * refresh token when the pull secrets hold them). Tokens are cached until they expire, and the
 * challenge of each registry is remembered so later lookups send the token up front.
 * Every failure is a WF_REGISTRY_LOOKUP error with a reason in its details. Error messages
 * carry the status code and the host, never what the server sent (they end up in admission
 * warnings any pod creator reads), and connections go through the address policy.
 */
import { createHash } from 'node:crypto';
import type { AddressPolicy } from './address-policy.ts';
import { type AuthChallenge, parseAuthChallenges } from './auth-challenge.ts';
import type { RegistryCredentials } from './docker-config.ts';
import { manifestAccept } from './manifest-platforms.ts';
import { type HttpResponse, RegistryHttp, type TlsSettings } from './registry-http.ts';
import { registryLookupError } from './registry-lookup-error.ts';
import { TtlLruCache } from './ttl-lru-cache.ts';

/** Where a registry's API is: origin URL plus TLS settings. */
export interface RegistryEndpoint {
  /** Origin only, e.g. "https://mcr.microsoft.com" or "http://127.0.0.1:5000". */
  origin: string;
  tls?: TlsSettings;
}

/** What one repository lookup needs: where, which repository, and which credentials. */
export interface RepositoryAccess {
  endpoint: RegistryEndpoint;
  repository: string;
  credentials?: RegistryCredentials;
  signal?: AbortSignal;
}

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

const defaultTokenTtlMs = 60_000;
const tokenSafetyMs = 5_000;

function hashOf(body: Uint8Array, algorithm: string): string {
  return `${algorithm}:${createHash(algorithm).update(body).digest('hex')}`;
}

function fingerprint(credentials: RegistryCredentials | undefined): string {
  if (!credentials) return 'anonymous';
  return createHash('sha256').update(JSON.stringify(credentials)).digest('hex').slice(0, 32);
}

function basicHeader(credentials: RegistryCredentials): string | undefined {
  if (credentials.username === undefined && credentials.password === undefined) return undefined;
  const pair = `${credentials.username ?? ''}:${credentials.password ?? ''}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

/** A registry client; share one across lookups so connections and tokens are reused. */
export class RegistryClient {
  readonly #http: RegistryHttp;
  readonly #maxManifestBytes: number;
  readonly #maxConfigBytes: number;
  readonly #tokens: TtlLruCache<string, string>;
  readonly #challenges: TtlLruCache<string, AuthChallenge>;
  readonly #now: () => number;

  constructor(options: RegistryClientOptions = {}) {
    this.#http = new RegistryHttp(
      options.userAgent ?? 'winfleet-image-resolver',
      options.addressPolicy,
    );
    this.#maxManifestBytes = options.maxManifestBytes ?? 4 * 1024 * 1024;
    this.#maxConfigBytes = options.maxConfigBytes ?? 4 * 1024 * 1024;
    this.#now = options.now ?? Date.now;
    this.#tokens = new TtlLruCache({ maxEntries: 1000, now: this.#now });
    this.#challenges = new TtlLruCache({ maxEntries: 500, now: this.#now });
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
    if (status === 200) return;
    if (status === 404) throw registryLookupError('not-found', `No ${what} (HTTP 404)`);
    if (status === 401 || status === 403) {
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
  async #get(
    access: RepositoryAccess,
    path: string,
    accept: string,
    maxBytes: number,
  ): Promise<HttpResponse> {
    const { endpoint, signal } = access;
    const what = `registry "${endpoint.origin}"`;
    const url = `${endpoint.origin}${path}`;
    const send = (authorization: string | undefined) =>
      this.#http.send({
        url,
        headers: { accept, ...(authorization ? { authorization } : {}) },
        ...(endpoint.tls ? { tls: endpoint.tls } : {}),
        maxBytes,
        ...(signal ? { signal } : {}),
        what,
      });
    // Send what worked last time for this registry, saving the 401 round trip.
    const known = this.#challenges.peek(endpoint.origin);
    let authorization = known ? this.#cachedAuthorization(access, known) : undefined;
    let response = await send(authorization);
    if (response.status !== 401) return response;
    const challenges = parseAuthChallenges(response.headers['www-authenticate']);
    const challenge =
      challenges.find((c) => c.scheme === 'bearer' && c.params.realm) ??
      challenges.find((c) => c.scheme === 'basic');
    if (!challenge) {
      throw registryLookupError(
        'unauthorized',
        `${what} answered 401 without a Basic or Bearer challenge in WWW-Authenticate`,
      );
    }
    this.#challenges.set(endpoint.origin, challenge, 60 * 60_000);
    if (authorization && challenge.scheme === 'bearer')
      this.#tokens.delete(this.#tokenKey(access, challenge));
    authorization = await this.#authorize(access, challenge);
    if (authorization === undefined) {
      throw registryLookupError(
        'unauthorized',
        `${what} requires credentials for "${access.repository}" and none of the pull secrets match it; add an imagePullSecret for this registry`,
      );
    }
    response = await send(authorization);
    return response;
  }

  #scope(access: RepositoryAccess, challenge: AuthChallenge): string {
    return challenge.params.scope || `repository:${access.repository}:pull`;
  }

  #tokenKey(access: RepositoryAccess, challenge: AuthChallenge): string {
    return [
      challenge.params.realm,
      challenge.params.service ?? '',
      `repository:${access.repository}:pull`,
      fingerprint(access.credentials),
    ].join('|');
  }

  #cachedAuthorization(access: RepositoryAccess, challenge: AuthChallenge): string | undefined {
    if (challenge.scheme === 'basic')
      return access.credentials ? basicHeader(access.credentials) : undefined;
    if (access.credentials?.registryToken) return `Bearer ${access.credentials.registryToken}`;
    const token = this.#tokens.peek(this.#tokenKey(access, challenge));
    return token ? `Bearer ${token}` : undefined;
  }

  async #authorize(
    access: RepositoryAccess,
    challenge: AuthChallenge,
  ): Promise<string | undefined> {
    const credentials = access.credentials;
    if (challenge.scheme === 'basic') return credentials ? basicHeader(credentials) : undefined;
    if (credentials?.registryToken) return `Bearer ${credentials.registryToken}`;
    const token = await this.#fetchToken(access, challenge);
    return `Bearer ${token}`;
  }

  async #fetchToken(access: RepositoryAccess, challenge: AuthChallenge): Promise<string> {
    const { credentials, endpoint, signal } = access;
    const realm = challenge.params.realm!;
    let realmUrl: URL;
    try {
      realmUrl = new URL(realm);
    } catch {
      throw registryLookupError(
        'registry-error',
        `Registry "${endpoint.origin}" names a token realm that is not a URL`,
      );
    }
    if (realmUrl.protocol !== 'https:' && realmUrl.protocol !== 'http:') {
      throw registryLookupError(
        'registry-error',
        `Registry "${endpoint.origin}" names a token realm on host "${realmUrl.host}" that is not HTTP(S)`,
      );
    }
    const service = challenge.params.service;
    const scope = this.#scope(access, challenge);
    const what = `token service "${realmUrl.host}" of registry "${endpoint.origin}"`;
    const common = {
      maxBytes: 1024 * 1024,
      referrer: endpoint.origin,
      ...(endpoint.tls ? { tls: endpoint.tls } : {}),
      ...(signal ? { signal } : {}),
      what,
    };
    let response: HttpResponse;
    if (credentials?.identityToken) {
      // OAuth2 refresh-token grant, as docker login stores it for e.g. ACR.
      const form = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: credentials.identityToken,
        client_id: 'winfleet',
        scope,
        ...(service ? { service } : {}),
      });
      response = await this.#http.send({
        ...common,
        method: 'POST',
        url: realmUrl.href,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
      });
    } else {
      const url = new URL(realmUrl);
      if (service) url.searchParams.set('service', service);
      url.searchParams.append('scope', scope);
      const basic = credentials ? basicHeader(credentials) : undefined;
      if (credentials?.username) url.searchParams.set('account', credentials.username);
      response = await this.#http.send({
        ...common,
        url: url.href,
        headers: { accept: 'application/json', ...(basic ? { authorization: basic } : {}) },
      });
    }
    if (response.status === 401 || response.status === 403) {
      throw registryLookupError(
        'unauthorized',
        `The ${what} refused ${credentials ? 'the pull secret credentials' : 'anonymous access'} for "${scope}" (HTTP ${response.status})${credentials ? '' : '; add an imagePullSecret for this registry'}`,
      );
    }
    if (response.status !== 200) {
      throw registryLookupError('registry-error', `The ${what} answered HTTP ${response.status}`);
    }
    let parsed: { token?: unknown; access_token?: unknown; expires_in?: unknown };
    try {
      parsed = JSON.parse(response.body.toString('utf8'));
    } catch {
      throw registryLookupError(
        'registry-error',
        `The ${what} answered with a body that is not JSON`,
      );
    }
    const token =
      typeof parsed?.token === 'string' && parsed.token ? parsed.token : parsed?.access_token;
    if (typeof token !== 'string' || token === '') {
      throw registryLookupError(
        'registry-error',
        `The ${what} answered without "token" or "access_token"`,
      );
    }
    const expiresIn =
      typeof parsed.expires_in === 'number' && parsed.expires_in > 0 ? parsed.expires_in * 1000 : 0;
    // The distribution spec says to assume 60 s when the service says less or nothing.
    const ttl = Math.max(expiresIn, defaultTokenTtlMs) - tokenSafetyMs;
    this.#tokens.set(this.#tokenKey(access, challenge), token, ttl);
    return token;
  }
}
