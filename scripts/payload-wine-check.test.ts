import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { probeMatches, versionProbes } from './payload-wine-check.ts';

/** Payload files that are not run: no version flag, or tested by their own builds. */
const notProbed = ['kube-log-runner.exe', 'csi-proxy.exe'];

test('every Windows binary hack/build-payload.sh builds is run under Wine or named as not', async () => {
  const script = await readFile(new URL('../hack/build-payload.sh', import.meta.url), 'utf8');
  const list = /^names=\(([^)]*)\)/m.exec(script)?.[1];
  assert.ok(list, 'build-payload.sh has its names=(…) list');
  const names = list.split(/\s+/).filter(Boolean);
  assert.ok(names.includes('flanneld.exe') && names.includes('flannel.exe'));
  for (const name of names)
    assert.ok(name in versionProbes || notProbed.includes(name), `${name} has a version probe`);
});

test('a probe matches the expected text at the start of a line, as the programs printed it under Wine', () => {
  const flanneld = versionProbes['flanneld.exe']![0]!;
  assert.ok(probeMatches('v0.28.10\n', flanneld.expect('v0.28.10')));
  assert.equal(probeMatches('v0.28.9\n', flanneld.expect('v0.28.10')), false);
  const [about, cniVersions] = versionProbes['flannel.exe']!;
  assert.ok(probeMatches('CNI flannel plugin v0.9.1\n', about!.expect('v0.9.1')));
  assert.deepEqual(cniVersions!.env, { CNI_COMMAND: 'VERSION' });
  assert.ok(
    probeMatches(
      '{"cniVersion":"0.4.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0"]}\n',
      cniVersions!.expect('v0.9.1'),
    ),
  );
  const exporter = versionProbes['windows_exporter.exe']![0]!;
  assert.ok(
    probeMatches(
      'windows_exporter, version 0.31.3 (branch: HEAD, revision: unknown)\n  build user: \n',
      exporter.expect('v0.31.3'),
    ),
  );
});
