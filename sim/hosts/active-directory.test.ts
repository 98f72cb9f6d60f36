import assert from 'node:assert/strict';
import { test } from 'node:test';
import { credentialsInput } from '../../src/hostaccess/domain-scripts.ts';
import { remoteCommand } from '../../src/hostaccess/remote-scripts.ts';
import { parsePowerShellJson } from '../../src/powershell/powershell.ts';
import { SimDomain } from './active-directory.ts';
import { createTestMachine, runOnHost } from './test-machine.ts';

const domainOptions = { name: 'corp.example.com', username: 'joiner', password: 'S3cret-pass' };

async function facts(machine: Parameters<typeof runOnHost>[0]) {
  return parsePowerShellJson(
    (await runOnHost(machine, remoteCommand('host-facts', {}))).stdout,
    'facts',
  ) as {
    hostname: string;
    pendingHostname: string;
    partOfDomain: boolean;
    domain: string;
  };
}

test('the fake domain accepts its one account in the forms Windows takes, and nothing else', () => {
  const domain = new SimDomain(domainOptions);
  for (const user of ['CORP\\joiner', 'corp.example.com\\Joiner', 'joiner@CORP.example.com']) {
    assert.equal(domain.accepts(user, 'S3cret-pass'), true, user);
  }
  assert.equal(domain.accepts('joiner', 'S3cret-pass'), false, 'a bare name is not qualified');
  assert.equal(domain.accepts('CORP\\joiner', 's3cret-pass'), false, 'the password is exact');
  assert.equal(domain.accepts('OTHER\\joiner', 'S3cret-pass'), false);
});

test('credentials with ä€£ join: sent as base64 of UTF-8 (ASCII in every code page); the old JSON on stdin is refused', async (t) => {
  const password = 'Pä€£-S3cret';
  const domain = new SimDomain({ ...domainOptions, password });
  const machine = await createTestMachine(t, { hostname: 'web-1', activeDirectory: domain });
  assert.equal(machine.consoleCodePage, 437, 'an en-US Windows Server console');
  const join = remoteCommand('join-domain', { domain: 'corp.example.com' });
  const input = credentialsInput({ username: 'CORP\\joiner', password });
  assert.match(input, /^[A-Za-z0-9+/=]+\n[A-Za-z0-9+/=]+\n$/, 'two lines of base64: ASCII');
  // The old input, JSON, is not base64: refused before any attempt on the domain.
  const json = `${JSON.stringify({ username: 'CORP\\joiner', password })}\n`;
  const refused = await runOnHost(machine, join, json);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /not a valid Base-64 string/);
  assert.deepEqual(domain.attempts, []);
  const joined = await runOnHost(machine, join, input);
  assert.equal(joined.code, 0, joined.stderr);
  assert.equal(machine.domain, 'corp.example.com');
});

test('a rename is pending until the next boot; an invalid or same name is refused', async (t) => {
  const machine = await createTestMachine(t, { hostname: 'winfleet-ad-host-a01' });
  const bad = await runOnHost(machine, remoteCommand('rename-computer', { newName: 'web_1' }));
  assert.equal(bad.code, 1);
  assert.match(
    bad.stderr,
    /Skip computer 'winfleet-ad-host-a01' with new name 'web_1' because the new name is not valid/,
  );
  const same = await runOnHost(
    machine,
    remoteCommand('rename-computer', { newName: 'WINFLEET-AD-HOST-A01' }),
  );
  assert.match(same.stderr, /because the new name is the same as the current name/);

  const ok = await runOnHost(machine, remoteCommand('rename-computer', { newName: 'corp-1a2b3c' }));
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(
    { hostname: (await facts(machine)).hostname, pending: (await facts(machine)).pendingHostname },
    { hostname: 'winfleet-ad-host-a01', pending: 'corp-1a2b3c' },
  );
  await machine.reboot({ reason: 'test' });
  const after = await facts(machine);
  assert.equal(after.hostname, 'corp-1a2b3c');
  assert.equal(after.pendingHostname, 'corp-1a2b3c');
});

