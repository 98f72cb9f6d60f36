/**
 * The HTTP underneath the registry clients: GET, HEAD, POST and PUT over node:http/https with
 * keep-alive agents per TLS setting (an extra CA bundle, or no verification for registries
 * marked insecure), bodies read up to a size limit — or, for blobs, handed over as a stream and
 * never held whole — request bodies from memory or streamed from a file, a bounded number of
 * redirects (blob downloads go to storage or CDN hosts; credentials are never sent to another
 * origin; never from HTTPS down to plain HTTP), an idle timeout, and cancellation through an
 * AbortSignal. Every connection goes through the address policy (`address-policy.ts`): an
 * untrusted URL's host, IP literal or resolved name, must not be a loopback, private,
 * link-local or cluster address.
 */

import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { rootCertificates } from 'node:tls';
import {
  isMovedOrFoundStatus,
  isRedirectStatus,
  isSeeOtherStatus,
  isSuccessStatus,
} from '../net/http-status.ts';
import { type AddressPolicy, createAddressPolicy, hostAddress } from './address-policy.ts';
import { lookupErrorFrom, registryLookupError } from './registry-lookup-error.ts';

/** TLS settings for talking to one registry endpoint. */
export interface TlsSettings {
  /** PEM CA certificates trusted in addition to the system roots. */
  caBundle?: string;
  /** Skip certificate verification (insecure registries only). */
  skipTlsVerify?: boolean;
}

/**
 * A request body streamed from somewhere (a file): its exact length, and a way to open it —
 * once per attempt, since a redirect or an auth challenge sends it again.
 */
export interface StreamedBody {
  length: number;
  open(): Readable;
}

export interface HttpRequest {
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT';
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer | StreamedBody;
  tls?: TlsSettings;
  /**
   * Largest body read; a larger one fails with reason "invalid-manifest". For `stream()`, the
   * largest successful body the registry may declare (Content-Length); the reader counts the
   * rest itself.
   */
  maxBytes: number;
  /** Fail when the connection is silent this long, in ms (default: only the signal ends it). */
  idleTimeoutMs?: number;
  /** Redirects followed at most (default 5). */
  maxRedirects?: number;
  signal?: AbortSignal;
  /** Names the target in error messages, e.g. `registry "https://mcr.microsoft.com"`. */
  what: string;
  /**
   * The registry origin whose answer led here (a token realm's registry); the URL is trusted
   * when that origin is and the URL stays on a configured host.
   */
  referrer?: string;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The URL that answered, after redirects. */
  url: string;
}

/**
 * An answer whose successful body is not read yet: `body` streams it (read it to the end, or
 * destroy it). Any other status comes with its (capped) body read, as a stream too.
 */
export interface StreamedHttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
  url: string;
}

/** Sends requests with pooled connections; `close()` ends the pools. */
export class RegistryHttp {
  readonly #agents = new Map<string, HttpAgent>();
  readonly #userAgent: string;
  readonly #policy: AddressPolicy;
  readonly #checkedLookup: LookupFunction;

  /** `policy` defaults to refusing every non-public address (nothing configured is trusted). */
  constructor(userAgent = 'winfleet', policy: AddressPolicy = createAddressPolicy()) {
    this.#userAgent = userAgent;
    this.#policy = policy;
    this.#checkedLookup = checkedLookup(policy);
  }

