/** Admission warnings: fix first, within the API server's per-warning limit, never repeated. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admissionResponse } from './admission-review.ts';
import { admissionWarning, fitWarning, maxWarningRunes, problemText } from './admission-warning.ts';

test('a problem reads field, fix, then detail', () => {
  const problem = { field: 'spec.x', fix: 'remove it', detail: 'Windows has none' };
  assert.equal(problemText(problem), 'spec.x: remove it; Windows has none');
  assert.equal(admissionWarning(problem), 'spec.x: remove it; Windows has none');
  assert.equal(problemText({ field: 'spec.x', fix: 'remove it' }), 'spec.x: remove it');
});

test('a long detail is cut on a rune boundary, the fix kept whole', () => {
  const w = admissionWarning({ field: 'spec.x', fix: 'do this', detail: '🪟'.repeat(400) });
  assert.equal([...w].length, maxWarningRunes);
  assert.ok(w.startsWith('spec.x: do this; 🪟'));
  assert.ok(w.endsWith('🪟…'), 'no half character');
  assert.equal(fitWarning('short'), 'short');
});

test('the response carries each warning once, none over the limit', () => {
  const long = `spec.x: fix; ${'d'.repeat(1000)}`;
  const response = JSON.parse(
    admissionResponse('u', { allowed: true, warnings: ['same', 'same', long] }),
  ).response as { warnings: string[] };
  assert.equal(response.warnings.length, 2);
  assert.equal(response.warnings[0], 'same');
  assert.equal([...response.warnings[1]!].length, maxWarningRunes);
});
