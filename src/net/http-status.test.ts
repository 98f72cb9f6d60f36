import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { statusComparisons } from '../../sim/testkit/source-guards.ts';
import { typeScriptFiles } from '../../sim/testkit/typescript-syntax.ts';
import {
  isConflictStatus,
  isCreatedStatus,
  isFinalStatus,
  isForbiddenStatus,
  isGoneStatus,
  isMovedOrFoundStatus,
  isNotFoundStatus,
  isOkOrCreatedStatus,
  isOkStatus,
  isRedirectStatus,
  isRefusedStatus,
  isSeeOtherStatus,
  isServerErrorStatus,
  isSuccessStatus,
  isTooManyRequestsStatus,
  isUnauthorizedStatus,
  isUnprocessableStatus,
} from './http-status.ts';

/** Every status a server can send, and none (the request got no answer). */
const everyStatus = [undefined, ...Array.from({ length: 500 }, (_, i) => 100 + i)];

const checks: [string, (status: number | undefined) => boolean, number[]][] = [
  ['isOkStatus', isOkStatus, [200]],
  ['isCreatedStatus', isCreatedStatus, [201]],
  ['isOkOrCreatedStatus', isOkOrCreatedStatus, [200, 201]],
  ['isSuccessStatus', isSuccessStatus, Array.from({ length: 100 }, (_, i) => 200 + i)],
  ['isFinalStatus', isFinalStatus, Array.from({ length: 400 }, (_, i) => 200 + i)],
  ['isMovedOrFoundStatus', isMovedOrFoundStatus, [301, 302]],
  ['isSeeOtherStatus', isSeeOtherStatus, [303]],
  ['isRedirectStatus', isRedirectStatus, [301, 302, 303, 307, 308]],
  ['isUnauthorizedStatus', isUnauthorizedStatus, [401]],
  ['isForbiddenStatus', isForbiddenStatus, [403]],
  ['isRefusedStatus', isRefusedStatus, [401, 403]],
  ['isNotFoundStatus', isNotFoundStatus, [404]],
  ['isConflictStatus', isConflictStatus, [409]],
  ['isGoneStatus', isGoneStatus, [410]],
  ['isUnprocessableStatus', isUnprocessableStatus, [422]],
  ['isTooManyRequestsStatus', isTooManyRequestsStatus, [429]],
  ['isServerErrorStatus', isServerErrorStatus, Array.from({ length: 100 }, (_, i) => 500 + i)],
];

test('each named status check holds for exactly its statuses, and never for no answer', () => {
  for (const [name, check, statuses] of checks) {
    const holds = everyStatus.filter((status) => check(status));
    assert.deepEqual(holds, statuses, name);
  }
  assert.equal(isFinalStatus(999), true, 'a final status above 599 still counts as final');
});

const repoDir = join(import.meta.dirname, '..', '..');
/** The modules that define the named checks: the only ones that compare statuses by number. */
const definingModules = new Set(['src/net/http-status.ts']);

test('product code compares HTTP statuses through the named checks, never with a number', async () => {
  const found: string[] = [];
  for (const name of typeScriptFiles(repoDir, 'src', 'product')) {
    if (definingModules.has(name)) continue;
    const source = readFileSync(join(repoDir, name), 'utf8');
    found.push(...(await statusComparisons({ name, source })));
  }
  assert.deepEqual(
    found,
    [],
    'use a check from src/net/http-status.ts (a number) or src/kube/client.ts (an API error); add one there if none fits',
  );
});
