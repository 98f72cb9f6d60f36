import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeRegExp } from '../../sim/testkit/regexp.ts';
import {
  compareWindowsVersions,
  compatibleNodeBuilds,
  isCompatibleBuild,
  parseWindowsVersion,
  stableAbiLtscBuilds,
} from './compatibility.ts';

const builds = {
  '2016': '10.0.14393',
  '2019': '10.0.17763',
  '2022': '10.0.20348',
  win11: '10.0.22621',
  '23H2': '10.0.25398',
  '2025': '10.0.26100',
} as const;
type Release = keyof typeof builds;
const releases = Object.keys(builds) as Release[];

// Realistic image os.versions: the build plus an update revision.
const images: Record<Release, string> = {
  '2016': '10.0.14393.7259',
  '2019': '10.0.17763.6054',
  '2022': '10.0.20348.2582',
  win11: '10.0.22621.3880',
  '23H2': '10.0.25398.1009',
  '2025': '10.0.26100.1742',
};

// Host (row) runs image (column) under process isolation.
const expected: Record<Release, Release[]> = {
  '2016': ['2016'],
  '2019': ['2019'],
  '2022': ['2022'],
  win11: ['2022', 'win11'],
  '23H2': ['2022', 'win11', '23H2'],
  '2025': ['2022', 'win11', '23H2', '2025'],
};

test('the stable-ABI LTSC list starts at Server 2022 and is ascending', () => {
  assert.deepEqual(stableAbiLtscBuilds, [20348, 26100]);
});

for (const host of releases) {
  for (const image of releases) {
    const runs = expected[host].includes(image);
    test(`a ${host} host ${runs ? 'runs' : 'does not run'} a ${image} image`, () => {
      assert.equal(isCompatibleBuild(builds[host], images[image]), runs);
      // The revision is never compared, on either side.
      assert.equal(isCompatibleBuild(builds[host], builds[image]), runs);
      assert.equal(isCompatibleBuild(`${builds[host]}.1`, `${builds[image]}.99999`), runs);
      assert.equal(isCompatibleBuild(`${builds[host]}.4000`, `${builds[image]}.0`), runs);
    });
  }
}

test('the examples of the issue hold', () => {
  assert.equal(isCompatibleBuild(builds['2025'], images['2022']), true, '2025 runs 2022');
  assert.equal(isCompatibleBuild(builds['2022'], images['2019']), false, '2022 runs no 2019');
  assert.equal(isCompatibleBuild(builds['2022'], images['2025']), false, '2022 runs no 2025');
  assert.equal(isCompatibleBuild(builds['2019'], images['2022']), false, '2019 runs no 2022');
});

test('builds between releases follow the same rule', () => {
  // Semi-annual Server builds before 2022 need an exact match.
  assert.equal(isCompatibleBuild('10.0.18363', '10.0.18363.1'), true);
  assert.equal(isCompatibleBuild('10.0.18363', '10.0.18362.1'), false);
  assert.equal(isCompatibleBuild('10.0.19042', '10.0.17763.1'), false);
  // After 2022, an image newer than the host never runs.
  assert.equal(isCompatibleBuild('10.0.22621', '10.0.22631.1'), false);
  // An image older than the stable-ABI era never runs on a newer host.
  assert.equal(isCompatibleBuild('10.0.26100', '10.0.19041.1'), false);
  // A future host runs images from the LTSC before its own (2025) up to its own build.
  assert.equal(isCompatibleBuild('10.0.30000', '10.0.26100.1'), true);
  assert.equal(isCompatibleBuild('10.0.30000', '10.0.29000.1'), true);
  assert.equal(isCompatibleBuild('10.0.30000', '10.0.20348.1'), false);
  assert.equal(isCompatibleBuild('10.0.30000', '10.0.30001.1'), false);
});

test('major and minor must be equal', () => {
  assert.equal(isCompatibleBuild('10.0.20348', '6.3.20348.1'), false);
  assert.equal(isCompatibleBuild('10.0.20348', '10.1.20348.1'), false);
  assert.equal(isCompatibleBuild('10.0.20348', '11.0.20348.1'), false);
  assert.equal(isCompatibleBuild('10.0.17763', '10.1.17763.1'), false);
  assert.equal(isCompatibleBuild('11.0.26100', '10.0.26100.1'), false);
});

test('an empty os.version runs on every host', () => {
  for (const host of releases) assert.equal(isCompatibleBuild(builds[host], ''), true);
});

const malformed = [
  '',
  '10',
  '10.0',
  '10.0.',
  '.10.0.20348',
  '10.0.20348.',
  '10.0.20348.1.2',
  '10..20348',
  '10.0.x',
  '10.0.-1',
  '10.0.+20348',
  ' 10.0.20348',
  '10.0.20348 ',
  '10.0.2034 8',
  '10.0.0x4f',
  '10.0.1e4',
  '10.0.020348',
  '256.0.20348',
  '10.256.20348',
  '10.0.65536',
  '10.0.20348.4294967296',
  'ltsc2022',
  'windows',
];

