import assert from 'node:assert/strict';
import { test } from 'node:test';
import { outputReader } from './output-reader.ts';

const reader = outputReader('read the test facts');

test('exactKeys takes an object with exactly the keys, in any order', () => {
  assert.deepEqual(reader.exactKeys({ b: 1, a: 2 }, 'the output', ['a', 'b']), { b: 1, a: 2 });
});

test('exactKeys refuses a missing or an extra key, a list and null, naming the field', () => {
  assert.throws(() => reader.exactKeys({ a: 1 }, 'the output', ['a', 'b']), {
    name: 'WinfleetError',
    code: 'WF_WINDOWS_COMMAND_FAILED',
    message: 'Cannot read the test facts: the output has the keys a; expected a, b',
  });
  assert.throws(
    () => reader.exactKeys({ a: 1, b: 2, c: 3 }, 'items[0]', ['a', 'b']),
    /^WinfleetError: Cannot read the test facts: items\[0\] has the keys a, b, c; expected a, b$/,
  );
  assert.throws(() => reader.exactKeys([], 'the output', []), /the output is not an object/);
  assert.throws(() => reader.exactKeys(null, 'x', []), /x is not an object/);
});

test('bool takes only true and false', () => {
  assert.equal(reader.bool({ ok: false }, 'ok', 'p.'), false);
  assert.throws(() => reader.bool({ ok: 'true' }, 'ok', 'p.'), /p\.ok is not a boolean/);
  assert.throws(() => reader.bool({}, 'ok', ''), /: ok is not a boolean$/);
});
