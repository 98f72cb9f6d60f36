/**
 * A PowerShell grammar for tests, so that a generated script with a syntax error cannot ship:
 * tree-sitter-powershell (as WebAssembly, through web-tree-sitter) parses the script and every
 * ERROR or MISSING node becomes a reported syntax error with its line and column.
 *
 * What it cannot prove: that a command or parameter exists, that types convert, or anything
 * else only powershell.exe on Windows decides. The grammar is also stricter than PowerShell in
 * places: it rejects comma-separated bare words as command arguments (`Select-Object A, B`) and
 * a statement on the same line as a `param(...)` block; generated scripts quote such arguments
 * (`Select-Object -Property 'A', 'B'`) and start a new line after `param(...)`.
 */
import { createRequire } from 'node:module';
import { Language, type Node, Parser } from 'web-tree-sitter';

/** One syntax error: an ERROR node (unexpected text) or a MISSING node (expected token). */
export interface PowerShellSyntaxError {
  kind: 'unexpected' | 'missing';
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  /** The unexpected text, or the type of the missing token (e.g. "}"). */
  text: string;
}

let parser: Promise<Parser> | undefined;

function powerShellParser(): Promise<Parser> {
  parser ??= (async () => {
    await Parser.init();
    const wasm = createRequire(import.meta.url).resolve(
      'tree-sitter-powershell/tree-sitter-powershell.wasm',
    );
    const language = await Language.load(wasm);
    return new Parser().setLanguage(language);
  })();
  return parser;
}

/** The syntax errors in `script`; empty when the grammar accepts it. */
export async function parsePowerShell(script: string): Promise<PowerShellSyntaxError[]> {
  const tree = (await powerShellParser()).parse(script);
  if (!tree) throw new Error('Cannot parse PowerShell: the parser returned no tree');
  try {
    const errors: PowerShellSyntaxError[] = [];
    collectErrors(tree.rootNode, errors);
    return errors;
  } finally {
    tree.delete();
  }
}

function collectErrors(node: Node, errors: PowerShellSyntaxError[]): void {
  if (node.isMissing || node.isError) {
    errors.push({
      kind: node.isMissing ? 'missing' : 'unexpected',
      line: node.startPosition.row + 1,
      column: node.startPosition.column + 1,
      text: node.isMissing ? node.type : node.text,
    });
    if (node.isMissing) return;
  }
  if (!node.hasError && !node.isError) return;
  for (const child of node.children) {
    if (child) collectErrors(child, errors);
  }
}

/**
 * Throws when `script` has syntax errors, with each error and its source line, so a test
 * failure shows what to fix. `label` names the script in the message.
 */
export async function assertValidPowerShell(script: string, label = 'script'): Promise<void> {
  const errors = await parsePowerShell(script);
  if (errors.length === 0) return;
  const lines = script.split(/\r?\n/);
  const details = errors.map((e) => {
    const what =
      e.kind === 'missing' ? `missing "${e.text}"` : `unexpected "${e.text.slice(0, 60)}"`;
    return `  line ${e.line}, column ${e.column}: ${what}\n    ${lines[e.line - 1] ?? ''}`;
  });
  throw new Error(
    `PowerShell ${label} has ${errors.length} syntax error(s); fix the generator:\n${details.join('\n')}`,
  );
}

/** A node of the syntax tree, copied out of the parser (type, source text, children). */
export interface PowerShellNode {
  type: string;
  text: string;
  children: PowerShellNode[];
}

function copyNode(node: Node): PowerShellNode {
  return {
    type: node.type,
    text: node.text,
    children: node.children.flatMap((child) => (child ? [copyNode(child)] : [])),
  };
}

/**
 * The syntax tree of `script` and its syntax errors, for tests and simulated hosts that must
 * read what a script does (which command runs with which literal arguments), not only whether
 * it parses.
 */
export async function parsePowerShellTree(
  script: string,
): Promise<{ root: PowerShellNode; errors: PowerShellSyntaxError[] }> {
  const tree = (await powerShellParser()).parse(script);
  if (!tree) throw new Error('Cannot parse PowerShell: the parser returned no tree');
  try {
    const errors: PowerShellSyntaxError[] = [];
    collectErrors(tree.rootNode, errors);
    return { root: copyNode(tree.rootNode), errors };
  } finally {
    tree.delete();
  }
}
