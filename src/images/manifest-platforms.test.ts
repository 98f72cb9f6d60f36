import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mediaTypes, parseImageConfig, parseManifest } from './manifest-platforms.ts';

const d = (c: string) => `sha256:${c.repeat(64)}`;
const json = (value: unknown) => Buffer.from(JSON.stringify(value));

const index = {
  schemaVersion: 2,
  mediaType: mediaTypes.dockerManifestList,
  manifests: [
    {
      mediaType: mediaTypes.dockerManifest,
      digest: d('a'),
      size: 100,
      platform: { os: 'windows', architecture: 'amd64', 'os.version': '10.0.17763.6054' },
    },
    {
      mediaType: mediaTypes.dockerManifest,
      digest: d('b'),
      size: 100,
      platform: { os: 'linux', architecture: 'arm64', variant: 'v8' },
    },
    { mediaType: mediaTypes.ociManifest, digest: d('c'), size: 10 },
    {
      mediaType: mediaTypes.ociManifest,
      digest: d('e'),
      size: 10,
      platform: { os: 'unknown', architecture: 'unknown' },
      annotations: { 'vnd.docker.reference.type': 'attestation-manifest' },
    },
  ],
};

test('reads the platform of each index entry and flags attestations', () => {
  const parsed = parseManifest(json(index), undefined);
  assert.equal(parsed.kind, 'index');
  assert.equal(parsed.mediaType, mediaTypes.dockerManifestList);
  assert.ok(parsed.kind === 'index');
  assert.deepEqual(parsed.entries, [
    {
      mediaType: mediaTypes.dockerManifest,
      digest: d('a'),
      size: 100,
      platform: {
        os: 'windows',
        architecture: 'amd64',
        osVersion: '10.0.17763.6054',
        manifestDigest: d('a'),
      },
      attestation: false,
    },
    {
      mediaType: mediaTypes.dockerManifest,
      digest: d('b'),
      size: 100,
      platform: { os: 'linux', architecture: 'arm64', variant: 'v8', manifestDigest: d('b') },
      attestation: false,
    },
    { mediaType: mediaTypes.ociManifest, digest: d('c'), size: 10, attestation: false },
    {
      mediaType: mediaTypes.ociManifest,
      digest: d('e'),
      size: 10,
      platform: { os: 'unknown', architecture: 'unknown', manifestDigest: d('e') },
      attestation: true,
    },
  ]);
});

test('reads the config and layer descriptors of an image manifest', () => {
  const layer = {
    mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
    digest: d('a'),
    size: 7,
  };
  const manifest = {
    schemaVersion: 2,
    mediaType: mediaTypes.ociManifest,
    config: { mediaType: mediaTypes.ociConfig, digest: d('f'), size: 321 },
    layers: [layer],
  };
  assert.deepEqual(parseManifest(json(manifest), 'text/plain'), {
    kind: 'image',
    mediaType: mediaTypes.ociManifest,
    config: { mediaType: mediaTypes.ociConfig, digest: d('f'), size: 321 },
    layers: [layer],
  });
  // A layer whose size is not a byte count is refused, naming it.
  assert.throws(
    () => parseManifest(json({ ...manifest, layers: [{ ...layer, size: -1 }] }), undefined),
    /layer 0: "size" -1 is not a byte count/,
  );
});

test('the media type comes from the body, else the Content-Type, else the fields', () => {
  const bare = { schemaVersion: 2, manifests: [] };
  assert.equal(
    parseManifest(json(bare), `${mediaTypes.dockerManifestList}; charset=utf-8`).mediaType,
    mediaTypes.dockerManifestList,
  );
  assert.equal(parseManifest(json(bare), 'application/json').mediaType, mediaTypes.ociIndex);
  assert.equal(parseManifest(json(bare), undefined).mediaType, mediaTypes.ociIndex);
  const image = {
    schemaVersion: 2,
    config: { mediaType: 'x', digest: d('1'), size: 1 },
    layers: [],
  };
  assert.equal(parseManifest(json(image), undefined).mediaType, mediaTypes.ociManifest);
});

test('reads os, architecture, os.version and variant of a config', () => {
  assert.deepEqual(
    parseImageConfig(
      json({ os: 'windows', architecture: 'amd64', 'os.version': '10.0.20348.2582', config: {} }),
    ),
    { os: 'windows', architecture: 'amd64', osVersion: '10.0.20348.2582' },
  );
  assert.deepEqual(parseImageConfig(json({ os: 'linux', architecture: 'arm', variant: 'v7' })), {
    os: 'linux',
    architecture: 'arm',
    variant: 'v7',
  });
});

