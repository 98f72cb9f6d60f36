/**
 * One informer per resource type for the whole process, shared by every controller and the
 * webhook, so each kind is listed and watched once. Nodes are slimmed before they are cached.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  Informer,
  type InformerOptions,
  type ResourceType,
} from '../controller-runtime/informer.ts';
import { SharedValues } from '../controller-runtime/shared-values.ts';
import { apiTime } from '../kube/api-time.ts';
import type { Logger } from '../log/logger.ts';

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

/** The strings Nodes repeat (label keys and values, reasons, versions, times), shared. */
const shared = new SharedValues();
/** A Node's spec when it is schedulable: one frozen object for all of them. */
const schedulableSpec: k8s.V1NodeSpec = Object.freeze({});

/** An API time as the API server writes it (RFC 3339, seconds), one shared copy. */
function sharedApiTime(value: Date | string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return shared.string(typeof value === 'string' ? value : apiTime(value));
}

/** A string map (labels, annotations) with its keys and values shared; `own` stays as is. */
function sharedMap(
  map: Record<string, string> | undefined,
  own: string | undefined,
): Record<string, string> | undefined {
  if (map === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(map)) {
    out[shared.string(key)] = value === own ? own : shared.string(value);
  }
  return out;
}

/**
 * unschedulable, and winfleet's own taints (winfleet.io/…, such as the pre-pull taint the
 * operator lifts); the others are dropped.
 */
function slimSpec(spec: k8s.V1NodeSpec | undefined): k8s.V1NodeSpec {
  const taints = spec?.taints?.filter((t) => t.key?.startsWith('winfleet.io/')) ?? [];
  if (taints.length === 0) return spec?.unschedulable ? { unschedulable: true } : schedulableSpec;
  return {
    ...(spec?.unschedulable ? { unschedulable: true } : {}),
    taints: shared.frozen(
      taints.map((t) => ({
        key: shared.string(t.key),
        effect: shared.string(t.effect),
        ...(t.value !== undefined ? { value: shared.string(t.value) } : {}),
      })),
    ),
  };
}

/**
 * Keeps what the operator reads of a Node (controllers, webhook, dashboard, CLI) and drops
 * the rest: images, volumes, capacity, taints but winfleet's, heartbeat times, managed fields. What is kept
 * shares its repeated strings (StringInterner), so 10,000 Nodes hold one copy of each reason,
 * label and version; times become the API's text whether the Node came from a list (Date) or
 * a watch (string).
 */
export function slimNode(node: k8s.V1Node): k8s.V1Node {
  const m = node.metadata ?? {};
  const s = node.status;
  const info = s?.nodeInfo;
  const name = m.name;
  const slim: k8s.V1Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: sharedApiTime(m.creationTimestamp) as unknown as Date,
      labels: sharedMap(m.labels, name),
      annotations: shared.frozen(sharedMap(m.annotations, undefined)),
    },
    spec: slimSpec(node.spec),
    status: {
      // lastTransitionTime says since when a condition holds (health timeouts, the join's
      // NotReady wait); it changes only when the status does. The heartbeat time is dropped.
      conditions: shared.frozen(
        s?.conditions?.map((c) => ({
          type: shared.string(c.type),
          status: shared.string(c.status),
          reason: shared.string(c.reason),
          message: shared.string(c.message),
          lastTransitionTime: sharedApiTime(c.lastTransitionTime) as unknown as Date,
        })),
      ),
      addresses: shared.frozen(
        s?.addresses?.map((a) => ({
          type: shared.string(a.type),
          address: a.address === name ? name : shared.string(a.address),
        })),
      ),
      nodeInfo: shared.frozen(
        info &&
          ({
            bootID: info.bootID,
            kernelVersion: shared.string(info.kernelVersion),
            kubeletVersion: shared.string(info.kubeletVersion),
            kubeProxyVersion: shared.string(info.kubeProxyVersion),
            containerRuntimeVersion: shared.string(info.containerRuntimeVersion),
            operatingSystem: shared.string(info.operatingSystem),
          } as k8s.V1NodeSystemInfo),
      ),
    },
  };
  if (m.deletionTimestamp) {
    slim.metadata!.deletionTimestamp = sharedApiTime(m.deletionTimestamp) as unknown as Date;
  }
  return slim;
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
