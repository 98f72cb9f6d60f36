import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorCode } from '../errors/catalog.ts';
import { SshSession, sftpPath } from './ssh-session.ts';

test('a private key that cannot be parsed is WF_SSH_KEY_INVALID, without connecting', async () => {
  const error = await SshSession.connect({
    host: '192.0.2.1', // TEST-NET-1: nothing answers; the key is refused before any connect
    port: 22,
    username: 'Administrator',
    privateKey: 'not a key',
  }).then(
    () => assert.fail('connected with a bad key'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_SSH_KEY_INVALID');
  assert.doesNotMatch((error as Error).message, /not a key/, 'the key never reaches the message');
});

test('Windows paths become OpenSSH SFTP paths', () => {
  assert.equal(sftpPath('C:\\k\\winfleet\\agent.json'), '/C:/k/winfleet/agent.json');
});