for (const value of malformed) {
  test(`a malformed host build ${JSON.stringify(value)} is rejected with a clear error`, () => {
    assert.throws(() => isCompatibleBuild(value, '10.0.20348.1'), {
      name: 'WinfleetError',
      code: 'WF_SCHEMA_INVALID',
      message: new RegExp(`^Cannot parse host Windows build "${escapeRegExp(value)}": .+`),
    });
  });
  if (value === '') continue;
  test(`a malformed image os.version ${JSON.stringify(value)} is rejected with a clear error`, () => {
    assert.throws(() => isCompatibleBuild('10.0.20348', value), {
      name: 'WinfleetError',
      code: 'WF_SCHEMA_INVALID',
      message: new RegExp(`^Cannot parse image os.version "${escapeRegExp(value)}": .+`),
    });
  });
}

test('errors say what was expected and which part is wrong', () => {
  assert.throws(() => parseWindowsVersion('10.0.x', 'node Windows build'), {
    message:
      'Cannot parse node Windows build "10.0.x": build "x" is not a whole number; expected major.minor.build[.revision] in whole numbers, e.g. "10.0.20348" or "10.0.20348.2582"',
  });
  assert.throws(() => parseWindowsVersion('10.0.70000'), {
    message: 'Cannot parse Windows version "10.0.70000": build 70000 is above 65535',
  });
  assert.throws(() => parseWindowsVersion(undefined as unknown as string), {
    message: /^Cannot parse Windows version "undefined": expected major\.minor\.build/,
  });
});

test('parseWindowsVersion keeps the revision only when present', () => {
  assert.deepEqual(parseWindowsVersion('10.0.20348'), { major: 10, minor: 0, build: 20348 });
  assert.deepEqual(parseWindowsVersion('10.0.20348.2582'), {
    major: 10,
    minor: 0,
    build: 20348,
    revision: 2582,
  });
  assert.deepEqual(parseWindowsVersion('0.0.0.0'), { major: 0, minor: 0, build: 0, revision: 0 });
  assert.deepEqual(parseWindowsVersion('255.255.65535.4294967295'), {
    major: 255,
    minor: 255,
    build: 65535,
    revision: 4294967295,
  });
});

test('compareWindowsVersions orders by build, then revision', () => {
  const sorted = ['10.0.26100', '10.0.17763.5', '10.0.17763', '10.0.20348.10', '10.0.20348.9']
    .map((v) => parseWindowsVersion(v))
    .sort(compareWindowsVersions)
    .map((v) => [v.build, v.revision]);
  assert.deepEqual(sorted, [
    [17763, undefined],
    [17763, 5],
    [20348, 9],
    [20348, 10],
    [26100, undefined],
  ]);
});

const fleet = [builds['2025'], builds['2019'], builds['2022'], builds['2022']];

test('compatibleNodeBuilds: a 2022 image runs on 2022 and 2025 nodes', () => {
  assert.deepEqual(compatibleNodeBuilds(fleet, [[images['2022']]]), [
    builds['2022'],
    builds['2025'],
  ]);
});

test('compatibleNodeBuilds: a 2019 image runs only on 2019 nodes', () => {
  assert.deepEqual(compatibleNodeBuilds(fleet, [[images['2019']]]), [builds['2019']]);
});

test('compatibleNodeBuilds: every image must run; one entry of a multi-platform image suffices', () => {
  // iis:latest lists 2019 and 2022; with a 2022-only sidecar only 2022 and 2025 are left.
  const iisLatest = [images['2019'], images['2022']];
  assert.deepEqual(compatibleNodeBuilds(fleet, [iisLatest]), [
    builds['2019'],
    builds['2022'],
    builds['2025'],
  ]);
  assert.deepEqual(compatibleNodeBuilds(fleet, [iisLatest, [images['2022']]]), [
    builds['2022'],
    builds['2025'],
  ]);
  // A 2019 image and a 2025 image in one pod: no node runs both.
  assert.deepEqual(compatibleNodeBuilds(fleet, [[images['2019']], [images['2025']]]), []);
});

test('compatibleNodeBuilds: no images leaves every node; empty os.version runs anywhere', () => {
  assert.deepEqual(compatibleNodeBuilds(fleet, []), [
    builds['2019'],
    builds['2022'],
    builds['2025'],
  ]);
  assert.deepEqual(compatibleNodeBuilds(fleet, [['']]), [
    builds['2019'],
    builds['2022'],
    builds['2025'],
  ]);
});

test('compatibleNodeBuilds: an image without Windows variants runs on no Windows node', () => {
  assert.deepEqual(compatibleNodeBuilds(fleet, [[]]), []);
});

test('compatibleNodeBuilds: no nodes gives no builds', () => {
  assert.deepEqual(compatibleNodeBuilds([], [[images['2022']]]), []);
});

test('compatibleNodeBuilds keeps builds as given, sorted by version', () => {
  assert.deepEqual(compatibleNodeBuilds(['10.0.20348.2582', '10.0.20348', '10.0.26100'], [['']]), [
    '10.0.20348',
    '10.0.20348.2582',
    '10.0.26100',
  ]);
});

test('compatibleNodeBuilds rejects malformed input even when no node is left', () => {
  assert.throws(() => compatibleNodeBuilds(['10.0.x'], []), {
    message: /^Cannot parse node Windows build "10\.0\.x"/,
  });
  assert.throws(() => compatibleNodeBuilds([], [['ltsc2022']]), {
    message: /^Cannot parse image os\.version "ltsc2022"/,
  });
  assert.throws(() => compatibleNodeBuilds(fleet, [[images['2019']], ['10.0']]), {
    message: /^Cannot parse image os\.version "10\.0"/,
  });
});
