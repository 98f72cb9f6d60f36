import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SimContainerdImages } from './containerd-images.ts';

test('a pull takes its size over the pull and unpack rates, and lands only at the end', async () => {
  const images = new SimContainerdImages({
    registry: { 'example.test/big:1': 4e6, 'example.test/small:1': 1e6 },
    pullBytesPerSecond: 1e8,
    unpackBytesPerSecond: 2e8,
  });
  assert.equal(images.pullMs('example.test/big:1'), 60);
  assert.equal(images.pullMs('example.test/small:1'), 15);
  const pulling = images.pull('example.test/big:1', new AbortController().signal);
  assert.equal(images.has('example.test/big:1'), false);
  await pulling;
  assert.equal(images.has('example.test/big:1'), true);
});

test("a missing image fails as containerd's resolver does; a stopped pull leaves nothing", async () => {
  const images = new SimContainerdImages({ registry: { 'example.test/a:1': 1e9 } });
  await assert.rejects(images.pull('example.test/nope:1', AbortSignal.timeout(1000)), {
    message: 'failed to resolve reference "example.test/nope:1": example.test/nope:1: not found',
  });
  const stop = new AbortController();
  const pulling = images.pull('example.test/a:1', stop.signal);
  stop.abort();
  await assert.rejects(pulling);
  assert.equal(images.has('example.test/a:1'), false);
});
