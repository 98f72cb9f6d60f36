/**
 * An undici interceptor on the API client's connection pool: it sets winfleet's User-Agent
 * on every request and counts each request once, by verb, resource and status code, when its
 * response starts (a watch counts when it opens) or when it fails without a response.
 */
import type { Dispatcher } from 'undici';
import { isFinalStatus } from '../net/http-status.ts';
import { requestKind } from './request-kind.ts';

export type RequestCount = (verb: string, resource: string, code: string) => void;

/** `headers` with user-agent set to `userAgent` (any casing of it replaced). */
export function withUserAgent(
  headers: Dispatcher.DispatchOptions['headers'],
  userAgent: string,
): Record<string, string | string[] | number | undefined> {
  const out: Record<string, string | string[] | number | undefined> = {};
  const put = (name: string, value: string | string[] | number | undefined) => {
    if (name.toLowerCase() !== 'user-agent') out[name] = value;
  };
  if (Array.isArray(headers)) {
    // The flat form: name, value, name, value…
    for (let i = 0; i + 1 < headers.length; i += 2) put(String(headers[i]), headers[i + 1]);
  } else if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [name, value] of headers as Iterable<[string, string | string[] | undefined]>) {
      put(name, value);
    }
  } else if (headers) {
    for (const [name, value] of Object.entries(headers)) put(name, value);
  }
  out['user-agent'] = userAgent;
  return out;
}

/** @package */
export function countingInterceptor(
  userAgent: string,
  count: RequestCount,
): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) => {
    const { verb, resource } = requestKind(options.method, options.path);
    const next = { ...options, headers: withUserAgent(options.headers, userAgent) };
    let counted = false;
    const countOnce = (code: string) => {
      if (counted) return;
      counted = true;
      count(verb, resource, code);
    };
    return dispatch(next, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onRequestUpgrade: (controller, statusCode, headers, socket) => {
        countOnce(String(statusCode));
        return handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
      },
      onResponseStart: (controller, statusCode, headers, statusMessage) => {
        // 1xx interim responses come before the final one.
        if (isFinalStatus(statusCode)) countOnce(String(statusCode));
        return handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
      },
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, error) => {
        countOnce('error');
        return handler.onResponseError?.(controller, error);
      },
    });
  };
}
