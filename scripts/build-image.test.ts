/** The parsers the image build relies on, against real and hostile input. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  bundleOperator,
  checkImageReference,
  elfInterpreter,
  IMAGE_APP,
  IMAGE_ENTRYPOINT,
  IMAGE_ENV,
  IMAGE_NODE,
  IMAGE_NODE_FLAGS,
  OPERATOR_ENTRY,
  parseLoaderList,
  parsePrintUris,
  readHead,
  sourceUrl,
} from './build-image.ts';
import { bundleNodeProgram, pinnedNode, repoRoot } from './node-build.ts';

/** The characters of `code` above `limit`, at most 5 of them. */
function charactersAbove(code: string, limit: number): string[] {
  const found: string[] = [];
  for (const c of code) {
    if ((c.codePointAt(0) ?? 0) > limit) found.push(c);
    if (found.length === 5) break;
  }
  return found;
}

test('the operator bundle is pure ASCII, so V8 keeps its source one byte a character', async () => {
  const shipped = await bundleOperator();
  assert.deepEqual(charactersAbove(shipped.code, 0x7f), []);
  // The control: esbuild's default charset keeps the sources' characters above 0xFF, which
  // would make V8 hold the whole 10 MiB source as a two-byte string.
  const plain = await bundleNodeProgram(OPERATOR_ENTRY);
  assert.notDeepEqual(charactersAbove(plain.code, 0xff), []);
  assert.ok(Math.abs(shipped.code.length - plain.code.length) < shipped.code.length / 1000);
});

test('the Dockerfile runs the bundle with the same Node flags and environment as make image', async () => {
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const entrypoints = [...dockerfile.matchAll(/^ENTRYPOINT (.+)$/gm)].map(
    (m) => JSON.parse(m[1] as string) as string[],
  );
  assert.deepEqual(entrypoints, [IMAGE_ENTRYPOINT]);
  assert.deepEqual(IMAGE_ENTRYPOINT, [IMAGE_NODE, ...IMAGE_NODE_FLAGS, IMAGE_APP]);
  assert.ok(IMAGE_NODE_FLAGS.includes('--max-semi-space-size=2'));
  const env = Object.fromEntries(
    [...dockerfile.matchAll(/^ENV (\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]),
  );
  assert.deepEqual(env, IMAGE_ENV);
  assert.equal(IMAGE_ENV.MALLOC_ARENA_MAX, '2');
});

/** A minimal ELF64 x86-64 header with one program header of `type` at 64. */
function elf(options: { type?: number; interp?: string; machine?: number; elfClass?: number }) {
  const interp = Buffer.from(`${options.interp ?? '/lib64/ld-linux-x86-64.so.2'}\0`, 'latin1');
  const buffer = Buffer.alloc(64 + 56 + interp.length);
  buffer.writeUInt32BE(0x7f454c46, 0);
  buffer[4] = options.elfClass ?? 2;
  buffer[5] = 1;
  buffer.writeUInt16LE(options.machine ?? 62, 0x12);
  buffer.writeBigUInt64LE(64n, 0x20);
  buffer.writeUInt16LE(56, 0x36);
  buffer.writeUInt16LE(1, 0x38);
  buffer.writeUInt32LE(options.type ?? 3, 64);
  buffer.writeBigUInt64LE(120n, 64 + 8);
  buffer.writeBigUInt64LE(BigInt(interp.length), 64 + 32);
  interp.copy(buffer, 120);
  return buffer;
}

test('elfInterpreter reads the pinned Node binary and refuses what is not an x86-64 ELF', async () => {
  const interpreter = elfInterpreter(await readHead(pinnedNode(), 64 * 1024));
  assert.match(interpreter, /^\/lib64\/ld-linux-x86-64\.so\.2$/);
  assert.equal(elfInterpreter(elf({})), '/lib64/ld-linux-x86-64.so.2');
  assert.throws(
    () => elfInterpreter(Buffer.from('#!/bin/sh\necho not elf\n'.repeat(4))),
    /Not an ELF/,
  );
  assert.throws(() => elfInterpreter(elf({ elfClass: 1 })), /64-bit/);
  assert.throws(() => elfInterpreter(elf({ machine: 183 })), /x86-64/); // aarch64
  assert.throws(() => elfInterpreter(elf({ type: 1 })), /no interpreter/);
  assert.throws(() => elfInterpreter(elf({ interp: '../../etc/x' })), /not a plain absolute path/);
  assert.throws(() => elfInterpreter(elf({}).subarray(0, 100)), /program headers/);
});

test('parseLoaderList reads the loader --list output and refuses other lines', () => {
  const output = [
    '\tlinux-vdso.so.1 (0x00007f9431c1d000)',
    '\tlibdl.so.2 => /r/lib/x86_64-linux-gnu/libdl.so.2 (0x00007f9431c07000)',
    '\tlibstdc++.so.6 => /r/usr/lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f9431800000)',
    '\tlibfoo.so.1 => not found',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007f9431c1f000)',
    '',
  ].join('\n');
  assert.deepEqual(parseLoaderList(output), [
    { name: 'libdl.so.2', path: '/r/lib/x86_64-linux-gnu/libdl.so.2' },
    { name: 'libstdc++.so.6', path: '/r/usr/lib/x86_64-linux-gnu/libstdc++.so.6' },
    { name: 'libfoo.so.1' },
  ]);
  assert.throws(() => parseLoaderList('\tlibx.so => relative/path (0x1)'), /Cannot parse/);
});

