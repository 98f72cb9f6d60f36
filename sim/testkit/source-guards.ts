/**
 * Guards over the repository's own TypeScript, read as syntax trees (typescript-syntax.ts):
 * which code raises errors outside the catalog, which code compares HTTP statuses by number,
 * and which names a test file mentions. Tests under src/ run them over the product files; the
 * guards' own tests plant each form in a string.
 */
import { descendants, position, readTypeScript, type SyntaxNode } from './typescript-syntax.ts';

/** A file to guard: its repository-relative name and its source text. */
export interface SourceFile {
  name: string;
  source: string;
}

/** JavaScript's built-in error classes: constructing one is the only way to raise one. */
export const builtinErrors: ReadonlySet<string> = new Set([
  'Error',
  'TypeError',
  'RangeError',
  'SyntaxError',
  'ReferenceError',
  'EvalError',
  'URIError',
  'AggregateError',
]);

/** The class the catalog raises; the catalog says extra data goes in details, not a subclass. */
const catalogClass = 'WinfleetError';

/** The name an expression ends in: `Error`, `globalThis.Error` → Error; otherwise undefined. */
function endName(node: SyntaxNode | null): string | undefined {
  const inner = unwrap(node);
  if (!inner) return undefined;
  if (inner.type === 'identifier' || inner.type === 'type_identifier') return inner.text;
  if (inner.type === 'member_expression') return inner.childForFieldName('property')?.text;
  return undefined;
}

/** Strips parentheses, `as`, `satisfies`, `!` and type arguments around an expression. */
function unwrap(node: SyntaxNode | null): SyntaxNode | null {
  let at = node;
  while (at) {
    if (at.type === 'parenthesized_expression' || at.type === 'non_null_expression') {
      at = at.namedChildren[0] ?? null;
    } else if (at.type === 'as_expression' || at.type === 'satisfies_expression') {
      at = at.namedChildren[0] ?? null;
    } else if (at.type === 'instantiation_expression') {
      at = at.childForFieldName('function') ?? at.namedChildren[0] ?? null;
    } else return at;
  }
  return at;
}

interface ClassFound {
  name: string | undefined;
  base: string | undefined;
  where: string;
  text: string;
}

const classTypes = new Set(['class_declaration', 'abstract_class_declaration', 'class']);

function classesIn(file: string, root: SyntaxNode): ClassFound[] {
  const found: ClassFound[] = [];
  for (const node of descendants(root)) {
    if (!classTypes.has(node.type)) continue;
    const heritage = node.namedChildren.find((c) => c?.type === 'class_heritage');
    const extendsClause = heritage?.namedChildren.find((c) => c?.type === 'extends_clause');
    if (!extendsClause) continue;
    let name = node.childForFieldName('name')?.text;
    if (!name && node.parent?.type === 'variable_declarator') {
      name = node.parent.childForFieldName('name')?.text;
    }
    const base = endName(
      extendsClause.childForFieldName('value') ?? extendsClause.namedChildren[0] ?? null,
    );
    const text = `${node.text.slice(0, heritage!.endIndex - node.startIndex)}`.split('\n')[0]!;
    found.push({ name, base, where: position(file, node), text: text.trim() });
  }
  return found;
}

/**
 * Where product code makes an error outside the catalog: a class extending a built-in error
 * class (or one that does, transitively, in `files`) or the catalog's class, and every
 * `new X(...)` or `X(...)` of such a class — however it is then raised (thrown, rejected,
 * passed to a callback, `destroy(err)`, `emit('error', err)`, returned). Files in `allowed`
 * are skipped and their classes do not count as error classes (the catalog's own class).
 * Each offender reads `file:line:column: source`.
 */
export async function errorOffenders(
  files: readonly SourceFile[],
  allowed: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  const checked = files.filter((f) => !allowed.has(f.name));
  const classes = new Map<string, ClassFound[]>();
  for (const { name, source } of checked) {
    classes.set(name, await readTypeScript(source, (root) => classesIn(name, root), name));
  }
  // Classes extending a built-in error, transitively, to a fixed point.
  const errorClasses = new Set(builtinErrors);
  for (let grew = true; grew; ) {
    grew = false;
    for (const found of [...classes.values()].flat()) {
      if (found.name && found.base && errorClasses.has(found.base)) {
        if (!errorClasses.has(found.name)) grew = true;
        errorClasses.add(found.name);
      }
    }
  }
  const offenders: { where: string; text: string }[] = [];
  for (const found of [...classes.values()].flat()) {
    if (found.base && (errorClasses.has(found.base) || found.base === catalogClass)) {
      offenders.push({ where: found.where, text: found.text });
    }
  }
  for (const { name, source } of checked) {
    const made = await readTypeScript(
      source,
      (root) => {
        const here: { where: string; text: string }[] = [];
        for (const node of descendants(root)) {
          const callee =
            node.type === 'new_expression'
              ? node.childForFieldName('constructor')
              : node.type === 'call_expression'
                ? node.childForFieldName('function')
                : null;
          if (!callee) continue;
          const called = endName(callee);
          if (!called) continue;
          // `Error(...)` without `new` constructs too; a local error class only with `new`.
          const raises =
            node.type === 'new_expression' ? errorClasses.has(called) : builtinErrors.has(called);
          if (raises && unwrap(callee)?.type === 'identifier') {
            here.push({ where: position(name, node), text: node.text.split('\n')[0]!.trim() });
          }
        }
        return here;
      },
      name,
    );
    offenders.push(...made);
  }
  return offenders.map((o) => `${o.where}: ${o.text}`).sort(byPosition);
}

