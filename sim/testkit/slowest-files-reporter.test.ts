import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type FileTime,
  minutesSeconds,
  recordTest,
  slowestFilesSummary,
} from './slowest-files-reporter.ts';

const pass = (file: string | undefined, nesting: number, ms: number) => ({
  type: 'test:pass',
  data: { file, nesting, details: { duration_ms: ms } },
});

test('only top-level tests of a file count, failed ones included', () => {
  const times = new Map<string, FileTime>();
  recordTest(times, pass('/r/a.test.ts', 0, 1000));
  recordTest(times, pass('/r/a.test.ts', 1, 900)); // a subtest: inside its parent's time
  recordTest(times, {
    type: 'test:fail',
    data: { file: '/r/a.test.ts', nesting: 0, details: { duration_ms: 500 } },
  });
  recordTest(times, pass(undefined, 0, 70)); // no file (the global setup's)
  recordTest(times, { type: 'test:start', data: { file: '/r/b.test.ts', nesting: 0 } });
  assert.deepEqual([...times.values()], [{ file: '/r/a.test.ts', ms: 1500, tests: 2 }]);
});

test('the summary lists the slowest first, at most the count asked for, with the total', () => {
  const times: FileTime[] = [
    { file: '/r/src/fast.test.ts', ms: 1200, tests: 3 },
    { file: '/r/src/slow.e2e.test.ts', ms: 296_400, tests: 1 },
    { file: '/r/sim/mid.e2e.test.ts', ms: 61_000, tests: 4 },
  ];
  assert.equal(
    slowestFilesSummary(times, 2, '/r'),
    [
      'The 2 slowest test files (of 3):',
      '  4 min 56 s  src/slow.e2e.test.ts (1 top-level test)',
      '  1 min 01 s  sim/mid.e2e.test.ts (4 top-level tests)',
      "Test files' times add up to 5 min 59 s.",
      '',
    ].join('\n'),
  );
  assert.equal(slowestFilesSummary([], 10, '/r'), '');
});

test('times read as seconds with a tenth under a minute, minutes and seconds above', () => {
  assert.equal(minutesSeconds(0), '0.0 s');
  assert.equal(minutesSeconds(12_345), '12.3 s');
  assert.equal(minutesSeconds(59_949), '59.9 s');
  assert.equal(minutesSeconds(59_950), '1 min 00 s');
  assert.equal(minutesSeconds(125_000), '2 min 05 s');
});
