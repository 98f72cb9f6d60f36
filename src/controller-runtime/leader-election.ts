/**
 * Leader election on a coordination.k8s.io Lease, so that only one operator replica acts at a
 * time. The holder renews the lease; others take it over when it has not been renewed for
 * `leaseDurationMs`. A leader that cannot renew in time steps down (calls onStoppedLeading).
 * A leader that is stopped (its `signal` aborts) releases the lease, as client-go's
 * ReleaseOnCancel does, so that another replica takes over at once instead of after the lease
 * expires. A leader renews by writing over the Lease as it last wrote it, without reading it
 * first, so that holding the lease costs one request per retry period.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';

/** @package */
export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * Give the lease up when `signal` aborts while leading (default true). False leaves it to
   * expire, as a killed replica would.
   */
  releaseOnCancel?: boolean;
  log: Logger;
  /** Stops acquiring, or (once leading) renewing; see releaseOnCancel. */
  signal?: AbortSignal;
}

/** This replica's leadership, once acquired. */
export interface Leadership {
  /**
   * Settles once renewal has stopped: after `signal` aborted (and the lease was released, when
   * releaseOnCancel) or after leadership was lost. Never rejects; a failed release is logged,
   * and the lease then expires as usual.
   */
  stopped: Promise<void>;
}

/** The lease a released lock leaves (client-go leaderelection, tryRelease). */
const releasedLeaseDurationSeconds = 1;
/** Conflicting writes a release retries (another writer changed the lease in between). */
const releaseAttempts = 3;

const micro = (d: Date) => d.toISOString().replace('Z', '000Z');

/**
 * One replica's hold on the Lease: where it is, who this replica is, and the Lease as this
 * replica last wrote it (`written`). While it holds the lease, a renewal writes over that copy
 * without reading the Lease first (client-go's fast path); any failure of that write (a
 * conflict: someone else wrote it) forgets it, and the next try reads the Lease.
 */
interface LeaseLock {
  coordination: k8s.CoordinationV1Api;
  namespace: string;
  name: string;
  identity: string;
  /** "namespace/name", for logs. */
  lease: string;
  leaseDurationMs: number;
  log: Logger;
  written: k8s.V1Lease | undefined;
}

/** How often a leader renews, and how long it may fail to before it steps down. */
interface RenewTimings {
  renewDeadlineMs: number;
  retryPeriodMs: number;
  releaseOnCancel: boolean;
}

/**
 * Blocks until this process holds the lease; then keeps renewing it in the background until
 * `options.signal` aborts or the lease is lost.
 */
export async function acquireLeadership(
  kc: k8s.KubeConfig,
  options: LeaderElectionOptions,
  onStoppedLeading: () => void,
): Promise<Leadership> {
  const { namespace, name, identity, log, signal } = options;
  const lock: LeaseLock = {
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    namespace,
    name,
    identity,
    lease: `${namespace}/${name}`,
    leaseDurationMs: options.leaseDurationMs ?? 15_000,
    log,
    written: undefined,
  };
  const timings: RenewTimings = {
    renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
    retryPeriodMs: options.retryPeriodMs ?? 2_000,
    releaseOnCancel: options.releaseOnCancel ?? true,
  };
  for (;;) {
    signal?.throwIfAborted();
    try {
      if (await tryAcquireOrRenew(lock)) break;
    } catch (error) {
      // 409: someone else wrote the lease first; try again next period.
      if (!isConflict(error)) log.warn('leader election attempt failed', { error });
    }
    await sleep(timings.retryPeriodMs, undefined, { signal });
  }
  log.info('became leader', { lease: lock.lease, identity });
  const stopped = keepLeading(lock, timings, signal, onStoppedLeading).catch((error: unknown) => {
    log.error('leader election stopped with an error', { lease: lock.lease, error });
  });
  return { stopped };
}

/** The spec this replica writes to hold the lease, renewed at `now`. */
function leaseSpec(lock: LeaseLock, now: Date): k8s.V1LeaseSpec {
  return {
    holderIdentity: lock.identity,
    leaseDurationSeconds: Math.ceil(lock.leaseDurationMs / 1000),
    renewTime: micro(now) as unknown as Date,
  };
}

/** Renews over the Lease as last written; after a conflict, tries as any candidate would. */
async function renewWritten(lock: LeaseLock, mine: k8s.V1Lease): Promise<boolean> {
  const { coordination, name, namespace } = lock;
  try {
    lock.written = await coordination.replaceNamespacedLease({
      name,
      namespace,
      body: {
        metadata: { name, namespace, resourceVersion: mine.metadata?.resourceVersion },
        spec: { ...mine.spec, ...leaseSpec(lock, new Date()) },
      },
    });
    return true;
  } catch (error) {
    lock.written = undefined;
    // Someone else wrote the Lease: read it, and take or leave it as any candidate would.
    if (isConflict(error)) return tryAcquireOrRenew(lock);
    throw error;
  }
}

