import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tokenFromBody, tokenRealm } from './registry-auth.ts';

const what = 'token service "auth.example.com" of registry "https://registry.example.com"';
const body = (value: unknown) => Buffer.from(JSON.stringify(value));

test('a token realm must be an HTTP(S) URL; the message names the registry and only the host', () => {
  assert.equal(
    tokenRealm('https://r.example.com', 'https://auth.example.com/token').href,
    'https://auth.example.com/token',
  );
  assert.throws(
    () => tokenRealm('https://r.example.com', 'not a url'),
    /Registry "https:\/\/r\.example\.com" names a token realm that is not a URL/,
  );
  assert.throws(
    () => tokenRealm('https://r.example.com', 'file://auth.example.com/etc/passwd'),
    /token realm on host "auth\.example\.com" that is not HTTP\(S\)/,
  );
});

test('a token answer gives "token" (else "access_token"), kept for its lifetime less a margin, at least 60 s', () => {
  assert.deepEqual(tokenFromBody(body({ token: 'a', access_token: 'b' }), what), {
    token: 'a',
    ttl: 55_000,
  });
  assert.deepEqual(tokenFromBody(body({ token: '', access_token: 'b', expires_in: 300 }), what), {
    token: 'b',
    ttl: 295_000,
  });
  // Less than 60 s, or nonsense, counts as 60 s (distribution spec).
  assert.equal(tokenFromBody(body({ token: 'a', expires_in: 10 }), what).ttl, 55_000);
  assert.equal(tokenFromBody(body({ token: 'a', expires_in: '300' }), what).ttl, 55_000);
});

test('a token answer that is not JSON, or has no token, is refused', () => {
  assert.throws(
    () => tokenFromBody(Buffer.from('<html>'), what),
    /answered with a body that is not JSON/,
  );
  assert.throws(
    () => tokenFromBody(body({ access_token: 7 }), what),
    /without "token" or "access_token"/,
  );
  assert.throws(() => tokenFromBody(body(null), what), /without "token" or "access_token"/);
});
