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

/** What one recorder keeps: where it writes, what it has written, what is being written. */
interface RecorderState {
  component: string;
  log: Logger;
  sink: EventSink;
  /** Count written so far per Event name (insertion order = age, for forgetting). */
  counts: Map<string, number>;
  /** The write in flight per Event name. */
  writing: Map<string, Promise<void>>;
}

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
  const state: RecorderState = { component, log, sink, counts: new Map(), writing: new Map() };
  return {
    record(subject, type, reason, message) {
      recordEvent(state, subject, type, reason, message);
    },
    /** Resolves once the writes recorded so far are done (or dropped). */
    async flush() {
      while (state.writing.size > 0) await Promise.all(state.writing.values());
    },
  };
}

/** Logs an Event and queues its write behind the write in flight for the same aggregate. */
function recordEvent(
  state: RecorderState,
  subject: EventSubject,
  type: EventType,
  reason: string,
  message: string,
): void {
  const { log, writing } = state;
  const now = new Date();
  const event = aggregatedEvent(state.component, subject, type, reason, message, now);
  const eventName = event.metadata.name!;
  log.info('event', { kind: subject.kind, name: event.involvedObject.name, type, reason, message });
  const previous = writing.get(eventName) ?? Promise.resolve();
  const next = previous
    .then(() => writeEvent(state, event, now))
    .catch((error: unknown) => log.warn('cannot record event', { reason, error }))
    .finally(() => {
      if (writing.get(eventName) === next) writing.delete(eventName);
    });
  writing.set(eventName, next);
}

/** The Event for one record, named after what is aggregated (so repeats share the name). */
function aggregatedEvent(
  component: string,
  subject: EventSubject,
  type: EventType,
  reason: string,
  message: string,
  now: Date,
): k8s.CoreV1Event {
  const name = subject.metadata?.name ?? 'unknown';
  const namespace = subject.metadata?.namespace || 'default';
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
  return {
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
}

/** Writes one Event: bumps the count of one already written, else creates it. */
async function writeEvent(state: RecorderState, event: k8s.CoreV1Event, now: Date): Promise<void> {
  const { sink, counts } = state;
  const { namespace, name } = event.metadata as { namespace: string; name: string };
  let count = counts.get(name);
  if (count !== undefined) {
    try {
      await sink.bump(namespace, name, count + 1, now);
      return remember(state, name, count + 1);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      count = undefined; // expired: start again
    }
  }
  try {
    await sink.create(event);
    return remember(state, name, 1);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  // Written before this process remembered it (a restart, or forgotten).
  const existing = await sink.read(namespace, name);
  const next = (existing?.count ?? 1) + 1;
  await sink.bump(namespace, name, next, now);
  remember(state, name, next);
}

/** Remembers the count of an Event as the newest, forgetting the oldest past the bound. */
function remember(state: RecorderState, name: string, count: number): void {
  const { counts } = state;
  counts.delete(name);
  counts.set(name, count);
  if (counts.size > rememberedEvents) counts.delete(counts.keys().next().value!);
}