test('Add-Computer: wrong credentials leave the machine in its workgroup; right ones join it', async (t) => {
  const domain = new SimDomain(domainOptions);
  const machine = await createTestMachine(t, { hostname: 'web-1', activeDirectory: domain });
  const join = remoteCommand('join-domain', {
    domain: 'corp.example.com',
    organizationalUnit: 'OU=K8s,DC=corp,DC=example,DC=com',
  });
  const wrong = await runOnHost(
    machine,
    join,
    credentialsInput({ username: 'CORP\\joiner', password: 'nope' }),
  );
  assert.equal(wrong.code, 1);
  assert.match(
    wrong.stderr,
    /Computer 'web-1' failed to join domain 'corp\.example\.com' from its current workgroup 'WORKGROUP' with following error message: The user name or password is incorrect\./,
  );
  assert.equal((await facts(machine)).partOfDomain, false);
  assert.deepEqual(domain.computers, []);

  const none = await runOnHost(machine, join, '');
  assert.equal(none.code, 1, 'no credentials on stdin: nothing to join with');
  assert.match(none.stderr, /FromBase64String.*Value cannot be null/);
  const notBase64 = await runOnHost(machine, join, '{"username":"CORP\\\\joiner"}\n');
  assert.match(notBase64.stderr, /not a valid Base-64 string/);

  const right = await runOnHost(
    machine,
    join,
    credentialsInput({ username: 'CORP\\joiner', password: 'S3cret-pass' }),
  );
  assert.equal(right.code, 0, right.stderr);
  assert.deepEqual(await facts(machine), {
    ...(await facts(machine)),
    partOfDomain: true,
    domain: 'corp.example.com',
  });
  assert.deepEqual(domain.computers, [
    {
      name: 'WEB-1',
      dnsHostName: 'web-1.corp.example.com',
      organizationalUnit: 'OU=K8s,DC=corp,DC=example,DC=com',
    },
  ]);
  const again = await runOnHost(
    machine,
    join,
    credentialsInput({ username: 'CORP\\joiner', password: 'S3cret-pass' }),
  );
  assert.match(
    again.stderr,
    /Cannot add computer 'web-1' to domain 'corp\.example\.com' because it is already in that domain/,
  );

  // Only the domain named is left.
  const other = await runOnHost(
    machine,
    remoteCommand('leave-domain', { domain: 'other.example.com' }),
  );
  assert.match(other.stderr, /not in domain other\.example\.com but in corp\.example\.com/);
  // Locally, with no credentials: the computer account stays (enabled) in the domain.
  const left = await runOnHost(
    machine,
    remoteCommand('leave-domain', { domain: 'corp.example.com' }),
  );
  assert.equal(left.code, 0, left.stderr);
  assert.equal((await facts(machine)).domain, 'WORKGROUP');
  assert.ok(domain.computer('web-1'), 'the computer account stays');
  assert.deepEqual(
    domain.attempts.map((a) => a.operation),
    ['join', 'join'],
    'the domain saw no removal',
  );
});

test('Add-Computer refuses a pending rename, an unreachable domain, an OU of another domain and a NetBIOS clash', async (t) => {
  const domain = new SimDomain(domainOptions);
  const creds = credentialsInput({ username: 'joiner@corp.example.com', password: 'S3cret-pass' });
  const a = await createTestMachine(t, {
    hostname: 'host-long-name-0001',
    activeDirectory: domain,
  });
  const b = await createTestMachine(t, {
    hostname: 'host-long-name-0002',
    activeDirectory: domain,
  });
  const lonely = await createTestMachine(t, { hostname: 'lonely' });

  const unreachable = await runOnHost(
    lonely,
    remoteCommand('join-domain', { domain: 'corp.example.com' }),
    creds,
  );
  assert.match(
    unreachable.stderr,
    /The specified domain either does not exist or could not be contacted\./,
  );

  const otherOu = await runOnHost(
    a,
    remoteCommand('join-domain', {
      domain: 'corp.example.com',
      organizationalUnit: 'OU=K8s,DC=other,DC=com',
    }),
    creds,
  );
  assert.match(otherOu.stderr, /The parameter is incorrect\./);

  // Both names cut to 15 characters are HOST-LONG-NAME-: one account.
  assert.equal(
    (await runOnHost(a, remoteCommand('join-domain', { domain: 'corp.example.com' }), creds)).code,
    0,
  );
  const clash = await runOnHost(
    b,
    remoteCommand('join-domain', { domain: 'corp.example.com' }),
    creds,
  );
  assert.match(clash.stderr, /The account already exists\./);
  assert.equal((await facts(b)).partOfDomain, false);

  await runOnHost(lonely, remoteCommand('rename-computer', { newName: 'lonely-2' }));
  const c = await createTestMachine(t, { hostname: 'renamed', activeDirectory: domain });
  await runOnHost(c, remoteCommand('rename-computer', { newName: 'renamed-2' }));
  const pending = await runOnHost(
    c,
    remoteCommand('join-domain', { domain: 'corp.example.com' }),
    creds,
  );
  assert.match(pending.stderr, /must restart before it joins a domain/);
  assert.deepEqual(
    domain.computers.map((x) => x.name),
    ['HOST-LONG-NAME-'],
  );
});
