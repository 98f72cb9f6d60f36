import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorOffenders, namesMentioned, statusComparisons } from './source-guards.ts';

const one = (source: string) => errorOffenders([{ name: 'src/x.ts', source }]);

test('the error guard finds a class extending any built-in error class', async () => {
  assert.deepEqual(await one('export class ParseError extends SyntaxError {}\n'), [
    'src/x.ts:1:8: class ParseError extends SyntaxError',
  ]);
  for (const base of ['Error', 'TypeError', 'RangeError', 'AggregateError', 'globalThis.Error']) {
    const found = await one(`const E = class extends ${base} {};\n`);
    assert.equal(found.length, 1, base);
  }
  assert.deepEqual(await one('abstract class Base<T> extends URIError implements X {}\n'), [
    'src/x.ts:1:1: abstract class Base<T> extends URIError implements X',
  ]);
});

test('the error guard finds an error made for a rejection, a callback or a stream', async () => {
  const source = [
    "reject(new Error('timed out'));",
    "return Promise.reject(new TypeError('bad'));",
    "callback(new Error('no'));",
    "socket.destroy(new RangeError('slow'));",
    "emitter.emit('error', new AggregateError([], 'all failed'));",
    "const e = Error('called without new');",
    "throw Object.assign(new Error('x'), { code: 'ETIMEDOUT' });",
  ].join('\n');
  const found = await errorOffenders([
    { name: 'src/y.ts', source: `function f() {\n${source}\n}` },
  ]);
  assert.deepEqual(found, [
    "src/y.ts:2:8: new Error('timed out')",
    "src/y.ts:3:23: new TypeError('bad')",
    "src/y.ts:4:10: new Error('no')",
    "src/y.ts:5:16: new RangeError('slow')",
    "src/y.ts:6:23: new AggregateError([], 'all failed')",
    "src/y.ts:7:11: Error('called without new')",
    "src/y.ts:8:21: new Error('x')",
  ]);
});

test('the error guard follows local subclasses of error classes, across files', async () => {
  const found = await errorOffenders([
    { name: 'src/a.ts', source: 'export class BaseError extends Error {}\n' },
    {
      name: 'src/b.ts',
      source: "export class LeafError extends BaseError {}\nthrow new LeafError('x');\n",
    },
  ]);
  assert.deepEqual(found, [
    'src/a.ts:1:8: class BaseError extends Error',
    'src/b.ts:1:8: class LeafError extends BaseError',
    "src/b.ts:2:7: new LeafError('x')",
  ]);
});

test('the error guard refuses subclasses of the catalog class but not the class itself', async () => {
  assert.deepEqual(
    await one(
      "class HostError extends WinfleetError {}\nthrow new WinfleetError('WF_TERMINAL', 'x');\n",
    ),
    ['src/x.ts:1:1: class HostError extends WinfleetError'],
  );
});

test('the error guard skips comments, strings and the allow-list', async () => {
  const source = [
    '// never throw new Error("x") here',
    '/* reject(new TypeError()) */',
    "const hint = 'throw new Error(';",
    'const doc = `class A extends Error {}`;',
    "throw new WinfleetError('WF_TERMINAL', 'new Error(');",
    'class Queue extends Map {}',
  ].join('\n');
  assert.deepEqual(await one(source), []);
  const allowed = await errorOffenders(
    [{ name: 'src/errors/catalog.ts', source: 'export class WinfleetError extends Error {}' }],
    new Set(['src/errors/catalog.ts']),
  );
  assert.deepEqual(allowed, []);
});

test('the error guard refuses source it cannot parse instead of skipping it', async () => {
  await assert.rejects(one('throw new Error(\n'), /Cannot parse src\/x\.ts: syntax error at/);
});

test('the status guard finds numeric status comparisons in every form', async () => {
  const source = [
    'if (res.status === 404) a();',
    'if (error.statusCode !== 409) b();',
    'if ((error as { code?: number }).code === 410) c();',
    'if (500 <= status) d();',
    'if (httpStatus(error) == 422) e();',
    'if (res?.status! >= 500) f();',
    'switch (answer.status) {',
    '  case 200: break;',
    "  case 'x': break;",
    '}',
  ].join('\n');
  assert.deepEqual(await statusComparisons({ name: 'src/z.ts', source }), [
    'src/z.ts:1:5: res.status === 404',
    'src/z.ts:2:5: error.statusCode !== 409',
    'src/z.ts:3:5: (error as { code?: number }).code === 410',
    'src/z.ts:4:5: 500 <= status',
    'src/z.ts:5:5: httpStatus(error) == 422',
    'src/z.ts:6:5: res?.status! >= 500',
    'src/z.ts:8:3: case 200: break;',
  ]);
});

test('the status guard passes other numbers, other names, comments and strings', async () => {
  const source = [
    'if (status === 0) a();',
    'if (status === 600 || code === 99) b();',
    'if (exitCode === 404) c();',
    'if (count > 200) d();',
    '// if (status === 404)',
    "const s = 'status === 404';",
    'if (isNotFound(error)) e();',
    'switch (count) { case 404: break; }',
  ].join('\n');
  assert.deepEqual(await statusComparisons({ name: 'src/z.ts', source }), []);
});

test('names mentioned are identifiers and string contents, not comment words', async () => {
  const names = await namesMentioned({
    name: 'x.test.ts',
    source: [
      '// WF_IN_COMMENT',
      "assert.ok(hasCode(error, 'WF_IN_STRING'));",
      'assert.equal(e.code, `WF_IN_TEMPLATE`);',
      'const { WF_AS_NAME } = codes;',
    ].join('\n'),
  });
  assert.ok(names.has('WF_IN_STRING'));
  assert.ok(names.has('WF_IN_TEMPLATE'));
  assert.ok(names.has('WF_AS_NAME'));
  assert.ok(!names.has('WF_IN_COMMENT'));
  assert.ok(!names.has('// WF_IN_COMMENT'));
});
