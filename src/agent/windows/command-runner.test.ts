import assert from 'node:assert/strict';
import { test } from 'node:test';
import { childProcessRunner } from './command-runner.ts';

const node = process.execPath;
const run = childProcessRunner();

test('resolves with the exit code and both streams; a non-zero exit is a result', async () => {
  const result = await run(node, [
    '-e',
    "process.stdout.write('out ✓'); process.stderr.write('err'); process.exit(3)",
  ]);
  assert.deepEqual(result, { exitCode: 3, stdout: 'out ✓', stderr: 'err' });
});

test('passes arguments without a shell', async () => {
  const args = ['a b', '"quoted"', '$(x)', '&|<>', ''];
  const result = await run(node, [
    '-e',
    'console.log(JSON.stringify(process.argv.slice(1)))',
    ...args,
  ]);
  assert.deepEqual(JSON.parse(result.stdout), args);
});

test('gives the child no stdin, so a program reading input sees end of file at once', async () => {
  const result = await run(
    node,
    ['-e', "process.stdin.resume(); process.stdin.on('end', () => console.log('eof'))"],
    { timeoutMs: 10_000 },
  );
  assert.equal(result.stdout.trim(), 'eof');
});

test('rejects when the program cannot start or runs too long', async () => {
  await assert.rejects(run('/nonexistent/sc.exe', ['query']), {
    code: 'WF_WINDOWS_COMMAND_FAILED',
    message: /Cannot run "\/nonexistent\/sc.exe": spawn .*ENOENT/,
  });
  await assert.rejects(run(node, ['-e', 'setTimeout(() => {}, 60000)'], { timeoutMs: 200 }), {
    code: 'WF_TIMEOUT',
    message: /did not finish within 200 ms and was killed/,
  });
});

test('keeps at most maxOutputBytes of output', async () => {
  const small = childProcessRunner({ maxOutputBytes: 10 });
  const result = await small(node, ['-e', "process.stdout.write('x'.repeat(100000))"]);
  assert.equal(result.stdout, 'x'.repeat(10));
});

test('timeoutMs Infinity: the program is never killed, however short the runner’s default', async () => {
  // DISM adding a package must not be killed half-way (long-operations.ts): setTimeout would
  // have taken Infinity as 1 ms.
  const impatient = childProcessRunner({ timeoutMs: 50 });
  const result = await impatient(
    node,
    ['-e', "setTimeout(() => process.stdout.write('done'), 400)"],
    { timeoutMs: Number.POSITIVE_INFINITY },
  );
  assert.deepEqual(result, { exitCode: 0, stdout: 'done', stderr: '' });
});
