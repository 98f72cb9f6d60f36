/**
 * The payload artifact's format from a hostile registry's side: every way of bending the
 * manifest or payload.json is refused with the field named, and anything that parses names
 * only safe, unique files whose digests payload.json pins.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../../sim/testkit/test-seed.ts';
import { hasCode } from '../../errors/catalog.ts';
import { isDocumentError } from '../../schema/validator.ts';
import type { Payload } from '../payload.ts';
import {
  type PayloadLimits,
  payloadLimits,
  payloadMediaTypes,
  titleAnnotation,
} from './media-types.ts';
import { parsePayloadConfig } from './payload-config.ts';
import {
  buildPayloadManifest,
  fileNameProblem,
  parsePayloadManifest,
  sha256Digest,
} from './payload-manifest.ts';

const hex = (text: string) => createHash('sha256').update(text).digest('hex');

const payload: Payload = {
  version: '1.36.5-wf.1',
  kubernetesVersion: 'v1.36.5',
  files: [
    {
      name: 'kubelet.exe',
      version: 'v1.36.5',
      sha256: hex('kubelet'),
      source: { path: 'kubelet.exe' },
    },
    {
      name: 'kube-log-runner.exe',
      version: 'v1.36.5',
      sha256: hex('runner'),
      source: { path: 'kube-log-runner.exe' },
    },
  ],
};
const config = Buffer.from(`${JSON.stringify(payload, null, 2)}\n`);
const files = [
  { name: 'kubelet.exe', sha256: hex('kubelet'), size: 7 },
  { name: 'kube-log-runner.exe', sha256: hex('runner'), size: 6 },
];
const document = 'payload artifact 127.0.0.1:5000/winfleet/payload@sha256:…';

/** The manifest as winfleet writes it, as an object to bend. */
function manifestObject(): Record<string, unknown> {
  return JSON.parse(buildPayloadManifest(config, files).bytes.toString());
}

/** A manifest to bend: any field may be changed, added or removed. */
interface Descriptor {
  [field: string]: unknown;
  mediaType: string;
  digest: string;
  size: number;
  annotations: Record<string, string>;
}
interface Bendable {
  [field: string]: unknown;
  config: Descriptor;
  layers: Descriptor[] & { 0: Descriptor; 1: Descriptor };
}

/** Parses a manifest object as a registry would serve it: its own bytes, its own digest. */
function parse(value: unknown, limits: PayloadLimits = payloadLimits) {
  const bytes = Buffer.from(JSON.stringify(value));
  return parsePayloadManifest(bytes, sha256Digest(bytes), document, limits);
}

/** The problems a manifest is refused with. */
function problems(value: unknown, limits: PayloadLimits = payloadLimits): string[] {
  try {
    parse(value, limits);
  } catch (error) {
    assert.ok(isDocumentError(error, 'WF_PAYLOAD_INVALID'), String(error));
    return error.details.problems;
  }
  assert.fail('the manifest was accepted');
}

test('a built manifest parses back to its layers, and payload.json to the payload', () => {
  const { bytes, digest } = buildPayloadManifest(config, files, {
    'org.opencontainers.image.version': payload.version,
  });
  const manifest = parsePayloadManifest(bytes, digest, document);
  assert.deepEqual(manifest.layers, [
    { name: 'kubelet.exe', digest: `sha256:${hex('kubelet')}`, size: 7 },
    { name: 'kube-log-runner.exe', digest: `sha256:${hex('runner')}`, size: 6 },
  ]);
  assert.deepEqual(manifest.config, { digest: sha256Digest(config), size: config.length });
  assert.deepEqual(parsePayloadConfig(config, manifest, document), payload);
  const raw = JSON.parse(bytes.toString());
  assert.equal(raw.artifactType, payloadMediaTypes.artifact);
  assert.equal(raw.config.mediaType, payloadMediaTypes.config);
  assert.equal(raw.layers[0].mediaType, payloadMediaTypes.file);
});

