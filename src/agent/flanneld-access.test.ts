import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import type { AgentContext } from './agent-context.ts';
import { flanneldHoldBack } from './flanneld-access.ts';

function contextWithLog(): { context: AgentContext; log: string[] } {
  const log: string[] = [];
  const stderr = (text: string) => {
    log.push(text);
  };
  return { context: { stderr } as unknown as AgentContext, log };
}

const manifest = (names: string[]) =>
  ({
    version: 'v',
    services: names.map((name) => ({ name })),
    files: [],
  }) as unknown as ServicesManifest;

test('no flanneld in the manifest: nothing held back, nothing asked', async () => {
  const { context, log } = contextWithLog();
  assert.deepEqual([...(await flanneldHoldBack(context, manifest(['kubelet']), undefined))], []);
  assert.deepEqual(log, []);
});

test('flanneld and no node credentials yet: held back, said once', async () => {
  const { context, log } = contextWithLog();
  for (let i = 0; i < 3; i++)
    assert.deepEqual(
      [...(await flanneldHoldBack(context, manifest(['kubelet', 'flanneld']), undefined))],
      ['flanneld'],
    );
  assert.deepEqual(log, ['flanneld waits: the node has no credentials yet\n']);
});
