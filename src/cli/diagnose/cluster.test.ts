import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { truncationNote } from '../commands/diagnose.ts';
import { readFileTail } from './cluster.ts';

test('--operator-log: only the last `limit` bytes of a large log are read, and it says it was cut', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-tail-'));
  try {
    const file = join(dir, 'operator.log');
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i} é\n`).join('');
    await writeFile(file, lines);
    const tail = await readFileTail(file, 1000);
    assert.equal(tail.truncated, true);
    assert.ok(Buffer.byteLength(tail.text) <= 1000);
    assert.ok(tail.text.endsWith('line 19999 é\n'));
    assert.ok(!tail.text.startsWith('\uFFFD'), 'no broken character at the cut');
    const whole = await readFileTail(file, lines.length * 2);
    assert.deepEqual(whole, { text: lines, truncated: false });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a cut item says which end was kept from the item, not from its path', () => {
  // A host whose name contains "log" or "events": its configs still keep their start.
  assert.match(
    truncationNote({
      path: 'hosts/ns_blog-events-1/config-kubelet.txt',
      title: '',
      truncated: true,
    }),
    /only the first/,
  );
  assert.match(
    truncationNote({
      path: 'hosts/ns_w1/log-kubelet.txt',
      title: '',
      truncated: true,
      keepTail: true,
    }),
    /only the last/,
  );
});
