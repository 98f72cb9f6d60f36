/**
 * The layout rule the folders promise: product code never reaches the simulated world (sim/)
 * or test code. This walks the runtime import graph from every product entry point — static
 * imports, dynamic `import()` and `new URL('./x.ts', import.meta.url)` references (files a
 * program spawns) — and names the chain that reaches a forbidden file.
 *
 * The graph comes from a parser, not a pattern over source text: esbuild (already the agent's
 * bundler) bundles the entry points and reports every resolved import in its metafile. It does
 * not follow `new URL(...)`, so each reached file is also printed by esbuild (comments gone,
 * quotes and spacing canonical) and its URL references are added as further entry points.
 * Type-only imports vanish at run time and are not edges.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { build, transform } from 'esbuild';

const root = resolve(import.meta.dirname, '..');

/** `path` relative to `base`, with forward slashes. */
const rel = (path: string, base = root) => relative(base, resolve(base, path)).split(sep).join('/');

/** Why `file` must not be reached from product code, or undefined when it may. */
export function forbiddenReason(file: string): string | undefined {
  if (file.startsWith('sim/')) return 'the simulated world (sim/) is not product code';
  if (/\.test\.ts$/.test(file)) return 'a test file is not product code';
  if (file === 'src/agent/windows/fixtures.ts') return 'recorded outputs are test support';
  return undefined;
}

/** `new URL("./x.ts", import.meta.url)` in esbuild's canonical output. */
const urlReference = /new URL\("(\.{1,2}\/[^"]+\.ts)", import\.meta\.url\)/g;

/** Files `file` refers to with `new URL(..., import.meta.url)`, relative to `base`. */
async function urlReferences(file: string, base: string): Promise<string[]> {
  const source = await readFile(join(base, file), 'utf8');
  const { code } = await transform(source, { loader: 'ts', format: 'esm', sourcefile: file });
  return [...code.matchAll(urlReference)].map((m) => rel(join(dirname(file), m[1]!), base));
}

export type ImportGraph = Map<string, string[]>;

/** The runtime import graph reachable from `entries` (.ts paths relative to `base`). */
export async function importGraph(entries: string[], base = root): Promise<ImportGraph> {
  const graph: ImportGraph = new Map();
  let pending = [...new Set(entries)];
  while (pending.length > 0) {
    const result = await build({
      absWorkingDir: base,
      entryPoints: pending,
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      outdir: 'out',
      logLevel: 'silent',
    });
    const next: string[] = [];
    for (const [path, input] of Object.entries(result.metafile.inputs)) {
      const file = rel(path, base);
      if (graph.has(file) || !file.endsWith('.ts')) continue;
      const edges = input.imports.filter((i) => !i.external).map((i) => rel(i.path, base));
      const urls = await urlReferences(file, base);
      graph.set(file, [...edges, ...urls]);
      next.push(...urls.filter((u) => !graph.has(u)));
    }
    pending = [...new Set(next)].filter((f) => !graph.has(f));
  }
  return graph;
}

/** The shortest import chain from `from` to a file `matches` accepts, or undefined. */
export function chainTo(
  graph: ImportGraph,
  from: string,
  matches: (file: string) => boolean,
): string[] | undefined {
  const parent = new Map<string, string | undefined>([[from, undefined]]);
  const queue = [from];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (matches(file)) {
      const chain = [];
      for (let at: string | undefined = file; at !== undefined; at = parent.get(at)) {
        chain.unshift(at);
      }
      return chain;
    }
    for (const next of graph.get(file) ?? []) {
      if (!parent.has(next)) {
        parent.set(next, file);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/** Every non-test .ts file under `dir`, repository-relative. */
async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(root, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => rel(join(e.parentPath, e.name)))
    .sort();
}

/**
 * The product's programs: every main.ts or cli.ts under src/, and every src/ file that an npm
 * script runs with node.
 */
async function productEntryPoints(): Promise<string[]> {
  const named = (await sourceFiles('src')).filter((f) => /\/(main|cli)\.ts$/.test(f));
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const scripted = Object.values(pkg.scripts).flatMap((s) =>
    [...s.matchAll(/\bnode (src\/\S+\.ts)/g)].map((m) => m[1]!),
  );
  return [...new Set([...named, ...scripted])].sort();
}

function describeViolations(graph: ImportGraph, roots: string[]): string[] {
  const violations: string[] = [];
  for (const from of roots) {
    const chain = chainTo(graph, from, (f) => forbiddenReason(f) !== undefined);
    if (chain) violations.push(`${chain.join(' -> ')} (${forbiddenReason(chain.at(-1)!)})`);
  }
  return violations;
}

test('no product entry point reaches sim/ or a test file', async () => {
  const entries = await productEntryPoints();
  assert.ok(entries.includes('src/operator/main.ts'), `entry points: ${entries.join(', ')}`);
  assert.ok(entries.includes('src/agent/main.ts'), `entry points: ${entries.join(', ')}`);
  const graph = await importGraph(entries);
  // The walk must go deep, or an empty graph would pass: the operator reaches the host
  // controller and, through it, the remote script catalog.
  assert.ok(
    chainTo(graph, 'src/operator/main.ts', (f) => f === 'src/hostaccess/remote-scripts.ts'),
    `the walk from src/operator/main.ts did not reach src/hostaccess/remote-scripts.ts (${graph.size} files)`,
  );
  assert.ok(
    chainTo(graph, 'src/agent/main.ts', (f) => f === 'src/agent/converge.ts'),
    'the walk from src/agent/main.ts did not reach src/agent/converge.ts',
  );
  assert.deepEqual(describeViolations(graph, entries), []);
});

test('no product file under src/ imports sim/ or a test file', async () => {
  const files = (await sourceFiles('src')).filter((f) => forbiddenReason(f) === undefined);
  const graph = await importGraph(files);
  assert.deepEqual(describeViolations(graph, files), []);
});

test('the walk follows static and dynamic imports and new URL(..., import.meta.url)', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'winfleet-layout-test-'));
  t.after(() => rm(base, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'src/a/main.ts': "import { b } from './b.ts';\nexport const a = b;\n",
    'src/a/b.ts': "export const b = () => import('./c.ts');\n",
    // The spawned worker is named in a comment too: only the real reference counts.
    'src/a/c.ts':
      "// new URL('./not-this.ts', import.meta.url)\nexport const worker = new URL( './worker.ts' , import.meta.url );\n",
    'src/a/worker.ts':
      "import type { X } from '../../sim/types.ts';\nimport '../../sim/world.ts';\nexport type Y = X;\n",
    'sim/types.ts': 'export type X = number;\n',
    'sim/world.ts': 'export const world = 1;\n',
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(base, path)), { recursive: true });
    await writeFile(join(base, path), text);
  }
  const graph = await importGraph(['src/a/main.ts'], base);
  assert.deepEqual([...graph.keys()].sort(), [
    'sim/world.ts',
    'src/a/b.ts',
    'src/a/c.ts',
    'src/a/main.ts',
    'src/a/worker.ts',
  ]);
  assert.deepEqual(describeViolations(graph, ['src/a/main.ts']), [
    'src/a/main.ts -> src/a/b.ts -> src/a/c.ts -> src/a/worker.ts -> sim/world.ts (the simulated world (sim/) is not product code)',
  ]);
});
