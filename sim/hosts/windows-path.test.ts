import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeWindowsPath, sftpPath, windowsPathSegments } from './windows-path.ts';

test('the agent, SFTP and forward-slash forms name the same path', () => {
  for (const form of [
    'C:\\k\\winfleet\\x.exe',
    '/C:/k/winfleet/x.exe',
    'c:/k/winfleet/x.exe',
    'C:\\k\\.\\tmp\\..\\winfleet\\x.exe',
  ]) {
    assert.deepEqual(windowsPathSegments(form), ['k', 'winfleet', 'x.exe'], form);
  }
  assert.equal(normalizeWindowsPath('/C:/'), 'C:\\');
  assert.equal(normalizeWindowsPath('C:'), 'C:\\');
  assert.equal(sftpPath(['k', 'x.exe']), '/C:/k/x.exe');
});

test('.. stops at the root and trailing dots and blanks are dropped, as Win32 does', () => {
  assert.equal(normalizeWindowsPath('C:\\..\\..\\k'), 'C:\\k');
  assert.equal(normalizeWindowsPath('C:\\k\\file.txt. '), 'C:\\k\\file.txt');
});

test('relative paths need a working directory', () => {
  assert.throws(() => windowsPathSegments('k\\x'), /not an absolute path/);
  assert.equal(
    normalizeWindowsPath('k\\x', 'C:\\Users\\Administrator'),
    'C:\\Users\\Administrator\\k\\x',
  );
  assert.equal(normalizeWindowsPath('\\k', 'C:\\Users'), 'C:\\k');
});

test('other drives, network paths and forbidden characters are refused', () => {
  assert.throws(
    () => windowsPathSegments('D:\\data'),
    (e: NodeJS.ErrnoException) => e.code === 'ENOENT' && /drive D:/.test(e.message),
  );
  assert.throws(() => windowsPathSegments('\\\\server\\share\\x'), /network and device paths/);
  for (const bad of ['C:\\k\\a<b', 'C:\\k\\a|b', 'C:\\k\\what?', 'C:\\k\\a:b']) {
    assert.throws(() => windowsPathSegments(bad), /syntax is incorrect/, bad);
  }
});