  // Trusted and untrusted connections never share a pool: only untrusted ones check addresses.
  #agent(protocol: string, tls: TlsSettings | undefined, trusted: boolean): HttpAgent {
    const key = `${protocol}|${trusted}|${tls?.skipTlsVerify ? 'skip' : ''}|${tls?.caBundle ?? ''}`;
    let agent = this.#agents.get(key);
    if (!agent) {
      const lookup = trusted ? {} : { lookup: this.#checkedLookup };
      agent =
        protocol === 'https:'
          ? new HttpsAgent({
              keepAlive: true,
              maxSockets: 32,
              rejectUnauthorized: !tls?.skipTlsVerify,
              ...(tls?.caBundle ? { ca: [...rootCertificates, tls.caBundle] } : {}),
              ...lookup,
            })
          : new HttpAgent({ keepAlive: true, maxSockets: 32, ...lookup });
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /** Refuses an untrusted URL whose host is a forbidden IP literal, before any connection. */
  #checkLiteral(url: URL, what: string): void {
    const address = hostAddress(url.hostname);
    if (isIP(address) === 0) return; // A name: checked when it is resolved (checkedLookup).
    const why = this.#policy.forbiddenAddress(address);
    if (why !== undefined) throw blockedAddress(what, url, why);
  }

  /** Sends `req`, following redirects; rejects with a WF_REGISTRY_LOOKUP error. */
  async send(req: HttpRequest): Promise<HttpResponse> {
    const response = await this.#follow(req, false);
    return response as HttpResponse;
  }

  /**
   * Sends `req` as `send` does, but hands over a successful body as a stream (a blob):
   * nothing of it is held here. The caller reads it to the end or destroys it.
   */
  async stream(req: HttpRequest): Promise<StreamedHttpResponse> {
    const response = await this.#follow(req, true);
    const body = response.body;
    return { ...response, body: Buffer.isBuffer(body) ? Readable.from([body]) : body };
  }

  async #follow(
    req: HttpRequest,
    streaming: boolean,
  ): Promise<HttpResponse | StreamedHttpResponse> {
    let url = new URL(req.url);
    let headers = { 'user-agent': this.#userAgent, ...req.headers };
    let method = req.method ?? 'GET';
    let body = req.body;
    const maxRedirects = Math.min(req.maxRedirects ?? 5, 5);
    let trusted = this.#policy.isTrusted(
      url,
      req.referrer !== undefined && this.#policy.isTrusted(new URL(req.referrer), false),
    );
    for (let hop = 0; ; hop++) {
      if (!trusted) this.#checkLiteral(url, req.what);
      const response = await this.#once(method, url, headers, body, req, trusted, streaming);
      const location = response.headers.location;
      if (!isRedirectStatus(response.status) || !location) return response;
      // Redirect targets are the server's words: messages name only their host.
      if (hop >= maxRedirects) {
        throw registryLookupError(
          'registry-error',
          `${req.what} redirected more than ${maxRedirects} times`,
        );
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw registryLookupError('registry-error', `${req.what} redirected to an invalid URL`);
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        throw registryLookupError(
          'registry-error',
          `${req.what} redirected to a URL that is not HTTP(S)`,
        );
      }
      if (url.protocol === 'https:' && next.protocol === 'http:') {
        throw registryLookupError(
          'registry-error',
          `${req.what} redirected from HTTPS to plain HTTP (host "${next.host}"); winfleet does not follow such redirects`,
        );
      }
      trusted = this.#policy.isTrusted(next, trusted);
      if (next.origin !== url.origin) {
        const { authorization: _dropped, ...rest } = headers as Record<string, string>;
        headers = rest as typeof headers;
      }
      if (
        isSeeOtherStatus(response.status) ||
        (method === 'POST' && isMovedOrFoundStatus(response.status))
      ) {
        method = 'GET';
        body = undefined;
      }
      url = next;
    }
  }

  /** One request and its answer (no redirects followed). */
  #once(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: HttpRequest['body'],
    req: HttpRequest,
    trusted: boolean,
    streaming: boolean,
  ): Promise<HttpResponse | StreamedHttpResponse> {
    const signal = req.signal;
    return new Promise<HttpResponse | StreamedHttpResponse>((resolve, reject) => {
      if (signal?.aborted) {
        reject(lookupErrorFrom(signal.reason, req.what, signal));
        return;
      }
      const isHttps = url.protocol === 'https:';
      const length = bodyLength(body);
      // The answer, once it comes: a stall while its body streams must end that stream too.
      let answer: IncomingMessage | undefined;
      const outgoing = (isHttps ? httpsRequest : httpRequest)(
        url,
        {
          method,
          headers:
            length === undefined ? headers : { ...headers, 'content-length': String(length) },
          agent: this.#agent(url.protocol, req.tls, trusted),
          ...(signal ? { signal } : {}),
        },
        (res) => {
          answer = res;
          readAnswer(res, { method, url, req, streaming, resolve, reject });
        },
      );
      outgoing.on('error', (error) => reject(lookupErrorFrom(error, req.what, signal)));
      if (req.idleTimeoutMs !== undefined) {
        const idle = req.idleTimeoutMs;
        outgoing.setTimeout(idle, () => {
          const stalled = registryLookupError(
            'unreachable',
            `Cannot reach ${req.what}: no data for ${idle / 1000} s (ETIMEDOUT)`,
          );
          answer?.destroy(stalled);
          outgoing.destroy(stalled);
        });
      }
      sendBody(outgoing, body, req, reject);
    });
  }

  /** Closes pooled connections. */
  close(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }
}

