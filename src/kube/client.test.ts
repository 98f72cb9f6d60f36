import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import {
  httpStatus,
  isAlreadyExists,
  isConflict,
  isFailedPatchTest,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isServerError,
  isTooManyRequests,
  isUnauthorized,
} from './client.ts';

/** An API call's error as @kubernetes/client-node throws it. */
const apiError = (code: number, body: unknown = '') =>
  new ApiException(code, `HTTP-Code: ${code}`, body, {});
/** A failed watch's error: the status is on `statusCode`. */
const watchError = (statusCode: number) =>
  Object.assign(new Error(`Non-200 status code: ${statusCode}`), { statusCode });

const checks: [string, (error: unknown) => boolean, number[]][] = [
  ['isUnauthorized', isUnauthorized, [401]],
  ['isForbidden', isForbidden, [403]],
  ['isNotFound', isNotFound, [404]],
  ['isConflict', isConflict, [409]],
  ['isAlreadyExists', isAlreadyExists, [409]],
  ['isGone', isGone, [410]],
  ['isInvalid', isInvalid, [422]],
  ['isTooManyRequests', isTooManyRequests, [429]],
  ['isServerError', isServerError, [500, 502, 503, 504]],
];
const statuses = [200, 201, 400, 401, 403, 404, 409, 410, 422, 429, 500, 502, 503, 504];

test('each API error check holds for its statuses on API and watch errors alike', () => {
  for (const [name, check, holds] of checks) {
    for (const status of statuses) {
      assert.equal(check(apiError(status)), holds.includes(status), `${name} ${status} (API)`);
      assert.equal(check(watchError(status)), holds.includes(status), `${name} ${status} (watch)`);
    }
  }
});

test('errors without an HTTP status match no check', () => {
  const socketError = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  for (const error of [socketError, new Error('boom'), undefined, null, 'a string', 404]) {
    assert.equal(httpStatus(error), undefined);
    for (const [name, check] of checks) assert.equal(check(error), false, name);
  }
});

test('a failed JSON Patch test is a 422 with the generic message; a schema refusal is not one', () => {
  const generic = {
    kind: 'Status',
    reason: 'Invalid',
    message: 'the server rejected our request due to an error in our request',
  };
  assert.equal(isFailedPatchTest(apiError(422, generic)), true);
  assert.equal(isFailedPatchTest(apiError(422, JSON.stringify(generic))), true);
  assert.equal(isFailedPatchTest(apiError(409, generic)), false);
  const schema = {
    ...generic,
    message: 'WindowsHost "a" is invalid: spec.address: Required value',
  };
  assert.equal(isFailedPatchTest(apiError(422, schema)), false);
});
