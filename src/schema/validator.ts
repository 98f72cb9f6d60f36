/**
 * JSON Schema validation for every document winfleet reads (winfleet-config, the services
 * manifest, bootstrap.json and agent.json, payload.json): one Ajv instance and one way of
 * saying what is wrong. A failed validation throws a WinfleetError with the caller's code
 * whose message lists every problem as "field: what is wrong; what to write", and whose
 * `details.problems` holds the same lines for callers that show them one by one.
 *
 * Defaults a schema declares are filled in (Ajv's `useDefaults`) on a copy: the value the
 * caller passed is never changed. Only winfleet-config's schema declares defaults.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { type ErrorCode, hasCode, WinfleetError } from '../errors/catalog.ts';

/** What a document error carries besides its message. */
export interface SchemaProblems {
  /** One line per problem, each starting with the field's path (`a.b.0.c`). */
  readonly problems: string[];
}

/** A document error: `details.problems` is always there. */
export type DocumentError = WinfleetError<SchemaProblems> & { readonly details: SchemaProblems };

// allErrors: report every problem at once, not only the first; verbose: the offending value is
// kept so pattern errors can quote it; strict: false, as every schema here was written for.
const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true });

/** The error for a document with these problems: "Invalid <document>:" then one problem a line. */
export function invalidDocument(
  code: ErrorCode,
  document: string,
  problems: string[],
): DocumentError {
  return new WinfleetError<SchemaProblems>(
    code,
    `Invalid ${document}:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    { details: { problems } },
  ) as DocumentError;
}

/** True for the document error `invalidDocument` or a compiled schema threw with `code`. */
export function isDocumentError(error: unknown, code: ErrorCode): error is DocumentError {
  return hasCode(error, code) && Array.isArray((error as DocumentError).details?.problems);
}

function fieldPath(error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  return path || '(top level)';
}

/** Turns a schema error into "field: what is wrong; what to write". */
export function describeSchemaError(error: ErrorObject): string {
  const field = fieldPath(error);
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `${field === '(top level)' ? '' : `${field}.`}${p.additionalProperty}: unknown field; remove it or check its spelling`;
    case 'required':
      return `${field}: missing required field "${p.missingProperty}"`;
    case 'enum':
      return `${field}: must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'type':
      return `${field}: must be ${p.type}`;
    case 'pattern':
      return `${field}: "${String(error.data)}" does not match ${p.pattern}`;
    case 'minimum':
    case 'maximum':
      return `${field}: must be ${error.keyword === 'minimum' ? '≥' : '≤'} ${p.limit}`;
    default:
      return `${field}: ${error.message}`;
  }
}

export interface CompileOptions {
  /** The code of the error thrown for an invalid document. */
  code: ErrorCode;
  /** What the document is called in messages, e.g. "services manifest"; a call may override it. */
  document: string;
}

/** Checks `value` and returns it (a copy, defaults filled in) typed, or throws a DocumentError. */
export type DocumentValidator<T> = (value: unknown, document?: string) => T;

/**
 * Compiles `schema` once. The returned function validates a copy of its argument and returns
 * it, or throws a WinfleetError with `options.code` listing every problem.
 *
 * @example
 * const parseManifest = compileSchema<Manifest>(schema, { code: 'WF_MANIFEST_INVALID', document: 'services manifest' });
 * parseManifest(JSON.parse(text)); // throws "Invalid services manifest:\n  - version: missing ..."
 */
export function compileSchema<T>(schema: object, options: CompileOptions): DocumentValidator<T> {
  const validate = ajv.compile(schema);
  return function validateDocument(value: unknown, document = options.document): T {
    const copy = structuredClone(value);
    if (!validate(copy)) {
      throw invalidDocument(
        options.code,
        document,
        (validate.errors ?? []).map(describeSchemaError),
      );
    }
    return copy as T;
  };
}
