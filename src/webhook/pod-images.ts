/**
 * Looks up the OS versions of a pod's images for admission: every container's image, with
 * the pod's imagePullSecrets and its service account's, through the shared resolver (mirrors,
 * cache, time budget). Secrets are read only when a pod names them, cached for a few seconds,
 * and never logged.
 */
import * as k8s from '@kubernetes/client-node';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import type { DockerConfigSource } from '../images/docker-config.ts';
import {
  createImagePlatformResolver,
  type ImageLookupObserver,
  type ImagePlatformResolver,
  windowsOsVersions,
} from '../images/image-platforms.ts';
import { cachedApiRead } from './cached-api-read.ts';
import type { ImageFacts } from './placement.ts';
import type { PodImageResolver } from './pod-admission.ts';
import { podContainers } from './pod-os.ts';

/** Builds the resolver for the current configuration's mirrors and cache settings. */
export function resolverFor(
  config: WinfleetConfig,
  observer?: ImageLookupObserver,
): ImagePlatformResolver {
  return createImagePlatformResolver({
    mirrors: config.images.mirrors,
    fallbackToUpstream: config.images.fallbackToUpstream,
    // Besides loopback, private and link-local ranges: a pod must not reach cluster Services.
    blockedCidrs: [config.hosts.serviceCIDR, config.hosts.podCIDR],
    lookupTimeoutMs: config.images.lookupBudgetMs,
    cache: {
      maxEntries: config.images.cacheMaxEntries,
      tagTtlMs: config.images.cacheTtlSeconds * 1000,
    },
    observer,
    userAgent: 'winfleet-webhook',
  });
}

/** Where a pod's pull secrets come from (decoded .dockerconfigjson documents). */
export type PullSecretSource = (pod: k8s.V1Pod, namespace: string) => Promise<DockerConfigSource[]>;

/**
 * Pull secrets from the API: the pod's imagePullSecrets and its service account's, read only
 * when named and cached for a few seconds, each read waiting at most a second. `namespaces` limits where they are read (the
 * namespaces the operator may read Secrets and ServiceAccounts in); pods elsewhere are looked
 * up without credentials, and nothing is asked of the API for them.
 */
export function apiPullSecrets(
  kc: k8s.KubeConfig,
  namespaces: 'all' | readonly string[] = 'all',
): PullSecretSource {
  const readable = (namespace: string) => namespaces === 'all' || namespaces.includes(namespace);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  // Each read waits at most a second (cached-api-read.ts): an API server that does not answer
  // must not hold the admission; the last value read is used meanwhile.
  const reads = { ttlMs: 5000, deadlineMs: 1000, maxEntries: 1000 };
  const secret = cachedApiRead<DockerConfigSource | undefined>(
    async (key) => {
      const [namespace, name] = key.split('/') as [string, string];
      const s = await core.readNamespacedSecret({ name, namespace });
      const data = s.data?.['.dockerconfigjson'] ?? s.data?.['.dockercfg'];
      if (!data) return undefined;
      return { source: `secret ${key}`, config: Buffer.from(data, 'base64').toString('utf8') };
    },
    { ...reads, fallback: undefined },
  );
  const serviceAccountSecrets = cachedApiRead<string[]>(
    async (key) => {
      const [namespace, name] = key.split('/') as [string, string];
      const sa = await core.readNamespacedServiceAccount({ name, namespace });
      return (sa.imagePullSecrets ?? []).map((r) => r.name ?? '').filter(Boolean);
    },
    { ...reads, fallback: [] },
  );

  return async (pod, namespace) => {
    if (!readable(namespace)) return [];
    const names = new Set(
      (pod.spec?.imagePullSecrets ?? []).map((r) => r.name ?? '').filter(Boolean),
    );
    for (const n of await serviceAccountSecrets(
      `${namespace}/${pod.spec?.serviceAccountName ?? 'default'}`,
    ))
      names.add(n);
    return (await Promise.all([...names].map((n) => secret(`${namespace}/${n}`)))).filter(
      (s): s is DockerConfigSource => s !== undefined,
    );
  };
}

/** A PodImageResolver: every container image of the pod, through `resolver()`. */
export function podImageResolver(
  resolver: () => ImagePlatformResolver,
  pullSecrets?: PullSecretSource,
): PodImageResolver {
  return async (pod, namespace, signal) => {
    const secrets = pullSecrets ? await pullSecrets(pod, namespace) : [];
    const current = resolver();
    return Promise.all(
      podContainers(pod)
        .filter(({ container }) => container.image)
        .map(async ({ path, container }): Promise<ImageFacts> => {
          const image = container.image!;
          const result = await current.resolveImagePlatforms(
            image,
            { pullSecrets: secrets },
            signal,
          );
          if (result.status === 'unknown') {
            return {
              image,
              path: `${path}.image`,
              state: 'unknown',
              reason: result.message,
              windowsVersions: [],
              hasOtherOs: false,
            };
          }
          return {
            image,
            path: `${path}.image`,
            state: 'resolved',
            windowsVersions: windowsOsVersions(result.platforms),
            hasOtherOs: result.platforms.some((p) => p.os !== 'windows'),
          };
        }),
    );
  };
}