test('a manifest whose bytes do not hash to the digest asked for is refused before it is read', () => {
  const { bytes, digest } = buildPayloadManifest(config, files);
  const changed = Buffer.from(bytes);
  changed[changed.length - 2] = changed[changed.length - 2]! ^ 1;
  assert.throws(
    () => parsePayloadManifest(changed, digest, document),
    (error: unknown) =>
      isDocumentError(error, 'WF_PAYLOAD_INVALID') &&
      /hash to sha256:[0-9a-f]{64}, not to the sha256:[0-9a-f]{64} asked for/.test(
        error.details.problems[0]!,
      ),
  );
  // Not even JSON: refused on the digest, not on the parse.
  assert.throws(() => parsePayloadManifest(Buffer.from('{'), digest, document), /asked for/);
});

test('hostile manifests are refused, each naming the field', () => {
  const bend = (change: (m: Bendable) => void) => {
    const m = manifestObject() as Bendable;
    change(m);
    return m;
  };
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      'an image, not a payload',
      bend((m) => {
        m.artifactType = 'application/vnd.oci.image.config.v1+json';
      }),
      /^artifactType: must be one of "application\/vnd\.winfleet\.payload\.v1"/,
    ],
    [
      'no artifactType',
      bend((m) => {
        delete m.artifactType;
      }),
      /missing required field "artifactType"/,
    ],
    [
      'a Docker manifest',
      bend((m) => {
        m.mediaType = 'application/vnd.docker.distribution.manifest.v2+json';
      }),
      /^mediaType: must be one of/,
    ],
    [
      'an index',
      bend((m) => {
        m.mediaType = 'application/vnd.oci.image.index.v1+json';
      }),
      /^mediaType: must be one of/,
    ],
    [
      'schema version 1',
      bend((m) => {
        m.schemaVersion = 1;
      }),
      /^schemaVersion: must be one of 2/,
    ],
    [
      'an image config',
      bend((m) => {
        m.config.mediaType = 'application/vnd.oci.image.config.v1+json';
      }),
      /^config\.mediaType: must be one of/,
    ],
    [
      'a gzip layer',
      bend((m) => {
        m.layers[0].mediaType = 'application/vnd.oci.image.layer.v1.tar+gzip';
      }),
      /^layers\.0\.mediaType: must be one of/,
    ],
    [
      'a foreign layer (urls)',
      bend((m) => {
        m.layers[0].urls = ['https://elsewhere.example/kubelet.exe'];
      }),
      /^layers\.0\.urls: unknown field/,
    ],
    [
      'embedded data',
      bend((m) => {
        m.layers[0].data = 'AAAA';
      }),
      /^layers\.0\.data: unknown field/,
    ],
    [
      'a subject',
      bend((m) => {
        m.subject = m.config;
      }),
      /^subject: unknown field/,
    ],
    [
      'a sha512 digest',
      bend((m) => {
        m.layers[0].digest = `sha512:${'a'.repeat(128)}`;
      }),
      /^layers\.0\.digest: .* does not match/,
    ],
    [
      'an upper-case digest',
      bend((m) => {
        m.layers[0].digest = m.layers[0].digest.toUpperCase();
      }),
      /^layers\.0\.digest: .* does not match/,
    ],
    [
      'a negative size',
      bend((m) => {
        m.layers[0].size = -1;
      }),
      /^layers\.0\.size: must be ≥ 0/,
    ],
    [
      'a fractional size',
      bend((m) => {
        m.layers[0].size = 1.5;
      }),
      /^layers\.0\.size: must be integer/,
    ],
    [
      'a size over the file limit',
      bend((m) => {
        m.layers[0].size = payloadLimits.maxFileBytes + 1;
      }),
      /^layers\.0\.size: must be ≤ 4294967296/,
    ],
    [
      'a config over its limit',
      bend((m) => {
        m.config.size = payloadLimits.maxConfigBytes + 1;
      }),
      /^config\.size: must be ≤ 1048576/,
    ],
    [
      'no title',
      bend((m) => {
        m.layers[0].annotations = {};
      }),
      /^layers\.0\.annotations: missing required field "org\.opencontainers\.image\.title"/,
    ],
    [
      'no layers',
      bend((m) => {
        m.layers.length = 0;
      }),
      /^layers: must NOT have fewer than 1 items/,
    ],
    [
      'a title with ..\\',
      bend((m) => {
        m.layers[0].annotations[titleAnnotation] = '..\\kubelet.exe';
      }),
      /^layers\.0\.annotations\.org\.opencontainers\.image\.title: "\.\.\\kubelet\.exe" must be letters, digits/,
    ],
    [
      'a title with C:',
      bend((m) => {
        m.layers[0].annotations[titleAnnotation] = 'C:kubelet.exe';
      }),
      /"C:kubelet\.exe" must be letters, digits/,
    ],
    [
      'a title with /',
      bend((m) => {
        m.layers[0].annotations[titleAnnotation] = 'k/kubelet.exe';
      }),
      /"k\/kubelet\.exe" must be letters, digits/,
    ],
    [
      'a title ..',
      bend((m) => {
        m.layers[0].annotations[titleAnnotation] = '..';
      }),
      /"\.\." must name a file, not "\." or "\.\."/,
    ],
    [
      'a title with a trailing dot',
      bend((m) => {
        m.layers[0].annotations[titleAnnotation] = 'kubelet.exe.';
      }),
      /must not end with "\."/,
    ],
    [
      'a device name',
      bend((m) => {
        m.layers[0].annotations[titleAnnotation] = 'NUL.exe';
      }),
      /"NUL\.exe" is a name Windows keeps for a device/,
    ],
    [
      'a duplicate title',
      bend((m) => {
        m.layers[1].annotations[titleAnnotation] = 'kubelet.exe';
      }),
      /^layers\.1\.annotations\.org\.opencontainers\.image\.title: "kubelet\.exe" is also the title of layers\.0/,
    ],
    [
      'a duplicate title in another case',
      bend((m) => {
        m.layers[1].annotations[titleAnnotation] = 'KUBELET.EXE';
      }),
      /"KUBELET\.EXE" is also the title of layers\.0/,
    ],
    [
      'another annotation on a layer',
      bend((m) => {
        m.layers[0].annotations['com.example.run'] = 'yes';
      }),
      /^layers\.0\.annotations\.com\.example\.run: unknown field/,
    ],
  ];
  for (const [what, manifest, expected] of cases) {
    const found = problems(manifest);
    assert.ok(
      found.some((p) => expected.test(p)),
      `${what}: ${found.join(' | ')}`,
    );
  }
});

