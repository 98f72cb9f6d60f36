/**
 * winfleet payload push without a registry: every flag problem is a usage error (exit 2)
 * before anything is read or sent, and a registry that is not there is a problem (exit 1)
 * naming it. Most run in process (runCli, as main.ts runs it); standard input needs a child.
 * The pushes themselves run against the real registry in
 * src/payload/oci/registry-round-trip.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../../sim/cluster/free-port.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { runCli } from '../program.ts';

const main = fileURLToPath(new URL('../main.ts', import.meta.url));

function winfleet(
  args: string[],
  stdin?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [main, ...args],
      { timeout: 60_000, env: { ...process.env, NO_COLOR: '1', DOCKER_CONFIG: dir } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(stdin ?? '');
  });
}

/**
 * runCli in this process, with what it writes to stderr (stdout is the test runner's channel
 * to its parent and stays alone: nothing here gets as far as printing a reference).
 */
async function inProcess(args: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  const previous = process.env.DOCKER_CONFIG;
  process.env.DOCKER_CONFIG = dir;
  try {
    return { code: await runCli(['node', 'winfleet', ...args]), stderr };
  } finally {
    process.stderr.write = write;
    if (previous === undefined) delete process.env.DOCKER_CONFIG;
    else process.env.DOCKER_CONFIG = previous;
  }
}

let dir: string;
let payloadDir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'winfleet-cli-payload-'));
  payloadDir = join(dir, 'payload');
  await writeStandInPayload(payloadDir);
});
after(() => rm(dir, { recursive: true, force: true }));

test('payload push: flag problems are usage errors (exit 2) naming the flag and the fix', async () => {
  const cases: [string[], RegExp][] = [
    [
      ['registry.example.com/winfleet/payload:1', '--plain-http'],
      /--plain-http: "registry\.example\.com" is not a loopback address.*add --insecure to do it anyway/,
    ],
    [
      ['registry.example.com/winfleet/payload:1', '--insecure'],
      /--insecure only allows --plain-http to a host that is not loopback; give both or neither/,
    ],
    [
      ['127.0.0.1:5000/winfleet/payload:1', '--username', 'ci'],
      /--username needs --password-stdin/,
    ],
    [
      ['127.0.0.1:5000/winfleet/payload:1', '--password-stdin'],
      /--password-stdin needs --username/,
    ],
    [
      ['127.0.0.1:5000/winfleet/payload'],
      /REFERENCE: "127\.0\.0\.1:5000\/winfleet\/payload" has no tag; write e\.g\./,
    ],
    [[`127.0.0.1:5000/winfleet/payload@sha256:${'a'.repeat(64)}`], /has a digest; push to a tag/],
    [
      ['127.0.0.1:5000/Winfleet/payload:1'],
      /REFERENCE: Invalid image reference .*write "winfleet"/,
    ],
    [
      ['127.0.0.1:5000/winfleet/payload:1', '--ca-file', join(dir, 'missing.pem')],
      /--ca-file: cannot read .*missing\.pem \(ENOENT\)/,
    ],
  ];
  for (const [args, message] of cases) {
    const run = await inProcess(['payload', 'push', payloadDir, ...args]);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, message, args.join(' '));
  }
});

test('payload push: an empty password on stdin is a usage error, never sent', async () => {
  const run = await winfleet(
    [
      'payload',
      'push',
      payloadDir,
      '127.0.0.1:5000/winfleet/payload:1',
      '--plain-http',
      '--username',
      'ci',
      '--password-stdin',
    ],
    '\n',
  );
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /--password-stdin: standard input is empty/);
});

test('payload push: a registry that is not there fails (exit 1) naming it; a bad payload before any request', async () => {
  const port = await freePort();
  const down = await inProcess([
    'payload',
    'push',
    payloadDir,
    `127.0.0.1:${port}/winfleet/payload:1`,
    '--plain-http',
  ]);
  assert.equal(down.code, 1, down.stderr);
  assert.match(
    down.stderr,
    new RegExp(
      `Cannot push the payload to 127\\.0\\.0\\.1:${port}/winfleet/payload:1: Cannot reach registry "http://127\\.0\\.0\\.1:${port}": .*ECONNREFUSED.*; check that the registry is up`,
    ),
  );
  const bad = await inProcess([
    'payload',
    'push',
    join(dir, 'nowhere'),
    `127.0.0.1:${port}/winfleet/payload:1`,
    '--plain-http',
  ]);
  assert.equal(bad.code, 1, bad.stderr);
  assert.match(bad.stderr, /Cannot read .*nowhere\/payload\.json: .*ENOENT.*run make payload/);
});
