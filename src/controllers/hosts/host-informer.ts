/**
 * Which WindowsHosts the operator acts on: those in its own namespace, plus the namespaces
 * the configuration opts in (hosts.namespaces) — never the whole cluster. A WindowsHost can
 * name any SSH server and node name, so whoever may create one has a say in which machines
 * join the cluster; watching only chosen namespaces keeps that with the namespaces' admins.
 * A WindowsHost elsewhere is not seen at all: no status, no Event.
 */
import type * as k8s from '@kubernetes/client-node';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import type { IndexFunction } from '../../controller-runtime/index-store.ts';
import { Informer, type ResourceType } from '../../controller-runtime/informer.ts';
import type { InformerFactory } from '../../controller-runtime/informer-factory.ts';

/**
 * One informer per namespace, read as one: keys are "namespace/name", so each key has one
 * home. It is an Informer so every consumer of the host cache takes it unchanged; the base
 * instance itself never lists or watches.
 */
class NamespacesInformer<T extends k8s.KubernetesObject> extends Informer<T> {
  readonly #parts: Map<string, Informer<T>>;

  constructor(kc: k8s.KubeConfig, resource: ResourceType, parts: Map<string, Informer<T>>) {
    super(kc, { resource });
    this.#parts = parts;
  }

  override on(event: 'add' | 'delete', handler: (object: T) => void): this;
  override on(event: 'update', handler: (object: T, old: T) => void): this;
  override on(event: 'add' | 'update' | 'delete', handler: (object: T, old: T) => void): this {
    for (const part of this.#parts.values()) part.on(event as 'update', handler);
    return this;
  }

  override get(key: string): T | undefined {
    return this.#parts.get(key.split('/')[0]!)?.get(key);
  }

  override list(): T[] {
    return [...this.#parts.values()].flatMap((part) => part.list());
  }

  override get size(): number {
    let n = 0;
    for (const part of this.#parts.values()) n += part.size;
    return n;
  }

  override addIndex(name: string, fn: IndexFunction<T>): this {
    for (const part of this.#parts.values()) part.addIndex(name, fn);
    return this;
  }

  override hasIndex(name: string): boolean {
    return [...this.#parts.values()].every((part) => part.hasIndex(name));
  }

  override byIndex(name: string, value: string): T[] {
    return [...this.#parts.values()].flatMap((part) => part.byIndex(name, value));
  }

  override firstByIndex(name: string, value: string): T | undefined {
    for (const part of this.#parts.values()) {
      const found = part.firstByIndex(name, value);
      if (found) return found;
    }
    return undefined;
  }

  override findByIndex(name: string, value: string, accept: (object: T) => boolean): T | undefined {
    for (const part of this.#parts.values()) {
      const found = part.findByIndex(name, value, accept);
      if (found) return found;
    }
    return undefined;
  }

  override reindex(name: string): void {
    for (const part of this.#parts.values()) part.reindex(name);
  }

  override countByIndex(name: string, value: string): number {
    let n = 0;
    for (const part of this.#parts.values()) n += part.countByIndex(name, value);
    return n;
  }

  override indexValues(name: string): string[] {
    return [...new Set([...this.#parts.values()].flatMap((part) => part.indexValues(name)))];
  }

  override async whenSynced(): Promise<void> {
    await Promise.all([...this.#parts.values()].map((part) => part.whenSynced()));
  }

  override async start(): Promise<void> {
    await Promise.all([...this.#parts.values()].map((part) => part.start()));
  }

  override stop(): void {
    for (const part of this.#parts.values()) part.stop();
  }
}

/** The namespaces whose WindowsHosts are watched: the operator's own first, then the opted-in. */
export function hostNamespaces(operatorNamespace: string, optedIn: readonly string[]): string[] {
  return [...new Set([operatorNamespace, ...optedIn])];
}

/**
 * The WindowsHost cache over `namespaces`, registered with `factory` (which stops it). Not
 * started: call start() (the factory's start() covers only informers created before it ran).
 */
export function createHostInformer(
  kc: k8s.KubeConfig,
  factory: InformerFactory,
  namespaces: readonly string[],
): Informer<WindowsHost> {
  return namespacesInformer<WindowsHost>(kc, factory, windowsHostResource, namespaces);
}

/**
 * The cache of `resource` over `namespaces`, read as one, registered with `factory` (which
 * stops it); `transform` slims what is kept. Not started.
 */
export function namespacesInformer<T extends k8s.KubernetesObject>(
  kc: k8s.KubeConfig,
  factory: InformerFactory,
  resource: ResourceType,
  namespaces: readonly string[],
  transform?: (object: T) => T,
): Informer<T> {
  const parts = new Map(
    namespaces.map((namespace) => [namespace, factory.get<T>(resource, { namespace, transform })]),
  );
  if (parts.size === 1) return [...parts.values()][0]!;
  return new NamespacesInformer(kc, resource, parts);
}
