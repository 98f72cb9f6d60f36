import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { isDocumentError } from '../schema/validator.ts';
import { type JoinInfo, parseJoinInfo } from './join-info.ts';

const valid: JoinInfo = {
  apiServer: 'https://127.0.0.1:6443',
  clusterDNS: '10.96.0.10',
  clusterDomain: 'cluster.local',
  serviceCIDR: '10.96.0.0/12',
  podCIDR: '10.244.0.0/16',
  windowsTaint: { key: 'os', value: 'windows', effect: 'NoSchedule' },
  kubelet: {
    systemReserved: { cpu: '500m', memory: '2Gi' },
    priorityClass: 'ABOVE_NORMAL_PRIORITY_CLASS',
    maxPods: 110,
  },
  checkIntervalSeconds: 30,
  servicesVersion: '1.36.5-wf.1',
  payload: {
    repository: '127.0.0.1:5000/winfleet/payload',
    digest: `sha256:${'a'.repeat(64)}`,
    mirrors: [{ endpoint: 'http://127.0.0.1:5001', insecure: true }],
    insecure: true,
  },
};

test('a join.json as the operator writes it parses to the same value', () => {
  assert.deepEqual(parseJoinInfo(JSON.stringify(valid)), valid);
  const { payload: _payload, ...withoutPayload } = valid;
  assert.deepEqual(parseJoinInfo(JSON.stringify(withoutPayload)), withoutPayload);
});

test('an unknown field, a missing one and a bad value are each named', () => {
  const bad = {
    ...valid,
    extra: 1,
    apiServer: 'http://127.0.0.1:6443',
    payload: { ...valid.payload, digest: 'sha256:abc', repository: '127.0.0.1:5000/Winfleet//x' },
  } as Record<string, unknown>;
  delete bad.servicesVersion;
  try {
    parseJoinInfo(JSON.stringify(bad));
    assert.fail('accepted');
  } catch (error) {
    assert.ok(isDocumentError(error, 'WF_JOIN_INFO_INVALID'));
    const problems = error.details.problems.join('\n');
    for (const field of [
      'extra',
      'apiServer',
      'servicesVersion',
      'payload.digest',
      'payload.repository',
    ])
      assert.match(problems, new RegExp(field.replace('.', '\\.')), field);
  }
});

test('text that is not JSON is refused with the key named', () => {
  assert.throws(
    () => parseJoinInfo('{'),
    (error) =>
      hasCode(error, 'WF_JOIN_INFO_INVALID') &&
      /join\.json: not JSON/.test((error as Error).message),
  );
});
