import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRetiredNodeName } from './retired-node-names.ts';

test('entries are parsed strictly', () => {
  assert.deepEqual(parseRetiredNodeName('{"until":"2027-01-01T00:00:00Z","host":"ns/h"}'), {
    until: '2027-01-01T00:00:00Z',
    host: 'ns/h',
  });
  for (const text of [
    'x',
    '[]',
    '{"until":"2027-01-01","host":"ns/h"}',
    '{"until":"2027-01-01T00:00:00Z"}',
    '{"until":"2027-01-01T00:00:00Z","host":"ns/h","extra":1}',
  ]) {
    assert.ok('problem' in parseRetiredNodeName(text), text);
  }
});
