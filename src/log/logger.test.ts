import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger, redact } from './logger.ts';

test('secret-named fields are redacted at any depth', () => {
  const out = redact({
    host: '127.0.0.5',
    privateKey: '-----BEGIN OPENSSH PRIVATE KEY-----',
    nested: {
      token: 'abcdef.0123456789abcdef',
      list: [{ password: 'hunter2', user: 'Administrator' }],
    },
    'private-key.pem': 'x',
  });
  const text = JSON.stringify(out);
  for (const secret of ['BEGIN OPENSSH', 'abcdef.0123456789abcdef', 'hunter2']) {
    assert.ok(!text.includes(secret), `${secret} is not in ${text}`);
  }
  assert.match(text, /127\.0\.0\.5/);
  assert.match(text, /Administrator/);
});

test('log lines are JSON with level, message and fields, filtered by level', () => {
  const lines: string[] = [];
  const log = createLogger({ level: 'info', write: (l) => lines.push(l) }).child({
    controller: 'hosts',
  });
  log.debug('hidden');
  log.info('joined', { host: 'win-1', error: new Error('boom') });
  assert.equal(lines.length, 1);
  const record = JSON.parse(lines[0]!);
  assert.equal(record.level, 'info');
  assert.equal(record.msg, 'joined');
  assert.equal(record.controller, 'hosts');
  assert.deepEqual(record.error, { name: 'Error', message: 'boom' });
});
