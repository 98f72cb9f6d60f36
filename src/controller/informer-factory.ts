/**
 * One informer per resource type for the whole process, shared by every controller and the
 * webhook, so each kind is listed and watched once. Nodes are slimmed before they are cached.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log/logger.ts';
import { Informer, type InformerOptions, type ResourceType } from './informer.ts';

export const resources = {
  nodes: { apiVersion: 'v1', kind: 'Node', plural: 'nodes' },
  namespaces: { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces' },
  configMaps: { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps' },
  secrets: { apiVersion: 'v1', kind: 'Secret', plural: 'secrets' },
  pods: { apiVersion: 'v1', kind: 'Pod', plural: 'pods' },
  runtimeClasses: { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', plural: 'runtimeclasses' },
  csrs: {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    plural: 'certificatesigningrequests',
  },
} as const satisfies Record<string, ResourceType>;

/** Keeps what controllers read of a Node; drops images, volumes and the rest. */
export function slimNode(node: k8s.V1Node): k8s.V1Node {
  const m = node.metadata ?? {};
  const s = node.status;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: m.name,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      generation: m.generation,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      labels: m.labels,
      annotations: m.annotations,
    },
    spec: {
      taints: node.spec?.taints,
      unschedulable: node.spec?.unschedulable,
      providerID: node.spec?.providerID,
    },
    status: {
      // lastTransitionTime says since when a condition holds (health timeouts, the join's
      // NotReady wait); it changes only when the status does. The heartbeat time is dropped.
      conditions: s?.conditions?.map((c) => ({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: c.message,
        lastTransitionTime: c.lastTransitionTime,
      })),
      addresses: s?.addresses,
      nodeInfo: s?.nodeInfo,
    },
  };
}

/** True when the node's Ready condition is True. */
export function nodeIsReady(node: k8s.V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Creates informers on first use and hands out the same one afterwards. */
export class InformerFactory {
  readonly #kc: k8s.KubeConfig;
  readonly #log: Logger;
  readonly #informers = new Map<string, Informer<k8s.KubernetesObject>>();

  constructor(kc: k8s.KubeConfig, log: Logger) {
    this.#kc = kc;
    this.#log = log;
  }

  /** The shared informer for `resource` (optionally one namespace / selector). */
  get<T extends k8s.KubernetesObject>(
    resource: ResourceType,
    options: Omit<InformerOptions<T>, 'resource'> = {},
  ): Informer<T> {
    const key = [
      resource.apiVersion,
      resource.plural,
      options.namespace,
      options.labelSelector,
      options.fieldSelector,
    ].join('|');
    let informer = this.#informers.get(key) as Informer<T> | undefined;
    if (!informer) {
      const transform =
        options.transform ??
        (resource.kind === 'Node' ? (slimNode as unknown as (o: T) => T) : undefined);
      informer = new Informer<T>(this.#kc, {
        ...options,
        resource,
        transform,
        onError: (error) =>
          this.#log.warn('informer error; retrying', { resource: resource.plural, error }),
      });
      this.#informers.set(key, informer as unknown as Informer<k8s.KubernetesObject>);
    }
    return informer;
  }

  /** Objects cached per resource (plural), summed over namespaces and selectors. */
  objectCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const [key, informer] of this.#informers) {
      const plural = key.split('|')[1]!;
      counts.set(plural, (counts.get(plural) ?? 0) + informer.size);
    }
    return counts;
  }

  /** Starts every informer created so far and waits for their first lists. */
  async start(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((i) => i.start()));
  }

  stop(): void {
    for (const informer of this.#informers.values()) informer.stop();
  }
}
