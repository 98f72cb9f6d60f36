import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LabelSelector, WindowsNodePool } from '../api/windows-node-pool.ts';
import { poolJoinLabels } from './pool-join-labels.ts';

const pool = (name: string, selector: LabelSelector): WindowsNodePool => ({
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsNodePool',
  metadata: { name, namespace: 'ns' },
  spec: { selector },
});

test('a pool of matchLabels gives them; expressions they satisfy are fine', () => {
  const web = pool('web', {
    matchLabels: { pool: 'web' },
    matchExpressions: [
      { key: 'pool', operator: 'In', values: ['web', 'api'] },
      { key: 'gpu', operator: 'DoesNotExist' },
    ],
  });
  assert.deepEqual(poolJoinLabels(web, [web, pool('db', { matchLabels: { pool: 'db' } })]), {
    labels: { pool: 'web' },
  });
});

test('refused: expressions matchLabels cannot meet, overlapping pools, a bad selector', () => {
  const needs = pool('web', {
    matchLabels: { pool: 'web' },
    matchExpressions: [{ key: 'zone', operator: 'Exists' }],
  });
  assert.match(
    (poolJoinLabels(needs, [needs]) as { problem: string }).problem,
    /cannot be met by its matchLabels alone/,
  );
  const web = pool('web', { matchLabels: { pool: 'web' } });
  const all = pool('all', {});
  assert.match(
    (poolJoinLabels(web, [web, all]) as { problem: string }).problem,
    /selected by WindowsNodePool all too/,
  );
  const bad = pool('bad', { matchExpressions: [{ key: 'a', operator: 'In', values: [] }] });
  assert.match((poolJoinLabels(bad, [bad]) as { problem: string }).problem, /bad selector/);
});
