/**
 * A Pull-mode host of a pool with spec.activeDirectory is refused, not adopted: its kubelet
 * registered by itself, before any domain join winfleet could make.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { JoinContext } from './join-context.ts';
import { reconcilePullHost } from './pull-mode-host.ts';

test('a Pull-mode host of an Active Directory pool is refused with the reason and what to do', async () => {
  const host: WindowsHost = {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'web-1', namespace: 'winfleet-system', uid: 'u', labels: { pool: 'corp' } },
    spec: { mode: 'Pull', nodeName: 'web-1' },
  };
  const pool: WindowsNodePool = {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsNodePool',
    metadata: { name: 'corp', namespace: 'winfleet-system' },
    spec: {
      selector: { matchLabels: { pool: 'corp' } },
      activeDirectory: { domain: 'corp.example.com', credentialsSecretRef: { name: 'ad-join' } },
    },
  };
  const patches: unknown[] = [];
  const events: string[] = [];
  const ctx = {
    kc: {
      makeApiClient: () => ({
        getNamespacedCustomObject: async () => host,
        patchNamespacedCustomObjectStatus: async (request: { body: unknown }) => {
          patches.push(request.body);
          return host;
        },
      }),
    },
    pools: { list: () => [pool] },
    nodes: {
      get: () => assert.fail('the Node is not looked at'),
    },
    hosts: { list: () => [host] },
    events: {
      record: (_o: unknown, type: string, reason: string, message: string) =>
        events.push(`${type} ${reason}: ${message}`),
    },
    payload: () => assert.fail('no payload is loaded'),
  } as unknown as JoinContext;
  const result = await reconcilePullHost(ctx, host);
  assert.ok(result && 'requeueAfterMs' in result);
  assert.equal(events.length, 1);
  assert.match(
    events[0]!,
    /^Warning ActiveDirectoryRefused: Pool corp joins its hosts to Active Directory domain corp\.example\.com .*this Pull-mode host joined by itself, so its Node is not adopted\. Add the host over SSH/,
  );
  const status = JSON.stringify(patches);
  assert.match(status, /"type":"Degraded","status":"True".*"reason":"ActiveDirectoryRefused"/);
});
