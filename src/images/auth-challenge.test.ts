import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAuthChallenges } from './auth-challenge.ts';

test('parses a registry bearer challenge', () => {
  assert.deepEqual(
    parseAuthChallenges(
      'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
    ),
    [
      {
        scheme: 'bearer',
        params: {
          realm: 'https://auth.docker.io/token',
          service: 'registry.docker.io',
          scope: 'repository:library/nginx:pull',
        },
      },
    ],
  );
});

test('parses basic, unquoted values, escapes, spaces and several challenges', () => {
  assert.deepEqual(parseAuthChallenges('Basic realm="Registry Realm"'), [
    { scheme: 'basic', params: { realm: 'Registry Realm' } },
  ]);
  assert.deepEqual(
    parseAuthChallenges(
      'Basic realm=reg , Bearer Realm = "http://t/\\"x\\"" ,error="invalid_token"',
    ),
    [
      { scheme: 'basic', params: { realm: 'reg' } },
      { scheme: 'bearer', params: { realm: 'http://t/"x"', error: 'invalid_token' } },
    ],
  );
  assert.deepEqual(parseAuthChallenges(['Basic realm="a"', 'Bearer realm="b"']), [
    { scheme: 'basic', params: { realm: 'a' } },
    { scheme: 'bearer', params: { realm: 'b' } },
  ]);
});

test('malformed headers give what could be read and never hang', () => {
  assert.deepEqual(parseAuthChallenges(undefined), []);
  assert.deepEqual(parseAuthChallenges(''), []);
  assert.deepEqual(parseAuthChallenges('"'), []);
  assert.deepEqual(parseAuthChallenges('Bearer realm="unterminated'), [
    { scheme: 'bearer', params: { realm: 'unterminated' } },
  ]);
  assert.deepEqual(parseAuthChallenges('Bearer ="x"'), [{ scheme: 'bearer', params: {} }]);
  assert.deepEqual(parseAuthChallenges(',,, Bearer'), [{ scheme: 'bearer', params: {} }]);
  const hostile = 'Bearer '.repeat(10_000) + 'a='.repeat(10_000);
  assert.ok(parseAuthChallenges(hostile).length > 0);
});
