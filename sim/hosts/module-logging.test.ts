/**
 * The module-logging model (module-logging.ts) records what Windows would: the old way of
 * reading the credentials (ConvertFrom-Json fed stdin, ConvertTo-SecureString -String) puts the
 * password in 4103 bindings; the catalog's join-domain, which reads them with .NET calls only,
 * puts it nowhere.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { credentialsInput } from '../../src/hostaccess/domain-scripts.ts';
import { remoteScript } from '../../src/hostaccess/remote-scripts.ts';
import { moduleLogEvents } from './module-logging.ts';

const password = 'S3cret-in-4103?';

test('ConvertTo-SecureString -String and ConvertFrom-Json fed stdin are logged with the password', () => {
  const stdin = JSON.stringify({ username: 'CORP\\joiner', password });
  const script = [
    '$secret = [Console]::In.ReadToEnd() | ConvertFrom-Json',
    '$password = ConvertTo-SecureString -String ([string]$secret.password) -AsPlainText -Force',
    '$credential = New-Object -TypeName System.Management.Automation.PSCredential -ArgumentList ([string]$secret.username), $password',
    '$join = @{ DomainName = "corp.example.com"; Credential = $credential }',
    'Add-Computer @join',
  ].join('\n');
  const events = moduleLogEvents(script, stdin);
  const leaking = events.filter((e) => e.payload.includes(password)).map((e) => e.command);
  assert.deepEqual(leaking, ['ConvertFrom-Json', 'ConvertTo-SecureString', 'New-Object']);
  assert.ok(!events.find((e) => e.command === 'Add-Computer')!.payload.includes(password));
});

test('the catalog join-domain binds no cmdlet to the credentials', () => {
  const script = remoteScript('join-domain', { domain: 'corp.example.com' });
  const stdin = credentialsInput({ username: 'CORP\\joiner', password });
  const events = moduleLogEvents(script, stdin);
  assert.ok(events.some((e) => e.command === 'Add-Computer'));
  const base64 = Buffer.from(password).toString('base64');
  assert.deepEqual(
    events.filter((e) => e.payload.includes(password) || e.payload.includes(base64)),
    [],
  );
});
