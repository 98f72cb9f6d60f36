import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { parseJoinFlags } from './join-flags.ts';

const hash = `sha256:${'ab'.repeat(32)}`;
const secret = '0123456789abcdef';
const valid = [
  '--api-server',
  'https://10.0.0.1:6443',
  '--ca-cert-hash',
  hash,
  '--namespace',
  'winfleet-system',
];

/** The environment with the token in WINFLEET_JOIN_TOKEN (or `token`). */
const env =
  (token: string | null = `abcdef.${secret}`) =>
  (name: string) =>
    name === 'WINFLEET_JOIN_TOKEN' ? (token ?? undefined) : undefined;

function refused(args: string[], pattern: RegExp, token: string | null = `abcdef.${secret}`): void {
  assert.throws(
    () => parseJoinFlags(args, env(token)),
    (error) => {
      assert.ok(hasCode(error, 'WF_FLAG_INVALID'), String(error));
      assert.match((error as Error).message, pattern);
      assert.ok(!(error as Error).message.includes(secret), 'the token secret is never echoed');
      return true;
    },
    args.join(' '),
  );
}

test('the flags of a join command parse', () => {
  assert.deepEqual(parseJoinFlags(valid, env()), {
    apiServer: 'https://10.0.0.1:6443',
    token: { id: 'abcdef', secret },
    caCertHash: hash,
    namespace: 'winfleet-system',
  });
  assert.equal(parseJoinFlags([...valid, '--node-name', 'win-a'], env()).nodeName, 'win-a');
  assert.equal(
    parseJoinFlags(
      valid.map((v) => (v === hash ? hash.toUpperCase().replace('SHA256', 'sha256') : v)),
      env(),
    ).caCertHash,
    hash,
  );
});

test('anything else is refused, naming the flag and never the token', () => {
  refused([...valid, '--node-name'], /--node-name needs a value after it/);
  refused([...valid, '--namespace', 'other'], /--namespace is given twice/);
  refused([...valid, '--tokn', `abcdef.${secret}`], /unknown flag "--tokn"/);
  refused(
    [...valid, '--namespace=x'],
    /unknown flag "--namespace" \(write "--flag value", without "="\)/,
  );
  refused([...valid, `abcdef.${secret}`], /unexpected argument at position 7/);
  refused(valid.slice(2), /--api-server is missing/);
  refused(valid.slice(0, 4), /--namespace is missing/);
  const replace = (flag: string, value: string) => {
    const args = [...valid];
    args[args.indexOf(flag) + 1] = value;
    return args;
  };
  refused(
    replace('--api-server', 'http://10.0.0.1:6443'),
    /--api-server must be an https:\/\/ URL/,
  );
  refused(replace('--api-server', 'https://u:p@10.0.0.1'), /without credentials/);
  refused(replace('--api-server', '10.0.0.1:6443'), /--api-server (is not a URL|must be an https)/);
  refused(valid, /WINFLEET_JOIN_TOKEN is not a bootstrap token/, `ABCDEF.${secret}`);
  refused(valid, /WINFLEET_JOIN_TOKEN is not a bootstrap token/, `abcdef.${secret}x`);
  refused(valid, /the environment variable WINFLEET_JOIN_TOKEN is not set/, '');
  refused(replace('--ca-cert-hash', 'ab'.repeat(32)), /--ca-cert-hash is .* not "sha256:"/);
  refused(replace('--namespace', 'Winfleet'), /--namespace is "Winfleet", not an RFC 1123 label/);
  refused([...valid, '--node-name', 'win_a'], /--node-name is "win_a", not an RFC 1123 label/);
  refused([...valid, '--node-name', 'a'.repeat(64)], /--node-name is "a+", not an RFC 1123 label/);
  refused(replace('--namespace', '--node-name'), /--namespace needs a value after it/);
});

test('the token never on the command line (process listings and audit logs show it)', () => {
  for (const args of [
    [...valid, '--token', `abcdef.${secret}`],
    [...valid, `--token=abcdef.${secret}`],
    ['--token', `abcdef.${secret}`, ...valid],
  ]) {
    refused(
      args,
      /--token is not taken on the command line, where process listings and audit logs would show it; put the token in the environment variable WINFLEET_JOIN_TOKEN/,
    );
  }
  refused(valid, /WINFLEET_JOIN_TOKEN is not set/, null);
});

test('--pre-pull-taint takes exactly "true"', () => {
  assert.equal(parseJoinFlags([...valid, '--pre-pull-taint', 'true'], env()).prePullTaint, true);
  assert.equal(parseJoinFlags(valid, env()).prePullTaint, undefined);
  refused([...valid, '--pre-pull-taint', 'TRUE'], /--pre-pull-taint is "TRUE"; write "true"/);
  refused([...valid, '--pre-pull-taint'], /--pre-pull-taint needs a value after it/);
});
