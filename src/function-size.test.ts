/**
 * Functions stay small enough to read on one screen: no function in product code (src/, tests
 * excluded) is longer than 80 lines, except the declarative tables listed below with the reason
 * each is kept. Functions are read from the syntax tree (tree-sitter-typescript): declarations,
 * methods, arrow functions and function expressions, nested ones counted on their own and
 * inside their parents.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import {
  descendants,
  readTypeScript,
  type SyntaxNode,
  typeScriptFiles,
} from '../sim/testkit/typescript-syntax.ts';

const root = resolve(import.meta.dirname, '..');

/** The most lines a function may take. */
export const maxFunctionLines = 80;

/** Functions kept longer, `file name`, with why. Keep it short: a new entry needs a reason. */
const kept: Record<string, string> = {};

const functionKinds = new Set([
  'function_declaration',
  'generator_function_declaration',
  'method_definition',
  'arrow_function',
  'function_expression',
  'generator_function',
]);

/** A function's name as a reader finds it: its own, or the variable, property or field it is. */
function functionName(node: SyntaxNode): string {
  const own = node.childForFieldName('name')?.text;
  if (own) return own;
  for (let at = node.parent; at; at = at.parent) {
    const name = at.childForFieldName('name') ?? at.childForFieldName('key');
    if (name) return name.text;
    if (at.type === 'call_expression') {
      const callee = at.childForFieldName('function')?.text ?? '';
      return `(callback of ${callee.split('\n')[0]})`;
    }
  }
  return '(anonymous)';
}

/** Every function over `limit` lines in `source`, as `name (N lines, line L)`. */
export async function longFunctions(source: string, label: string, limit = maxFunctionLines) {
  return readTypeScript(
    source,
    (root) => {
      const found: { name: string; lines: number; line: number }[] = [];
      for (const node of descendants(root)) {
        if (!functionKinds.has(node.type)) continue;
        const lines = node.endPosition.row - node.startPosition.row + 1;
        if (lines > limit) {
          found.push({ name: functionName(node), lines, line: node.startPosition.row + 1 });
        }
      }
      return found;
    },
    label,
  );
}

test('no function in src/ is over 80 lines, except the tables kept with a reason', async () => {
  const over: string[] = [];
  const seen = new Set<string>();
  for (const file of typeScriptFiles(root, 'src', 'product')) {
    for (const f of await longFunctions(await readFile(join(root, file), 'utf8'), file)) {
      const key = `${file} ${f.name}`;
      seen.add(key);
      if (!(key in kept)) over.push(`${file}:${f.line} ${f.name}: ${f.lines} lines`);
    }
  }
  assert.deepEqual(over, [], `functions over ${maxFunctionLines} lines: split them`);
  assert.deepEqual(
    Object.keys(kept).filter((k) => !seen.has(k)),
    [],
    'kept entries for functions no longer over the limit: remove them',
  );
});

test('the size check counts nested functions, methods and arrows, and names them', async () => {
  const body = (n: number) =>
    Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
  const source = [
    `export function outer() {\n${body(79)}\n  const inner = () => {\n${body(79)}\n  };\n  return inner;\n}`,
    `class Worker {\n  run() {\n${body(5)}\n  }\n  big() {\n${body(80)}\n  }\n}`,
    `export const small = () => 1;`,
    `register(() => {\n${body(81)}\n});`,
    `// function inComment() {\n${body(3)}`,
  ].join('\n');
  const found = await longFunctions(source, 'planted.ts');
  assert.deepEqual(
    found.map((f) => `${f.name} ${f.lines}`),
    ['outer 163', 'inner 81', 'big 82', '(callback of register) 83'],
  );
});
