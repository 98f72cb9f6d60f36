import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  configuredWindowsDirProblem,
  normalizeWindowsDir,
  sameWindowsDir,
} from './windows-paths.ts';

test('a directory without a drive is on C:, slashes either way, no trailing separator', () => {
  assert.deepEqual(normalizeWindowsDir('/etc/cni/net.d'), {
    ok: true,
    path: 'C:\\etc\\cni\\net.d',
  });
  assert.deepEqual(normalizeWindowsDir('c:/opt/cni/bin/'), { ok: true, path: 'C:\\opt\\cni\\bin' });
  assert.deepEqual(normalizeWindowsDir('D:\\k\\\\cni\\'), { ok: true, path: 'D:\\k\\cni' });
  assert.deepEqual(normalizeWindowsDir('/Program Files/Amazon/EKS/cni'), {
    ok: true,
    path: 'C:\\Program Files\\Amazon\\EKS\\cni',
  });
});

test('relative, UNC, dot-dot and reserved characters are refused', () => {
  for (const bad of ['etc/cni', '', '\\\\server\\share', 'C:relative', '/etc/../cni', 'C:\\a|b']) {
    assert.equal(normalizeWindowsDir(bad).ok, false, bad);
  }
});

test("Tigera's default /etc/cni/net.d is the same directory as C:\\etc\\cni\\net.d; case does not count", () => {
  assert.ok(sameWindowsDir('/etc/cni/net.d', 'C:\\etc\\cni\\net.d'));
  assert.ok(sameWindowsDir('c:/ETC/cni/net.d/', 'C:\\etc\\cni\\net.d'));
  assert.ok(!sameWindowsDir('/etc/cni/net.d', 'C:\\k\\cni\\config'));
  assert.ok(!sameWindowsDir('/etc/cni/net.d', 'D:\\etc\\cni\\net.d'));
  assert.ok(!sameWindowsDir('relative', 'relative'));
});

test('a configured directory needs a drive and backslashes; the problem names the field and an example', () => {
  assert.equal(
    configuredWindowsDirProblem('C:\\etc\\cni\\net.d', 'network.external.cniConfDir'),
    undefined,
  );
  assert.match(
    configuredWindowsDirProblem('/etc/cni/net.d', 'network.external.cniConfDir')!,
    /^network\.external\.cniConfDir: "\/etc\/cni\/net\.d" is not an absolute Windows path .* e\.g\. "C:\\etc\\cni\\net\.d"$/,
  );
  assert.match(
    configuredWindowsDirProblem('C:\\opt\\..\\bin', 'network.external.cniBinDir')!,
    /has a "\.\." component; write e\.g\. "C:\\opt\\cni\\bin"/,
  );
  assert.match(
    configuredWindowsDirProblem(`C:\\${'a'.repeat(250)}`, 'network.external.cniBinDir')!,
    /longer than 200/,
  );
});
