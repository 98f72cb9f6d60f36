/**
 * Kubernetes Events for what a person should see (`kubectl describe`, `kubectl get events`):
 * a host refused for a changed host key, a CSR approved or denied, a node joined.
 *
 * Aggregated as Kubernetes' own recorder does: the same involved object, type, reason and
 * message make one Event whose `count` and `lastTimestamp` go up, so a failure that repeats
 * every pass shows as one line with a count instead of a flood. The Event's name is derived
 * from what is aggregated, so a restarted operator adds to the Event the last one wrote.
 */
import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';

export type EventType = 'Normal' | 'Warning';

/** The object an event is about. */
export interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export interface EventRecorder {
  record(subject: EventSubject, type: EventType, reason: string, message: string): void;
}

/** Where Events go: the API server (apiEventSink), or a test's list. */
export interface EventSink {
  /** Creates the Event; rejects with 409 AlreadyExists when its name is taken. */
  create(event: k8s.CoreV1Event): Promise<unknown>;
  /** The Event, or undefined when there is none of that name. */
  read(namespace: string, name: string): Promise<k8s.CoreV1Event | undefined>;
  /** Sets count and lastTimestamp; rejects with 404 when the Event is gone (expired). */
  bump(namespace: string, name: string, count: number, lastTimestamp: Date): Promise<unknown>;
}

export function apiEventSink(kc: k8s.KubeConfig): EventSink {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return {
    create: (event) =>
      core.createNamespacedEvent({ namespace: event.metadata.namespace!, body: event }),
    async read(namespace, name) {
      try {
        return await core.readNamespacedEvent({ namespace, name });
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    bump: (namespace, name, count, lastTimestamp) =>
      core.patchNamespacedEvent(
        { namespace, name, body: { count, lastTimestamp: lastTimestamp.toISOString() } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
  };
}

/** Aggregated Events remembered at most (the oldest is forgotten; it is read back if needed). */
const rememberedEvents = 4096;

/**
 * Records core/v1 Events as `component`. Recording never throws and never blocks the caller:
 * an event that cannot be written is logged and dropped. Writes for one aggregate run one
 * after another, so concurrent repeats each count.
 */
export function createEventRecorder(
  kc: k8s.KubeConfig,
  component: string,
  log: Logger,
  sink: EventSink = apiEventSink(kc),
): EventRecorder & { flush(): Promise<void> } {
  /** Count written so far per Event name (insertion order = age, for forgetting). */
  const counts = new Map<string, number>();
  /** The write in flight per Event name. */
  const writing = new Map<string, Promise<void>>();

  const write = async (event: k8s.CoreV1Event, now: Date): Promise<void> => {
    const { namespace, name } = event.metadata as { namespace: string; name: string };
    let count = counts.get(name);
    if (count !== undefined) {
      try {
        await sink.bump(namespace, name, count + 1, now);
        return remember(name, count + 1);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        count = undefined; // expired: start again
      }
    }
    try {
      await sink.create(event);
      return remember(name, 1);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    // Written before this process remembered it (a restart, or forgotten).
    const existing = await sink.read(namespace, name);
    const next = (existing?.count ?? 1) + 1;
    await sink.bump(namespace, name, next, now);
    remember(name, next);
  };

  const remember = (name: string, count: number) => {
    counts.delete(name);
    counts.set(name, count);
    if (counts.size > rememberedEvents) counts.delete(counts.keys().next().value!);
  };

  return {
    record(subject, type, reason, message) {
      const name = subject.metadata?.name ?? 'unknown';
      const namespace = subject.metadata?.namespace || 'default';
      const now = new Date();
      const text = message.slice(0, 1024);
      const involvedObject = {
        apiVersion: subject.apiVersion,
        kind: subject.kind,
        name,
        namespace: subject.metadata?.namespace,
        uid: subject.metadata?.uid,
      };
      const aggregate = JSON.stringify([component, involvedObject, type, reason, text]);
      const eventName = `${name.slice(0, 200)}.${createHash('sha256').update(aggregate).digest('hex').slice(0, 16)}`;
      const event: k8s.CoreV1Event = {
        metadata: { name: eventName, namespace },
        involvedObject: { ...involvedObject, resourceVersion: subject.metadata?.resourceVersion },
        type,
        reason,
        message: text,
        source: { component },
        reportingComponent: component,
        reportingInstance: component,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      log.info('event', { kind: subject.kind, name, type, reason, message });
      const previous = writing.get(eventName) ?? Promise.resolve();
      const next = previous
        .then(() => write(event, now))
        .catch((error: unknown) => log.warn('cannot record event', { reason, error }))
        .finally(() => {
          if (writing.get(eventName) === next) writing.delete(eventName);
        });
      writing.set(eventName, next);
    },
    /** Resolves once the writes recorded so far are done (or dropped). */
    async flush() {
      while (writing.size > 0) await Promise.all(writing.values());
    },
  };
}
