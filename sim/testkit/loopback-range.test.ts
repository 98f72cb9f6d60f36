import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { claimLoopbackRange } from './loopback-range.ts';

const lock = (n: number) => join(tmpdir(), `winfleet-loopback-127.0.${n}.lock`);

test('a loopback range is claimed once: not again by this process, not by another while it lives', () => {
  const n = 251 + (process.pid % 4); // outside the ranges tests draw from (1-250)
  assert.equal(claimLoopbackRange(n), true);
  assert.equal(claimLoopbackRange(n), false, 'this process already holds it');
  const other = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { claimLoopbackRange } from ${JSON.stringify(new URL('./loopback-range.ts', import.meta.url).href)}; process.stdout.write(String(claimLoopbackRange(${n})));`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(other.stdout, 'false', other.stderr);
});

test('a claim left by a process that is gone is taken over, and released at exit', () => {
  const n = 255;
  writeFileSync(lock(n), '999999999'); // no such pid
  const child = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { existsSync } from 'node:fs'; import { claimLoopbackRange } from ${JSON.stringify(new URL('./loopback-range.ts', import.meta.url).href)}; process.stdout.write(String(claimLoopbackRange(${n})) + ' ' + existsSync(${JSON.stringify(lock(n))}));`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(child.stdout, 'true true', child.stderr);
  assert.equal(existsSync(lock(n)), false, 'released when the claimant exited');
});
