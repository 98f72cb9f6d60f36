/**
 * Where a CPU profile's time went (a .cpuprofile from bench:scale --profile-dir, or node
 * --cpu-prof): the functions with the most self time, and the whole split into idle, garbage
 * collection, the profiled program's own code and Node's internals.
 *
 *   node bench/cpu-profile-summary.ts FILE.cpuprofile [--top 25]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' } },
  allowPositionals: true,
});
const file = positionals[0];
if (!file) {
  console.error('usage: node bench/cpu-profile-summary.ts FILE.cpuprofile [--top 25]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
/** Self time per node id, in µs, from the samples and the time to the next sample. */
const self = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i + 1] ?? 0;
  const id = profile.samples[i]!;
  self.set(id, (self.get(id) ?? 0) + delta);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);

function category(node: ProfileNode): string {
  const { functionName, url } = node.callFrame;
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'V8/native (program)';
  if (url.startsWith('node:')) return 'Node internals (node:*)';
  if (url === '') return 'native / builtins';
  if (url.includes('/node_modules/')) return 'dependencies';
  return 'the program';
}

const categories = new Map<string, number>();
const functions = new Map<string, number>();
for (const [id, us] of self) {
  const node = byId.get(id)!;
  categories.set(category(node), (categories.get(category(node)) ?? 0) + us);
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${url.split('/').slice(-2).join('/')}:${lineNumber + 1}` : '';
  const name = `${functionName || '(anonymous)'} ${where}`.trim();
  functions.set(name, (functions.get(name) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const wall = (profile.endTime - profile.startTime) / 1e6;
console.log(`${file}: ${wall.toFixed(1)} s, ${profile.samples.length} samples\n`);
for (const [name, us] of [...categories].sort(([, a], [, b]) => b - a)) {
  console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`);
}
console.log('\nMost self time:');
for (const [name, us] of [...functions]
  .sort(([, a], [, b]) => b - a)
  .slice(0, Number(values.top))) {
  console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`);
}
