/**
 * Leader election on a coordination.k8s.io Lease, so that only one operator replica acts at a
 * time. The holder renews the lease; others take it over when it has not been renewed for
 * `leaseDurationMs`. A leader that cannot renew in time steps down (calls onStoppedLeading).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  signal?: AbortSignal;
}

const micro = (d: Date) => d.toISOString().replace('Z', '000Z');

/** Blocks until this process holds the lease; then keeps renewing it in the background. */
export async function acquireLeadership(
  kc: k8s.KubeConfig,
  options: LeaderElectionOptions,
  onStoppedLeading: () => void,
): Promise<void> {
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const leaseDurationMs = options.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
  const retryPeriodMs = options.retryPeriodMs ?? 2_000;
  const { namespace, name, identity, log } = options;

  const tryAcquireOrRenew = async (): Promise<boolean> => {
    const now = new Date();
    const spec: k8s.V1LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      renewTime: micro(now) as unknown as Date,
    };
    let lease: k8s.V1Lease;
    try {
      lease = await coordination.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await coordination.createNamespacedLease({
        namespace,
        body: {
          metadata: { name, namespace },
          spec: { ...spec, acquireTime: spec.renewTime, leaseTransitions: 0 },
        },
      });
      return true;
    }
    const holder = lease.spec?.holderIdentity;
    const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
    const duration = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (holder && holder !== identity && renewed + duration > now.getTime()) return false;
    const transitions = (lease.spec?.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
    await coordination.replaceNamespacedLease({
      name,
      namespace,
      body: {
        metadata: { name, namespace, resourceVersion: lease.metadata?.resourceVersion },
        spec: {
          ...spec,
          acquireTime: holder === identity ? lease.spec?.acquireTime : spec.renewTime,
          leaseTransitions: transitions,
        },
      },
    });
    return true;
  };

  for (;;) {
    options.signal?.throwIfAborted();
    try {
      if (await tryAcquireOrRenew()) break;
    } catch (error) {
      // 409: someone else wrote the lease first; try again next period.
      if (!isConflict(error)) log.warn('leader election attempt failed', { error });
    }
    await sleep(retryPeriodMs, undefined, { signal: options.signal });
  }
  log.info('became leader', { lease: `${namespace}/${name}`, identity });

  void (async () => {
    let lastRenew = Date.now();
    while (!options.signal?.aborted) {
      await sleep(retryPeriodMs).catch(() => {});
      try {
        if (await tryAcquireOrRenew()) lastRenew = Date.now();
      } catch (error) {
        log.warn('lease renewal failed', { error });
      }
      if (Date.now() - lastRenew > renewDeadlineMs) {
        log.error('lost leadership: could not renew the lease in time', {
          lease: `${namespace}/${name}`,
        });
        onStoppedLeading();
        return;
      }
    }
  })();
}
