import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { errorOffenders, namesMentioned } from '../../sim/testkit/source-guards.ts';
import { typeScriptFiles } from '../../sim/testkit/typescript-syntax.ts';
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
 * Product files allowed to make a built-in Error or define an Error subclass, each with why.
 * Keep this empty or nearly so: a new error gets a catalog code instead.
 */
const allowList: Record<string, string> = {
  // The catalog's own class: the one subclass every other error is an instance of.
  'src/errors/catalog.ts': 'defines WinfleetError',
};

const repoDir = join(import.meta.dirname, '..', '..');

const productSources = () =>
  typeScriptFiles(repoDir, 'src', 'product').map((name) => ({
    name,
    source: readFileSync(join(repoDir, name), 'utf8'),
  }));

test('product code raises catalog errors only: no Error subclasses, no built-in errors made', async () => {
  const offenders = await errorOffenders(productSources(), new Set(Object.keys(allowList)));
  assert.deepEqual(
    offenders,
    [],
    'raise a WinfleetError with a code from src/errors/catalog.ts (add one if none fits)',
  );
});

test('the allow-list names only files that still need it', async () => {
  for (const name of Object.keys(allowList)) {
    const source = readFileSync(join(repoDir, name), 'utf8');
    const found = await errorOffenders([{ name, source }]);
    assert.ok(
      found.length > 0,
      `${name} no longer makes or subclasses a built-in Error; remove it from the allow-list`,
    );
  }
});

/** Where tests live (package.json's test:unit and test:e2e globs). */
const testDirs = ['src', 'sim', 'scripts', 'charts', 'bench'];

test('every catalog code is named by a test other than this one', async () => {
  const named = new Set<string>();
  for (const dir of testDirs) {
    for (const name of typeScriptFiles(repoDir, dir, 'tests')) {
      if (name === 'src/errors/catalog.test.ts') continue;
      const source = readFileSync(join(repoDir, name), 'utf8');
      for (const word of await namesMentioned({ name, source })) named.add(word);
    }
  }
  const unnamed = Object.keys(errorCatalog).filter((code) => !named.has(code));
  assert.deepEqual(
    unnamed,
    [],
    'write a test of the product path that raises each code, asserting the code (or remove a code nothing raises)',
  );
});
