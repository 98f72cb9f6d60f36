import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { parseJoinFlags } from './join-flags.ts';

const hash = `sha256:${'ab'.repeat(32)}`;
const secret = '0123456789abcdef';
const valid = [
  '--api-server',
  'https://10.0.0.1:6443',
  '--token',
  `abcdef.${secret}`,
  '--ca-cert-hash',
  hash,
  '--namespace',
  'winfleet-system',
];

function refused(args: string[], pattern: RegExp): void {
  assert.throws(
    () => parseJoinFlags(args),
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
  assert.deepEqual(parseJoinFlags(valid), {
    apiServer: 'https://10.0.0.1:6443',
    token: { id: 'abcdef', secret },
    caCertHash: hash,
    namespace: 'winfleet-system',
  });
  assert.equal(parseJoinFlags([...valid, '--node-name', 'win-a']).nodeName, 'win-a');
  assert.equal(
    parseJoinFlags(
      valid.map((v) => (v === hash ? hash.toUpperCase().replace('SHA256', 'sha256') : v)),
    ).caCertHash,
    hash,
  );
});

test('anything else is refused, naming the flag and never the token', () => {
  refused([...valid, '--node-name'], /--node-name needs a value after it/);
  refused([...valid, '--namespace', 'other'], /--namespace is given twice/);
  refused([...valid, '--tokn', `abcdef.${secret}`], /unknown flag "--tokn"/);
  refused(
    [...valid, `--token=abcdef.${secret}`],
    /unknown flag "--token" \(write "--flag value", without "="\)/,
  );
  refused([...valid, `abcdef.${secret}`], /unexpected argument at position 9/);
  refused(valid.slice(2), /--api-server is missing/);
  refused(valid.slice(0, 6), /--namespace is missing/);
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
  refused(replace('--token', `ABCDEF.${secret}`), /--token is not a bootstrap token/);
  refused(replace('--token', `abcdef.${secret}x`), /--token is not a bootstrap token/);
  refused(replace('--ca-cert-hash', 'ab'.repeat(32)), /--ca-cert-hash is .* not "sha256:"/);
  refused(replace('--namespace', 'Winfleet'), /--namespace is "Winfleet", not an RFC 1123 label/);
  refused([...valid, '--node-name', 'win_a'], /--node-name is "win_a", not an RFC 1123 label/);
  refused([...valid, '--node-name', 'a'.repeat(64)], /--node-name is "a+", not an RFC 1123 label/);
  refused(replace('--token', '--namespace'), /--token needs a value after it/);
});