test('oversized manifests are refused on their length, before the hash or the parse', () => {
  const small = { ...payloadLimits, maxManifestBytes: 512 };
  const manifest = manifestObject();
  assert.match(
    problems(manifest, small)[0]!,
    /the manifest has \d+ bytes, more than the 512 allowed/,
  );
  const many = { ...payloadLimits, maxFiles: 1 };
  assert.match(problems(manifest, many).join(), /^layers: must NOT have more than 1 items/);
});

test('not UTF-8, not JSON: refused', () => {
  for (const [bytes, expected] of [
    [Buffer.from([0x7b, 0xff, 0x7d]), /not UTF-8 text/],
    [Buffer.from('{"schemaVersion": 2,'), /not JSON/],
  ] as const) {
    assert.throws(() => parsePayloadManifest(bytes, sha256Digest(bytes), document), expected);
  }
});

test('payload.json must be the config the manifest pins and list exactly its layers', () => {
  const { bytes, digest } = buildPayloadManifest(config, files);
  const manifest = parsePayloadManifest(bytes, digest, document);
  const refused = (configBytes: Buffer, m = manifest) => {
    try {
      parsePayloadConfig(configBytes, m, document);
    } catch (error) {
      assert.ok(hasCode(error, 'WF_PAYLOAD_INVALID'), String(error));
      return (error as Error).message;
    }
    assert.fail('payload.json was accepted');
  };
  // Other bytes than the manifest pins: a changed byte, a longer file.
  const changed = Buffer.from(config);
  changed[10] = changed[10]! ^ 1;
  assert.match(refused(changed), /hashes to sha256:[0-9a-f]{64}, the manifest says/);
  assert.match(
    refused(Buffer.concat([config, Buffer.from(' ')])),
    /has \d+ bytes, the manifest says \d+/,
  );

  // A manifest built for a payload.json that disagrees with its layers.
  const against = (p: Payload, layerFiles = files) => {
    const text = Buffer.from(JSON.stringify(p));
    const built = buildPayloadManifest(text, layerFiles);
    return refused(text, parsePayloadManifest(built.bytes, built.digest, document));
  };
  assert.match(
    against(payload, [...files, { name: 'extra.exe', sha256: hex('extra'), size: 5 }]),
    /the manifest has a layer "extra\.exe" that payload\.json does not list/,
  );
  assert.match(
    against(payload, files.slice(0, 1)),
    /files\.1: "kube-log-runner\.exe" has no layer titled so in the manifest/,
  );
  assert.match(
    against(payload, [{ ...files[0]!, sha256: hex('another kubelet') }, files[1]!]),
    /files\.0: "kubelet\.exe" has SHA-256 [0-9a-f]{64}, its layer the digest sha256:/,
  );
  assert.match(
    against({ ...payload, files: [...payload.files, payload.files[0]!] }),
    /"kubelet\.exe" is listed twice/,
  );
});

