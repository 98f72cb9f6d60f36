/**
 * Registry authentication, shared by the image lookups and the payload artifact: anonymous,
 * HTTP basic, and bearer tokens (a 401 with `WWW-Authenticate: Bearer realm=…` sends us to the
 * token service for `repository:<name>:<actions>`, with basic credentials or an OAuth2 refresh
 * token when the credentials hold them). Tokens are cached until they expire, and the challenge
 * of each registry is remembered so later requests send the token up front. Failures are
 * WF_REGISTRY_LOOKUP errors whose messages carry the status and the host, never what the
 * server sent, and never a credential.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isOkStatus, isRefusedStatus, isUnauthorizedStatus } from '../net/http-status.ts';
import { type AuthChallenge, parseAuthChallenges } from './auth-challenge.ts';
import type { RegistryCredentials } from './docker-config.ts';
import type { HttpResponse, RegistryHttp, TlsSettings } from './registry-http.ts';
import { registryLookupError } from './registry-lookup-error.ts';
import { TtlLruCache } from './ttl-lru-cache.ts';

/** Where a registry's API is: origin URL plus TLS settings. */
export interface RegistryEndpoint {
  /** Origin only, e.g. "https://mcr.microsoft.com" or "http://127.0.0.1:5000". */
  origin: string;
  tls?: TlsSettings;
}

/** How messages name the credentials and their fix (default: a pod's pull secrets). */
export interface CredentialWording {
  /** What was sent, e.g. "the pull secret credentials". */
  given: string;
  /** Why none were sent, e.g. "none of the pull secrets match it". */
  missing: string;
  /** How to give some, e.g. "add an imagePullSecret for this registry". */
  fix: string;
}

/** What one repository request needs: where, which repository, and which credentials. */
export interface RepositoryAccess {
  endpoint: RegistryEndpoint;
  repository: string;
  credentials?: RegistryCredentials;
  signal?: AbortSignal;
  /** How error messages speak of credentials (default: pull secrets). */
  wording?: CredentialWording;
}

/** What a token is asked for: reading, or reading and writing (a push). */
export type RepositoryActions = 'pull' | 'pull,push';

const pullSecretWording: CredentialWording = {
  given: 'the pull secret credentials',
  missing: 'none of the pull secrets match it',
  fix: 'add an imagePullSecret for this registry',
};

const defaultTokenTtlMs = 60_000;
const tokenSafetyMs = 5_000;

function fingerprint(credentials: RegistryCredentials | undefined): string {
  if (!credentials) return 'anonymous';
  return createHash('sha256').update(JSON.stringify(credentials)).digest('hex').slice(0, 32);
}

