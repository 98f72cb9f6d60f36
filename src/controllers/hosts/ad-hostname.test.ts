import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  adHostnameProblem,
  generatedHostname,
  netbiosNameMaxLength,
  planAdHostname,
} from './ad-hostname.ts';

test('valid AD hostnames: 1-15 letters, digits, hyphens; RFC 1123; not all digits', () => {
  for (const ok of ['a', 'web-1', 'WIN2022-NODE-01', 'abcdefghijklmno']) {
    assert.equal(adHostnameProblem(ok), undefined, ok);
  }
  assert.match(
    adHostnameProblem('abcdefghijklmnop') ?? '',
    /has 16 characters; a host joined to Active Directory needs a hostname of at most 15 characters/,
  );
  for (const bad of ['-web', 'web-', 'web_1', 'web.1', '12345', '']) {
    assert.match(adHostnameProblem(bad) ?? '', /is not a valid hostname/, bad);
  }
});

test('generated names: at most 15 characters, valid, deterministic, distinct per uid', () => {
  const uids = Array.from(
    { length: 200 },
    (_, i) => `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
  );
  const names = uids.map((uid) => generatedHostname('windows-web-pool-east', uid));
  for (const name of names) {
    assert.ok(name.length <= netbiosNameMaxLength, name);
    assert.equal(adHostnameProblem(name), undefined, name);
    assert.match(name, /^window-[0-9a-z]{8}$/);
  }
  assert.equal(new Set(names).size, names.length, 'distinct');
  assert.equal(generatedHostname('windows-web-pool-east', uids[0]!), names[0], 'deterministic');
  // A pool name of only symbols still gives a valid name.
  assert.match(generatedHostname('---', 'u'), /^win-[0-9a-z]{8}$/);
  assert.match(generatedHostname('Web.Pool', 'u'), /^web-po-[0-9a-z]{8}$/);
  assert.match(generatedHostname('ab-', 'u'), /^ab-[0-9a-z]{8}$/, 'no double hyphen');
});

test('plan: keep a valid hostname, rename a long one to the generated name', () => {
  assert.deepEqual(planAdHostname({ hostname: 'WEB-01', pool: 'web', uid: 'u1' }), {
    action: 'keep',
    hostname: 'WEB-01',
  });
  const plan = planAdHostname({ hostname: 'winfleet-ad-host-a01', pool: 'corp', uid: 'u1' });
  assert.equal(plan.action, 'rename');
  assert.equal(plan.action === 'rename' && plan.hostname, generatedHostname('corp', 'u1'));
  assert.match(plan.action === 'rename' ? plan.reason : '', /has 20 characters/);
});

test('plan: spec.nodeName is the hostname; over 15 characters is refused quoting the limit', () => {
  assert.deepEqual(
    planAdHostname({ nodeName: 'web-7', hostname: 'WIN-ABCDEF123456', pool: 'web', uid: 'u' }),
    { action: 'rename', hostname: 'web-7', reason: 'spec.nodeName is web-7' },
  );
  assert.deepEqual(
    planAdHostname({ nodeName: 'web-7', hostname: 'WEB-7', pool: 'web', uid: 'u' }),
    {
      action: 'keep',
      hostname: 'WEB-7',
    },
  );
  const refused = planAdHostname({
    nodeName: 'a-node-name-of-24-chars',
    hostname: 'web-7',
    pool: 'web',
    uid: 'u',
  });
  assert.equal(refused.action, 'refuse');
  assert.match(
    refused.action === 'refuse' ? refused.message : '',
    /^spec\.nodeName "a-node-name-of-24-chars" has 23 characters; a host joined to Active Directory needs a hostname of at most 15 characters .*give spec\.nodeName of at most 15 characters, or leave it out for a generated one$/,
  );
});