const broken: [string, unknown, RegExp][] = [
  ['not JSON', '{"schemaVersion":', /^Invalid manifest: not JSON/],
  ['an array', [], /^Invalid manifest: not a JSON object/],
  [
    'schema 1',
    { schemaVersion: 1, name: 'x', fsLayers: [] },
    /"schemaVersion" is 1; only schema 2/,
  ],
  ['no schema', { mediaType: mediaTypes.ociIndex, manifests: [] }, /"schemaVersion" is undefined/],
  [
    'unknown media type',
    { schemaVersion: 2, mediaType: 'application/vnd.cncf.helm.config.v1+json' },
    /media type "application\/vnd\.cncf\.helm\.config\.v1\+json" is not an image index or manifest/,
  ],
  [
    'no manifests or config',
    { schemaVersion: 2 },
    /media type "" is not an image index or manifest/,
  ],
  [
    'manifests not a list',
    { schemaVersion: 2, mediaType: mediaTypes.ociIndex, manifests: {} },
    /"manifests" must be a list/,
  ],
  [
    'entry not an object',
    { schemaVersion: 2, mediaType: mediaTypes.ociIndex, manifests: [5] },
    /^Invalid manifest entry 0: not a JSON object/,
  ],
  [
    'entry without digest',
    { schemaVersion: 2, mediaType: mediaTypes.ociIndex, manifests: [{ mediaType: 'x', size: 1 }] },
    /entry 0: "digest" is missing/,
  ],
  [
    'entry with bad digest',
    {
      schemaVersion: 2,
      mediaType: mediaTypes.ociIndex,
      manifests: [{ mediaType: 'x', size: 1, digest: 'sha256:xyz' }],
    },
    /entry 0: "digest" "sha256:xyz" is not/,
  ],
  [
    'entry with negative size',
    {
      schemaVersion: 2,
      mediaType: mediaTypes.ociIndex,
      manifests: [{ mediaType: 'x', size: -1, digest: d('a') }],
    },
    /"size" -1 is not a byte count/,
  ],
  [
    'platform without os',
    {
      schemaVersion: 2,
      mediaType: mediaTypes.ociIndex,
      manifests: [{ mediaType: 'x', size: 1, digest: d('a'), platform: { architecture: 'amd64' } }],
    },
    /entry 0 platform: "os" is missing/,
  ],
  [
    'os.version not a string',
    {
      schemaVersion: 2,
      mediaType: mediaTypes.ociIndex,
      manifests: [
        {
          mediaType: 'x',
          size: 1,
          digest: d('a'),
          platform: { os: 'windows', architecture: 'amd64', 'os.version': 10 },
        },
      ],
    },
    /"os\.version" must be a string, got a number$/,
  ],
  [
    'platform not an object',
    {
      schemaVersion: 2,
      mediaType: mediaTypes.ociIndex,
      manifests: [{ mediaType: 'x', size: 1, digest: d('a'), platform: 'windows' }],
    },
    /"platform" must be a JSON object/,
  ],
  [
    'image without config',
    { schemaVersion: 2, mediaType: mediaTypes.ociManifest, layers: [] },
    /"config" is missing/,
  ],
  [
    'image without layers',
    {
      schemaVersion: 2,
      mediaType: mediaTypes.dockerManifest,
      config: { mediaType: 'x', digest: d('a'), size: 1 },
    },
    /"layers" must be a list/,
  ],
];

for (const [name, body, message] of broken) {
  test(`rejects a manifest that is ${name}`, () => {
    assert.throws(
      () => parseManifest(typeof body === 'string' ? Buffer.from(body) : json(body), undefined),
      {
        code: 'WF_REGISTRY_LOOKUP',
        details: { reason: 'invalid-manifest' },
        message,
      },
    );
  });
}

test('rejects configs without os or architecture, or with wrong types', () => {
  for (const [config, message] of [
    [{ architecture: 'amd64' }, /^Invalid image config: "os" is missing/],
    [{ os: 'windows' }, /"architecture" is missing/],
    [{ os: '', architecture: 'amd64' }, /"os" is empty/],
    [
      { os: 'windows', architecture: 'amd64', 'os.version': ['10.0'] },
      /"os\.version" must be a string/,
    ],
  ] as const) {
    assert.throws(() => parseImageConfig(json(config)), {
      code: 'WF_REGISTRY_LOOKUP',
      details: { reason: 'invalid-manifest' },
      message,
    });
  }
  assert.throws(() => parseImageConfig(Buffer.from('this is not JSON')), {
    message: /^Invalid image config: not JSON/,
  });
});
