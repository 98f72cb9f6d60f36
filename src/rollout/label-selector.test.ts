import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import type { LabelSelector } from '../api/windows-node-pool.ts';
import { matchesSelector, selectorProblems } from './label-selector.ts';

const web = { pool: 'web', 'topology.kubernetes.io/zone': 'a' };

test('matchLabels: every pair must be there with that value', () => {
  assert.equal(matchesSelector({ matchLabels: { pool: 'web' } }, web), true);
  assert.equal(matchesSelector({ matchLabels: { pool: 'web', tier: 'x' } }, web), false);
  assert.equal(matchesSelector({ matchLabels: { pool: 'Web' } }, web), false, 'case matters');
  assert.equal(matchesSelector({ matchLabels: { pool: '' } }, {}), false, 'absent is not ""');
  assert.equal(matchesSelector({ matchLabels: { pool: '' } }, { pool: '' }), true);
});

test('matchExpressions: In, NotIn, Exists, DoesNotExist as Kubernetes evaluates them', () => {
  const cases: [LabelSelector, Record<string, string> | undefined, boolean][] = [
    [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['web', 'api'] }] }, web, true],
    [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['api'] }] }, web, false],
    [{ matchExpressions: [{ key: 'gpu', operator: 'In', values: ['x'] }] }, web, false],
    [{ matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['web'] }] }, web, false],
    [{ matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['api'] }] }, web, true],
    // NotIn holds for an object without the key, as in Kubernetes.
    [{ matchExpressions: [{ key: 'gpu', operator: 'NotIn', values: ['x'] }] }, web, true],
    [{ matchExpressions: [{ key: 'pool', operator: 'Exists' }] }, web, true],
    [{ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, web, false],
    [{ matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] }, web, true],
    [{ matchExpressions: [{ key: 'pool', operator: 'DoesNotExist' }] }, undefined, true],
    [
      {
        matchLabels: { pool: 'web' },
        matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['b'] }],
      },
      web,
      false,
    ],
  ];
  for (const [selector, labels, expected] of cases) {
    assert.equal(matchesSelector(selector, labels), expected, JSON.stringify([selector, labels]));
  }
});

test('an empty selector selects everything; an unknown operator nothing', () => {
  assert.equal(matchesSelector({}, {}), true);
  assert.equal(matchesSelector({ matchLabels: {}, matchExpressions: [] }, undefined), true);
  const bogus = {
    matchExpressions: [{ key: 'pool', operator: 'Like' }],
  } as unknown as LabelSelector;
  assert.equal(matchesSelector(bogus, web), false);
});

test('a label named like an Object.prototype member is not present unless set', () => {
  assert.equal(
    matchesSelector({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, {}),
    false,
  );
  assert.equal(matchesSelector({ matchLabels: { toString: 'x' } }, {}), false);
});

test('selectorProblems names the field and the fix', () => {
  const at = 'spec.selector';
  assert.deepEqual(selectorProblems({ matchLabels: { pool: 'web' } }, at), []);
  assert.deepEqual(selectorProblems({}, at), []);
  assert.deepEqual(selectorProblems(null, at), [
    'spec.selector: must be a label selector ({matchLabels: {…}, matchExpressions: […]})',
  ]);
  assert.deepEqual(
    selectorProblems(
      {
        matchLabels: { pool: 7 },
        matchExpressions: [
          { key: 'a', operator: 'In' },
          { key: 'b', operator: 'Exists', values: ['x'] },
          { key: 'c', operator: 'Like', values: ['x'] },
          { key: '', operator: 'NotIn', values: [1] },
        ],
      },
      at,
    ),
    [
      'spec.selector.matchLabels.pool: must be a string value',
      'spec.selector.matchExpressions[0].values: In needs at least one value',
      'spec.selector.matchExpressions[1].values: Exists takes no values; remove them',
      'spec.selector.matchExpressions[2].operator: "Like" is not one of In, NotIn, Exists, DoesNotExist',
      'spec.selector.matchExpressions[3].key: must be a label key',
      'spec.selector.matchExpressions[3].values: must be a list of strings',
    ],
  );
  assert.deepEqual(selectorProblems({ matchExpressions: {} }, at), [
    'spec.selector.matchExpressions: must be a list of {key, operator, values}',
  ]);
});

test('In {v} is the same as matchLabels {k: v}; NotIn is the negation of In', (t) => {
  const key = fc.constantFrom('pool', 'zone', 'tier');
  const value = fc.constantFrom('web', 'api', '');
  fc.assert(
    fc.property(key, value, fc.dictionary(key, value), (k, v, labels) => {
      const inSelector: LabelSelector = {
        matchExpressions: [{ key: k, operator: 'In', values: [v] }],
      };
      assert.equal(
        matchesSelector(inSelector, labels),
        matchesSelector({ matchLabels: { [k]: v } }, labels),
      );
      const notIn: LabelSelector = {
        matchExpressions: [{ key: k, operator: 'NotIn', values: [v] }],
      };
      assert.equal(matchesSelector(notIn, labels), !matchesSelector(inSelector, labels));
    }),
    { seed: testSeed(t) },
  );
});
