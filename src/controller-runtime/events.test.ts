/**
 * Event aggregation through the recorder's sink seam: the sink below keeps Events in a map and
 * answers as the API server does (409 on a taken name, 404 on a missing one).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { createEventRecorder, type EventSink } from '../controller-runtime/events.ts';
import { createLogger } from '../log/logger.ts';

function apiError(code: number): Error {
  return Object.assign(new Error(`HTTP ${code}`), { code });
}

function memorySink(): EventSink & { events: Map<string, k8s.CoreV1Event> } {
  const events = new Map<string, k8s.CoreV1Event>();
  const key = (namespace: string, name: string) => `${namespace}/${name}`;
  return {
    events,
    async create(event) {
      const k = key(event.metadata.namespace!, event.metadata.name!);
      if (events.has(k)) throw apiError(409);
      events.set(k, structuredClone(event));
    },
    async read(namespace, name) {
      return structuredClone(events.get(key(namespace, name)));
    },
    async bump(namespace, name, count, lastTimestamp) {
      const event = events.get(key(namespace, name));
      if (!event) throw apiError(404);
      event.count = count;
      event.lastTimestamp = lastTimestamp;
    },
  };
}

const host = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'win-1', namespace: 'winfleet-system', uid: 'u-1' },
};
const log = createLogger({ level: 'error' });
const kc = new k8s.KubeConfig();

test('the same object, reason and message make one Event whose count goes up', async () => {
  const sink = memorySink();
  const recorder = createEventRecorder(kc, 'winfleet-operator', log, sink);
  for (let i = 0; i < 3; i++) recorder.record(host, 'Warning', 'SecretNotFound', 'No Secret');
  recorder.record(host, 'Warning', 'SecretNotFound', 'Another message');
  recorder.record(host, 'Warning', 'KeyInvalid', 'No Secret');
  recorder.record(
    { ...host, metadata: { ...host.metadata, uid: 'u-2' } },
    'Warning',
    'SecretNotFound',
    'No Secret',
  );
  await recorder.flush();
  const events = [...sink.events.values()];
  assert.equal(events.length, 4);
  const repeated = events.find(
    (e) =>
      e.reason === 'SecretNotFound' && e.message === 'No Secret' && e.involvedObject.uid === 'u-1',
  );
  assert.equal(repeated?.count, 3);
  assert.ok(repeated!.lastTimestamp! >= repeated!.firstTimestamp!);
  for (const e of events.filter((e) => e !== repeated)) assert.equal(e.count, 1);
});

test('a restarted recorder adds to the Event the last one wrote; an expired Event starts again', async () => {
  const sink = memorySink();
  const first = createEventRecorder(kc, 'winfleet-operator', log, sink);
  first.record(host, 'Warning', 'AgentNotReporting', 'Not reporting');
  first.record(host, 'Warning', 'AgentNotReporting', 'Not reporting');
  await first.flush();
  const restarted = createEventRecorder(kc, 'winfleet-operator', log, sink);
  restarted.record(host, 'Warning', 'AgentNotReporting', 'Not reporting');
  await restarted.flush();
  assert.deepEqual(
    [...sink.events.values()].map((e) => e.count),
    [3],
  );
  sink.events.clear(); // the API server's event TTL
  restarted.record(host, 'Warning', 'AgentNotReporting', 'Not reporting');
  await restarted.flush();
  assert.deepEqual(
    [...sink.events.values()].map((e) => e.count),
    [1],
  );
});
