/**
 * What a client-go reflector does for the simulated hosts' programs (kube-proxy's Services and
 * EndpointSlices, flanneld's Nodes), with the program's own credentials against the real API
 * server: list, then watch from the list's resourceVersion, resumed from the last version seen
 * when the server ends it; an error is reported and the list tried again after a backoff that
 * doubles up to a limit (client-go's reflector backoff); a 410 Gone lists again at once.
 * Bookmarks only move the version. Every request is bounded; nothing escapes unhandled.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { isGone } from '../../src/kube/client.ts';

export interface ReflectorOptions<T extends k8s.KubernetesObject> {
  kc: k8s.KubeConfig;
  /** The watch path, e.g. "/api/v1/nodes". */
  path: string;
  labelSelector?: string;
  /** One list request with these selectors. */
  list: (query: { labelSelector?: string }) => Promise<{ items: T[]; metadata?: k8s.V1ListMeta }>;
  /** Filled by key, emptied and refilled at each list. */
  store: Map<string, T>;
  signal: AbortSignal;
  /** The server-side timeout of each watch, after which it is resumed. */
  watchTimeoutSeconds: number;
  /** First and longest wait after an error. */
  retryMinMs: number;
  retryMaxMs: number;
  /** After each successful list. */
  onSynced?: () => void;
  /** After each list and each event that changed the store. */
  onChange?: () => void;
  /** Each failed list or watch (not a 410, not the end of the program). */
  onFailure?: (error: unknown) => void;
}

/** "namespace/name", or "name" for a cluster-scoped object. */
export function storeKey(object: k8s.KubernetesObject): string {
  const namespace = object.metadata?.namespace;
  return namespace ? `${namespace}/${object.metadata?.name}` : String(object.metadata?.name);
}

/** Lists and watches until the signal aborts; see the module comment. */
export async function reflect<T extends k8s.KubernetesObject>(
  options: ReflectorOptions<T>,
): Promise<void> {
  const { signal, store } = options;
  let backoff = options.retryMinMs;
  // The version the store is at; undefined: list (again) first.
  let resourceVersion: string | undefined;
  while (!signal.aborted) {
    try {
      if (resourceVersion === undefined) {
        const query = options.labelSelector ? { labelSelector: options.labelSelector } : {};
        const listed = await options.list(query);
        store.clear();
        for (const item of listed.items) store.set(storeKey(item), item);
        resourceVersion = listed.metadata?.resourceVersion ?? '';
        options.onSynced?.();
        backoff = options.retryMinMs;
        options.onChange?.();
      }
      // A watch the server ended is resumed from the last version seen, as a reflector does.
      await watchOnce(options, resourceVersion, (event, object) => {
        const seen = (object as T).metadata?.resourceVersion;
        if (seen) resourceVersion = seen;
        if (event === 'BOOKMARK') return;
        if (event === 'DELETED') store.delete(storeKey(object as T));
        else store.set(storeKey(object as T), object as T);
        options.onChange?.();
      });
    } catch (error) {
      if (signal.aborted) break;
      resourceVersion = undefined;
      if (!isGone(error)) {
        options.onFailure?.(error);
        await sleep(backoff, undefined, { signal }).catch(() => {});
        backoff = Math.min(backoff * 2, options.retryMaxMs);
      }
    }
  }
}

/** One watch from `resourceVersion`, until the server ends it, it fails or the program stops. */
function watchOnce<T extends k8s.KubernetesObject>(
  options: ReflectorOptions<T>,
  resourceVersion: string | undefined,
  onEvent: (event: string, object: unknown) => void,
): Promise<void> {
  const { signal, watchTimeoutSeconds: timeoutSeconds } = options;
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    let controller: AbortController | undefined;
    let settled = false;
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      signal.removeEventListener('abort', stop);
      controller?.abort();
      if (error) reject(error);
      else resolve();
    };
    const stop = () => finish();
    // The server ends the watch after timeoutSeconds; a stalled connection is cut after 30 s
    // by client-node (a TimeoutError, logged and retried).
    const guard = setTimeout(() => finish(), (timeoutSeconds + 30) * 1000);
    signal.addEventListener('abort', stop, { once: true });
    new k8s.Watch(options.kc)
      .watch(
        options.path,
        {
          ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
          allowWatchBookmarks: true,
          timeoutSeconds,
          ...(resourceVersion ? { resourceVersion } : {}),
        },
        (event: string, object: unknown) => {
          if (settled) return;
          if (event === 'ERROR') {
            const status = object as { code?: number; message?: string };
            finish(
              Object.assign(new Error(status.message ?? 'watch error'), { code: status.code }),
            );
            return;
          }
          onEvent(event, object);
        },
        (error: unknown) => finish(error ?? undefined),
      )
      .then(
        (c) => {
          controller = c;
          if (settled) c.abort();
        },
        (error: unknown) => finish(error),
      );
  });
}
