/**
 * The HTTP underneath the registry client: GET and POST over node:http/https with keep-alive
 * agents per TLS setting (an extra CA bundle, or no verification for registries marked
 * insecure), bodies read up to a size limit, a bounded number of redirects (blob downloads go
 * to storage or CDN hosts; credentials are never sent to another origin), and cancellation
 * through an AbortSignal.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import { lookupErrorFrom, registryLookupError } from './registry-lookup-error.ts';

/** TLS settings for talking to one registry endpoint. */
export interface TlsSettings {
  /** PEM CA certificates trusted in addition to the system roots. */
  caBundle?: string;
  /** Skip certificate verification (insecure registries only). */
  skipTlsVerify?: boolean;
}

export interface HttpRequest {
  method?: 'GET' | 'HEAD' | 'POST';
  url: string;
  headers?: Record<string, string>;
  body?: string;
  tls?: TlsSettings;
  /** Largest body read; a larger one fails with reason "invalid-manifest". */
  maxBytes: number;
  /** Redirects followed at most (default 5). */
  maxRedirects?: number;
  signal?: AbortSignal;
  /** Names the target in error messages, e.g. `registry "https://mcr.microsoft.com"`. */
  what: string;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The URL that answered, after redirects. */
  url: string;
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/** Sends requests with pooled connections; `close()` ends the pools. */
export class RegistryHttp {
  readonly #agents = new Map<string, HttpAgent>();
  readonly #userAgent: string;

  constructor(userAgent = 'winfleet') {
    this.#userAgent = userAgent;
  }

  #agent(protocol: string, tls: TlsSettings | undefined): HttpAgent {
    const key = `${protocol}|${tls?.skipTlsVerify ? 'skip' : ''}|${tls?.caBundle ?? ''}`;
    let agent = this.#agents.get(key);
    if (!agent) {
      agent =
        protocol === 'https:'
          ? new HttpsAgent({
              keepAlive: true,
              maxSockets: 32,
              rejectUnauthorized: !tls?.skipTlsVerify,
              ...(tls?.caBundle ? { ca: [...rootCertificates, tls.caBundle] } : {}),
            })
          : new HttpAgent({ keepAlive: true, maxSockets: 32 });
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /** Sends `req`, following redirects; rejects with a WF_REGISTRY_LOOKUP error. */
  async send(req: HttpRequest): Promise<HttpResponse> {
    let url = new URL(req.url);
    let headers = { 'user-agent': this.#userAgent, ...req.headers };
    let method = req.method ?? 'GET';
    let body = req.body;
    const maxRedirects = req.maxRedirects ?? 5;
    for (let hop = 0; ; hop++) {
      const response = await this.#once(method, url, headers, body, req);
      const location = response.headers.location;
      if (!redirectStatuses.has(response.status) || !location) return response;
      if (hop >= maxRedirects) {
        throw registryLookupError(
          'registry-error',
          `${req.what} redirected more than ${maxRedirects} times (last to "${location}")`,
        );
      }
      const next = new URL(location, url);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        throw registryLookupError(
          'registry-error',
          `${req.what} redirected to "${location}", which is not HTTP(S)`,
        );
      }
      if (next.origin !== url.origin) {
        const { authorization: _dropped, ...rest } = headers as Record<string, string>;
        headers = rest as typeof headers;
      }
      if (response.status === 303 || (method === 'POST' && response.status <= 302)) {
        method = 'GET';
        body = undefined;
      }
      url = next;
    }
  }

  #once(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    req: HttpRequest,
  ): Promise<HttpResponse> {
    const signal = req.signal;
    return new Promise<HttpResponse>((resolve, reject) => {
      if (signal?.aborted) {
        reject(lookupErrorFrom(signal.reason, req.what, signal));
        return;
      }
      const isHttps = url.protocol === 'https:';
      const outgoing = (isHttps ? httpsRequest : httpRequest)(
        url,
        {
          method,
          headers:
            body === undefined
              ? headers
              : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          agent: this.#agent(url.protocol, req.tls),
          ...(signal ? { signal } : {}),
        },
        (res) => {
          const status = res.statusCode ?? 0;
          const declared = Number(res.headers['content-length']);
          const tooLarge = () =>
            registryLookupError(
              'invalid-manifest',
              `${req.what} sent a body larger than ${req.maxBytes} bytes for "${url.pathname}"`,
            );
          // Only successful bodies matter; an error body is read for its message, capped.
          const limit = status >= 200 && status < 300 ? req.maxBytes : 64 * 1024;
          if (status >= 200 && status < 300 && Number.isFinite(declared) && declared > limit) {
            res.destroy();
            reject(tooLarge());
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
              reject(lookupErrorFrom(new Error('connection closed mid-body'), req.what, signal));
            }
          });
        },
      );
      outgoing.on('error', (error) => reject(lookupErrorFrom(error, req.what, signal)));
      outgoing.end(body);
    });
  }

  /** Closes pooled connections. */
  close(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }
}
