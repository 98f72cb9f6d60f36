import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  administratorPrincipal,
  effectiveSecurity,
  standardUserPrincipal,
  wellKnownSid,
} from './file-security.ts';
import { SimFileSystem } from './file-system.ts';

const alice = standardUserPrincipal('alice', 1001);
const locked = {
  owner: wellKnownSid.administrators,
  protected: true,
  entries: [
    { sid: wellKnownSid.system, read: true, write: true },
    { sid: wellKnownSid.administrators, read: true, write: true },
  ],
};

async function tempFs(t: { after(fn: () => Promise<void>): void }) {
  const root = await mkdtemp(join(tmpdir(), 'simhost-security-test-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const fs = await SimFileSystem.create({ root });
  await fs.writeFileAtomic('C:\\k\\pki\\kubelet-client-current.pem', 'KEY');
  return fs;
}

const allowed = (promise: Promise<void>) =>
  promise.then(
    () => true,
    () => false,
  );

test("a folder made in C:\\ inherits C:\\'s DACL: every user reads it, authenticated users write it", async (t) => {
  const fs = await tempFs(t);
  const key = 'C:\\k\\pki\\kubelet-client-current.pem';
  assert.equal(await allowed(fs.checkAccess(alice, 'read', key)), true);
  assert.equal(await allowed(fs.checkAccess(alice, 'write', 'C:\\k\\evil.exe')), true);
  // C:\ itself: Users read, Authenticated Users may only create folders.
  assert.equal(await allowed(fs.checkAccess(alice, 'write', 'C:\\')), true);
  assert.equal((await fs.security('C:\\k')).owner, wellKnownSid.administrators);
});

test('a protected DACL on C:\\k shuts users out of everything below, at once', async (t) => {
  const fs = await tempFs(t);
  await fs.setSecurity('c:\\K', locked);
  const key = 'C:\\k\\pki\\kubelet-client-current.pem';
  await assert.rejects(fs.checkAccess(alice, 'read', key), {
    code: 'EPERM',
    message: `EPERM: Access is denied. (read as alice "${key}")`,
  });
  await assert.rejects(fs.checkAccess(alice, 'write', 'C:\\k\\evil.exe'), { code: 'EPERM' });
  await fs.checkAccess(administratorPrincipal, 'read', key);
  await fs.checkAccess(administratorPrincipal, 'write', 'C:\\k\\new.exe');
  const security = await fs.security(key);
  assert.equal(security.protected, false, 'the key inherits');
  assert.deepEqual(
    security.entries.map((e) => e.sid),
    [wellKnownSid.system, wellKnownSid.administrators],
  );
  // Outside C:\k nothing changed.
  await fs.checkAccess(alice, 'read', 'C:\\ProgramData');
});

test('an explicit entry below adds to what is inherited; a protected child keeps only its own', async (t) => {
  const fs = await tempFs(t);
  await fs.setSecurity('C:\\k', locked);
  await fs.mkdir('C:\\k\\logs');
  await fs.setSecurity('C:\\k\\logs', {
    owner: wellKnownSid.administrators,
    protected: false,
    entries: [{ sid: wellKnownSid.users, read: true, write: false }],
  });
  await fs.checkAccess(alice, 'read', 'C:\\k\\logs');
  await assert.rejects(fs.checkAccess(alice, 'write', 'C:\\k\\logs\\x.log'), { code: 'EPERM' });
  await fs.setSecurity('C:\\k\\logs', { ...locked, entries: [locked.entries[0]!] });
  await assert.rejects(fs.checkAccess(administratorPrincipal, 'read', 'C:\\k\\logs'), {
    code: 'EPERM',
  });
});

test('security moves with a renamed folder and goes with a removed one', async (t) => {
  const fs = await tempFs(t);
  await fs.setSecurity('C:\\k\\pki', locked);
  await fs.rename('C:\\k\\pki', 'C:\\k\\pki2');
  await assert.rejects(fs.checkAccess(alice, 'read', 'C:\\k\\pki2\\kubelet-client-current.pem'), {
    code: 'EPERM',
  });
  await fs.remove('C:\\k\\pki2', { recursive: true });
  await fs.mkdir('C:\\k\\pki2');
  await fs.checkAccess(alice, 'read', 'C:\\k\\pki2');
  await assert.rejects(fs.setSecurity('C:\\nowhere', locked), { code: 'ENOENT' });
});

test('the effective DACL: inherit-only entries reach children, this-folder-only ones do not', () => {
  const effective = effectiveSecurity([
    {
      owner: 'S-1-5-32-544',
      protected: true,
      entries: [
        { sid: 'A', read: true, write: false, scope: 'this' },
        { sid: 'B', read: true, write: false, scope: 'children' },
      ],
    },
    undefined,
  ]);
  assert.deepEqual(effective.entries, [{ sid: 'B', read: true, write: false }]);
});
