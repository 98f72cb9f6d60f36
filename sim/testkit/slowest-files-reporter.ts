/**
 * A node:test reporter that ends the run with its ten slowest test files and their times, so
 * that whoever runs `make test` next sees where the time goes. A file's time is the sum of its
 * top-level tests' durations (they run one after another within a file), which is its time in
 * the run whether or not other files ran beside it. It reports; it never fails a run.
 *
 * Used beside the spec reporter (scripts/test-shards.ts merges the shards' times): `--test-reporter=spec --test-reporter-destination=stdout
 * --test-reporter=./sim/testkit/slowest-files-reporter.ts --test-reporter-destination=stdout`.
 */
import { writeFile } from 'node:fs/promises';
import { relative } from 'node:path';

/** How many files the summary lists. */
export const slowestCount = 10;

interface TestEvent {
  type: string;
  data?: { nesting?: number; file?: string; details?: { duration_ms?: number } };
}

export interface FileTime {
  file: string;
  ms: number;
  tests: number;
}

/** Adds a finished test to `times` when it is a top-level test of a file. */
export function recordTest(times: Map<string, FileTime>, event: TestEvent): void {
  if (event.type !== 'test:pass' && event.type !== 'test:fail') return;
  const data = event.data;
  if (data?.nesting !== 0 || !data.file) return;
  const ms = data.details?.duration_ms ?? 0;
  const entry = times.get(data.file) ?? { file: data.file, ms: 0, tests: 0 };
  entry.ms += ms;
  entry.tests += 1;
  times.set(data.file, entry);
}

/** `12.3 s` under a minute, `4 min 56 s` from one minute up. */
export function minutesSeconds(ms: number): string {
  if (ms < 59_950) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

/** The summary's lines: the `count` slowest files, slowest first, and the total. */
export function slowestFilesSummary(
  times: Iterable<FileTime>,
  count = slowestCount,
  cwd = process.cwd(),
): string {
  const all = [...times].sort((a, b) => b.ms - a.ms || a.file.localeCompare(b.file));
  if (all.length === 0) return '';
  const total = all.reduce((sum, t) => sum + t.ms, 0);
  const lines = [`The ${Math.min(count, all.length)} slowest test files (of ${all.length}):`];
  for (const t of all.slice(0, count)) {
    lines.push(
      `  ${minutesSeconds(t.ms).padStart(10)}  ${relative(cwd, t.file)} (${t.tests} top-level ${t.tests === 1 ? 'test' : 'tests'})`,
    );
  }
  lines.push(`Test files' times add up to ${minutesSeconds(total)}.`);
  return `${lines.join('\n')}\n`;
}

/**
 * The reporter. With WINFLEET_TEST_TIMES set (scripts/test-shards.ts sets it for each shard),
 * it writes every file's time there as JSON instead, for the summary of all shards together.
 */
export default async function* slowestFilesReporter(
  source: AsyncIterable<TestEvent>,
): AsyncGenerator<string> {
  const times = new Map<string, FileTime>();
  for await (const event of source) recordTest(times, event);
  const timesFile = process.env.WINFLEET_TEST_TIMES;
  if (timesFile) {
    await writeFile(timesFile, JSON.stringify([...times.values()]));
    return;
  }
  const summary = slowestFilesSummary(times.values());
  if (summary) yield `\n${summary}`;
}
