/**
 * A pool's spec.join.nodeNamePattern: an anchored regular expression the node name of a host
 * joining the pool by itself must match.
 *
 * Matched with RE2 (re2js, a port of Google's RE2): it runs in time linear in the name, so no
 * pattern can make the check slow — `^(a+)+$` against 63 characters costs what `^a+$` does,
 * where a backtracking engine (JavaScript's own RegExp) would take exponential time. RE2 is also
 * what the API server compiles the pattern with when the CRD's CEL rule checks it (Go's regexp),
 * so a pattern the API server took is read here the same way. Bounds: the pattern at most
 * nodeNamePatternMaxLength characters, the name at most 63 (a WindowsHost's spec.nodeName).
 */
import { RE2JS } from 're2js';
import { quoteValue } from '../pki/distinguished-name.ts';
import { nodeNamePatternMaxLength } from './windows-node-pool.ts';

/** A compiled pattern, or why the text is not one. */
export type NodeNamePattern =
  | { ok: true; source: string; matches(nodeName: string): boolean }
  | { ok: false; problem: string };

/**
 * Compiles `source` as spec.join.nodeNamePattern takes it: anchored (^…$), at most
 * nodeNamePatternMaxLength characters, valid RE2.
 *
 * @example compileNodeNamePattern('^web-[0-9]{1,4}$') // matches('web-12') is true
 */
export function compileNodeNamePattern(source: string): NodeNamePattern {
  const field = 'spec.join.nodeNamePattern';
  if (source.length > nodeNamePatternMaxLength) {
    return {
      ok: false,
      problem: `${field} is ${source.length} characters, more than ${nodeNamePatternMaxLength}`,
    };
  }
  if (source.length < 2 || !source.startsWith('^') || !source.endsWith('$')) {
    return {
      ok: false,
      problem: `${field} ${quoteValue(source)} is not anchored: start it with ^ and end it with $ (e.g. ^web-[0-9]+$)`,
    };
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source);
  } catch (error) {
    return {
      ok: false,
      problem: `${field} ${quoteValue(source)} is not an RE2 regular expression: ${(error as Error).message}`,
    };
  }
  return { ok: true, source, matches: (nodeName) => compiled.matches(nodeName) };
}
