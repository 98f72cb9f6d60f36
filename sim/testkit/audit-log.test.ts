/** Parsing the API server's audit log and picking one user's refused requests out of it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  describeAuditEvent,
  forbiddenRequests,
  parseAuditLog,
  requestsBy,
  serviceAccountUsername,
} from './audit-log.ts';

const sa = serviceAccountUsername('winfleet-system', 'winfleet');

function line(fields: Record<string, unknown>): string {
  return JSON.stringify({
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'Metadata',
    stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/kube-system/secrets/x',
    verb: 'get',
    user: { username: sa, groups: ['system:serviceaccounts'] },
    ...fields,
  });
}

test('a username is a ServiceAccount’s as the API server spells it', () => {
  assert.equal(sa, 'system:serviceaccount:winfleet-system:winfleet');
});

test('one request per audit id, refused ones picked out and described', () => {
  const text = [
    line({ auditID: 'a', responseStatus: { code: 200 } }),
    // A watch: ResponseStarted then ResponseComplete, one request.
    line({ auditID: 'w', verb: 'watch', stage: 'ResponseStarted', responseStatus: { code: 200 } }),
    line({
      auditID: 'f',
      objectRef: { resource: 'secrets', namespace: 'kube-system', name: 'x', apiVersion: 'v1' },
      responseStatus: { code: 403, reason: 'Forbidden' },
    }),
    line({ auditID: 'w', verb: 'watch', responseStatus: { code: 200 } }),
    line({
      auditID: 'o',
      user: { username: 'system:serviceaccount:default:other' },
      responseStatus: { code: 403 },
    }),
    line({
      auditID: 'c',
      verb: 'update',
      requestURI: '/apis/rbac.authorization.k8s.io/v1/clusterroles/winfleet',
      objectRef: {
        resource: 'clusterroles',
        apiGroup: 'rbac.authorization.k8s.io',
        name: 'winfleet',
      },
      responseStatus: { code: 403 },
    }),
    '',
  ].join('\n');
  const mine = requestsBy(parseAuditLog(text), sa);
  assert.deepEqual(
    mine.map((e) => [e.auditID, e.stage]),
    [
      ['a', 'ResponseComplete'],
      ['w', 'ResponseComplete'],
      ['f', 'ResponseComplete'],
      ['c', 'ResponseComplete'],
    ],
  );
  const refused = forbiddenRequests(mine);
  assert.deepEqual(refused.map(describeAuditEvent), [
    'get secrets in kube-system named x → 403 (/api/v1/namespaces/kube-system/secrets/x)',
    'update clusterroles.rbac.authorization.k8s.io (cluster scope) named winfleet → 403 (/apis/rbac.authorization.k8s.io/v1/clusterroles/winfleet)',
  ]);
});

test('a last line still being written is left out', () => {
  const text = `${line({ auditID: 'a' })}\n{"kind":"Event","apiVer`;
  assert.equal(parseAuditLog(text).length, 1);
  assert.equal(parseAuditLog('').length, 0);
});

test('anything else in the log is refused, naming the line and the field', () => {
  assert.throws(() => parseAuditLog(`${line({ auditID: 'a' })}\nnot json\n`), /line 2 is not JSON/);
  assert.throws(() => parseAuditLog('[1]\n'), /line 1 is not a JSON object/);
  assert.throws(
    () => parseAuditLog(`${JSON.stringify({ kind: 'Event', apiVersion: 'v1' })}\n`),
    /line 1 is not an audit\.k8s\.io\/v1 Event/,
  );
  assert.throws(() => parseAuditLog(`${line({})}\n`), /field auditID is not a string/);
  assert.throws(
    () => parseAuditLog(`${line({ auditID: 'a', user: {} })}\n`),
    /field user\.username is not a string/,
  );
  assert.throws(
    () => parseAuditLog(`${line({ auditID: 'a', responseStatus: { code: '403' } })}\n`),
    /field responseStatus\.code is not a number/,
  );
});
