import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import {
  type ErrorCode,
  errorCatalog,
  errorCode,
  hasCode,
  isRetryable,
  WinfleetError,
} from './catalog.ts';

test('every code is named WF_…, has a summary and says whether retrying helps', () => {
  for (const [code, entry] of Object.entries(errorCatalog)) {
    assert.match(code, /^WF_[A-Z0-9_]+$/, code);
    assert.equal(typeof entry.retryable, 'boolean', code);
    assert.ok(entry.summary.trim().length > 0, `${code} has no summary`);
    assert.doesNotMatch(entry.summary, /\.$/, `${code}: summaries end without a period`);
  }
});

test('a WinfleetError carries its code, details and cause', () => {
  const cause = new Error('ECONNREFUSED');
  const error = new WinfleetError('WF_REGISTRY_LOOKUP', 'Cannot reach registry "x"', {
    cause,
    details: { reason: 'unreachable' },
  });
  assert.ok(error instanceof Error);
  assert.equal(error.name, 'WinfleetError');
  assert.equal(errorCode(error), 'WF_REGISTRY_LOOKUP');
  assert.ok(hasCode(error, 'WF_REGISTRY_LOOKUP'));
  assert.ok(!hasCode(error, 'WF_TERMINAL'));
  assert.deepEqual(error.details, { reason: 'unreachable' });
  assert.equal(error.cause, cause);
});

test('isRetryable follows the catalog for winfleet errors', () => {
  for (const code of Object.keys(errorCatalog) as ErrorCode[]) {
    assert.equal(isRetryable(new WinfleetError(code, 'x')), errorCatalog[code].retryable, code);
  }
  assert.equal(isRetryable(new WinfleetError('WF_TERMINAL', 'x')), false);
  assert.equal(isRetryable(new WinfleetError('WF_SSH_UNREACHABLE', 'x')), true);
});

test('errors that are not winfleet’s are retryable and have no code', () => {
  const apiError = Object.assign(new Error('HTTP-Code: 409'), { code: 409 });
  const nodeError = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  for (const foreign of [new Error('boom'), apiError, nodeError, 'a string', undefined]) {
    assert.equal(isRetryable(foreign), true);
    assert.equal(errorCode(foreign), undefined);
  }
  // An object that merely looks like a WinfleetError is not one.
  assert.equal(isRetryable({ code: 'WF_TERMINAL', retryable: false }), true);
});

/**
 * Product files allowed to define an Error subclass or throw a plain Error, each with why.
 * Keep this empty or nearly so: a new error gets a catalog code instead.
 */
const allowList: Record<string, string> = {
  // The catalog's own class: the one subclass every other error is an instance of.
  'src/errors/catalog.ts': 'defines WinfleetError',
  // Only tests import it: it refuses a fixture that lost its CRLF line endings, a bug in the
  // checkout that no caller handles.
  'src/agent/windows/fixtures.ts': 'test fixture loader',
};

const srcDir = new URL('..', import.meta.url).pathname;
const repoDir = join(srcDir, '..');

function productFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return productFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

test('product code raises catalog errors only: no Error subclasses, no plain `throw new Error(`', () => {
  const offenders: string[] = [];
  for (const file of productFiles(srcDir)) {
    const name = relative(repoDir, file);
    if (name in allowList) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (/\bextends Error\b/.test(line) || /\bthrow new Error\(/.test(line)) {
          offenders.push(`${name}:${index + 1}: ${line.trim()}`);
        }
      });
  }
  assert.deepEqual(
    offenders,
    [],
    'raise a WinfleetError with a code from src/errors/catalog.ts (add one if none fits)',
  );
});

test('the allow-list names only files that still need it', () => {
  for (const name of Object.keys(allowList)) {
    const text = readFileSync(join(repoDir, name), 'utf8');
    assert.ok(
      /\bextends Error\b/.test(text) || /\bthrow new Error\(/.test(text),
      `${name} no longer defines or throws a plain Error; remove it from the allow-list`,
    );
  }
});
