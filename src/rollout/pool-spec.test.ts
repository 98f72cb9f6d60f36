import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkPoolSpec, defaultPoolPolicy } from './pool-spec.ts';

test('a full spec becomes a policy', () => {
  const { policy, problems } = checkPoolSpec({
    selector: { matchLabels: { pool: 'web' } },
    maxUnavailable: '25%',
    drainTimeout: '1h30m',
    readyTimeout: '20m',
    maintenanceWindow: {
      days: ['Sat', 'Sun'],
      start: '01:00',
      end: '05:00',
      timeZone: 'Europe/Berlin',
    },
    patches: { policy: 'Security' },
    rebootRequestedAt: '2025-06-07T01:00:00Z',
    paused: true,
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(policy.selector, { matchLabels: { pool: 'web' } });
  assert.deepEqual(policy.maxUnavailable, { kind: 'percent', percent: 25 });
  assert.equal(policy.drainTimeoutMs, 5_400_000);
  assert.equal(policy.readyTimeoutMs, 1_200_000);
  assert.equal(policy.window?.timeZone, 'Europe/Berlin');
  assert.deepEqual([...policy.window!.days], [5, 6]);
  assert.equal(policy.patchPolicy, 'Security');
  assert.equal(policy.rebootRequestedAt, '2025-06-07T01:00:00Z');
  assert.equal(policy.paused, true);
});

test('defaults: one host at a time, 10m drain, 15m ready, no window, no patches, not paused', () => {
  const { policy, problems } = checkPoolSpec({
    selector: {},
    rebootRequestedAt: null,
    maintenanceWindow: null,
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(policy, { selector: {}, ...defaultPoolPolicy });
  assert.deepEqual(defaultPoolPolicy, {
    maxUnavailable: { kind: 'count', count: 1 },
    drainTimeoutMs: 600_000,
    readyTimeoutMs: 900_000,
    patchPolicy: 'None',
    paused: false,
  });
  assert.ok(Object.isFrozen(defaultPoolPolicy));
});

test('every problem is reported at once, each naming its field; bad fields take their defaults', () => {
  const { policy, problems } = checkPoolSpec({
    selector: { matchExpressions: [{ key: 'pool', operator: 'In', values: [] }] },
    maxUnavailable: 0,
    drainTimeout: '10 minutes',
    readyTimeout: '0s',
    maintenanceWindow: { start: '01:00', end: '05:00', timeZone: 'Mars/Olympus_Mons' },
    patches: { policy: 'Weekly' },
    rebootRequestedAt: 'tomorrow',
    paused: 'yes',
  });
  assert.deepEqual(
    problems.map((p) => p.split(/[: ]/)[0]),
    [
      'spec.selector.matchExpressions[0].values',
      'spec.maxUnavailable',
      'Cannot',
      'spec.readyTimeout',
      'spec.patches.policy',
      'spec.paused',
      'spec.maintenanceWindow.timeZone',
      'spec.rebootRequestedAt',
    ],
  );
  assert.match(problems[2]!, /^Cannot parse spec\.drainTimeout "10 minutes"/);
  assert.equal(policy.selector, undefined, 'a bad selector selects nothing');
  assert.deepEqual(policy.maxUnavailable, defaultPoolPolicy.maxUnavailable);
  assert.equal(policy.drainTimeoutMs, defaultPoolPolicy.drainTimeoutMs);
  assert.equal(policy.readyTimeoutMs, defaultPoolPolicy.readyTimeoutMs);
  assert.equal(policy.patchPolicy, 'None');
  assert.equal(policy.paused, false);
  assert.equal(policy.window, undefined);
  assert.equal(policy.rebootRequestedAt, undefined);
});

test('a missing spec or selector, and shapes the schema would refuse', () => {
  assert.deepEqual(checkPoolSpec(undefined).problems, [
    'spec: missing; a pool needs spec.selector',
  ]);
  assert.deepEqual(checkPoolSpec({}).problems, [
    'spec.selector: missing; write {matchLabels: {…}} to choose the pool’s WindowsHosts',
  ]);
  assert.deepEqual(checkPoolSpec({ selector: {}, patches: 'Security' }).problems, [
    'spec.patches: must be {policy: None | Security | All}',
  ]);
  assert.deepEqual(checkPoolSpec({ selector: {}, patches: {} }).problems, []);
});

test('spec.join.nodeNamePattern: one the API server stored before the rule, checked again', () => {
  assert.deepEqual(
    checkPoolSpec({ selector: {}, join: { nodeNamePattern: '^web-[0-9]+$' } }).problems,
    [],
  );
  assert.match(
    checkPoolSpec({ selector: {}, join: { nodeNamePattern: 'web-.*' } }).problems[0]!,
    /^spec\.join\.nodeNamePattern "web-\.\*" is not anchored/,
  );
  assert.match(
    checkPoolSpec({ selector: {}, join: { nodeNamePattern: '^(?=web)$' } }).problems[0]!,
    /^spec\.join\.nodeNamePattern "\^\(\?=web\)\$" is not an RE2 regular expression/,
  );
});

test('spec.prePull: a refused registry address and a bad reference are the pool’s problems', () => {
  const { problems } = checkPoolSpec({
    selector: { matchLabels: { pool: 'web' } },
    prePull: { images: ['169.254.169.254/steal:1', 'Not A Reference'], maxParallel: 9 },
  });
  assert.equal(problems.length, 3, problems.join('\n'));
  assert.match(problems[0]!, /^spec\.prePull\.images\[0\]: .*link-local/);
  assert.match(problems[1]!, /^spec\.prePull\.images\[1\]: /);
  assert.match(problems[2]!, /^spec\.prePull\.maxParallel: /);
  assert.deepEqual(
    checkPoolSpec({
      selector: {},
      prePull: { images: ['mcr.microsoft.com/windows/servercore:ltsc2022'] },
    }).problems,
    [],
  );
});

test('spec.prePull: the rollout waits for pulls the spec’s timeout and two minutes at most; a bad spec or none, not at all', () => {
  const policy = (prePull: unknown) =>
    checkPoolSpec({ selector: {}, ...(prePull ? { prePull } : {}) }).policy;
  assert.equal(policy({ images: ['nginx'] }).prePullWaitMs, (900 + 120) * 1000);
  assert.equal(policy({ images: ['nginx'], timeoutSeconds: 60 }).prePullWaitMs, 180_000);
  assert.equal(policy({ images: ['Not A Reference'] }).prePullWaitMs, undefined);
  assert.equal(policy(undefined).prePullWaitMs, undefined);
});

test('spec.isolation: hyperV must be a boolean, and no other field is taken', () => {
  const base = { selector: {} };
  assert.deepEqual(checkPoolSpec({ ...base, isolation: { hyperV: true } }).problems, []);
  assert.deepEqual(checkPoolSpec({ ...base, isolation: {} }).problems, []);
  assert.match(
    checkPoolSpec({ ...base, isolation: { hyperV: 'yes' } }).problems.join('\n'),
    /^spec\.isolation\.hyperV: must be true or false \(got "yes"\)/,
  );
  assert.match(
    checkPoolSpec({ ...base, isolation: { hyperv: true } }).problems.join('\n'),
    /^spec\.isolation\.hyperv: unknown field; the only one is hyperV/,
  );
  assert.deepEqual(checkPoolSpec({ ...base, isolation: true }).problems, [
    'spec.isolation: must be {hyperV: true | false}',
  ]);
});
