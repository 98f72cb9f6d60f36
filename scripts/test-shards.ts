/**
 * Runs one `node --test` command as N shards side by side (`--test-shard=i/N`), for a suite
 * that runs in one process (`--test-isolation=none`) and so cannot spread its files over the
 * machine by itself: most of the unit suite's time is waiting (child processes, timers,
 * sockets), which two shards on two cores overlap. Output stays readable: the first shard's is
 * printed as it comes, each next one's once those before it ended (buffered until then). The
 * run ends with the ten slowest test files of all shards together (the reporter's summary,
 * merged), and exits non-zero when any shard failed.
 *
 *   node scripts/test-shards.ts --shards 2 -- --test-isolation=none "src/**\/!(*.e2e).test.ts" …
 *
 * Each shard gets the spec reporter on standard output and sim/testkit's slowest-files
 * reporter writing its file times as JSON to a file of its own (WINFLEET_TEST_TIMES).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type FileTime, slowestFilesSummary } from '../sim/testkit/slowest-files-reporter.ts';

const reporter = fileURLToPath(
  new URL('../sim/testkit/slowest-files-reporter.ts', import.meta.url),
);

/** Starts shard `index` of `count`; resolves with its exit code. */
function runShard(
  index: number,
  count: number,
  testArgs: readonly string[],
  timesFile: string,
  out: (chunk: Buffer) => void,
): Promise<number> {
  const args = [
    '--test',
    `--test-shard=${index}/${count}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${reporter}`,
    '--test-reporter-destination=stderr',
    ...testArgs,
  ];
  // Each shard is a run of its own: without NODE_TEST_CONTEXT, which node:test sets for its
  // children (this script run from a test would otherwise get serialized events, not text).
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...env, WINFLEET_TEST_TIMES: timesFile },
  });
  child.stdout.on('data', out);
  child.stderr.on('data', out);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { shards: { type: 'string', default: '2' } },
    allowPositionals: true,
  });
  const count = Number(values.shards);
  if (!Number.isInteger(count) || count < 1 || count > 16) {
    process.stderr.write(`--shards: "${values.shards}" is not a number of shards from 1 to 16\n`);
    return 2;
  }
  if (positionals.length === 0) {
    process.stderr.write('give the node --test arguments after --, e.g. -- "src/**/*.test.ts"\n');
    return 2;
  }
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-test-shards-'));
  try {
    // Shard i's output waits in its buffer until every shard before it has ended.
    const buffers: Buffer[][] = Array.from({ length: count }, () => []);
    const ended: boolean[] = Array.from({ length: count }, () => false);
    let printing = 0;
    const flush = () => {
      while (printing < count) {
        for (const chunk of buffers[printing]!.splice(0)) process.stdout.write(chunk);
        if (!ended[printing]) return;
        printing++;
      }
    };
    const codes = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        runShard(i + 1, count, positionals, join(dir, `shard-${i + 1}.json`), (chunk) => {
          buffers[i]!.push(chunk);
          if (i === printing) flush();
        }).then((code) => {
          ended[i] = true;
          flush();
          return code;
        }),
      ),
    );
    const times: FileTime[] = [];
    for (let i = 1; i <= count; i++) {
      const text = await readFile(join(dir, `shard-${i}.json`), 'utf8').catch(() => '[]');
      times.push(...(JSON.parse(text) as FileTime[]));
    }
    const summary = slowestFilesSummary(times);
    if (summary) process.stdout.write(`\n${summary}`);
    const failed = codes.filter((c) => c !== 0).length;
    if (failed > 0) process.stdout.write(`${failed} of ${count} shards failed\n`);
    return failed > 0 ? 1 : 0;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
