/**
 * Why an image lookup found no answer. Inside src/images failures are thrown as WinfleetErrors
 * with code WF_REGISTRY_LOOKUP and the reason in `details`; the resolver turns them into an "unknown" result, so the webhook never
 * has to catch anything for network trouble.
 */
import { hasCode, WinfleetError } from '../errors/catalog.ts';

/** Why a lookup ended without platforms. */
export type LookupFailureReason =
  /** The image reference cannot be parsed. */
  | 'invalid-reference'
  /** The time budget ran out. */
  | 'timeout'
  /** The caller's signal was aborted for another reason than a timeout. */
  | 'aborted'
  /** The address policy refused the host (loopback, private, link-local, cluster ranges). */
  | 'blocked-address'
  /** No connection: refused, reset, DNS failure. */
  | 'unreachable'
  /** TLS handshake or certificate verification failed. */
  | 'tls-error'
  /** The registry or its token service refused the credentials (or their absence). */
  | 'unauthorized'
  /** No such repository, tag or digest. */
  | 'not-found'
  /** A manifest or config that cannot be read, is too large, or does not match its digest. */
  | 'invalid-manifest'
  /** Any other answer: 5xx, 429, an unexpected status, a broken token response. */
  | 'registry-error';

/** What a WF_REGISTRY_LOOKUP error carries: why the lookup failed. */
export interface RegistryLookupDetails {
  readonly reason: LookupFailureReason;
}

/** A lookup failure (code WF_REGISTRY_LOOKUP); `details.reason` is always there. */
export type RegistryLookupError = WinfleetError<RegistryLookupDetails> & {
  readonly details: RegistryLookupDetails;
};

/** A lookup failure with its reason; messages say what failed and quote the value. */
export function registryLookupError(
  reason: LookupFailureReason,
  message: string,
  options?: { cause?: unknown },
): RegistryLookupError {
  return new WinfleetError<RegistryLookupDetails>('WF_REGISTRY_LOOKUP', message, {
    ...options,
    details: { reason },
  }) as RegistryLookupError;
}

/** True for an error `registryLookupError` made. */
export function isRegistryLookupError(error: unknown): error is RegistryLookupError {
  return (
    hasCode(error, 'WF_REGISTRY_LOOKUP') && (error as RegistryLookupError).details !== undefined
  );
}

const tlsCodes =
  /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED_CERT|HOSTNAME_MISMATCH|ERR_OSSL)/;

/**
 * Classifies an error thrown while talking to `what` (e.g. `registry "http://127.0.0.1:5000"`),
 * using `signal` to tell a timeout from a cancellation.
 */
export function lookupErrorFrom(
  error: unknown,
  what: string,
  signal?: AbortSignal,
): RegistryLookupError {
  if (isRegistryLookupError(error)) return error;
  if (signal?.aborted) {
    const reason = signal.reason as { name?: string } | undefined;
    return reason?.name === 'TimeoutError'
      ? registryLookupError('timeout', `Timed out waiting for ${what}`, { cause: error })
      : registryLookupError('aborted', `Lookup at ${what} was cancelled`, { cause: error });
  }
  const code = String((error as NodeJS.ErrnoException)?.code ?? '');
  // Connecting to a name with several addresses fails with an AggregateError and no message.
  const inner = error instanceof AggregateError ? error.errors[0] : undefined;
  const message = (error as Error)?.message || (inner as Error)?.message || String(error);
  if (tlsCodes.test(code)) {
    return registryLookupError(
      'tls-error',
      `TLS with ${what} failed: ${message} (${code}); check its CA bundle`,
      {
        cause: error,
      },
    );
  }
  return registryLookupError(
    'unreachable',
    `Cannot reach ${what}: ${message}${code && !message.includes(code) ? ` (${code})` : ''}`,
    { cause: error },
  );
}
