import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { errorCode, WinfleetError } from '../errors/catalog.ts';
import { cliExit, cliExitCode, ExitCode, exitFor, unreachableReason } from './exit-codes.ts';

test('a command that found a problem ends with WF_COMMAND_FAILED and exit code 1', () => {
  const error = cliExit(ExitCode.problem, 'check: 2 checks failed');
  assert.equal(errorCode(error), 'WF_COMMAND_FAILED');
  assert.equal(error.retryable, false);
  assert.equal(cliExitCode(error), ExitCode.problem);
  assert.deepEqual(exitFor(error), { code: ExitCode.problem, message: 'check: 2 checks failed' });
});

test('usage and cluster exits carry their own codes', () => {
  assert.equal(errorCode(cliExit(ExitCode.usage, 'x')), 'WF_FLAG_INVALID');
  assert.equal(errorCode(cliExit(ExitCode.cluster, 'x')), 'WF_CLUSTER_UNREACHABLE');
  assert.equal(exitFor(new WinfleetError('WF_FLAG_INVALID', '--pool: bad')).code, ExitCode.usage);
});

test('refusals by the API server exit 3 with a hint; other errors exit 1', () => {
  const refused = exitFor(new ApiException(403, 'HTTP-Code: 403', '{"message":"no"}', {}));
  assert.equal(refused.code, ExitCode.cluster);
  assert.match(refused.message ?? '', /answered 403: no \(RBAC/);
  const unauthorized = exitFor(new ApiException(401, 'HTTP-Code: 401', '{}', {}));
  assert.match(unauthorized.message ?? '', /credentials were refused/);
  assert.equal(exitFor(new Error('boom')).code, ExitCode.problem);
});

test('a timeout raised as WF_CLUSTER_UNREACHABLE with the socket code on its cause is unreachable', () => {
  const timedOut = new WinfleetError('WF_CLUSTER_UNREACHABLE', 'GET /version timed out', {
    cause: { code: 'ETIMEDOUT', message: 'GET /version timed out' },
  });
  assert.match(
    unreachableReason(timedOut, 'https://k:6443') ?? '',
    /cannot reach the API server https:\/\/k:6443 \(GET \/version timed out\)/,
  );
  assert.equal(exitFor(timedOut).code, ExitCode.cluster);
  // A winfleet error's own code is its catalog code, never read as a socket code.
  assert.equal(unreachableReason(new WinfleetError('WF_TIMEOUT', 'x')), undefined);
  const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
    code: 'ECONNREFUSED',
  });
  assert.match(unreachableReason(socket) ?? '', /ECONNREFUSED/);
});