/** One try to take or renew the lease: true when this replica holds it after. */
async function tryAcquireOrRenew(lock: LeaseLock): Promise<boolean> {
  const { coordination, name, namespace, identity } = lock;
  if (lock.written?.spec?.holderIdentity === identity) return renewWritten(lock, lock.written);
  const now = new Date();
  const spec = leaseSpec(lock, now);
  let current: k8s.V1Lease;
  try {
    current = await coordination.readNamespacedLease({ name, namespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    lock.written = await coordination.createNamespacedLease({
      namespace,
      body: {
        metadata: { name, namespace },
        spec: { ...spec, acquireTime: spec.renewTime, leaseTransitions: 0 },
      },
    });
    return true;
  }
  const holder = current.spec?.holderIdentity;
  const renewed = current.spec?.renewTime ? new Date(current.spec.renewTime).getTime() : 0;
  const duration = (current.spec?.leaseDurationSeconds ?? 0) * 1000;
  if (holder && holder !== identity && renewed + duration > now.getTime()) return false;
  const transitions = (current.spec?.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
  lock.written = await coordination.replaceNamespacedLease({
    name,
    namespace,
    body: {
      metadata: { name, namespace, resourceVersion: current.metadata?.resourceVersion },
      spec: {
        ...spec,
        acquireTime: holder === identity ? current.spec?.acquireTime : spec.renewTime,
        leaseTransitions: transitions,
      },
    },
  });
  return true;
}

/**
 * Gives the lease up if this replica still holds it: no holder, a one-second duration and
 * renewed now, so that any candidate may take it at its next try. The write carries the
 * resourceVersion read, so it never clobbers a lease someone else took in between.
 */
async function release(lock: LeaseLock): Promise<void> {
  const { coordination, name, namespace, identity, lease, log } = lock;
  for (let attempt = 1; attempt <= releaseAttempts; attempt++) {
    try {
      // First over the Lease as last written; after a conflict, as read.
      const current =
        attempt === 1 && lock.written
          ? lock.written
          : await coordination.readNamespacedLease({ name, namespace });
      if (current.spec?.holderIdentity !== identity) {
        log.info('not releasing the lease: another replica holds it', {
          lease,
          holder: current.spec?.holderIdentity,
        });
        return;
      }
      const now = micro(new Date()) as unknown as Date;
      await coordination.replaceNamespacedLease({
        name,
        namespace,
        body: {
          metadata: { name, namespace, resourceVersion: current.metadata?.resourceVersion },
          spec: {
            holderIdentity: '',
            leaseDurationSeconds: releasedLeaseDurationSeconds,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: current.spec?.leaseTransitions ?? 0,
          },
        },
      });
      log.info('released the leader lease', { lease, identity });
      return;
    } catch (error) {
      if (isConflict(error) && attempt < releaseAttempts) continue;
      log.warn('could not release the leader lease; it expires on its own', { lease, error });
      return;
    }
  }
}

/**
 * Renews every retry period until `signal` aborts (then releases, when releaseOnCancel) or a
 * renewal has not succeeded within the renew deadline (then calls onStoppedLeading).
 */
async function keepLeading(
  lock: LeaseLock,
  timings: RenewTimings,
  signal: AbortSignal | undefined,
  onStoppedLeading: () => void,
): Promise<void> {
  const { retryPeriodMs, renewDeadlineMs } = timings;
  let lastRenew = Date.now();
  while (!signal?.aborted) {
    // Wakes at once when stopped; the renewal below is never cut short, so that a release
    // cannot be followed by a renewal that re-takes the lease.
    await sleep(retryPeriodMs, undefined, { signal }).catch(() => {});
    if (signal?.aborted) break;
    try {
      if (await tryAcquireOrRenew(lock)) lastRenew = Date.now();
    } catch (error) {
      lock.log.warn('lease renewal failed', { error });
    }
    if (Date.now() - lastRenew > renewDeadlineMs) {
      lock.log.error('lost leadership: could not renew the lease in time', { lease: lock.lease });
      onStoppedLeading();
      return;
    }
  }
  if (timings.releaseOnCancel) await releaseWithin(lock, renewDeadlineMs);
}

/**
 * Releases the lease, waiting at most `deadlineMs`: as client-go, so an unreachable API server
 * does not hold up the rest of the shutdown (the lease then expires on its own).
 */
async function releaseWithin(lock: LeaseLock, deadlineMs: number): Promise<void> {
  const deadline = new AbortController();
  await Promise.race([
    release(lock),
    sleep(deadlineMs, undefined, { signal: deadline.signal }).then(
      () =>
        lock.log.warn('releasing the leader lease timed out; it expires on its own', {
          lease: lock.lease,
        }),
      () => {},
    ),
  ]);
  deadline.abort();
}
