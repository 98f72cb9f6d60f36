/** The lab's one line per sample file agrees with the refusals printed before it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sampleOutcome } from './lab.ts';

test('a sample is "applied" only when all of its objects were', () => {
  assert.equal(sampleOutcome('seed-000-iis.yaml', 2, []), 'applied seed-000-iis.yaml');
  assert.equal(
    sampleOutcome('seed-000-iis.yaml', 2, ['Service/iis']),
    'applied 1 of 2 objects from seed-000-iis.yaml; refused Service/iis',
  );
  assert.equal(
    sampleOutcome('seed-000-iis.yaml', 1, ['Service/iis']),
    'applied nothing from seed-000-iis.yaml: refused Service/iis',
  );
});
