import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseImageReference } from './image-reference.ts';
import { compileRegistryRouting, lookupTargets } from './registry-mirrors.ts';

const targets = (image: string, routing: Parameters<typeof compileRegistryRouting>[0]) =>
  lookupTargets(parseImageReference(image), compileRegistryRouting(routing)).map((t) => ({
    origin: t.endpoint.origin,
    tls: t.endpoint.tls,
    repository: t.repository,
    credentialHost: t.credentialHost,
    mirror: t.mirror,
  }));

test('without mirrors a registry is reached directly over HTTPS; Docker Hub at registry-1', () => {
  assert.deepEqual(targets('mcr.microsoft.com/windows/servercore:ltsc2022', {}), [
    {
      origin: 'https://mcr.microsoft.com',
      tls: undefined,
      repository: 'windows/servercore',
      credentialHost: 'mcr.microsoft.com',
      mirror: false,
    },
  ]);
  assert.deepEqual(targets('nginx', {})[0]?.origin, 'https://registry-1.docker.io');
  assert.equal(targets('nginx', {})[0]?.credentialHost, 'docker.io');
});

test('mirrors are tried in order, with their path prefix; upstream only with fallback', () => {
  const mirrors = {
    'mcr.microsoft.com': [
      { endpoint: 'https://mirror.example.com', pathPrefix: 'mcr' },
      { endpoint: 'http://127.0.0.1:5000/', insecure: true },
    ],
  };
  const expected = [
    {
      origin: 'https://mirror.example.com',
      tls: undefined,
      repository: 'mcr/windows/servercore',
      credentialHost: 'mirror.example.com',
      mirror: true,
    },
    {
      origin: 'http://127.0.0.1:5000',
      tls: undefined,
      repository: 'windows/servercore',
      credentialHost: '127.0.0.1:5000',
      mirror: true,
    },
  ];
  assert.deepEqual(targets('mcr.microsoft.com/windows/servercore', { mirrors }), expected);
  assert.deepEqual(
    targets('mcr.microsoft.com/windows/servercore', { mirrors, fallbackToUpstream: true }),
    [
      ...expected,
      {
        origin: 'https://mcr.microsoft.com',
        tls: undefined,
        repository: 'windows/servercore',
        credentialHost: 'mcr.microsoft.com',
        mirror: false,
      },
    ],
  );
  // Other registries are untouched.
  assert.equal(targets('quay.io/a/b', { mirrors })[0]?.origin, 'https://quay.io');
});

test('Docker Hub mirrors may be keyed by any of its names', () => {
  for (const key of ['docker.io', 'index.docker.io', 'registry-1.docker.io']) {
    const mirrors = { [key]: [{ endpoint: 'https://hub-mirror.example.com' }] };
    assert.equal(targets('nginx', { mirrors })[0]?.repository, 'library/nginx');
    assert.equal(targets('nginx', { mirrors })[0]?.origin, 'https://hub-mirror.example.com');
  }
});

test('registry settings override the endpoint and TLS of unmirrored registries', () => {
  const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  assert.deepEqual(
    targets('127.0.0.1:5000/app', {
      registries: { '127.0.0.1:5000': { endpoint: 'http://127.0.0.1:5000', insecure: true } },
    })[0]?.origin,
    'http://127.0.0.1:5000',
  );
  assert.deepEqual(
    targets('reg.example.com/app', { registries: { 'reg.example.com': { caBundle: ca } } })[0]?.tls,
    {
      caBundle: ca,
    },
  );
  assert.deepEqual(
    targets('reg.example.com/app', { registries: { 'reg.example.com': { insecure: true } } })[0]
      ?.tls,
    {
      skipTlsVerify: true,
    },
  );
});

test('bad routing is rejected naming the field and the fix', () => {
  const cases: [Parameters<typeof compileRegistryRouting>[0], RegExp][] = [
    [
      { mirrors: { 'mcr.microsoft.com': [] } },
      /^mirrors\["mcr\.microsoft\.com"\] must be a non-empty list of mirrors/,
    ],
    [{ mirrors: { m: [{ endpoint: '' }] } }, /^mirrors\["m"\]\[0\]\.endpoint is missing/],
    [
      { mirrors: { m: [{ endpoint: 'mirror.example.com' }] } },
      /^mirrors\["m"\]\[0\]\.endpoint "mirror\.example\.com" is not a URL/,
    ],
    [{ mirrors: { m: [{ endpoint: 'ftp://mirror' }] } }, /must start with https:\/\/ or http:\/\//],
    [
      { mirrors: { m: [{ endpoint: 'http://127.0.0.1:5000' }] } },
      /uses plain HTTP; set insecure: true to allow it/,
    ],
    [{ mirrors: { m: [{ endpoint: 'https://u:p@mirror' }] } }, /must not carry credentials/],
    [
      { mirrors: { m: [{ endpoint: 'https://mirror/mcr' }] } },
      /has the path "\/mcr"; .* put a repository prefix in pathPrefix/,
    ],
    [
      { mirrors: { m: [{ endpoint: 'https://mirror', pathPrefix: 'Bad Prefix' }] } },
      /pathPrefix "Bad Prefix" must be lowercase/,
    ],
    [
      { mirrors: { m: [{ endpoint: 'https://mirror', caBundle: 'nope' }] } },
      /caBundle must hold PEM certificates/,
    ],
    [
      { registries: { 'r.example.com': { endpoint: 'http://r.example.com' } } },
      /^registries\["r\.example\.com"\]\.endpoint "http:\/\/r\.example\.com" uses plain HTTP/,
    ],
  ];
  for (const [routing, message] of cases) {
    assert.throws(() => compileRegistryRouting(routing), {
      name: 'WinfleetError',
      code: 'WF_CONFIG_INVALID',
      message,
    });
  }
});

test('an endpoint may name the /v2 API root', () => {
  assert.equal(
    targets('mcr.microsoft.com/a', {
      mirrors: { 'mcr.microsoft.com': [{ endpoint: 'https://m.example.com/v2/' }] },
    })[0]?.origin,
    'https://m.example.com',
  );
});
