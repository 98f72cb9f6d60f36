import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLoopbackHost } from './loopback.ts';

test('loopback hosts: localhost, 127/8, ::1 and its mapped forms; nothing else', () => {
  for (const host of [
    'localhost',
    'LOCALHOST',
    '127.0.0.1',
    '127.1.2.3',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
  ])
    assert.equal(isLoopbackHost(host), true, host);
  for (const host of [
    '10.0.0.1',
    '128.0.0.1',
    'registry.example.com',
    'localhost.example.com',
    '::2',
    '::ffff:10.0.0.1',
    '0.0.0.0',
    '',
  ])
    assert.equal(isLoopbackHost(host), false, host);
});
