/** The lab's fake domain: a password made per run, accepted in the forms Add-Computer takes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { adDomainName, adHostLongName, adUsername, createLabDomain } from './ad-host.ts';

test('each lab run makes its own password, which the fake domain accepts for its one account', () => {
  const a = createLabDomain();
  const b = createLabDomain();
  assert.notEqual(a.password, b.password);
  assert.ok(a.password.length >= 20, a.password.length.toString());
  assert.equal(a.domain.name, adDomainName);
  assert.ok(a.domain.accepts(`CORP\\${adUsername}`, a.password));
  assert.ok(a.domain.accepts(`${adUsername}@${adDomainName}`, a.password));
  assert.ok(!a.domain.accepts(`CORP\\${adUsername}`, b.password));
});

test("the lab's AD host has a hostname too long for a NetBIOS name, so the join renames it", () => {
  assert.equal(adHostLongName.length, 20);
});
