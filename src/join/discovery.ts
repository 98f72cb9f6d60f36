/**
 * Token discovery as kubeadm does it (cmd/kubeadm/app/discovery/token/token.go): read
 * `kube-public/cluster-info` anonymously over TLS without trusting the server, verify it
 * (cluster-info.ts: the token's JWS, one cluster, the CA pin), then read it again over TLS that
 * trusts the pinned CA only and require the same kubeconfig. From then on the host talks to the
 * cluster through that CA and nothing else (`ca` replaces Node's default roots).
 *
 * While cluster-info cannot be read or has no signature for the token yet (the bootstrapsigner
 * adds it a moment after the token is made), discovery retries with backoff, as kubeadm polls;
 * a refusal (a forged or changed cluster-info, another CA) ends it at once.
 */
import { request } from 'node:https';
import { WinfleetError } from '../errors/catalog.ts';
import { userAgents } from '../kube/user-agent.ts';
import { isNotFoundStatus, isOkStatus, isRefusedStatus } from '../net/http-status.ts';
import {
  clusterInfoKubeconfigKey,
  clusterInfoName,
  clusterInfoNamespace,
  jwsKeyPrefix,
  type TrustedClusterInfo,
  trustClusterInfo,
} from './cluster-info.ts';
import type { JoinToken } from './join-command-values.ts';
import { type BackoffPolicy, type RetryOptions, retryWithBackoff } from './retry-with-backoff.ts';

export interface DiscoveryOptions {
  /** The API server URL the join command names (https://…). */
  apiServer: string;
  token: JoinToken;
  /** The pin, canonical "sha256:<hex>" (join-token.ts parseCaCertHash). */
  caCertHash: string;
  signal?: AbortSignal;
  /** How long to keep trying while cluster-info is unreadable or unsigned. Default: 5 minutes. */
  backoff?: BackoffPolicy;
  onRetry?: RetryOptions['onRetry'];
}

/** A response larger than this is not a cluster-info. */
const maxBodyBytes = 1024 * 1024;
const requestTimeoutMs = 15_000;

/** The URL of cluster-info under `apiServer` (which may carry a path prefix). */
export function clusterInfoUrl(apiServer: string): URL {
  const base = apiServer.replace(/\/+$/, '');
  return new URL(`${base}/api/v1/namespaces/${clusterInfoNamespace}/configmaps/${clusterInfoName}`);
}

/** How to trust the server: not at all (the first read), or only through the pinned CA. */
export type ServerTrust = { kind: 'none' } | { kind: 'pinned'; caPem: string };

/** Node's codes for a certificate the trusted CAs do not vouch for. */
function isCertificateError(code: unknown): boolean {
  return (
    typeof code === 'string' && /CERT|SIGNATURE|ISSUER|ALTNAME|SELF_SIGNED|UNABLE_TO/.test(code)
  );
}

