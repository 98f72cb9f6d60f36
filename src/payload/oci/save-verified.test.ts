/**
 * saveVerified's promise, "nothing is kept", checked at the moment the failure is reported:
 * the directory is read in the same tick the rejection arrives, never after a wait.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { saveVerified } from './payload-registry.ts';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-save-verified-'));
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Chunks that fail after yielding `before` of them, as a verifying stream does on a bad hash. */
async function* failingAfter(before: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < before; i++) yield Buffer.from(`chunk ${i}\n`);
  throw new Error('the blob hashes to something else');
}

test('a stream that fails at once or after some chunks leaves no file and no temporary file when the failure is reported', async () => {
  const dir = await tempDir();
  // The write stream this replaced lost the race now and then (a temporary file created after
  // its removal): many rounds, each checked at once, make such a race show.
  for (let round = 0; round < 200; round++) {
    const before = round % 3;
    await assert.rejects(saveVerified(failingAfter(before), join(dir, 'containerd.exe')), {
      message: 'the blob hashes to something else',
    });
    assert.deepEqual(await readdir(dir), [], `round ${round} (${before} chunks first)`);
  }
});

test('chunks that end cleanly are written whole, in order, under the final name only', async () => {
  const dir = await tempDir();
  const big = Buffer.alloc(3 * 1024 * 1024, 7);
  async function* chunks(): AsyncGenerator<Buffer> {
    yield Buffer.from('head:');
    yield big;
    yield Buffer.from(':tail');
  }
  await saveVerified(chunks(), join(dir, 'kubelet.exe'));
  assert.deepEqual(await readdir(dir), ['kubelet.exe']);
  const saved = await readFile(join(dir, 'kubelet.exe'));
  assert.equal(saved.length, big.length + 10);
  assert.equal(saved.subarray(0, 5).toString(), 'head:');
  assert.equal(saved.subarray(-5).toString(), ':tail');
});

test('after a failed save, the same name saves cleanly', async () => {
  const dir = await tempDir();
  await saveVerified(failingAfter(0), join(dir, 'a')).catch(() => undefined);
  // A second save of the same name works: the first left nothing that blocks it.
  async function* one(): AsyncGenerator<Buffer> {
    yield Buffer.from('x');
  }
  await saveVerified(one(), join(dir, 'a'));
  assert.equal(await readFile(join(dir, 'a'), 'utf8'), 'x');
});
