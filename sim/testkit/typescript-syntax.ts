/**
 * A TypeScript parser for tests that read the repository's own source as a syntax tree (the
 * error catalog guard, the HTTP status guard): tree-sitter-typescript (as WebAssembly, through
 * the web-tree-sitter runtime sim/testkit/powershell-grammar.ts also loads) parses a file, and
 * a test walks the nodes. Comments and strings are nodes of their own, so text inside them is
 * never mistaken for code.
 *
 * Only tests import this: it is not product code (src/layout.test.ts forbids sim/ there).
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, sep } from 'node:path';
import { Language, type Node, Parser } from 'web-tree-sitter';

export type { Node as SyntaxNode } from 'web-tree-sitter';

let parser: Promise<Parser> | undefined;

function typeScriptParser(): Promise<Parser> {
  parser ??= (async () => {
    await Parser.init();
    const wasm = createRequire(import.meta.url).resolve(
      'tree-sitter-typescript/tree-sitter-typescript.wasm',
    );
    return new Parser().setLanguage(await Language.load(wasm));
  })();
  return parser;
}

/**
 * Parses `source` and calls `read` with the root node; the tree is freed when `read` returns,
 * so `read` must copy out what it keeps (strings, numbers), never nodes. Refuses source the
 * grammar cannot parse, naming `label`, line and column, so a guard never silently skips code.
 */
export async function readTypeScript<T>(
  source: string,
  read: (root: Node) => T,
  label = 'source',
): Promise<T> {
  const tree = (await typeScriptParser()).parse(source);
  if (!tree) throw new Error(`Cannot parse ${label}: the parser returned no tree`);
  try {
    if (tree.rootNode.hasError) {
      const bad = firstError(tree.rootNode);
      const where = bad ? `${bad.startPosition.row + 1}:${bad.startPosition.column + 1}` : '?';
      throw new Error(`Cannot parse ${label}: syntax error at ${where}`);
    }
    return read(tree.rootNode);
  } finally {
    tree.delete();
  }
}

function firstError(node: Node): Node | undefined {
  if (node.isError || node.isMissing) return node;
  for (const child of node.children) {
    if (child?.hasError || child?.isMissing) return firstError(child);
  }
  return undefined;
}

/** Every node under `root` (itself included), depth first, in source order. */
export function* descendants(root: Node): Generator<Node> {
  const cursor = root.walk();
  try {
    let depth = 0;
    for (;;) {
      yield cursor.currentNode;
      if (cursor.gotoFirstChild()) {
        depth++;
        continue;
      }
      while (!cursor.gotoNextSibling()) {
        if (depth === 0 || !cursor.gotoParent()) return;
        depth--;
      }
    }
  } finally {
    cursor.delete();
  }
}

/** `file:line:column` of a node, 1-based, for a guard's report. */
export function position(file: string, node: Node): string {
  return `${file}:${node.startPosition.row + 1}:${node.startPosition.column + 1}`;
}

/** The first line of a node's source text, trimmed, for a guard's report. */
export function sourceLine(node: Node): string {
  const [first = ''] = node.text.split('\n');
  return first.trim();
}

/**
 * The .ts files under `dir` (repository-relative with forward slashes, sorted), tests
 * included or not.
 */
export function typeScriptFiles(
  repoDir: string,
  dir: string,
  which: 'product' | 'tests' | 'all',
): string[] {
  const entries = readdirSync(join(repoDir, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .filter((e) => {
      const isTest = e.name.endsWith('.test.ts');
      return which === 'all' || (which === 'tests') === isTest;
    })
    .map((e) => relative(repoDir, join(e.parentPath, e.name)).split(sep).join('/'))
    .filter((f) => !f.split('/').includes('node_modules'))
    .sort();
}