function basicHeader(credentials: RegistryCredentials): string | undefined {
  if (credentials.username === undefined && credentials.password === undefined) return undefined;
  const pair = `${credentials.username ?? ''}:${credentials.password ?? ''}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

/** Answers registries' auth challenges; share one per RegistryHttp so tokens are reused. */
export class RegistryAuth {
  readonly #http: RegistryHttp;
  readonly #tokens: TtlLruCache<string, string>;
  readonly #challenges: TtlLruCache<string, AuthChallenge>;

  constructor(http: RegistryHttp, now: () => number = Date.now) {
    this.#http = http;
    this.#tokens = new TtlLruCache({ maxEntries: 1000, now });
    this.#challenges = new TtlLruCache({ maxEntries: 500, now });
  }

  /**
   * Sends a request with the authorization that worked last time for this registry; on a 401,
   * answers the challenge once and sends again. `send` builds the request afresh each time (a
   * streamed body is opened again).
   */
  async send<R extends { status: number; headers: IncomingHttpHeaders }>(
    access: RepositoryAccess,
    send: (authorization: string | undefined) => Promise<R>,
    actions: RepositoryActions = 'pull',
  ): Promise<R> {
    const { endpoint } = access;
    const what = `registry "${endpoint.origin}"`;
    const known = this.#challenges.peek(endpoint.origin);
    let authorization = known ? this.#cachedAuthorization(access, known, actions) : undefined;
    const response = await send(authorization);
    if (!isUnauthorizedStatus(response.status)) return response;
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
      this.#tokens.delete(this.#tokenKey(access, challenge, actions));
    authorization = await this.#authorize(access, challenge, actions);
    if (authorization === undefined) {
      const wording = access.wording ?? pullSecretWording;
      throw registryLookupError(
        'unauthorized',
        `${what} requires credentials for "${access.repository}" and ${wording.missing}; ${wording.fix}`,
      );
    }
    return send(authorization);
  }

  #scope(access: RepositoryAccess, challenge: AuthChallenge, actions: RepositoryActions): string {
    // A registry's challenge names the scope of the request that drew it; a push needs its own.
    if (actions === 'pull' && challenge.params.scope) return challenge.params.scope;
    return `repository:${access.repository}:${actions}`;
  }

  #tokenKey(
    access: RepositoryAccess,
    challenge: AuthChallenge,
    actions: RepositoryActions,
  ): string {
    return [
      challenge.params.realm,
      challenge.params.service ?? '',
      `repository:${access.repository}:${actions}`,
      fingerprint(access.credentials),
    ].join('|');
  }

  #cachedAuthorization(
    access: RepositoryAccess,
    challenge: AuthChallenge,
    actions: RepositoryActions,
  ): string | undefined {
    if (challenge.scheme === 'basic')
      return access.credentials ? basicHeader(access.credentials) : undefined;
    if (access.credentials?.registryToken) return `Bearer ${access.credentials.registryToken}`;
    const token = this.#tokens.peek(this.#tokenKey(access, challenge, actions));
    return token ? `Bearer ${token}` : undefined;
  }

  async #authorize(
    access: RepositoryAccess,
    challenge: AuthChallenge,
    actions: RepositoryActions,
  ): Promise<string | undefined> {
    const credentials = access.credentials;
    if (challenge.scheme === 'basic') return credentials ? basicHeader(credentials) : undefined;
    if (credentials?.registryToken) return `Bearer ${credentials.registryToken}`;
    const token = await this.#fetchToken(access, challenge, actions);
    return `Bearer ${token}`;
  }

  /** A bearer token for `actions` from the challenge's token service, cached for its lifetime. */
  async #fetchToken(
    access: RepositoryAccess,
    challenge: AuthChallenge,
    actions: RepositoryActions,
  ): Promise<string> {
    const { credentials, endpoint } = access;
    const wording = access.wording ?? pullSecretWording;
    const realmUrl = tokenRealm(endpoint.origin, challenge.params.realm!);
    const service = challenge.params.service;
    const scope = this.#scope(access, challenge, actions);
    const what = `token service "${realmUrl.host}" of registry "${endpoint.origin}"`;
    const response = await this.#requestToken(access, realmUrl, scope, service, what);
    if (isRefusedStatus(response.status)) {
      throw registryLookupError(
        'unauthorized',
        `The ${what} refused ${credentials ? wording.given : 'anonymous access'} for "${scope}" (HTTP ${response.status})${credentials ? '' : `; ${wording.fix}`}`,
      );
    }
    if (!isOkStatus(response.status)) {
      throw registryLookupError('registry-error', `The ${what} answered HTTP ${response.status}`);
    }
    const { token, ttl } = tokenFromBody(response.body, what);
    this.#tokens.set(this.#tokenKey(access, challenge, actions), token, ttl);
    return token;
  }

  /**
   * Asks the token service: an OAuth2 refresh-token grant (POST) with an identity token, else a
   * GET with the credentials as Basic auth, or anonymous.
   */
  #requestToken(
    access: RepositoryAccess,
    realmUrl: URL,
    scope: string,
    service: string | undefined,
    what: string,
  ): Promise<HttpResponse> {
    const { credentials, endpoint, signal } = access;
    const common = {
      maxBytes: 1024 * 1024,
      referrer: endpoint.origin,
      ...(endpoint.tls ? { tls: endpoint.tls } : {}),
      ...(signal ? { signal } : {}),
      what,
    };
    if (credentials?.identityToken) {
      // OAuth2 refresh-token grant, as docker login stores it for e.g. ACR.
      const form = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: credentials.identityToken,
        client_id: 'winfleet',
        scope,
        ...(service ? { service } : {}),
      });
      return this.#http.send({
        ...common,
        method: 'POST',
        url: realmUrl.href,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
      });
    }
    const url = new URL(realmUrl);
    if (service) url.searchParams.set('service', service);
    url.searchParams.append('scope', scope);
    const basic = credentials ? basicHeader(credentials) : undefined;
    if (credentials?.username) url.searchParams.set('account', credentials.username);
    return this.#http.send({
      ...common,
      url: url.href,
      headers: { accept: 'application/json', ...(basic ? { authorization: basic } : {}) },
    });
  }
}

/** The token realm of a Bearer challenge, which must be an HTTP(S) URL. */
export function tokenRealm(origin: string, realm: string): URL {
  let realmUrl: URL;
  try {
    realmUrl = new URL(realm);
  } catch {
    throw registryLookupError(
      'registry-error',
      `Registry "${origin}" names a token realm that is not a URL`,
    );
  }
  if (realmUrl.protocol !== 'https:' && realmUrl.protocol !== 'http:') {
    throw registryLookupError(
      'registry-error',
      `Registry "${origin}" names a token realm on host "${realmUrl.host}" that is not HTTP(S)`,
    );
  }
  return realmUrl;
}

/** The token in a token service's JSON answer, and how long to keep it. */
export function tokenFromBody(body: Buffer, what: string): { token: string; ttl: number } {
  let parsed: { token?: unknown; access_token?: unknown; expires_in?: unknown };
  try {
    parsed = JSON.parse(body.toString('utf8'));
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
  return { token, ttl };
}
