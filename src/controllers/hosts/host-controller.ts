/**
 * The WindowsHost controller: many hosts reconciled at once (hosts.concurrency, default 10),
 * each with its own exponential backoff. Host events enqueue the host; Node events enqueue the
 * host behind the node; Secret events enqueue the hosts naming the Secret. It keeps no state of its own between passes: everything a pass
 * decides on is in the API. SSH hosts are joined and removed over SSH (host-join.ts,
 * host-removal.ts); Pull-mode hosts through their agent and Node, never over SSH
 * (pull-mode-host.ts, pull-host-removal.ts).
 *
 * In controller-runtime's shape: reconcileHost is one pass over an explicit HostReconcileState
 * (the host cache, and every write or host pass as a function field the wiring binds), so it can
 * be driven over a stated cache without watches; createHostController binds the state and wires
 * the watches (watchHosts, watchNodes, watchSecrets).
 */

import type * as k8s from '@kubernetes/client-node';
import { hostAnnotation } from '../../api/node-annotations.ts';
import { prePullConditionType } from '../../api/pre-pull.ts';
import { hostFinalizer, isPullHost, type WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import { type Informer, objectKey } from '../../controller-runtime/informer.ts';
import { hostsByNode } from '../../fleet/host-indexes.ts';
import { patchHostMetadata } from '../../fleet/host-status.ts';
import { claimedNodeName } from '../../fleet/node-claims.ts';
import { cachedApiServerVersion } from '../../kube/api-server-version.ts';
import { hyperVIsolationLabel } from '../../windows/isolation.ts';
import { hostsNamingAdSecret } from './active-directory-join.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { type PassResult, reconcileJoin } from './host-join.ts';
import { remediationRequestKey } from './host-remediation.ts';
import { reconcileRemoval } from './host-removal.ts';
import { enqueueOnSecretChange } from './host-secrets.ts';
import type { JoinContext } from './join-context.ts';
import { createManifestPublisher } from './manifest-publisher.ts';
import { deconfigureThroughAgent } from './pull-host-removal.ts';
import { reconcilePullHost } from './pull-mode-host.ts';

/**
 * What one host pass works with: the host cache, and each thing a pass may do to the world as a
 * function field (createHostController binds them to the API and to the SSH/agent passes; a test
 * binds recorders).
 * @package
 */
export interface HostReconcileState {
  hosts: Pick<Informer<WindowsHost>, 'get' | 'list'>;
  /** Queues a host's key for a pass of its own. */
  enqueue: (key: string) => void;
  /** Adds winfleet's finalizer to the host (a merge patch guarded by its resourceVersion). */
  addFinalizer: (host: WindowsHost) => Promise<void>;
  /** The removal pass of a host being deleted (`pull`: through its agent, never over SSH). */
  remove: (host: WindowsHost, pull: boolean) => Promise<PassResult>;
  /** The join pass of an SSH host (host-join.ts). */
  join: (host: WindowsHost) => Promise<PassResult>;
  /** The pass of a Pull-mode host, through its agent and Node (pull-mode-host.ts). */
  pull: (host: WindowsHost) => Promise<PassResult>;
}

/** One pass for `key`: everything re-queued, or the host removed, given its finalizer, or joined. */
export async function reconcileHost(
  state: HostReconcileState,
  key: string,
): Promise<PassResult | undefined> {
  if (key === everythingKey) {
    for (const host of state.hosts.list()) state.enqueue(objectKey(host));
    return undefined;
  }
  const host = state.hosts.get(key);
  if (!host) return undefined;
  // Pull-mode hosts are run through their agent, never over SSH (pull-mode-host.ts,
  // pull-host-removal.ts).
  const pull = isPullHost(host);
  if (host.metadata.deletionTimestamp) return state.remove(host, pull);
  if (!host.metadata.finalizers?.includes(hostFinalizer)) {
    await state.addFinalizer(host);
    return undefined; // the update event brings it back
  }
  return pull ? state.pull(host) : state.join(host);
}

/** The join context of the host controller's passes: the deps, the publisher, the API version. */
export function joinContextOf(deps: HostControllerDeps): JoinContext {
  const publish =
    deps.publish ??
    createManifestPublisher(deps.kc, deps.operatorNamespace, {
      clusterBindings: deps.clusterBindings,
    });
  return { ...deps, publish, apiServerVersion: cachedApiServerVersion(deps.kc) };
}

/** The state reconcileHost runs with in the operator: every field bound to the real world. */
export function hostReconcileState(
  deps: HostControllerDeps,
  ctx: JoinContext,
  enqueue: (key: string) => void,
): HostReconcileState {
  return {
    hosts: deps.hosts,
    enqueue,
    addFinalizer: (host) =>
      patchHostMetadata(deps.kc, host, {
        finalizers: [...(host.metadata.finalizers ?? []), hostFinalizer],
      }),
    remove: (host, pull) =>
      reconcileRemoval(deps, host, pull ? deconfigureThroughAgent : undefined),
    join: (host) => reconcileJoin(ctx, host),
    pull: (host) => reconcilePullHost(ctx, host),
  };
}

export function createHostController(deps: HostControllerDeps): Controller {
  const ctx = joinContextOf(deps);
  const controller: Controller = new Controller({
    name: 'windowshosts',
    concurrency: deps.config().hosts.concurrency,
    log: deps.log,
    baseDelayMs: 1000,
    maxDelayMs: 5 * 60_000,
    reconcile: (key) => reconcileHost(state, key),
  });
  const state = hostReconcileState(deps, ctx, (key) => controller.enqueue(key));
  const enqueueKey = (key: string) => controller.enqueue(key);
  watchHosts(deps.hosts, enqueueKey);
  watchNodes(deps.nodes, deps.hosts, enqueueKey);
  if (deps.secrets) watchSecrets(deps, deps.secrets, enqueueKey);
  if (deps.pools) watchPrePull(deps.pools, deps.hosts, enqueueKey);
  return controller;
}

/** Whether a host update needs a pass (our own status writes do not). */
export function hostUpdateNeedsPass(host: WindowsHost, old: WindowsHost): boolean {
  return (
    host.metadata.generation !== old.metadata.generation ||
    host.metadata.deletionTimestamp !== old.metadata.deletionTimestamp ||
    JSON.stringify(host.metadata.annotations) !== JSON.stringify(old.metadata.annotations) ||
    JSON.stringify(host.metadata.finalizers) !== JSON.stringify(old.metadata.finalizers) ||
    // The pool's rollout reached (or left) the step where this controller applies a payload.
    host.status?.rollout?.current?.step !== old.status?.rollout?.current?.step ||
    host.status?.rollout?.current?.target.servicesVersion !==
      old.status?.rollout?.current?.target.servicesVersion ||
    // Remediation asked for a re-bootstrap, or gave up (Degraded), or let go.
    remediationRequestKey(host) !== remediationRequestKey(old) ||
    // The rollout set the host aside, or an admin cleared it (Degraded).
    host.status?.rollout?.setAside?.since !== old.status?.rollout?.setAside?.since
  );
}

/** Host events: added, deleted (and its node name's rivals), or changed in what a pass reads. */
function watchHosts(hosts: Informer<WindowsHost>, enqueueKey: (key: string) => void): void {
  const enqueue = (host: WindowsHost) => enqueueKey(objectKey(host));
  const hostsOfNode = hostsByNode(hosts);
  // A host that goes frees its node name for the next claimant.
  const rivalsOf = (host: WindowsHost) => {
    const name = claimedNodeName(host);
    if (!name) return;
    for (const other of hostsOfNode(name)) if (claimedNodeName(other) === name) enqueue(other);
  };
  hosts
    .on('add', enqueue)
    .on('delete', (host) => {
      enqueue(host);
      rivalsOf(host);
    })
    .on('update', (host, old) => {
      if (hostUpdateNeedsPass(host, old)) enqueue(host);
    });
}

/**
 * Pool events that change what a pool puts on its Nodes (spec.prePull, spec.isolation, or which
 * hosts it selects): the hosts of the pool's namespace, whose Nodes get the new list or Hyper-V
 * label (or lose it) now, not at their next recheck (pre-pull-node.ts, pool-isolation.ts).
 */
function watchPrePull(
  pools: Informer<WindowsNodePool>,
  hosts: Informer<WindowsHost>,
  enqueueKey: (key: string) => void,
): void {
  const hostsOf = (pool: WindowsNodePool) => {
    for (const host of hosts.list())
      if (host.metadata.namespace === pool.metadata.namespace) enqueueKey(objectKey(host));
  };
  const nodeSettings = (pool: WindowsNodePool) =>
    JSON.stringify([pool.spec?.prePull, pool.spec?.isolation, pool.spec?.selector]);
  const putsAnything = (pool: WindowsNodePool) =>
    Boolean(pool.spec?.prePull) || pool.spec?.isolation?.hyperV === true;
  pools
    .on('add', (pool) => {
      if (putsAnything(pool)) hostsOf(pool);
    })
    .on('delete', (pool) => {
      if (putsAnything(pool)) hostsOf(pool);
    })
    .on('update', (pool, old) => {
      if (nodeSettings(pool) !== nodeSettings(old)) hostsOf(pool);
    });
}

/** Node events: the host the Node names, and every host claiming its name. */
function watchNodes(
  nodes: Informer<k8s.V1Node>,
  hosts: Informer<WindowsHost>,
  enqueueKey: (key: string) => void,
): void {
  const hostsOfNode = hostsByNode(hosts);
  // The host the node names ("namespace/name/uid"), and every host claiming its name: a
  // Node that comes or goes changes who may have the name.
  const hostOfNode = (node: k8s.V1Node) => {
    const ref = node.metadata?.annotations?.[hostAnnotation]?.split('/');
    if (ref && ref.length >= 2) enqueueKey(`${ref[0]}/${ref[1]}`);
    const name = node.metadata?.name;
    if (name) for (const host of hostsOfNode(name)) enqueueKey(objectKey(host));
  };
  nodes
    .on('add', hostOfNode)
    .on('delete', hostOfNode)
    .on('update', (node, old) => {
      const ready = (n: k8s.V1Node) =>
        n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
      // The agent's pre-pull ended: its taint goes (pre-pull-node.ts).
      const prePulled = (n: k8s.V1Node) =>
        n.status?.conditions?.find((c) => c.type === prePullConditionType)?.reason;
      // The Hyper-V label is the pool's to decide: one the kubelet set goes at once.
      const hyperV = (n: k8s.V1Node) => n.metadata?.labels?.[hyperVIsolationLabel];
      if (
        ready(node) !== ready(old) ||
        prePulled(node) !== prePulled(old) ||
        hyperV(node) !== hyperV(old) ||
        JSON.stringify(node.metadata?.annotations) !== JSON.stringify(old.metadata?.annotations)
      ) {
        hostOfNode(node);
      }
    });
}

/** Secret events: the hosts naming an SSH key Secret, and the hosts of a pool's AD Secret. */
function watchSecrets(
  deps: Pick<HostControllerDeps, 'hosts' | 'pools'>,
  secrets: Informer<k8s.V1Secret>,
  enqueueKey: (key: string) => void,
): void {
  // A Secret the user created or fixed: the hosts naming it retry now, not on a timer.
  enqueueOnSecretChange(deps.hosts, secrets, enqueueKey);
  // A pool's AD credentials Secret (in the pool's namespace) created or fixed: its hosts retry now.
  const adSecretChanged = (secret: k8s.V1Secret) => {
    for (const key of hostsNamingAdSecret(
      deps.pools?.list() ?? [],
      deps.hosts.list(),
      secret.metadata?.namespace ?? '',
      secret.metadata?.name ?? '',
    )) {
      enqueueKey(key);
    }
  };
  secrets
    .on('add', adSecretChanged)
    .on('delete', adSecretChanged)
    .on('update', (secret, old) => {
      if (secret.metadata?.resourceVersion !== old.metadata?.resourceVersion)
        adSecretChanged(secret);
    });
}
