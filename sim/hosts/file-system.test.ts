import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { SimFileSystem } from './file-system.ts';

async function tempFs(
  t: { after(fn: () => Promise<void>): void },
  options: { freeBytes?: number } = {},
) {
  const root = await mkdtemp(join(tmpdir(), 'simhost-fs-test-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  return SimFileSystem.create({ root, ...options });
}

test('names are case-insensitive and keep the case they were created with', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\K\\Winfleet\\Agent.exe', 'v1');
  assert.equal((await fs.readFile('c:\\k\\WINFLEET\\agent.EXE')).toString(), 'v1');
  await fs.writeFileAtomic('c:\\k\\winfleet\\AGENT.EXE', 'v2');
  assert.deepEqual(
    (await fs.list('C:\\k\\winfleet')).map((e) => e.name),
    ['Agent.exe'],
  );
  assert.equal(await fs.realPath('c:/k/winfleet/agent.exe'), 'C:\\K\\Winfleet\\Agent.exe');
  assert.deepEqual(await readdir(join(fs.root, 'K', 'Winfleet')), ['Agent.exe']);
});

test('an atomic write leaves no temporary file and creates parents', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\a\\b\\c.txt', 'hello');
  assert.deepEqual(await fs.allPaths(), ['C:\\a', 'C:\\a\\b', 'C:\\a\\b\\c.txt']);
});

test('a plain write needs the parent directory', async (t) => {
  const fs = await tempFs(t);
  await assert.rejects(fs.writeFile('C:\\missing\\x.txt', 'x'), { code: 'ENOENT' });
  await assert.rejects(fs.mkdir('C:\\a\\b'), { code: 'ENOENT' });
  await fs.mkdir('C:\\a\\b', { recursive: true });
  await assert.rejects(fs.mkdir('C:\\A'), { code: 'EEXIST' });
});

test('free space goes down with writes, up with removals, and the disk-full fault stops writes', async (t) => {
  const fs = await tempFs(t, { freeBytes: 1000 });
  await fs.writeFileAtomic('C:\\x.bin', Buffer.alloc(300));
  assert.equal(fs.freeBytes(), 700);
  await assert.rejects(
    fs.writeFileAtomic('C:\\y.bin', Buffer.alloc(800)),
    (e: NodeJS.ErrnoException) =>
      e.code === 'ENOSPC' && /There is not enough space on the disk\./.test(e.message),
  );
  assert.deepEqual(await fs.allPaths(), ['C:\\x.bin'], 'the failed write leaves nothing behind');
  await fs.remove('C:\\x.bin');
  assert.equal(fs.freeBytes(), 1000);
  fs.diskFull = true;
  assert.equal(fs.freeBytes(), 0);
  await assert.rejects(fs.writeFileAtomic('C:\\z.txt', 'z'), { code: 'ENOSPC' });
  fs.diskFull = false;
  await fs.writeFileAtomic('C:\\z.txt', 'z');
});

test('a running program image cannot be overwritten, replaced or deleted, but can be renamed', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\k\\kubelet.exe', 'v1');
  const image = await fs.fileIdentity('C:\\k\\kubelet.exe');
  fs.heldAs = (identity) => (identity === image ? 'image' : undefined);
  await assert.rejects(fs.writeFile('C:\\k\\kubelet.exe', 'v2'), { code: 'EBUSY' });
  await assert.rejects(fs.writeFileAtomic('C:\\k\\kubelet.exe', 'v2'), { code: 'EPERM' });
  await assert.rejects(fs.remove('C:\\k', { recursive: true }), { code: 'EPERM' });
  await assert.rejects(fs.open('C:\\k\\kubelet.exe', { write: true }), { code: 'EBUSY' });
  assert.equal((await fs.readFile('C:\\k\\kubelet.exe')).toString(), 'v1');
  await fs.rename('C:\\k\\kubelet.exe', 'C:\\k\\kubelet.old.exe');
  assert.deepEqual(await fs.allPaths(), ['C:\\k', 'C:\\k\\kubelet.old.exe']);
});

test('the lock follows the file through a rename: the new file is free, the renamed one is not', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\k\\shim.exe', 'v1');
  const image = await fs.fileIdentity('C:\\k\\shim.exe');
  fs.heldAs = (identity) => (identity === image ? 'image' : undefined);
  await fs.rename('C:\\k\\shim.exe', 'C:\\k\\shim.exe.old-1');
  await fs.writeFileAtomic('C:\\k\\shim.exe', 'v2');
  await fs.writeFileAtomic('C:\\k\\shim.exe', 'v3');
  assert.equal((await fs.readFile('C:\\k\\shim.exe')).toString(), 'v3');
  await assert.rejects(fs.remove('C:\\k\\shim.exe.old-1'), (e: NodeJS.ErrnoException) => {
    return (
      e.code === 'EPERM' &&
      /Access is denied\. \(delete "C:\\k\\shim\.exe\.old-1"\)/.test(e.message)
    );
  });
  assert.notEqual(await fs.fileIdentity('C:\\k\\shim.exe'), image);
});

