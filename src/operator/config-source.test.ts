/** The report for a winfleet-config ConfigMap without its config.yaml key. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { missingKeyProblem } from './config-source.ts';

test('a near-miss key is named with the rename that fixes it', () => {
  for (const key of ['config.yml', 'config.json', 'Config.yaml', 'config.yaml ']) {
    assert.match(
      missingKeyProblem({ data: { [key]: 'images: {}' } }),
      new RegExp(`rename key "${key.replace('.', '\\.')}" to "config\\.yaml"`),
    );
  }
  assert.match(
    missingKeyProblem({ data: { 'winfleet.yaml': '' } }),
    /has "winfleet\.yaml"\); rename key "winfleet\.yaml" to "config\.yaml"/,
  );
});

test('without a near miss the report says where the configuration goes', () => {
  assert.match(
    missingKeyProblem({ data: { notes: 'x' } }),
    /no key "config\.yaml" \(it has "notes"\); put the configuration under key "config\.yaml"/,
  );
  assert.match(missingKeyProblem({}), /it has no keys/);
});
