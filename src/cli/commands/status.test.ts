import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { buildFleetStatus } from '../fleet/fleet-status.ts';
import { watchFrame } from './status.ts';

const empty = { hosts: [], nodes: [], pools: [], runtimeClasses: [] };
const statuses = [
  buildFleetStatus(empty, new Date('2026-11-23T08:00:00Z')),
  buildFleetStatus(empty, new Date('2026-11-23T08:00:05Z')),
  buildFleetStatus(empty, new Date('2026-11-23T08:00:09Z')),
];
const stream = (format: 'json' | 'yaml' | 'table') =>
  statuses.map((s, i) => watchFrame(s, format, false, i === 0)).join('');

test('status -w -o yaml off a terminal is a YAML stream a parser reads back document by document', () => {
  const documents = parseAllDocuments(stream('yaml'));
  assert.ok(Array.isArray(documents), 'more than one document');
  assert.deepEqual(
    documents.map((d) => d.errors),
    statuses.map(() => []),
  );
  assert.deepEqual(
    documents.map((d) => d.toJS()),
    statuses.map((s) => JSON.parse(JSON.stringify(s))),
  );
});

test('status -w -o json off a terminal is JSON Lines: one document per line', () => {
  const lines = stream('json').split('\n');
  assert.equal(lines.pop(), '', 'ends in a newline');
  assert.deepEqual(
    lines.map((line) => JSON.parse(line)),
    statuses.map((s) => JSON.parse(JSON.stringify(s))),
  );
});

test('status -w tables off a terminal are separated by a dated line; on a terminal the screen is cleared', () => {
  assert.match(stream('table'), /\n--- 2026-11-23T08:00:05\.000Z\n/);
  assert.ok(watchFrame(statuses[1]!, 'yaml', true, false).startsWith('\u001b[H\u001b[2J'));
});
