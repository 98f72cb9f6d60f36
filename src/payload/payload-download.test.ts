import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { PayloadFile } from './payload.ts';
import { payloadFileOnDisk } from './payload-file.ts';

/** The content of the verified file, released after. */
async function contentOf(dir: string, file: PayloadFile, cacheDir?: string) {
  const onDisk = await payloadFileOnDisk(dir, file, cacheDir);
  try {
    const data = await readFile(onDisk.path);
    assert.equal(onDisk.size, data.length);
    assert.equal(onDisk.sha256, file.sha256);
    return { data, path: onDisk.path };
  } finally {
    await onDisk.release();
  }
}

/** A loopback server that serves `body` and counts requests. */
async function serve(t: { after(fn: () => void): void }, body: Buffer) {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/kubelet.exe`, requests: () => requests };
}

function fileFor(url: string, body: Buffer): PayloadFile {
  return {
    name: 'kubelet.exe',
    version: 'v1.36.5',
    sha256: createHash('sha256').update(body).digest('hex'),
    source: { url },
  } as PayloadFile;
}

test('a downloaded payload file is cached once and read from the cache after', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-download-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const body = Buffer.from('kubelet bytes');
  const server = await serve(t, body);
  const file = fileFor(server.url, body);
  assert.deepEqual((await contentOf(dir, file)).data, body);
  assert.deepEqual((await contentOf(dir, file)).data, body);
  assert.equal(server.requests(), 1);
  assert.deepEqual(await readFile(join(dir, '.download', file.sha256)), body);
});

test('a payload directory the operator cannot write to still serves downloads (no cache)', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-download-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  // A cache directory under a regular file cannot be created, as on a read-only volume (root
  // ignores permission bits, so a mode would not show it).
  await writeFile(join(dir, 'not-a-dir'), '');
  const cacheDir = join(dir, 'not-a-dir', '.download');
  const body = Buffer.from('kubelet bytes');
  const server = await serve(t, body);
  const file = fileFor(server.url, body);
  const first = await contentOf(dir, file, cacheDir);
  assert.deepEqual(first.data, body);
  await assert.rejects(
    readFile(first.path),
    { code: 'ENOENT' },
    'the temporary download is released',
  );
  assert.deepEqual((await contentOf(dir, file, cacheDir)).data, body);
  assert.equal(server.requests(), 2, 'without a cache each read downloads again');
});

test('a download whose SHA-256 differs from payload.json is refused and not cached', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-download-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const server = await serve(t, Buffer.from('tampered'));
  const file = fileFor(server.url, Buffer.from('kubelet bytes'));
  await assert.rejects(payloadFileOnDisk(dir, file), /has SHA-256 .* payload.json says/);
  await assert.rejects(readFile(join(dir, '.download', file.sha256)), { code: 'ENOENT' });
  assert.deepEqual(await readdir(join(dir, '.download')), [], 'no partial download is left');
});

test('a payload file changed on disk is hashed again and refused', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-payload-file-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const body = Buffer.from('kubelet bytes');
  await writeFile(join(dir, 'kubelet.exe'), body);
  const file = { ...fileFor('unused', body), source: { path: 'kubelet.exe' } } as PayloadFile;
  assert.deepEqual((await contentOf(dir, file)).data, body);
  await writeFile(join(dir, 'kubelet.exe'), 'kubelet bytez');
  await assert.rejects(payloadFileOnDisk(dir, file), /has SHA-256 .* payload.json says/);
});