/** The byte length of a request body (undefined without one). */
function bodyLength(body: HttpRequest['body']): number | undefined {
  return body === undefined
    ? undefined
    : typeof body === 'string' || Buffer.isBuffer(body)
      ? Buffer.byteLength(body)
      : body.length;
}

/** Writes a request's body (from memory, or streamed from its source) and ends the request. */
function sendBody(
  outgoing: ClientRequest,
  body: HttpRequest['body'],
  req: HttpRequest,
  reject: (error: unknown) => void,
): void {
  if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) {
    outgoing.end(body);
    return;
  }
  // A streamed body: the request fails (and the source closes) if either side breaks.
  pipeline(body.open(), outgoing).catch((error: unknown) => {
    outgoing.destroy(error as Error);
    reject(lookupErrorFrom(error, req.what, req.signal));
  });
}

/** What `readAnswer` needs of the request it answers, and how to settle it. */
interface AnswerContext {
  method: string;
  url: URL;
  req: HttpRequest;
  streaming: boolean;
  resolve: (response: HttpResponse | StreamedHttpResponse) => void;
  reject: (error: unknown) => void;
}

/**
 * Settles a request with its answer: a successful body over the size limit is refused, a
 * streamed one handed over, any other read whole (an error body capped at 64 KiB).
 */
function readAnswer(res: IncomingMessage, ctx: AnswerContext): void {
  const { method, url, req, streaming, resolve, reject } = ctx;
  const signal = req.signal;
  const status = res.statusCode ?? 0;
  const declared = Number(res.headers['content-length']);
  const ok = isSuccessStatus(status);
  const tooLarge = () =>
    registryLookupError(
      'invalid-manifest',
      `${req.what} sent a body larger than ${req.maxBytes} bytes for "${url.pathname}"`,
    );
  // Only successful bodies matter; an error body is read for its message, capped.
  const limit = ok ? req.maxBytes : 64 * 1024;
  // A HEAD answer declares the size of what a GET would send, and sends nothing.
  if (ok && method !== 'HEAD' && Number.isFinite(declared) && declared > limit) {
    res.destroy();
    reject(tooLarge());
    return;
  }
  if (ok && streaming && method !== 'HEAD') {
    // The reader owns the body from here; a stall or a cut is its stream's error.
    res.on('error', () => {});
    resolve({ status, headers: res.headers, body: res, url: url.href });
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  res.on('data', (chunk: Buffer) => {
    if (truncated) return;
    size += chunk.length;
    if (size > limit) {
      if (limit === req.maxBytes) {
        res.destroy();
        reject(tooLarge());
        return;
      }
      truncated = true;
      chunks.push(chunk.subarray(0, chunk.length - (size - limit)));
      return;
    }
    chunks.push(chunk);
  });
  res.on('end', () =>
    resolve({ status, headers: res.headers, body: Buffer.concat(chunks), url: url.href }),
  );
  res.on('error', (error) => reject(lookupErrorFrom(error, req.what, signal)));
  res.on('close', () => {
    if (!res.complete) {
      reject(
        lookupErrorFrom(
          signal?.aborted
            ? signal.reason
            : registryLookupError(
                'unreachable',
                `Cannot reach ${req.what}: connection closed mid-body`,
              ),
          req.what,
          signal,
        ),
      );
    }
  });
}

const policyHint =
  'winfleet looks images up only on public registries and on the registries and mirrors its configuration names (images.mirrors)';

/** The error for a URL the address policy refuses; names the host and why, never more. */
function blockedAddress(what: string, url: URL, why: string) {
  return registryLookupError(
    'blocked-address',
    `${what} is not contacted: host "${url.host}" is ${why}; ${policyHint}`,
  );
}

/**
 * A DNS lookup that fails when any address of the name is forbidden, so the check applies to
 * the address connected to (and a name re-resolving to a private address is refused too).
 */
function checkedLookup(policy: AddressPolicy): LookupFunction {
  return function checkedLookup(hostname, options, callback) {
    dnsLookup(hostname, { ...options, all: true } as LookupAllOptions, (error, addresses) => {
      if (error) {
        callback(error, '', 0);
        return;
      }
      const list = addresses as LookupAddress[];
      for (const { address } of list) {
        const why = policy.forbiddenAddress(address);
        if (why !== undefined) {
          const refused = registryLookupError(
            'blocked-address',
            `Host "${hostname}" is not contacted: it resolves to ${address}, ${why}; ${policyHint}`,
          );
          callback(refused as unknown as NodeJS.ErrnoException, '', 0);
          return;
        }
      }
      if (options.all) callback(null, list as unknown as string);
      else callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
