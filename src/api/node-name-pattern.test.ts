import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileNodeNamePattern } from './node-name-pattern.ts';
import { nodeNamePatternMaxLength } from './windows-node-pool.ts';

function compiled(source: string) {
  const pattern = compileNodeNamePattern(source);
  assert.ok(pattern.ok, pattern.ok ? '' : pattern.problem);
  return pattern;
}

test('an anchored pattern decides the whole name', () => {
  const web = compiled('^web-[0-9]{1,4}$');
  assert.equal(web.matches('web-12'), true);
  assert.equal(web.matches('web-12345'), false);
  assert.equal(web.matches('xweb-12'), false);
  assert.equal(web.matches('web-12-evil'), false);
  const either = compiled('^(web|api)-[a-z0-9]+$');
  assert.equal(either.matches('api-x1'), true);
  assert.equal(either.matches('db-x1'), false);
});

test('refused: unanchored, too long, not RE2 (lookahead, backreferences, bad repeats)', () => {
  for (const [source, problem] of [
    ['web-.*', /is not anchored/],
    ['^web-.*', /is not anchored/],
    ['web-.*$', /is not anchored/],
    ['^', /is not anchored/],
    [`^${'a'.repeat(nodeNamePatternMaxLength)}$`, /more than 256/],
    ['^(?=web)[a-z]+$', /not an RE2 regular expression: .*\(\?=/],
    ['^(a)\\1$', /not an RE2 regular expression/],
    ['^a{1,1001}$', /not an RE2 regular expression: .*repeat count/],
    ['^(web$', /not an RE2 regular expression: .*missing closing \)/],
  ] as const) {
    const pattern = compileNodeNamePattern(source);
    assert.equal(pattern.ok, false, source);
    assert.match(pattern.ok ? '' : pattern.problem, problem, source);
  }
});

test('no pattern makes the check slow: nested quantifiers against the longest name', () => {
  // Each of these takes a backtracking engine exponential time on a name that almost matches.
  const name = `${'a'.repeat(62)}!`;
  for (const source of ['^(a+)+$', '^(a|a)*$', '^(a*)*b$', '^(a|aa)+$', '^(.*a){20}$']) {
    const pattern = compiled(source);
    const started = performance.now();
    assert.equal(pattern.matches(name), false, source);
    const ms = performance.now() - started;
    assert.ok(ms < 250, `${source} took ${ms.toFixed(1)} ms`);
  }
});
