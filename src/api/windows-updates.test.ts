import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorCode } from '../errors/catalog.ts';
import {
  formatWindowsUpdateReport,
  maxInstalled,
  maxReportBytes,
  maxReportedUpdates,
  parseWindowsUpdateReport,
  rebootTokenPattern,
  type WindowsUpdateReport,
} from './windows-updates.ts';

const good: WindowsUpdateReport = {
  bootId: '3f1c2a9e-7d6b-4c55-9b1a-0e2f4d6c8a10',
  searchedAt: '2026-11-23T01:00:00Z',
  available: [
    {
      kb: 'KB5040437',
      title: '2024-07 Cumulative Update for Microsoft server operating system version 21H2',
      categories: ['Security Updates'],
      rebootRequired: true,
    },
    { kb: 'KB890830', title: 'Windows Malicious Software Removal Tool', categories: ['Updates'] },
  ],
  installed: ['KB5039227'],
  failed: [{ kb: 'KB5041160', error: 'install failed: 0x80240022 (WU_E_ALL_UPDATES_FAILED)' }],
  rebootPending: true,
};

const refused = (value: unknown, why: RegExp) =>
  assert.throws(
    () => parseWindowsUpdateReport(typeof value === 'string' ? value : JSON.stringify(value)),
    (error: Error) => {
      assert.ok(errorCode(error) === 'WF_SCHEMA_INVALID');
      assert.match(error.message, /^winfleet\.io\/windows-updates: the agent's report was refused/);
      assert.match(error.message, why);
      assert.match(
        error.message,
        /the agent rewrites it at its next search, or remove the annotation$/,
      );
      return true;
    },
  );

test('a report survives formatting and parsing unchanged', () => {
  const text = formatWindowsUpdateReport(good);
  assert.deepEqual(parseWindowsUpdateReport(text), good);
  const withError = {
    ...good,
    error: 'search failed: 0x8024402C (WU_E_PT_WINHTTP_NAME_NOT_RESOLVED)',
  };
  assert.deepEqual(parseWindowsUpdateReport(formatWindowsUpdateReport(withError)), withError);
});

test('the agent never writes what the operator would refuse', () => {
  assert.throws(
    () => formatWindowsUpdateReport({ ...good, installed: ['5040437'] }),
    /installed\[0\]: "5040437" is not a KB number/,
  );
});

test('refuses a report that is not the expected JSON object', () => {
  refused('{"bootId":', /not JSON/);
  refused('[]', /report: expected an object/);
  refused('null', /report: expected an object/);
  refused({ ...good, extra: 1 }, /report: unknown key "extra"/);
  refused(
    JSON.stringify(good).replace('{', '{"__proto__":{"rebootPending":true},'),
    /report: unknown key "__proto__"/,
  );
  const { rebootPending: _r, ...missing } = good;
  refused(missing, /report\.rebootPending: missing/);
});

test('refuses oversize reports and lists', () => {
  const huge = JSON.stringify({ ...good, error: 'x'.repeat(maxReportBytes) });
  refused(huge, new RegExp(`larger than ${maxReportBytes} bytes`));
  const many = Array.from({ length: maxReportedUpdates + 1 }, (_, i) => ({
    kb: `KB${5000000 + i}`,
    title: 't',
    categories: [],
  }));
  refused(
    { ...good, available: many },
    new RegExp(`available: more than ${maxReportedUpdates} entries`),
  );
  refused(
    { ...good, installed: Array.from({ length: maxInstalled + 1 }, (_, i) => `KB${5000000 + i}`) },
    new RegExp(`installed: more than ${maxInstalled} entries`),
  );
  refused(
    { ...good, available: [{ ...good.available[0], categories: Array(9).fill('Updates') }] },
    /available\[0\]\.categories: more than 8 entries/,
  );
  refused(
    { ...good, available: [{ ...good.available[0], title: 'x'.repeat(257) }] },
    /available\[0\]\.title: expected a string of 1–256 characters/,
  );
  refused({ ...good, error: 'e'.repeat(513) }, /error: expected a string of 1–512 characters/);
});

test('refuses bad and duplicate KB numbers', () => {
  for (const kb of [
    '5040437',
    'kb5040437',
    'KB12345',
    'KB123456789',
    'KB5040437 ',
    'KB50404a7',
    7,
  ]) {
    refused(
      { ...good, available: [{ ...good.available[0], kb }] },
      /available\[0\]\.kb: .* is not a KB number like "KB5040437"/,
    );
  }
  refused(
    { ...good, available: [good.available[0], { ...good.available[1], kb: 'KB5040437' }] },
    /available\[1\]\.kb: KB5040437 is listed twice/,
  );
  refused({ ...good, failed: [{ kb: 'KB1', error: 'x' }] }, /failed\[0\]\.kb/);
});

test('refuses control characters (log and terminal injection)', () => {
  refused(
    { ...good, available: [{ ...good.available[0], title: 'Update\n[INFO] all good' }] },
    /available\[0\]\.title: control characters/,
  );
  refused(
    { ...good, available: [{ ...good.available[0], categories: ['Security\u001b[2JUpdates'] }] },
    /available\[0\]\.categories\[0\]: control characters/,
  );
  refused(
    { ...good, failed: [{ kb: 'KB5041160', error: 'a\u0000b' }] },
    /failed\[0\]\.error: control characters/,
  );
  refused({ ...good, error: 'x\ry' }, /error: control characters/);
  // Unicode line separators and bidirectional overrides spoof what kubectl shows.
  refused(
    { ...good, available: [{ ...good.available[0], title: 'Update\u2028[INFO] all good' }] },
    /available\[0\]\.title: control characters/,
  );
  refused(
    { ...good, available: [{ ...good.available[0], title: 'Security \u202Esetadpu' }] },
    /available\[0\]\.title: control characters/,
  );
});

test('refuses wrong types', () => {
  refused({ ...good, rebootPending: 'true' }, /rebootPending: expected a boolean/);
  refused({ ...good, bootId: 'a/b' }, /bootId: expected 1–64 letters, digits and dashes/);
  refused({ ...good, bootId: '' }, /bootId/);
  refused({ ...good, searchedAt: 'yesterday' }, /searchedAt: expected an RFC 3339 time/);
  // The right shape, no real time: the CRD's date-time would refuse the copy of it.
  refused({ ...good, searchedAt: '2025-13-45T99:99:99Z' }, /searchedAt/);
  refused({ ...good, available: {} }, /available: expected a list/);
  refused({ ...good, installed: 'KB5040437' }, /installed: expected a list/);
  refused(
    { ...good, available: [{ ...good.available[0], rebootRequired: 1 }] },
    /available\[0\]\.rebootRequired: expected a boolean/,
  );
  refused({ ...good, available: [{ ...good.available[0], categories: [1] }] }, /categories\[0\]/);
  refused({ ...good, failed: [{ kb: 'KB5041160' }] }, /failed\[0\]\.error: missing/);
  refused(
    { ...good, failed: [{ kb: 'KB5041160', error: 'x', hint: 'y' }] },
    /failed\[0\]: unknown key "hint"/,
  );
});

test('reboot tokens are DNS-label-like', () => {
  for (const ok of ['t1', 'a', '2026-11-23t01-00-00z', 'x'.repeat(63)])
    assert.match(ok, rebootTokenPattern);
  for (const bad of ['', '-a', 'a-', 'A1', 'a_b', 'a b', 'x'.repeat(64), 'a\nb', 'a.b']) {
    assert.doesNotMatch(bad, rebootTokenPattern);
  }
});