test('property: whatever parses names only safe, unique files', (t) => {
  const seed = testSeed(t);
  // Each field is mostly what winfleet writes and sometimes hostile, so both kinds of manifest
  // come up: ones the parser must refuse, and ones whose accepted names the property checks.
  const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>) =>
    fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: bad, weight: 1 });
  const nameChars = fc.constantFrom(...'abcXYZ019._-\\/: C$'.split(''));
  const title = mostly(
    fc.constantFrom('kubelet.exe', 'kube-proxy.exe', 'containerd.exe', 'csi_proxy.exe', 'a'),
    fc.oneof(
      fc.string({ unit: nameChars, minLength: 0, maxLength: 12 }),
      fc.constantFrom('..', '.', 'con', 'aux.exe', 'KUBELET.exe', 'a.', 'C:\\x', '../x'),
    ),
  );
  const layer = fc.record({
    mediaType: mostly(fc.constant(payloadMediaTypes.file), fc.constant('application/octet-stream')),
    digest: mostly(
      fc.constantFrom(`sha256:${hex('a')}`, `sha256:${hex('b')}`),
      fc.constantFrom('sha256:nothex', 'md5:x', `sha256:${hex('a').toUpperCase()}`),
    ),
    size: mostly(fc.integer({ min: 0, max: 100 }), fc.constantFrom(-1, 1.5, 2 ** 53)),
    annotations: fc.record({ [titleAnnotation]: title }),
  });
  let accepted = 0;
  fc.assert(
    fc.property(fc.array(layer, { minLength: 0, maxLength: 4 }), (layers) => {
      const manifest = { ...manifestObject(), layers };
      let parsed: ReturnType<typeof parse>;
      try {
        parsed = parse(manifest);
      } catch (error) {
        assert.ok(isDocumentError(error, 'WF_PAYLOAD_INVALID'), String(error));
        return;
      }
      const names = parsed.layers.map((l) => l.name.toLowerCase());
      assert.equal(new Set(names).size, names.length, 'unique, case-insensitively');
      for (const l of parsed.layers) {
        assert.equal(fileNameProblem(l.name), undefined);
        assert.doesNotMatch(l.name, /[\\/:]|^\.\.?$/);
        assert.match(l.digest, /^sha256:[0-9a-f]{64}$/);
        assert.ok(Number.isSafeInteger(l.size) && l.size >= 0);
      }
      accepted++;
    }),
    { numRuns: 500, seed },
  );
  t.diagnostic(`${accepted} of 500 generated manifests parsed`);
  assert.ok(accepted > 0, 'some generated manifests parse, so the property says something');
});
