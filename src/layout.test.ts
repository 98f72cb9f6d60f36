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
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { build, transform } from 'esbuild';
import {
  descendants,
  readTypeScript,
  type SyntaxNode,
  typeScriptFiles,
} from '../sim/testkit/typescript-syntax.ts';

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

// ---------------------------------------------------------------------------------------------
// Layers: docs/architecture.md's table, bottom first; a folder under src/ imports only folders of
// lower rows, and no file is part of an import cycle. Type-only imports count: a persisted shape
// belongs to the layer that owns it (src/api), not to a consumer above it.

/** The layer table: each top-level folder of src/ and its row (0 = bottom). */
export type LayerTable = Map<string, number>;

/** Reads the table under "## Layers" in `markdown`: `| 0 | \`errors\` | … |` rows. */
export function parseLayerTable(markdown: string): LayerTable {
  const start = markdown.indexOf('\n## Layers');
  assert.ok(start >= 0, 'docs/architecture.md has a "## Layers" section');
  const section = markdown.slice(start + 1).split(/\n## /)[0]!;
  const table: LayerTable = new Map();
  for (const line of section.split('\n')) {
    const row = /^\|\s*(\d+)\s*\|([^|]+)\|/.exec(line);
    if (!row) continue;
    for (const folder of row[2]!.matchAll(/`([a-z0-9-]+)`/g)) {
      assert.ok(!table.has(folder[1]!), `docs/architecture.md: ${folder[1]} is in two rows`);
      table.set(folder[1]!, Number(row[1]));
    }
  }
  return table;
}

/**
 * Every relative import of each .ts file under `dir` (tests excluded): static imports and
 * re-exports (type-only ones too), dynamic `import()`, and `new URL('./x.ts', import.meta.url)`,
 * read from the syntax tree.
 */
export async function sourceImports(base: string, dir: string): Promise<ImportGraph> {
  const files = typeScriptFiles(base, dir, 'product');
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const text = await readFile(join(base, file), 'utf8');
    const specifiers = await readTypeScript(
      text,
      (root) => {
        const found: string[] = [];
        for (const node of descendants(root)) {
          if (node.type === 'import_statement' || node.type === 'export_statement') {
            const source = node.childForFieldName('source');
            if (source) found.push(stringValue(source));
          } else if (node.type === 'call_expression') {
            const callee = node.childForFieldName('function');
            const args = node.childForFieldName('arguments');
            const first = args?.namedChildren[0];
            if (callee?.type === 'import' && first?.type === 'string')
              found.push(stringValue(first));
          } else if (node.type === 'new_expression') {
            const ctor = node.childForFieldName('constructor');
            const args = node.childForFieldName('arguments')?.namedChildren ?? [];
            if (
              ctor?.text === 'URL' &&
              args[0]?.type === 'string' &&
              args[1]?.text === 'import.meta.url'
            ) {
              found.push(stringValue(args[0]));
            }
          }
        }
        return found;
      },
      file,
    );
    graph.set(
      file,
      specifiers
        .filter((s) => s.startsWith('./') || s.startsWith('../'))
        .filter((s) => s.endsWith('.ts'))
        .map((s) => rel(join(dirname(file), s), base)),
    );
  }
  return graph;
}

function stringValue(node: SyntaxNode): string {
  return node.text.slice(1, -1);
}

/** The top-level folder of src/ a file is in ('' for a file directly in src/). */
const topFolder = (file: string) => (file.split('/').length > 2 ? file.split('/')[1]! : '');

/** Every import that goes up or sideways in the table, as `from -> to (why)`. */
export function upwardImports(graph: ImportGraph, layers: LayerTable): string[] {
  const found: string[] = [];
  for (const [from, imports] of graph) {
    const a = topFolder(from);
    for (const to of imports) {
      if (!to.startsWith('src/')) continue;
      const b = topFolder(to);
      if (a === b) continue;
      const la = layers.get(a);
      const lb = layers.get(b);
      if (la === undefined || lb === undefined) {
        found.push(`${from} -> ${to} (${la === undefined ? a : b} is in no row of the table)`);
      } else if (lb >= la) {
        found.push(
          `${from} -> ${to} (${a}, row ${la}, may import only rows below it; ${b} is row ${lb})`,
        );
      }
    }
  }
  return found.sort();
}

/** Every import cycle between files, each as the chain `a -> b -> … -> a`. */
export function importCycles(graph: ImportGraph): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') {
        cycles.push([...stack.slice(stack.indexOf(next)), next].join(' -> '));
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

/**
 * Cycles between sibling folders (src/controllers/hosts <-> src/controllers/pools): one folder
 * of a parent is the other's library or neither is. A folder and its own subfolder are one unit.
 */
export function siblingFolderCycles(graph: ImportGraph): string[] {
  const edges = new Map<string, Map<string, string>>();
  for (const [from, imports] of graph) {
    for (const to of imports) {
      const a = dirname(from);
      const b = dirname(to);
      if (a === b || dirname(a) !== dirname(b)) continue;
      if (!edges.has(a)) edges.set(a, new Map());
      edges.get(a)!.set(b, `${from} -> ${to}`);
    }
  }
  const found: string[] = [];
  for (const [a, targets] of edges) {
    for (const [b, via] of targets) {
      const back = edges.get(b)?.get(a);
      if (back && a < b) found.push(`${a} <-> ${b}: ${via}; ${back}`);
    }
  }
  return found.sort();
}

