import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  canonicalRegistry,
  formatImageReference,
  parseImageReference,
  registryApiHost,
} from './image-reference.ts';

const sha = `sha256:${'a'.repeat(64)}`;

const valid: [string, ReturnType<typeof parseImageReference>][] = [
  ['nginx', { registry: 'docker.io', repository: 'library/nginx', tag: 'latest' }],
  ['nginx:1.27', { registry: 'docker.io', repository: 'library/nginx', tag: '1.27' }],
  ['bitnami/redis', { registry: 'docker.io', repository: 'bitnami/redis', tag: 'latest' }],
  ['docker.io/nginx', { registry: 'docker.io', repository: 'library/nginx', tag: 'latest' }],
  [
    'index.docker.io/library/nginx:x',
    { registry: 'docker.io', repository: 'library/nginx', tag: 'x' },
  ],
  [
    'mcr.microsoft.com/windows/servercore:ltsc2022',
    { registry: 'mcr.microsoft.com', repository: 'windows/servercore', tag: 'ltsc2022' },
  ],
  [
    'mcr.microsoft.com/windows/servercore/iis',
    { registry: 'mcr.microsoft.com', repository: 'windows/servercore/iis', tag: 'latest' },
  ],
  [
    '127.0.0.1:5000/windows/nanoserver:1809',
    { registry: '127.0.0.1:5000', repository: 'windows/nanoserver', tag: '1809' },
  ],
  ['localhost/app', { registry: 'localhost', repository: 'app', tag: 'latest' }],
  ['localhost:5000/app:v1', { registry: 'localhost:5000', repository: 'app', tag: 'v1' }],
  ['[::1]:5000/app', { registry: '[::1]:5000', repository: 'app', tag: 'latest' }],
  [
    'Registry.Example.com/app',
    { registry: 'registry.example.com', repository: 'app', tag: 'latest' },
  ],
  [`nginx@${sha}`, { registry: 'docker.io', repository: 'library/nginx', digest: sha }],
  [
    `mcr.microsoft.com/powershell:lts-nanoserver-1809@${sha}`,
    {
      registry: 'mcr.microsoft.com',
      repository: 'powershell',
      tag: 'lts-nanoserver-1809',
      digest: sha,
    },
  ],
  [
    'registry.example.com:443/a/b/c_d__e-f--g.h:Tag_1.0-x',
    { registry: 'registry.example.com:443', repository: 'a/b/c_d__e-f--g.h', tag: 'Tag_1.0-x' },
  ],
];

for (const [text, expected] of valid) {
  test(`parses ${text}`, () => {
    assert.deepEqual(parseImageReference(text), expected);
  });
}

test('formatImageReference gives the fully qualified form', () => {
  assert.equal(
    formatImageReference(parseImageReference('nginx')),
    'docker.io/library/nginx:latest',
  );
  assert.equal(
    formatImageReference(parseImageReference(`mcr.microsoft.com/powershell:lts@${sha}`)),
    `mcr.microsoft.com/powershell:lts@${sha}`,
  );
  assert.equal(formatImageReference(parseImageReference(`a@${sha}`)), `docker.io/library/a@${sha}`);
});

const invalid: [string, RegExp][] = [
  ['', /the image name is empty/],
  [' nginx', /contains whitespace/],
  ['ngi nx', /contains whitespace/],
  ['Nginx', /repository component "Nginx" must be lowercase.*write "nginx"/],
  ['docker.io/Library/nginx', /repository component "Library" must be lowercase/],
  ['nginx:', /tag "" must be 1-128/],
  ['nginx:-x', /tag "-x" must be 1-128/],
  [`nginx:${'a'.repeat(129)}`, /tag "a+" must be 1-128/],
  ['nginx@sha256:abc', /must have 64 lowercase hex digits after "sha256:"/],
  [`nginx@sha256:${'A'.repeat(64)}`, /must have 64 lowercase hex digits/],
  [`nginx@md5:${'a'.repeat(32)}`, /digest algorithm "md5" is not supported/],
  ['nginx@', /digest "" is not "algorithm:hex"/],
  ['nginx@latest', /digest "latest" is not "algorithm:hex"/],
  [':latest', /the repository name is missing/],
  ['mcr.microsoft.com//servercore', /empty path component/],
  ['mcr.microsoft.com/', /empty path component/],
  ['a/b/', /empty path component/],
  ['-bad.example.com/app', /registry "-bad.example.com" is not a host name/],
  ['host:port/app', /registry "host:port" is not a host name/],
  ['app_/x', /repository component "app_" must be lowercase letters/],
  ['a/.b', /repository component ".b"/],
  [`registry.example.com/${'a'.repeat(240)}`, /the name is longer than 255 characters/],
];

for (const [text, message] of invalid) {
  test(`rejects ${JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text)}`, () => {
    assert.throws(() => parseImageReference(text), {
      name: 'WinfleetError',
      code: 'WF_CONFIG_INVALID',
      message: new RegExp(`^Invalid image reference ".*": .*${message.source}`),
    });
  });
}

test('rejects values that are not strings', () => {
  assert.throws(() => parseImageReference(undefined as unknown as string), {
    code: 'WF_CONFIG_INVALID',
  });
});

test('Docker Hub aliases share one canonical name and one API host', () => {
  for (const alias of ['docker.io', 'index.docker.io', 'registry-1.docker.io', 'Docker.IO']) {
    assert.equal(canonicalRegistry(alias), 'docker.io');
  }
  assert.equal(registryApiHost('docker.io'), 'registry-1.docker.io');
  assert.equal(registryApiHost('mcr.microsoft.com'), 'mcr.microsoft.com');
});
