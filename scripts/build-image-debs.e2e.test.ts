/**
 * From the attacker's side: the image build puts Debian's shared libraries into the image, from
 * a cache directory anyone with the build user's rights could write to. A planted .deb under the
 * right file name must never be used: only a file whose SHA-256 is the one apt's signed index
 * gives (apt-get download --print-uris) goes in. Needs apt and the Debian archive.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureDebs } from './build-image.ts';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

test('a .deb planted in the cache under the right name is replaced by the one apt vouches for', async (t) => {
  const cacheDir = await mkdtemp(join(tmpdir(), 'winfleet-debs-'));
  t.after(() => rm(cacheDir, { recursive: true, force: true }));
  const [genuine] = await ensureDebs(['libgcc-s1'], cacheDir, () => {});
  assert.ok(genuine);
  assert.equal(sha256(await readFile(genuine.file)), genuine.sha256);

  const planted = Buffer.from('!<arch>\nnot the package apt signed\n');
  await writeFile(genuine.file, planted);
  const [again] = await ensureDebs(['libgcc-s1'], cacheDir, () => {});
  assert.ok(again);
  const content = await readFile(again.file);
  assert.notDeepEqual(content, planted, 'the planted file was used');
  assert.equal(sha256(content), genuine.sha256);
});
