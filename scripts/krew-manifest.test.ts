import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { manifestProblems, renderManifest } from './krew-manifest.ts';

const template = readFileSync(new URL('../plugins/krew/winfleet.yaml', import.meta.url), 'utf8');
const sha = 'a'.repeat(64);
const values = {
  VERSION: '1.2.3',
  HOMEPAGE: 'https://example.com/winfleet',
  BASE_URL: 'https://example.com/releases',
  SHA256: sha,
};
const archive = {
  sha256: sha,
  entries: [
    { path: 'kubectl-winfleet', executable: true },
    { path: 'LICENSE', executable: false },
    { path: 'LICENSE.node', executable: false },
  ],
  platform: { os: 'linux', arch: 'amd64' },
};

test('the repository template, filled in, is a manifest krew accepts for the archive', () => {
  const manifest = renderManifest(template, values);
  assert.deepEqual(manifestProblems(manifest, 'winfleet', archive), []);
  assert.match(manifest, /version: v1\.2\.3/);
  assert.match(
    manifest,
    /uri: https:\/\/example\.com\/releases\/v1\.2\.3\/winfleet-linux-amd64\.tar\.gz/,
  );
});

test('a placeholder the build does not know is refused', () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the template's own placeholder syntax
  assert.throws(() => renderManifest('x: ${NOPE}', values), /unknown placeholder \$\{NOPE\}/);
});

test('each broken manifest is named for what krew or the install would refuse', () => {
  const good = renderManifest(template, values);
  const cases: [string, string, RegExp][] = [
    ['another archive', good.replace(sha, 'b'.repeat(64)), /is not the archive's/],
    ['upper-case sha', good.replace(sha, 'A'.repeat(64)), /64 lower-case hex/],
    ['version without v', good.replace('version: v1.2.3', 'version: 1.2.3'), /not v<semver>/],
    ['wrong kind', good.replace('kind: Plugin', 'kind: Plugins'), /kind is "Plugins"/],
    ['wrong name', good.replace('name: winfleet', 'name: winfleet2'), /metadata.name/],
    [
      'two-line short description',
      good.replace(/shortDescription: .*/, 'shortDescription: "a\\nb"'),
      /line break/,
    ],
    [
      'bin not installed',
      good.replace('bin: kubectl-winfleet', 'bin: kubectl-other'),
      /not among the installed files/,
    ],
    ['selector key', good.replace('arch: amd64', 'arch: amd64\n          cpu: x'), /key "cpu"/],
    ['plain http', good.replace(/uri: https/, 'uri: http'), /uri is not an https/],
    [
      'file missing',
      good.replace('from: LICENSE.node', 'from: NOTICE'),
      /"NOTICE" is not in the archive/,
    ],
    [
      'no platform for linux',
      good.replace('os: linux', 'os: darwin'),
      /no platform selects os=linux/,
    ],
    ['duplicate keys', `${good}\nkind: Plugin\n`, /not YAML/],
  ];
  for (const [what, manifest, problem] of cases) {
    const problems = manifestProblems(manifest, 'winfleet', archive);
    assert.ok(
      problems.some((p) => problem.test(p)),
      `${what}: ${problems.join('; ') || 'no problem found'}`,
    );
  }
});

test('a bin that is not executable in the archive is refused', () => {
  const problems = manifestProblems(renderManifest(template, values), 'winfleet', {
    ...archive,
    entries: archive.entries.map((e) => ({ ...e, executable: false })),
  });
  assert.ok(
    problems.some((p) => /is not executable/.test(p)),
    problems.join('; '),
  );
});

test('a reserved Windows device name cannot be a plugin name', () => {
  const manifest = renderManifest(template, values).replace('name: winfleet', 'name: aux');
  assert.ok(manifestProblems(manifest, 'aux', archive).some((p) => /not allowed/.test(p)));
});
