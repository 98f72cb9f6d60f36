/**
 * Kubernetes Events for what a person should see (`kubectl describe`, `kubectl get events`):
 * a host refused for a changed host key, a CSR approved or denied, a node joined.
 */
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
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

/**
 * Records core/v1 Events as `component`. Recording never throws and never blocks the caller:
 * an event that cannot be written is logged and dropped.
 */
export function createEventRecorder(
  kc: k8s.KubeConfig,
  component: string,
  log: Logger,
): EventRecorder {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return {
    record(subject, type, reason, message) {
      const name = subject.metadata?.name ?? 'unknown';
      const namespace = subject.metadata?.namespace || 'default';
      const now = new Date();
      const event: k8s.CoreV1Event = {
        metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace },
        involvedObject: {
          apiVersion: subject.apiVersion,
          kind: subject.kind,
          name,
          namespace: subject.metadata?.namespace,
          uid: subject.metadata?.uid,
          resourceVersion: subject.metadata?.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component },
        reportingComponent: component,
        reportingInstance: component,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      log.info('event', { kind: subject.kind, name, type, reason, message });
      core.createNamespacedEvent({ namespace, body: event }).catch((error: unknown) => {
        log.warn('cannot record event', { reason, error });
      });
    },
  };
}
