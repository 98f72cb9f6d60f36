/**
 * winfleet-service.exe (windows/service): its Go tests (the supervision logic, the log
 * rotation, the command line and the built program as a Linux console process) run here so
 * they are part of the suite; then the Windows build is checked without running it (a PE32+
 * x86-64 console executable, the same bytes on every build), and the Go parser and the
 * simulated hosts' parser (sim/hosts/programs.ts) are checked to refuse the same command lines
 * with the same messages. The run under a Windows SCM is service-shim-wine.e2e.test.ts.
 *
 * The first run compiles Go's standard library for Windows (a minute or two on a cold cache).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseServiceShimArgs } from '../sim/hosts/programs.ts';
import { buildServiceShim, serviceShimModule } from './build-service-shim.ts';
import { assertWindowsConsoleExecutable } from './pe-assertions.ts';

const run = promisify(execFile);
let work: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'winfleet-service-shim-test-'));
});
after(() => rm(work, { recursive: true, force: true }));

/** Runs go in the shim's module; on failure the assertion carries go's output. */
async function go(args: string[], env: Record<string, string> = {}) {
  try {
    return await run('go', args, {
      cwd: serviceShimModule,
      env: { ...process.env, ...env },
      maxBuffer: 16 * 1024 * 1024,
      timeout: 10 * 60_000,
    });
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    assert.fail(`go ${args.join(' ')} failed (${String(e.code)}):\n${e.stdout}${e.stderr}`);
  }
}

test('the Go tests of the shim pass (supervision, rotation, command line, Linux console run)', {
  timeout: 10 * 60_000,
}, async () => {
  const { stdout } = await go(['test', './...']);
  assert.match(stdout, /^ok\s+winfleet\.local\/windows\/service\s/m);
});

test('the Windows-only files (the SCM handler, the job object) compile and pass go vet', {
  timeout: 10 * 60_000,
}, async () => {
  await go(['vet', './...'], { GOOS: 'windows', GOARCH: 'amd64' });
});

describe('winfleet-service.exe', { timeout: 10 * 60_000 }, () => {
  let exe: Buffer;
  before(async () => {
    exe = await readFile(await buildServiceShim({ outDir: join(work, 'a'), onProgress: () => {} }));
  });

  test('is a PE32+ x86-64 console executable', () => {
    assertWindowsConsoleExecutable(exe);
  });

  test('is the same bytes when built again elsewhere', async () => {
    const again = await readFile(
      await buildServiceShim({ outDir: join(work, 'b'), onProgress: () => {} }),
    );
    const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    assert.equal(hash(again), hash(exe));
  });
});

describe('the Go shim and the simulated hosts refuse the same command lines', () => {
  let shim: string;
  before(
    async () => {
      shim = join(work, 'winfleet-service');
      await go(['build', '-o', shim, '.']);
    },
    { timeout: 10 * 60_000 },
  );

  // Absolute on Windows and on Linux alike is impossible, so the accepted command lines are
  // checked where both parsers see Windows paths: under Wine (service-shim-wine.e2e.test.ts).
  const refused: string[][] = [
    [],
    ['--log-dir', 'C:\\logs'],
    ['--log-dir', 'C:\\logs', '--'],
    ['--', 'C:\\agent.exe'],
    ['--log-dir', 'C:\\logs', '--verbose', '--', 'C:\\agent.exe'],
    ['--log-dir=C:\\logs', '--', 'C:\\agent.exe'],
    ['-log-dir', 'C:\\logs', '--', 'C:\\agent.exe'],
    ['C:\\agent.exe', 'run'],
    ['--log-dir', 'C:\\logs', '--log-dir', 'C:\\logs', '--', 'C:\\agent.exe'],
    ['--log-dir', '--', 'C:\\agent.exe'],
    ['--log-dir', '', '--', 'C:\\agent.exe'],
    ['--log-dir'],
    ['--log-dir', 'logs', '--', 'C:\\agent.exe'],
    ['--log-dir', 'C:\\logs', '--stop-timeout', '30', '--', 'C:\\agent.exe'],
    ['--log-dir', 'C:\\logs', '--stop-timeout', '500ms', '--', 'C:\\agent.exe'],
    ['--log-dir', 'C:\\logs', '--stop-timeout', '11m', '--', 'C:\\agent.exe'],
    ['--log-dir', 'C:\\logs', '--stop-timeout', '1h', '--', 'C:\\agent.exe'],
  ];
  for (const args of refused) {
    test(JSON.stringify(args), async () => {
      let simulated = '';
      try {
        parseServiceShimArgs(args);
      } catch (error) {
        simulated = (error as Error).message;
      }
      assert.notEqual(simulated, '', 'the simulated parser refuses it');
      const result = await run(shim, args).then(
        () => assert.fail('the Go shim accepted it'),
        (e: { code: number; stderr: string }) => e,
      );
      assert.equal(result.code, 2);
      assert.equal(result.stderr, `winfleet-service: ${simulated}\n`);
    });
  }
});
