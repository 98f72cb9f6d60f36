/**
 * What a heap snapshot holds (a .heapsnapshot from bench:scale --profile-dir or DevTools): self
 * size summed by kind of object (V8's node type and constructor name), largest first, so a
 * report can say what the heap is made of without opening DevTools. Self sizes only: what each
 * object takes itself, not what it keeps alive.
 *
 *   node bench/heap-snapshot-summary.ts FILE.heapsnapshot [--top 30]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Snapshot {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[], ...unknown[]] };
    node_count: number;
  };
  nodes: number[];
  strings: string[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '30' } },
  allowPositionals: true,
});
const file = positionals[0];
if (!file) {
  console.error('usage: node bench/heap-snapshot-summary.ts FILE.heapsnapshot [--top 30]');
  process.exit(2);
}
const heap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = heap.snapshot.meta.node_fields;
const types = heap.snapshot.meta.node_types[0];
const width = fields.length;
const typeAt = fields.indexOf('type');
const nameAt = fields.indexOf('name');
const sizeAt = fields.indexOf('self_size');

const byKind = new Map<string, { count: number; bytes: number }>();
let total = 0;
for (let i = 0; i < heap.nodes.length; i += width) {
  const type = types[heap.nodes[i + typeAt]!]!;
  const bytes = heap.nodes[i + sizeAt]!;
  // Objects by constructor; strings, code, arrays and the rest by their type.
  const kind =
    type === 'object' || type === 'closure' || type === 'native'
      ? `${type} ${heap.strings[heap.nodes[i + nameAt]!]}`
      : type;
  const entry = byKind.get(kind) ?? { count: 0, bytes: 0 };
  entry.count++;
  entry.bytes += bytes;
  byKind.set(kind, entry);
  total += bytes;
}
const mib = (b: number) => (b / 2 ** 20).toFixed(2).padStart(7);
console.log(`${file}: ${mib(total)} MiB in ${heap.snapshot.node_count} objects\n`);
console.log('      MiB   share     count  kind');
for (const [kind, { count, bytes }] of [...byKind]
  .sort(([, a], [, b]) => b.bytes - a.bytes)
  .slice(0, Number(values.top))) {
  console.log(
    `  ${mib(bytes)}  ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${String(count).padStart(8)}  ${kind.slice(0, 100)}`,
  );
}
