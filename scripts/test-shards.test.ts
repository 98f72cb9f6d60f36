import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./test-shards.ts', import.meta.url));

function run(args: string[], cwd: string): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [script, ...args], { cwd, timeout: 60_000 }, (error, stdout) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout }),
    );
  });
}

test('two shards run every file once, print shard by shard, merge the slowest files and fail when one fails', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-shards-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const file = (name: string, body: string) =>
    writeFile(join(dir, name), `import { test } from 'node:test';\n${body}\n`);
  await file(
    'a.test.mjs',
    "test('a passes', async () => { await new Promise((r) => setTimeout(r, 150)); });",
  );
  await file('b.test.mjs', "test('b passes', () => {});");
  await file('c.test.mjs', "test('c passes', () => {});");
  await file('d.test.mjs', "test('d fails', () => { throw new Error('d is broken'); });");
  const failing = await run(['--shards', '2', '--', '--test-isolation=none', '*.test.mjs'], dir);
  assert.equal(failing.code, 1, failing.stdout);
  for (const name of ['a passes', 'b passes', 'c passes', 'd fails'])
    assert.equal(failing.stdout.split(name).length - 1 >= 1, true, `${name} reported`);
  assert.match(failing.stdout, /The 4 slowest test files \(of 4\):\n +0\.\d s {2}a\.test\.mjs/);
  assert.match(failing.stdout, /1 of 2 shards failed\n$/);
  // Shard 1's summary comes before shard 2's: printed in shard order, never interleaved.
  const summaries = [...failing.stdout.matchAll(/ℹ tests (\d+)/g)].map((m) => Number(m[1]));
  assert.equal(summaries.length, 2);
  assert.equal(summaries[0]! + summaries[1]!, 4, 'every test ran once');

  await rm(join(dir, 'd.test.mjs'));
  const passing = await run(['--shards', '2', '--', '--test-isolation=none', '*.test.mjs'], dir);
  assert.equal(passing.code, 0, passing.stdout);
  assert.doesNotMatch(passing.stdout, /shards failed/);
});

test('a bad shard count or no test arguments is refused (exit 2)', async () => {
  const zero = await run(['--shards', '0', '--', 'x.test.mjs'], tmpdir());
  assert.equal(zero.code, 2);
  const none = await run(['--shards', '2'], tmpdir());
  assert.equal(none.code, 2);
});