test('a file held open can be written in place but not deleted, renamed or replaced', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\k\\logs\\kubelet.log', 'a');
  const held = await fs.fileIdentity('C:\\k\\logs\\kubelet.log');
  fs.heldAs = (identity) => (identity === held ? 'open' : undefined);
  await fs.writeFile('C:\\k\\logs\\kubelet.log', 'b');
  const handle = await fs.open('C:\\k\\logs\\kubelet.log', { write: true, append: true });
  await handle.write(0, Buffer.from('c'));
  await handle.close();
  assert.equal((await fs.readFile('C:\\k\\logs\\kubelet.log')).toString(), 'bc');
  await assert.rejects(fs.remove('C:\\k\\logs', { recursive: true }), { code: 'EBUSY' });
  await assert.rejects(fs.rename('C:\\k\\logs\\kubelet.log', 'C:\\k\\x.log'), {
    code: 'EBUSY',
  });
  await assert.rejects(fs.writeFileAtomic('C:\\k\\logs\\kubelet.log', 'd'), { code: 'EBUSY' });
  assert.deepEqual(await fs.allPaths(), ['C:\\k', 'C:\\k\\logs', 'C:\\k\\logs\\kubelet.log']);
});

test('rename refuses an existing target unless replacing, and never replaces a directory', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\a.txt', 'a');
  await fs.writeFileAtomic('C:\\b.txt', 'b');
  await fs.mkdir('C:\\d');
  await assert.rejects(fs.rename('C:\\a.txt', 'C:\\b.txt'), { code: 'EEXIST' });
  await assert.rejects(fs.rename('C:\\a.txt', 'C:\\d', { replace: true }), { code: 'EEXIST' });
  await fs.rename('C:\\a.txt', 'C:\\b.txt', { replace: true });
  assert.equal((await fs.readFile('C:\\B.TXT')).toString(), 'a');
  await fs.rename('C:\\b.txt', 'C:\\B.txt');
  assert.deepEqual(await fs.allPaths(), ['C:\\B.txt', 'C:\\d']);
});

test('removing a directory needs recursive unless it is empty', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\d\\f.txt', 'f');
  await assert.rejects(fs.remove('C:\\d'), { code: 'ENOTEMPTY' });
  await assert.rejects(fs.remove('C:\\missing'), { code: 'ENOENT' });
  await fs.remove('C:\\missing', { missingOk: true });
  await fs.remove('C:\\d', { recursive: true });
  assert.deepEqual(await fs.allPaths(), []);
});

/** Every chunk of `chunks`, as text. */
async function collect(chunks: AsyncIterable<Buffer>): Promise<string[]> {
  const all: string[] = [];
  for await (const chunk of chunks) all.push(chunk.toString());
  return all;
}

/** `parts` as chunks, then (when `failure`) an error, as a blob that fails its check does. */
async function* chunksOf(parts: (string | Buffer)[], failure?: Error): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part);
  if (failure) throw failure;
}

test('a streamed write counts each chunk against free space, and lands only when the stream ends cleanly', async (t) => {
  const fs = await tempFs(t, { freeBytes: 1000 });
  assert.equal(
    await fs.writeFileAtomicFromStream('C:\\k\\payload\\a.exe', chunksOf(['abc', 'def'])),
    6,
  );
  assert.equal((await fs.readFile('C:\\k\\payload\\a.exe')).toString(), 'abcdef');
  assert.equal(fs.freeBytes(), 994);
  assert.deepEqual(await collect(fs.readChunks('C:\\K\\PAYLOAD\\A.EXE')), ['abcdef']);
  // The check at the end fails: the old file stays, nothing else is left, the space comes back.
  await assert.rejects(
    fs.writeFileAtomicFromStream(
      'C:\\k\\payload\\a.exe',
      chunksOf(['tampered'], new Error('digest')),
    ),
    /digest/,
  );
  assert.equal((await fs.readFile('C:\\k\\payload\\a.exe')).toString(), 'abcdef');
  assert.deepEqual(await fs.allPaths(), ['C:\\k', 'C:\\k\\payload', 'C:\\k\\payload\\a.exe']);
  assert.equal(fs.freeBytes(), 994);
  // The disk fills up mid-way: ENOSPC as Windows says it, nothing left behind.
  await assert.rejects(
    fs.writeFileAtomicFromStream(
      'C:\\k\\payload\\b.exe',
      chunksOf([Buffer.alloc(600), Buffer.alloc(600)]),
    ),
    (e: NodeJS.ErrnoException) =>
      e.code === 'ENOSPC' && /There is not enough space on the disk\./.test(e.message),
  );
  assert.deepEqual(await fs.allPaths(), ['C:\\k', 'C:\\k\\payload', 'C:\\k\\payload\\a.exe']);
  assert.equal(fs.freeBytes(), 994);
  fs.diskFull = true;
  await assert.rejects(fs.writeFileAtomicFromStream('C:\\k\\payload\\c.exe', chunksOf(['c'])), {
    code: 'ENOSPC',
  });
  fs.diskFull = false;
  await assert.rejects(collect(fs.readChunks('C:\\k\\payload\\missing.exe')), {
    code: 'ENOENT',
  });
});

test('a streamed write cannot replace a running image, as a plain atomic write cannot', async (t) => {
  const fs = await tempFs(t);
  await fs.writeFileAtomic('C:\\k\\kubelet.exe', 'v1');
  const image = await fs.fileIdentity('C:\\k\\kubelet.exe');
  fs.heldAs = (identity) => (identity === image ? 'image' : undefined);
  await assert.rejects(fs.writeFileAtomicFromStream('C:\\k\\kubelet.exe', chunksOf(['v2'])), {
    code: 'EPERM',
  });
  assert.equal((await fs.readFile('C:\\k\\kubelet.exe')).toString(), 'v1');
  assert.deepEqual(await fs.allPaths(), ['C:\\k', 'C:\\k\\kubelet.exe']);
});