test('parsePrintUris reads apt lines in the order asked and refuses anything else', () => {
  const hash = 'a'.repeat(64);
  const output = [
    `'http://deb.debian.org/debian/pool/main/g/gcc-12/libstdc%2b%2b6_12.2.0-14%2bdeb12u1_amd64.deb' libstdc++6_12.2.0-14+deb12u1_amd64.deb 612604 SHA256:${hash}`,
    `'http://deb.debian.org/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb' libc6_2.36-9+deb12u14_amd64.deb 2759320 SHA256:${'b'.repeat(64)}`,
    `'http://x/pool/e/epoch_1%3a2.0-1_amd64.deb' epoch_1%3a2.0-1_amd64.deb 1 SHA256:${hash}`,
  ].join('\n');
  assert.deepEqual(parsePrintUris(output, ['libc6', 'libstdc++6', 'epoch']), [
    {
      name: 'libc6',
      version: '2.36-9+deb12u14',
      sha256: 'b'.repeat(64),
      file: 'libc6_2.36-9+deb12u14_amd64.deb',
    },
    {
      name: 'libstdc++6',
      version: '12.2.0-14+deb12u1',
      sha256: hash,
      file: 'libstdc++6_12.2.0-14+deb12u1_amd64.deb',
    },
    { name: 'epoch', version: '1:2.0-1', sha256: hash, file: 'epoch_1%3a2.0-1_amd64.deb' },
  ]);
  assert.throws(() => parsePrintUris(output, ['libgcc-s1']), /lists no libgcc-s1/);
  // Another architecture, a path in the file name, a short hash, MD5 instead of SHA-256.
  for (const line of [
    `'http://x/libc6_2.36_arm64.deb' libc6_2.36_arm64.deb 1 SHA256:${hash}`,
    `'http://x/a.deb' ../libc6_2.36_amd64.deb 1 SHA256:${hash}`,
    `'http://x/a.deb' libc6_2.36_amd64.deb 1 SHA256:abc`,
    `'http://x/a.deb' libc6_2.36_amd64.deb 1 MD5Sum:${'a'.repeat(32)}`,
  ]) {
    assert.throws(() => parsePrintUris(line, ['libc6']), /Cannot parse/, line);
  }
});

test('sourceUrl turns a git remote into an https URL without credentials', () => {
  assert.equal(
    sourceUrl('git@github.com:winfleet/winfleet.git'),
    'https://github.com/winfleet/winfleet',
  );
  assert.equal(
    sourceUrl('https://user:ghp_secret@github.com/winfleet/winfleet.git'),
    'https://github.com/winfleet/winfleet',
  );
  assert.equal(sourceUrl('ssh://git@example.com/x/y.git'), 'https://example.com/x/y');
  assert.throws(() => sourceUrl('/srv/git/winfleet'));
});

test('checkImageReference takes registry references and refuses anything else', () => {
  for (const ok of [
    '127.0.0.1:5000/winfleet/operator:dev',
    'localhost:5000/operator',
    'ghcr.io/winfleet/operator:v0.1.0',
    `registry.example.com/a/b@sha256:${'0'.repeat(64)}`,
    '[::1]:5000/winfleet/operator:dev',
  ]) {
    assert.doesNotThrow(() => checkImageReference(ok), ok);
  }
  for (const bad of [
    '--insecure',
    'winfleet/operator:dev', // no registry host: would mean Docker Hub
    'operator',
    '127.0.0.1:5000/Winfleet/operator', // repositories are lower case
    '127.0.0.1:5000/winfleet/operator:dev tag',
    '127.0.0.1:5000/winfleet/operator:dev\n',
    '127.0.0.1:5000/../operator',
    '127.0.0.1:5000/winfleet/operator@sha256:abc',
  ]) {
    assert.throws(() => checkImageReference(bad), /--image \(IMAGE=\)/, bad);
  }
});
