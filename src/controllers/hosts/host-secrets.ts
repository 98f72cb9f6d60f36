/**
 * The SSH key Secrets WindowsHosts name, watched so that fixing one retries at once: a missing
 * Secret or a bad key is the user's to fix, so the join does not retry it on a timer (the
 * catalog calls it terminal) — creating or updating the Secret enqueues every host naming it.
 * Only the Secrets' metadata is cached: the key is read from the API when connecting, and key
 * material is never kept in memory longer than a connection needs it.
 */
import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import { type Informer, objectKey } from '../../controller-runtime/informer.ts';
import { type InformerFactory, resources } from '../../controller-runtime/informer-factory.ts';
import { namespacesInformer } from './host-informer.ts';

/** A Secret without its data, annotations (last-applied-configuration holds the data) or labels. */
export function slimSecret(secret: k8s.V1Secret): k8s.V1Secret {
  const m = secret.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
    },
  };
}

/** The Secrets of the namespaces whose hosts are watched, slimmed. Not started. */
export function createHostSecretInformer(
  kc: k8s.KubeConfig,
  factory: InformerFactory,
  namespaces: readonly string[],
): Informer<k8s.V1Secret> {
  return namespacesInformer(kc, factory, resources.secrets, namespaces, slimSecret);
}

/** "namespace/secret name" → keys of the hosts naming that Secret, kept from host events. */
export class SecretRefIndex {
  readonly #hostsBySecret = new Map<string, Set<string>>();
  readonly #secretOfHost = new Map<string, string>();

  /** Records (or updates) which Secret `host` names. */
  set(host: WindowsHost): void {
    const hostKey = objectKey(host);
    this.delete(host);
    // A Pull host names no Secret.
    if (!host.spec.sshKeySecretRef) return;
    const secret = `${host.metadata.namespace}/${host.spec.sshKeySecretRef.name}`;
    this.#secretOfHost.set(hostKey, secret);
    const hosts = this.#hostsBySecret.get(secret) ?? new Set<string>();
    hosts.add(hostKey);
    this.#hostsBySecret.set(secret, hosts);
  }

  delete(host: WindowsHost): void {
    const hostKey = objectKey(host);
    const secret = this.#secretOfHost.get(hostKey);
    if (secret === undefined) return;
    this.#secretOfHost.delete(hostKey);
    const hosts = this.#hostsBySecret.get(secret);
    hosts?.delete(hostKey);
    if (hosts?.size === 0) this.#hostsBySecret.delete(secret);
  }

  /** Keys of the hosts naming the Secret "namespace/name". */
  hostsNaming(secretKey: string): string[] {
    return [...(this.#hostsBySecret.get(secretKey) ?? [])];
  }
}

/**
 * Keeps an index of the Secrets `hosts` name and calls `enqueue` with each host whose Secret
 * is created, changed or deleted.
 * @package
 */
export function enqueueOnSecretChange(
  hosts: Informer<WindowsHost>,
  secrets: Informer<k8s.V1Secret>,
  enqueue: (hostKey: string) => void,
): SecretRefIndex {
  const index = new SecretRefIndex();
  hosts
    .on('add', (host) => index.set(host))
    .on('update', (host) => index.set(host))
    .on('delete', (host) => index.delete(host));
  for (const host of hosts.list()) index.set(host);
  const changed = (secret: k8s.V1Secret) => {
    for (const key of index.hostsNaming(objectKey(secret))) enqueue(key);
  };
  secrets
    .on('add', changed)
    .on('delete', changed)
    .on('update', (secret, old) => {
      if (secret.metadata?.resourceVersion !== old.metadata?.resourceVersion) changed(secret);
    });
  return index;
}
