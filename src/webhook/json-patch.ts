/** RFC 6902 JSON Patch operations and RFC 6901 pointer escaping. */
import { WinfleetError } from '../errors/catalog.ts';

/** @package */
export interface JsonPatchOperation {
  op: 'add' | 'replace' | 'remove' | 'test';
  path: string;
  value?: unknown;
}

/** Escapes one reference token of a JSON Pointer ("/" → "~1", "~" → "~0"). */
export function pointerToken(token: string | number): string {
  return String(token).replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Builds a JSON Pointer from tokens. */
export function pointer(...tokens: (string | number)[]): string {
  return tokens.map((t) => `/${pointerToken(t)}`).join('');
}

/** Applies add/replace/remove operations to a copy of `document` (used by tests and dry runs). */
export function applyPatch<T>(document: T, operations: JsonPatchOperation[]): T {
  const root = { value: structuredClone(document) } as { value: unknown };
  for (const operation of operations) {
    const tokens = operation.path
      .split('/')
      .slice(1)
      .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
    let parent: unknown = root;
    let key: string | number = 'value';
    for (const token of tokens) {
      parent = (parent as Record<string | number, unknown>)[key];
      if (parent === null || typeof parent !== 'object')
        throw new WinfleetError(
          'WF_INVARIANT',
          `JSON patch path "${operation.path}" does not exist in the document; a patch can only change what is there`,
        );
      key = Array.isArray(parent) ? (token === '-' ? parent.length : Number(token)) : token;
    }
    const container = parent as Record<string | number, unknown> & unknown[];
    if (operation.op === 'remove') {
      if (Array.isArray(container)) container.splice(key as number, 1);
      else delete container[key];
    } else if (operation.op === 'add' && Array.isArray(container)) {
      container.splice(key as number, 0, structuredClone(operation.value));
    } else if (operation.op === 'add' || operation.op === 'replace') {
      container[key] = structuredClone(operation.value);
    }
  }
  return root.value as T;
}