/** GETs cluster-info's `data`; errors say whether waiting may help (the catalog code). */
export async function readClusterInfoData(
  apiServer: string,
  trust: ServerTrust,
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const url = clusterInfoUrl(apiServer);
  const { status, body } = await httpsGet(url, trust, signal);
  const shown = `${url.origin}${url.pathname}`;
  if (isNotFoundStatus(status)) {
    throw new WinfleetError(
      'WF_JOIN_DISCOVERY_PENDING',
      `${shown} answered 404: the cluster has no ${clusterInfoNamespace}/${clusterInfoName}; the winfleet operator creates it (kubeadm clusters have one): check that the operator runs`,
    );
  }
  if (isRefusedStatus(status)) {
    throw new WinfleetError(
      'WF_JOIN_DISCOVERY_PENDING',
      `${shown} answered ${status}: the cluster does not let anonymous clients read ${clusterInfoNamespace}/${clusterInfoName}; grant get on it to system:anonymous (kubeadm's Role kubeadm:bootstrap-signer-clusterinfo) and check kube-apiserver --anonymous-auth`,
    );
  }
  if (!isOkStatus(status)) {
    throw new WinfleetError('WF_CLUSTER_UNREACHABLE', `${shown} answered HTTP ${status}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new WinfleetError('WF_JOIN_REFUSED', `${shown} answered with something not JSON`);
  }
  const data = (value as { data?: unknown } | null)?.data;
  if (
    typeof data !== 'object' ||
    data === null ||
    Array.isArray(data) ||
    Object.values(data).some((v) => typeof v !== 'string')
  ) {
    throw new WinfleetError(
      'WF_JOIN_REFUSED',
      `${shown} answered with no ConfigMap data of strings; refusing to trust this API server`,
    );
  }
  return data as Record<string, string>;
}

function httpsGet(
  url: URL,
  trust: ServerTrust,
  signal?: AbortSignal,
): Promise<{ status: number; body: string }> {
  const shown = `${url.origin}${url.pathname}`;
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'GET',
      // Never a pooled connection: one made without verification must not carry a pinned read.
      agent: false,
      rejectUnauthorized: trust.kind === 'pinned',
      ...(trust.kind === 'pinned' ? { ca: trust.caPem } : {}),
      headers: { accept: 'application/json', 'user-agent': userAgents.agent },
      timeout: requestTimeoutMs,
      ...(signal ? { signal } : {}),
    });
    req.on('timeout', () =>
      req.destroy(
        new WinfleetError(
          'WF_CLUSTER_UNREACHABLE',
          `Cannot read ${shown}: no answer within ${requestTimeoutMs} ms`,
        ),
      ),
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (signal?.aborted) return reject(signal.reason);
      if (error instanceof WinfleetError) return reject(error);
      if (trust.kind === 'pinned' && isCertificateError(error.code)) {
        return reject(
          new WinfleetError(
            'WF_JOIN_REFUSED',
            `${shown}: the server's certificate is not vouched for by the pinned cluster CA (${error.code}); refusing to go on: something between this host and the cluster presents another certificate`,
            { cause: error },
          ),
        );
      }
      reject(
        new WinfleetError(
          'WF_CLUSTER_UNREACHABLE',
          `Cannot read ${shown}: ${error.code ?? error.message}`,
          { cause: error },
        ),
      );
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBodyBytes) {
          req.destroy();
          return reject(
            new WinfleetError(
              'WF_JOIN_REFUSED',
              `${shown} answered with more than ${maxBodyBytes} bytes; a cluster-info is small`,
            ),
          );
        }
        chunks.push(chunk);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.end();
  });
}

/** Reads cluster-info until it has the token's signature (retrying while it cannot). */
async function readSigned(
  options: DiscoveryOptions,
  trust: ServerTrust,
): Promise<Record<string, string>> {
  const key = `${jwsKeyPrefix}${options.token.id}`;
  return retryWithBackoff(
    async () => {
      const data = await readClusterInfoData(options.apiServer, trust, options.signal);
      if (!data[key]) {
        throw new WinfleetError(
          'WF_JOIN_DISCOVERY_PENDING',
          `${clusterInfoNamespace}/${clusterInfoName} has no signature for token id "${options.token.id}" (${key}): the token is unknown, expired, lacks usage-bootstrap-signing, or the controller manager's bootstrapsigner has not signed it yet`,
        );
      }
      return data;
    },
    {
      initialDelayMs: 1000,
      maxDelayMs: 10_000,
      maxElapsedMs: 5 * 60_000,
      maxAttempts: 60,
      ...options.backoff,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    },
  );
}

/** Discovers and pins the cluster; throws WF_JOIN_REFUSED when it cannot be trusted. */
export async function discoverCluster(options: DiscoveryOptions): Promise<TrustedClusterInfo> {
  const unverified = await readSigned(options, { kind: 'none' });
  const trusted = trustClusterInfo(unverified, options.token, options.caCertHash);
  const verified = await readSigned(options, { kind: 'pinned', caPem: trusted.caPem });
  if (verified[clusterInfoKubeconfigKey] !== trusted.kubeconfig) {
    throw new WinfleetError(
      'WF_JOIN_REFUSED',
      `${clusterInfoNamespace}/${clusterInfoName} read over the pinned CA differs from the first read; refusing to go on`,
    );
  }
  return trusted;
}
