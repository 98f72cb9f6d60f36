import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type PayloadFile, readPayloadFile } from './payload.ts';

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
  assert.deepEqual(await readPayloadFile(dir, file), body);
  assert.deepEqual(await readPayloadFile(dir, file), body);
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
  assert.deepEqual(await readPayloadFile(dir, file, cacheDir), body);
  assert.deepEqual(await readPayloadFile(dir, file, cacheDir), body);
  assert.equal(server.requests(), 2, 'without a cache each read downloads again');
});

test('a download whose SHA-256 differs from payload.json is refused and not cached', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-download-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const server = await serve(t, Buffer.from('tampered'));
  const file = fileFor(server.url, Buffer.from('kubelet bytes'));
  await assert.rejects(readPayloadFile(dir, file), /has SHA-256 .* payload.json says/);
  await assert.rejects(readFile(join(dir, '.download', file.sha256)), { code: 'ENOENT' });
});
