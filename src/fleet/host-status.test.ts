import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason, ConditionType } from '../api/reasons.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import {
  guardedStatusPatch,
  HostStatus,
  type HostStatusApi,
  patchHostStatus,
  rebaseConditions,
} from './host-status.ts';

/** A Ready host as the API server returns it: every object's keys in sorted order. */
function readyHostFromApi(): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'h', namespace: 'ns', generation: 1 },
    spec: { address: '127.0.0.1' },
    status: {
      conditions: [
        {
          lastTransitionTime: '2026-01-01T00:00:00Z',
          message: 'Node n is Ready with services v1',
          observedGeneration: 1,
          reason: ConditionReason.NodeReady,
          status: 'True',
          type: ConditionType.Ready,
        },
      ],
      nodeName: 'n',
      servicesVersion: 'v1',
    },
  } as unknown as WindowsHost;
}

test('a pass that sets what the API server already holds changes nothing, whatever the key order', () => {
  const hs = new HostStatus(readyHostFromApi());
  hs.set(
    ConditionType.Ready,
    'True',
    ConditionReason.NodeReady,
    'Node n is Ready with services v1',
  );
  hs.status.servicesVersion = 'v1';
  assert.equal(hs.changed(), false);
  hs.set(
    ConditionType.Ready,
    'True',
    ConditionReason.NodeReady,
    'Node n is Ready with services v2',
  );
  assert.equal(hs.changed(), true);
});

test("a pass that read an older copy changes only the condition types it set, over the API server's", () => {
  const at = (type: string, reason: string) =>
    ({
      type,
      status: 'True',
      reason,
      message: '',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    }) as never;
  // The pass read Reachable only; since then an earlier pass wrote Bootstrapped.
  const before = [at('Reachable', 'Connected')];
  const after = [at('Reachable', 'Connected'), at('Ready', 'WaitingForNode')];
  const current = [at('Reachable', 'Connected'), at('Bootstrapped', 'AgentBootstrapped')];
  assert.deepEqual(
    rebaseConditions(before, after, current).map((c) => `${c.type}=${c.reason}`),
    ['Reachable=Connected', 'Bootstrapped=AgentBootstrapped', 'Ready=WaitingForNode'],
  );
  // A type the pass removed goes; one it left alone keeps the API server's value.
  assert.deepEqual(
    rebaseConditions(
      after,
      [at('Reachable', 'Connected')],
      [at('Reachable', 'Unreachable'), at('Ready', 'WaitingForNode')],
    ).map((c) => `${c.type}=${c.reason}`),
    ['Reachable=Unreachable'],
  );
});

/** Records the /status requests patchHostStatus makes, and answers with `host`. */
function recordingStatusApi(host: WindowsHost) {
  const requests: { body: unknown; contentType: string | undefined }[] = [];
  const api: HostStatusApi = {
    patchNamespacedCustomObjectStatus: (async (
      request: { body: unknown },
      options?: { middleware?: unknown[] } & Record<string, unknown>,
    ) => {
      requests.push({ body: request.body, contentType: contentTypeOf(options) });
      return host;
    }) as unknown as HostStatusApi['patchNamespacedCustomObjectStatus'],
  };
  return { api, requests };
}

/** The Content-Type a setHeaderOptions middleware sets on a request. */
function contentTypeOf(options: unknown): string | undefined {
  const headers: Record<string, string> = {};
  const context = { setHeaderParam: (name: string, value: string) => (headers[name] = value) };
  const middleware = (options as { middleware?: { pre(c: unknown): unknown }[] })?.middleware;
  for (const m of middleware ?? []) m.pre(context);
  return headers['Content-Type'];
}

test('patchHostStatus writes a merge patch of the fields, nulls included', async () => {
  const host = readyHostFromApi();
  const { api, requests } = recordingStatusApi(host);
  await patchHostStatus(api, host, { servingAddresses: ['10.0.0.5'], lastError: null });
  assert.deepEqual(requests, [
    {
      body: { status: { servingAddresses: ['10.0.0.5'], lastError: null } },
      contentType: 'application/merge-patch+json',
    },
  ]);
});

test('a guarded patchHostStatus tests the resourceVersion read before adding each field', async () => {
  const host = {
    ...readyHostFromApi(),
    metadata: { name: 'h', namespace: 'ns', resourceVersion: '7' },
  };
  const { api, requests } = recordingStatusApi(host as WindowsHost);
  await patchHostStatus(
    api,
    host as WindowsHost,
    { rollout: { setAside: undefined } },
    {
      guarded: true,
    },
  );
  assert.deepEqual(requests, [
    {
      body: [
        { op: 'test', path: '/metadata/resourceVersion', value: '7' },
        { op: 'add', path: '/status/rollout', value: { setAside: undefined } },
      ],
      contentType: 'application/json-patch+json',
    },
  ]);
});

test('a guarded write to a host with no status yet adds /status whole, after the test', () => {
  const host = { ...readyHostFromApi(), metadata: { name: 'h', resourceVersion: '3' } };
  delete (host as { status?: unknown }).status;
  assert.deepEqual(guardedStatusPatch(host as WindowsHost, { remediation: { rung: 1 } }), [
    { op: 'test', path: '/metadata/resourceVersion', value: '3' },
    { op: 'add', path: '/status', value: { remediation: { rung: 1 } } },
  ]);
});
