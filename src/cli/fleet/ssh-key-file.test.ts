import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import ssh2 from 'ssh2';
import { generateSshKeyPair } from '../../../sim/hosts/ssh-keys.ts';
import { checkPrivateKey } from './ssh-key-file.ts';

const check = (text: string | Buffer) =>
  checkPrivateKey(Buffer.isBuffer(text) ? text : Buffer.from(text), '--ssh-key-file k');

const problem = (text: string | Buffer): string => {
  const result = check(text);
  assert.equal(result.ok, false, 'refused');
  return (result as { problem: string }).problem;
};

const ed25519 = generateSshKeyPair('ed25519');
const rsaPem = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'pkcs1', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
});

test('an unencrypted OpenSSH key and a PKCS#1 PEM key are accepted', () => {
  const openssh = check(ed25519.private);
  assert.deepEqual(openssh.ok && openssh.type, 'ssh-ed25519');
  const pem = check(rsaPem.privateKey);
  assert.deepEqual(pem.ok && pem.type, 'ssh-rsa');
  // Leading blank lines and CRLF line ends (a key saved on Windows) are fine.
  const crlf = check(`\n${ed25519.private.replaceAll('\n', '\r\n')}`);
  assert.equal(crlf.ok, true);
});

test('a public key is refused, whatever its form', () => {
  assert.match(problem(ed25519.public), /holds a public key, not a private key/);
  assert.match(problem(rsaPem.publicKey), /public key/);
});

test('encrypted keys are refused with the way to decrypt a copy', () => {
  const openssh = ssh2.utils.generateKeyPairSync('ed25519', {
    passphrase: 'correct horse',
    cipher: 'aes256-cbc',
    rounds: 4,
  });
  assert.match(problem(openssh.private), /encrypted private key.*ssh-keygen -p/);
  const pem = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: {
      type: 'pkcs1',
      format: 'pem',
      cipher: 'aes-128-cbc',
      passphrase: 'correct horse',
    },
    publicKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  assert.match(problem(pem.privateKey), /encrypted private key/);
  const pkcs8 = generateKeyPairSync('ed25519', {
    privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-128-cbc', passphrase: 'x' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  assert.match(problem(pkcs8.privateKey), /encrypted/);
});

test('two keys in one file are refused, even the same key twice', () => {
  assert.match(problem(ed25519.private + ed25519.private), /2 PEM blocks/);
  assert.match(problem(ed25519.private + rsaPem.privateKey), /2 PEM blocks/);
});

test('text around the key, a PKCS#8 key, binary and empty files are refused', () => {
  assert.match(problem(`# my key\n${ed25519.private}`), /not a single/);
  assert.match(problem(`${ed25519.private}extra\n`), /not a single/);
  const pkcs8 = generateKeyPairSync('ed25519', {
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  assert.match(problem(pkcs8.privateKey), /PKCS#8/);
  assert.match(problem(Buffer.from([0xff, 0xfe, 0, 1])), /not text/);
  assert.match(problem(''), /empty/);
  assert.match(problem(Buffer.alloc(70_000, 0x41)), /more than any private key/);
  // A damaged body: the block is there but ssh2 cannot read it.
  const lines = ed25519.private.split('\n');
  lines[2] = 'AAAA';
  assert.match(problem(lines.join('\n')), /cannot be read as an SSH private key/);
});

test('no message quotes the key', () => {
  const body = ed25519.private.split('\n')[1]!.slice(0, 20);
  for (const text of [
    `# c\n${ed25519.private}`,
    ed25519.private + ed25519.private,
    ed25519.private.replace('OPENSSH', 'DSA'),
  ])
    assert.ok(!problem(text).includes(body));
});