test('src/ keeps to the layer table of docs/architecture.md: no upward import, no cycle', async () => {
  const layers = parseLayerTable(await readFile(join(root, 'docs/architecture.md'), 'utf8'));
  const folders = (await readdir(join(root, 'src'), { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  assert.deepEqual(
    folders.filter((f) => !layers.has(f)),
    [],
    'folders of src/ in no row of the layer table (docs/architecture.md)',
  );
  assert.deepEqual(
    [...layers.keys()].filter((f) => !folders.includes(f)),
    [],
    'rows of the layer table naming no folder of src/',
  );
  const graph = await sourceImports(root, 'src');
  // The walk must see imports, or an empty graph would pass.
  assert.ok(
    graph.get('src/operator/operator.ts')?.some((f) => f.startsWith('src/controllers/')),
    'the walk found no import of src/controllers in src/operator/operator.ts',
  );
  assert.deepEqual(upwardImports(graph, layers), [], 'imports against the layer table');
  assert.deepEqual(importCycles(graph), [], 'import cycles');
  assert.deepEqual(siblingFolderCycles(graph), [], 'cycles between sibling folders');
});

test('the layer check names a planted upward import, a planted cycle and a sibling loop', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'winfleet-layers-test-'));
  t.after(() => rm(base, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'docs/architecture.md':
      '# x\n\n## Layers\n\n| Layer | Folders | What |\n|---|---|---|\n| 0 | `low` | a |\n| 1 | `mid`, `peer` | b |\n| 2 | `top` | c |\n\n## Next\n| 9 | `not-a-layer` | x |\n',
    // Type-only, and the name of a file in a comment: the type import counts, the comment not.
    'src/low/shape.ts':
      "// import '../top/app.ts'\nimport type { App } from '../top/app.ts';\nexport type Shape = App;\n",
    'src/mid/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
    'src/mid/b.ts': "export { a as b } from './a.ts';\n",
    'src/mid/c.ts': "export const c = () => import('../peer/p.ts');\n",
    'src/peer/p.ts': "export const p = new URL('../low/shape.ts', import.meta.url);\n",
    'src/top/app.ts': "import '../mid/a.ts';\nexport type App = number;\n",
    'src/top/x/one.ts': "import '../y/two.ts';\n",
    'src/top/y/two.ts': "import '../x/three.ts';\n",
    'src/top/x/three.ts': 'export {};\n',
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(base, path)), { recursive: true });
    await writeFile(join(base, path), text);
  }
  const layers = parseLayerTable(files['docs/architecture.md']!);
  assert.deepEqual(
    [...layers],
    [
      ['low', 0],
      ['mid', 1],
      ['peer', 1],
      ['top', 2],
    ],
  );
  const graph = await sourceImports(base, 'src');
  assert.deepEqual(upwardImports(graph, layers), [
    'src/low/shape.ts -> src/top/app.ts (low, row 0, may import only rows below it; top is row 2)',
    'src/mid/c.ts -> src/peer/p.ts (mid, row 1, may import only rows below it; peer is row 1)',
  ]);
  assert.deepEqual(importCycles(graph), ['src/mid/a.ts -> src/mid/b.ts -> src/mid/a.ts']);
  assert.deepEqual(siblingFolderCycles(graph), [
    'src/top/x <-> src/top/y: src/top/x/one.ts -> src/top/y/two.ts; src/top/y/two.ts -> src/top/x/three.ts',
  ]);
});

// ---------------------------------------------------------------------------------------------
// Faces: what a folder keeps to itself is marked `@package` (an exported symbol only files of
// the same folder import), and Biome's noPrivateImports, an error in biome.json, refuses an
// import of it from any other folder. `make test` runs the linter; this proves the rule bites.

test('an import of a @package symbol from another folder is refused by the lint, one from its own folder is not', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'winfleet-faces-test-'));
  t.after(() => rm(base, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'a/inner.ts':
      '/**\n * Kept to its folder.\n * @package\n */\nexport const inner = 1;\n\n/** The face. */\nexport const face = 2;\n',
    'a/same-folder.ts': "import { inner } from './inner.ts';\nexport const own = inner;\n",
    'b/other-folder.ts':
      "import { face, inner } from '../a/inner.ts';\nexport const other = inner + face;\n",
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(base, path)), { recursive: true });
    await writeFile(join(base, path), text);
  }
  // The repository's own rules; only its git ignore file is not read (the tree is not a checkout).
  await writeFile(
    join(base, 'biome.json'),
    JSON.stringify({ extends: [join(root, 'biome.json')], vcs: { enabled: false } }),
  );
  const biome = join(root, 'node_modules/.bin/biome');
  const result = spawnSync(biome, ['lint', '--max-diagnostics=50', '.'], {
    cwd: base,
    encoding: 'utf8',
  });
  const output = `${result.stdout}${result.stderr}`;
  const refused = [
    ...output.matchAll(/^(\S+\.ts):(\d+):(\d+) lint\/correctness\/noPrivateImports/gm),
  ];
  assert.deepEqual(
    refused.map((m) => `${m[1]}:${m[2]}:${m[3]}`),
    ['b/other-folder.ts:1:16'],
    output,
  );
  assert.notEqual(result.status, 0, 'the lint fails on the refused import');
});
