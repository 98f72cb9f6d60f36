import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import {
  formatJoinTokenRecord,
  type JoinTokenRecord,
  joinTokenExpired,
  joinTokenSpent,
  parseJoinTokenRecord,
} from './join-token-record.ts';

const record: JoinTokenRecord = {
  tokenId: 'abc123',
  pool: 'web',
  namespace: 'winfleet-system',
  uses: 2,
  usesLeft: 1,
  expires: '2026-11-27T12:00:00Z',
  labels: { pool: 'web' },
  joined: [{ nodeName: 'web-1', csr: 'uid-1', at: '2026-11-27T10:00:00Z' }],
};
const name = 'winfleet-join-token-abc123';

test('a record reads back as written', () => {
  assert.deepEqual(parseJoinTokenRecord(name, formatJoinTokenRecord(record)), record);
  assert.equal(joinTokenExpired(record, new Date('2026-11-27T11:59:59Z')), false);
  assert.equal(joinTokenExpired(record, new Date('2026-11-27T12:00:00Z')), true);
});

test('spent: expired, or used up; a token with uses left before its expiry is not', () => {
  const before = new Date('2026-11-27T11:00:00Z');
  assert.equal(joinTokenSpent(record, before), undefined);
  assert.equal(
    joinTokenSpent(record, new Date('2026-11-27T12:00:00Z')),
    'expired at 2026-11-27T12:00:00Z',
  );
  const usedUp = { ...record, uses: 1, usesLeft: 0 };
  assert.equal(joinTokenSpent(usedUp, before), 'used up (1 of 1)');
});

test('a record that is not exactly right is refused, naming the field', () => {
  const cases: [string, unknown, RegExp][] = [
    ['not JSON', '{', /not JSON/],
    [
      'another id than its name',
      { ...record, tokenId: 'zzz999' },
      /tokenId: "zzz999" is not the id/,
    ],
    ['more uses left than issued', { ...record, usesLeft: 3, joined: [] }, /usesLeft: 3 is more/],
    ['uses that do not add up', { ...record, usesLeft: 2 }, /joined: 1 hosts, but 0 uses/],
    ['negative uses left', { ...record, usesLeft: -1 }, /usesLeft: must be ≥ 0/],
    ['an unknown field', { ...record, admin: true }, /admin: unknown field/],
    ['a local time', { ...record, expires: '2026-11-27T12:00:00+02:00' }, /expires: /],
    [
      'a month 13',
      { ...record, expires: '2026-13-27T12:00:00Z' },
      /expires: "2026-13-27T12:00:00Z" is not a time/,
    ],
    [
      'a node name with a dot',
      { ...record, joined: [{ ...record.joined[0], nodeName: 'a.b' }] },
      /joined\.0\.nodeName/,
    ],
  ];
  for (const [what, value, problem] of cases) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    assert.throws(
      () => parseJoinTokenRecord(name, text),
      (error) =>
        hasCode(error, 'WF_JOIN_TOKEN_RECORD_INVALID') && problem.test((error as Error).message),
      what,
    );
  }
  assert.throws(() => parseJoinTokenRecord(name, undefined), /not JSON/);
});