/** Sorts `file:line:column: …` by file, then line and column as numbers. */
function byPosition(a: string, b: string): number {
  const parse = (s: string) => {
    const m = /^(.*?):(\d+):(\d+):/.exec(s);
    return m ? ([m[1]!, Number(m[2]), Number(m[3])] as const) : ([s, 0, 0] as const);
  };
  const [fa, la, ca] = parse(a);
  const [fb, lb, cb] = parse(b);
  return fa < fb ? -1 : fa > fb ? 1 : la - lb || ca - cb;
}

/** Names that hold an HTTP status (also as `x.status`, `httpStatus(error)`). */
export const statusNames: ReadonlySet<string> = new Set([
  'status',
  'statusCode',
  'code',
  'httpStatus',
]);

const comparisons = new Set(['===', '!==', '==', '!=', '<', '<=', '>', '>=']);

/** An HTTP status literal: a number 100–599 written as an integer. */
function isStatusLiteral(node: SyntaxNode | null): boolean {
  const inner = unwrap(node);
  if (inner?.type !== 'number' || !/^\d{3}$/.test(inner.text)) return false;
  const value = Number(inner.text);
  return value >= 100 && value <= 599;
}

/** Whether an expression reads a status: `status`, `x.statusCode`, `httpStatus(e)`, `x?.code`. */
function readsStatus(node: SyntaxNode | null): boolean {
  const inner = unwrap(node);
  if (!inner) return false;
  if (inner.type === 'call_expression')
    return statusNames.has(endName(inner.childForFieldName('function')) ?? '');
  if (inner.type === 'identifier' || inner.type === 'member_expression') {
    return statusNames.has(endName(inner) ?? '');
  }
  return false;
}

/**
 * Where `source` compares a status by number: `status === 404`, `res.statusCode >= 500`,
 * `404 !== code`, `httpStatus(error) === 409`, or `switch (res.status) { case 404: … }`.
 * Each offender reads `file:line:column: source`.
 */
export async function statusComparisons(file: SourceFile): Promise<string[]> {
  return readTypeScript(
    file.source,
    (root) => {
      const found: string[] = [];
      for (const node of descendants(root)) {
        if (node.type === 'binary_expression') {
          const operator = node.childForFieldName('operator')?.text ?? '';
          if (!comparisons.has(operator)) continue;
          const left = node.childForFieldName('left');
          const right = node.childForFieldName('right');
          if (
            (readsStatus(left) && isStatusLiteral(right)) ||
            (isStatusLiteral(left) && readsStatus(right))
          ) {
            found.push(`${position(file.name, node)}: ${node.text.split('\n')[0]!.trim()}`);
          }
        } else if (node.type === 'switch_statement') {
          if (!readsStatus(node.childForFieldName('value'))) continue;
          const body = node.childForFieldName('body');
          for (const branch of body?.namedChildren ?? []) {
            if (
              branch?.type === 'switch_case' &&
              isStatusLiteral(branch.childForFieldName('value'))
            ) {
              found.push(`${position(file.name, branch)}: ${branch.text.split('\n')[0]!.trim()}`);
            }
          }
        }
      }
      return found;
    },
    file.name,
  );
}

/**
 * Every name `source` mentions as code: identifiers, property names and the text of string
 * literals (template literal pieces included) — never words in comments.
 */
export async function namesMentioned(file: SourceFile): Promise<Set<string>> {
  return readTypeScript(
    file.source,
    (root) => {
      const names = new Set<string>();
      for (const node of descendants(root)) {
        switch (node.type) {
          case 'identifier':
          case 'property_identifier':
          case 'shorthand_property_identifier':
          case 'shorthand_property_identifier_pattern':
          case 'type_identifier':
          case 'string_fragment':
            names.add(node.text);
            break;
          default:
        }
      }
      return names;
    },
    file.name,
  );
}
