import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findRegistryCredentials, parseDockerConfig } from './docker-config.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

test('reads .dockerconfigjson entries with auth, username/password and tokens', () => {
  const entries = parseDockerConfig(
    {
      auths: {
        'registry.example.com': { auth: b64('alice:s3cr:et') },
        'other.example.com': { username: 'bob', password: 'pw' },
        'acr.example.com': {
          username: '00000000-0000-0000-0000-000000000000',
          identitytoken: 'rt',
        },
        'tok.example.com': { registrytoken: 'bearer-token' },
      },
    },
    'secret ns/regcred',
  );
  assert.deepEqual(
    entries.map((e) => [e.key, e.credentials]),
    [
      ['registry.example.com', { username: 'alice', password: 's3cr:et' }],
      ['other.example.com', { username: 'bob', password: 'pw' }],
      [
        'acr.example.com',
        { username: '00000000-0000-0000-0000-000000000000', identityToken: 'rt' },
      ],
      ['tok.example.com', { registryToken: 'bearer-token' }],
    ],
  );
});

test('reads JSON text and the legacy .dockercfg layout', () => {
  const text = JSON.stringify({ auths: { 'a.example.com': { auth: b64('u:p') } } });
  assert.deepEqual(parseDockerConfig(text)[0]?.credentials, { username: 'u', password: 'p' });
  assert.deepEqual(parseDockerConfig(Buffer.from(text))[0]?.key, 'a.example.com');
  const legacy = { 'https://index.docker.io/v1/': { auth: b64('hub:pw'), email: 'x@y' } };
  assert.deepEqual(parseDockerConfig(legacy)[0]?.credentials, { username: 'hub', password: 'pw' });
});

test('bad documents are rejected naming the source and field', () => {
  const cases: [unknown, RegExp][] = [
    ['{not json', /^Invalid Docker config in secret s: not JSON/],
    [[1, 2], /must be a JSON object like/],
    [null, /must be a JSON object like/],
    [{ auths: [] }, /"auths" must be an object keyed by registry/],
    [{ auths: { r: 'x' } }, /auths\["r"\] must be an object/],
    [
      { auths: { r: { auth: b64('nocolon') } } },
      /auths\["r"\]\.auth must be base64 of "username:password"/,
    ],
    [{ auths: { r: { auth: '!!!' } } }, /auths\["r"\]\.auth must be base64/],
    [{ auths: { r: { username: 5 } } }, /auths\["r"\]\.username must be a string/],
    [{ auths: { r: {} } }, /auths\["r"\] has no "auth", "username"\/"password" or token/],
  ];
  for (const [doc, message] of cases) {
    assert.throws(() => parseDockerConfig(doc, 'secret s'), {
      name: 'WinfleetError',
      code: 'WF_CONFIG_INVALID',
      message,
    });
  }
});

const configs = [
  {
    source: 'secret ns/a',
    config: {
      auths: {
        'https://index.docker.io/v1/': { auth: b64('hub:1') },
        'registry.example.com': { auth: b64('host:1') },
        'registry.example.com/team': { auth: b64('team:1') },
        'registry.example.com:5000': { auth: b64('port:1') },
        '*.azurecr.io': { auth: b64('glob:1') },
        'exact.azurecr.io': { auth: b64('exact:1') },
        'http://127.0.0.1:5001/': { auth: b64('loop:1') },
      },
    },
  },
];

const user = (registry: string, repository: string) =>
  findRegistryCredentials(registry, repository, configs)?.credentials.username;

test('matches by host, port, path prefix and glob; the most specific key wins', () => {
  assert.equal(user('docker.io', 'library/nginx'), 'hub');
  assert.equal(user('registry.example.com', 'app'), 'host');
  assert.equal(user('registry.example.com', 'team/app'), 'team');
  assert.equal(user('registry.example.com', 'team'), 'team');
  assert.equal(user('registry.example.com', 'teamwork/app'), 'host', 'path prefixes end at a /');
  assert.equal(user('registry.example.com:5000', 'app'), 'port');
  assert.equal(user('registry.example.com:5002', 'app'), undefined, 'ports must be equal');
  assert.equal(user('my.azurecr.io', 'app'), 'glob');
  assert.equal(user('exact.azurecr.io', 'app'), 'exact', 'a plain host beats a glob');
  assert.equal(user('a.b.azurecr.io', 'app'), undefined, 'a glob covers one label');
  assert.equal(user('azurecr.io', 'app'), undefined);
  assert.equal(user('127.0.0.1:5001', 'windows/servercore'), 'loop');
  assert.equal(user('mcr.microsoft.com', 'windows/servercore'), undefined);
});

test('earlier documents win ties; unreadable documents are skipped and reported', () => {
  const problems: string[] = [];
  const match = findRegistryCredentials(
    'registry.example.com',
    'app',
    [
      { source: 'secret ns/broken', config: '{' },
      {
        source: 'secret ns/first',
        config: { auths: { 'registry.example.com': { auth: b64('first:1') } } },
      },
      {
        source: 'secret ns/second',
        config: { auths: { 'registry.example.com': { auth: b64('second:1') } } },
      },
    ],
    problems,
  );
  assert.deepEqual(match, {
    credentials: { username: 'first', password: '1' },
    source: 'secret ns/first',
    key: 'registry.example.com',
  });
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^Invalid Docker config in secret ns\/broken: not JSON/);
});
