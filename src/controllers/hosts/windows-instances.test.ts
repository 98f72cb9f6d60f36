import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostNameFor, parseWindowsInstances } from './windows-instances.ts';

test('WMCO entries (address = username=<user>) parse; bad ones name the key and the fix', () => {
  // The shape of WMCO's example: an IP and a DNS name.
  const { entries, problems } = parseWindowsInstances({
    '10.1.42.1': 'username=Administrator',
    'instance.example.com': 'username=core\n',
    '10.1.42.2': 'user=Administrator',
    'bad_host!': 'username=x',
  });
  assert.deepEqual(entries, [
    { address: '10.1.42.1', username: 'Administrator' },
    { address: 'instance.example.com', username: 'core' },
  ]);
  assert.deepEqual(problems, [
    'data["10.1.42.2"]: the value must be "username=<user>", got "user=Administrator"',
    'data["bad_host!"]: the key must be the host\'s IPv4 address or DNS name',
  ]);
});

test('host names are valid object names derived from the address', () => {
  assert.equal(hostNameFor('10.1.42.1'), 'byoh-10-1-42-1');
  assert.equal(hostNameFor('Instance.Example.com'), 'byoh-instance-example-com');
});
