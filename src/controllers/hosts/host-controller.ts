/**
 * The WindowsHost controller: many hosts reconciled at once (hosts.concurrency, default 10),
 * each with its own exponential backoff. Host events enqueue the host; Node events enqueue the
 * host behind the node; Secret events enqueue the hosts naming the Secret. It keeps no state of its own between passes: everything a pass
 * decides on is in the API. SSH hosts are joined and removed over SSH (host-join.ts,
 * host-removal.ts); Pull-mode hosts through their agent and Node, never over SSH
 * (pull-mode-host.ts, pull-host-removal.ts).
 */

import type * as k8s from '@kubernetes/client-node';
import { hostAnnotation } from '../../api/node-annotations.ts';
import { hostFinalizer, isPullHost, type WindowsHost } from '../../api/windows-host.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import { objectKey } from '../../controller-runtime/informer.ts';
import { hostsByNode } from '../../fleet/host-indexes.ts';
import { patchHostMetadata } from '../../fleet/host-status.ts';
import { claimedNodeName } from '../../fleet/node-claims.ts';
import { cachedApiServerVersion } from '../../kube/api-server-version.ts';
import { hostsNamingAdSecret } from './active-directory-join.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { reconcileJoin } from './host-join.ts';
import { remediationRequestKey } from './host-remediation.ts';
import { reconcileRemoval } from './host-removal.ts';
import { enqueueOnSecretChange } from './host-secrets.ts';
import { createManifestPublisher } from './manifest-publisher.ts';
import { deconfigureThroughAgent } from './pull-host-removal.ts';
import { reconcilePullHost } from './pull-mode-host.ts';

export function createHostController(deps: HostControllerDeps): Controller {
  const publish =
    deps.publish ??
    createManifestPublisher(deps.kc, deps.operatorNamespace, {
      clusterBindings: deps.clusterBindings,
    });
  const ctx = { ...deps, publish, apiServerVersion: cachedApiServerVersion(deps.kc) };

  const controller = new Controller({
    name: 'windowshosts',
    concurrency: deps.config().hosts.concurrency,
    log: deps.log,
    baseDelayMs: 1000,
    maxDelayMs: 5 * 60_000,
    async reconcile(key) {
      if (key === everythingKey) {
        for (const host of deps.hosts.list()) controller.enqueue(objectKey(host));
        return undefined;
      }
      const host = deps.hosts.get(key);
      if (!host) return undefined;
      // Pull-mode hosts are run through their agent, never over SSH (pull-mode-host.ts,
      // pull-host-removal.ts).
      const pull = isPullHost(host);
      if (host.metadata.deletionTimestamp) {
        return reconcileRemoval(deps, host, pull ? deconfigureThroughAgent : undefined);
      }
      if (!host.metadata.finalizers?.includes(hostFinalizer)) {
        await patchHostMetadata(deps.kc, host, {
          finalizers: [...(host.metadata.finalizers ?? []), hostFinalizer],
        });
        return undefined; // the update event brings it back
      }
      return pull ? reconcilePullHost(ctx, host) : reconcileJoin(ctx, host);
    },
  });

  const enqueue = (host: WindowsHost) => controller.enqueue(objectKey(host));
  const hostsOfNode = hostsByNode(deps.hosts);
  // A host that goes frees its node name for the next claimant.
  const rivalsOf = (host: WindowsHost) => {
    const name = claimedNodeName(host);
    if (!name) return;
    for (const other of hostsOfNode(name)) if (claimedNodeName(other) === name) enqueue(other);
  };
  deps.hosts
    .on('add', enqueue)
    .on('delete', (host) => {
      enqueue(host);
      rivalsOf(host);
    })
    .on('update', (host, old) => {
      // Our own status writes do not need another pass.
      if (
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
      ) {
        enqueue(host);
      }
    });
  // The host the node names ("namespace/name/uid"), and every host claiming its name: a
  // Node that comes or goes changes who may have the name.
  const hostOfNode = (node: k8s.V1Node) => {
    const ref = node.metadata?.annotations?.[hostAnnotation]?.split('/');
    if (ref && ref.length >= 2) controller.enqueue(`${ref[0]}/${ref[1]}`);
    const name = node.metadata?.name;
    if (name) for (const host of hostsOfNode(name)) enqueue(host);
  };
  deps.nodes
    .on('add', hostOfNode)
    .on('delete', hostOfNode)
    .on('update', (node, old) => {
      const ready = (n: k8s.V1Node) =>
        n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
      if (
        ready(node) !== ready(old) ||
        JSON.stringify(node.metadata?.annotations) !== JSON.stringify(old.metadata?.annotations)
      ) {
        hostOfNode(node);
      }
    });
  // A Secret the user created or fixed: the hosts naming it retry now, not on a timer.
  if (deps.secrets) {
    enqueueOnSecretChange(deps.hosts, deps.secrets, (key) => controller.enqueue(key));
    // A pool's AD credentials Secret (in the pool's namespace) created or fixed: its hosts retry now.
    const adSecretChanged = (secret: k8s.V1Secret) => {
      for (const key of hostsNamingAdSecret(
        deps.pools?.list() ?? [],
        deps.hosts.list(),
        secret.metadata?.namespace ?? '',
        secret.metadata?.name ?? '',
      )) {
        controller.enqueue(key);
      }
    };
    deps.secrets
      .on('add', adSecretChanged)
      .on('delete', adSecretChanged)
      .on('update', (secret, old) => {
        if (secret.metadata?.resourceVersion !== old.metadata?.resourceVersion)
          adSecretChanged(secret);
      });
  }
  return controller;
}
