/**
 * Whether the cluster takes bootstrap tokens: the API server authenticates a new token only
 * with bootstrap-token authentication on (kube-apiserver --enable-bootstrap-token-auth), which
 * some managed offerings leave off. Asked the way a joining host would find out, by using the
 * token: a SelfSubjectReview (authentication.k8s.io/v1) made with it. The authenticator reads
 * token Secrets from a cache, so a 401 is asked again for a few seconds before it counts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { httpStatus } from '../kube/client.ts';
import { isNotFoundStatus, isUnauthorizedStatus } from '../net/http-status.ts';

export type TokenAuthentication =
  | { outcome: 'authenticated'; user: k8s.V1UserInfo }
  /** 401 for as long as it was asked: the cluster does not take bootstrap tokens. */
  | { outcome: 'refused' }
  /** The API server has no SelfSubjectReview (before Kubernetes 1.28): not known. */
  | { outcome: 'unknown'; why: string };

/** A client of `kc`'s cluster (server and CA) that authenticates with `token` alone. */
export function tokenKubeConfig(kc: k8s.KubeConfig, token: string): k8s.KubeConfig {
  const cluster = kc.getCurrentCluster()!;
  const tokenKc = new k8s.KubeConfig();
  tokenKc.loadFromOptions({
    clusters: [{ ...cluster, name: 'cluster' }],
    users: [{ name: 'join-token', token }],
    contexts: [{ name: 'join', cluster: 'cluster', user: 'join-token' }],
    currentContext: 'join',
  });
  return tokenKc;
}

/** Asks the API server who `token` is, for up to `timeoutMs` while it answers 401. */
export async function bootstrapTokenAuthentication(
  kc: k8s.KubeConfig,
  token: string,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<TokenAuthentication> {
  const api = tokenKubeConfig(kc, token).makeApiClient(k8s.AuthenticationV1Api);
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    try {
      const review = await api.createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      return { outcome: 'authenticated', user: review.status?.userInfo ?? {} };
    } catch (error) {
      const status = httpStatus(error);
      if (isNotFoundStatus(status)) {
        return { outcome: 'unknown', why: 'the API server has no SelfSubjectReview API' };
      }
      if (!isUnauthorizedStatus(status)) throw error;
    }
    if (Date.now() >= deadline) return { outcome: 'refused' };
    await sleep(options.intervalMs ?? 250);
  }
}
