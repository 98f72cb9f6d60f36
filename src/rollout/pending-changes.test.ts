import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import type { AvailableUpdate, RolloutTarget } from '../api/rollout-status.ts';
import { parseApiTime } from '../kube/api-time.ts';
import {
  changesNeedReboot,
  type HostFacts,
  pendingChanges,
  rebootRequestFor,
  rebootRequestPending,
  updatesFor,
} from './pending-changes.ts';

// The security patch flow of the seeds (Anthos on VMware): Windows Server 2019 at the qualified
// 10.0.17763.2803 gets the next cumulative update (a Security update) plus a non-security one.
const cumulative: AvailableUpdate = { kb: 'KB5012647', categories: ['Security Updates'] };
const servicingStack: AvailableUpdate = { kb: 'KB5012675', categories: ['Critical Updates'] };
const dotnet: AvailableUpdate = { kb: 'KB5013868', categories: ['Updates'] };
const defender: AvailableUpdate = { kb: 'KB2267602', categories: ['Definition Updates'] };

const now = new Date('2025-06-07T02:00:00Z');
const upToDate: HostFacts = {
  servicesVersion: 'v1.36.5-wf.1',
  availableUpdates: [],
  rebootPending: false,
  createdAt: '2025-01-10T09:00:00Z',
};
const target: RolloutTarget = { servicesVersion: 'v1.36.5-wf.1', patchPolicy: 'None' };

test('patch policies: None installs nothing, Security the Security and Critical updates, All everything', () => {
  const all = [cumulative, servicingStack, dotnet, defender];
  assert.deepEqual(updatesFor('None', all), []);
  assert.deepEqual(updatesFor('Security', all), [cumulative, servicingStack]);
  assert.deepEqual(updatesFor('All', all), all);
  assert.deepEqual(updatesFor('Security', [dotnet]), []);
});

test('an up-to-date host has nothing pending', () => {
  assert.deepEqual(pendingChanges(target, upToDate, now), []);
  // No services target (a refused payload) leaves any version alone.
  assert.deepEqual(
    pendingChanges({ patchPolicy: 'None' }, { ...upToDate, servicesVersion: undefined }, now),
    [],
  );
});

test('each kind of change is found, in a fixed order', () => {
  assert.deepEqual(pendingChanges({ ...target, servicesVersion: 'v1.36.6-wf.1' }, upToDate, now), [
    'services',
  ]);
  assert.deepEqual(pendingChanges(target, { ...upToDate, servicesVersion: undefined }, now), [
    'services',
  ]);
  assert.deepEqual(
    pendingChanges(
      { ...target, patchPolicy: 'Security' },
      { ...upToDate, availableUpdates: [cumulative] },
      now,
    ),
    ['patches'],
  );
  assert.deepEqual(
    pendingChanges(
      { ...target, patchPolicy: 'Security' },
      { ...upToDate, availableUpdates: [dotnet] },
      now,
    ),
    [],
  );
  assert.deepEqual(pendingChanges(target, { ...upToDate, rebootPending: true }, now), [
    'reboot-pending',
  ]);
  assert.deepEqual(
    pendingChanges({ ...target, rebootRequestedAt: '2025-06-07T01:00:00Z' }, upToDate, now),
    ['reboot-requested'],
  );
  assert.deepEqual(
    pendingChanges(
      {
        servicesVersion: 'v1.36.6-wf.1',
        patchPolicy: 'All',
        rebootRequestedAt: '2025-06-07T01:00:00Z',
      },
      { ...upToDate, availableUpdates: [dotnet], rebootPending: true },
      now,
    ),
    ['services', 'patches', 'reboot-requested', 'reboot-pending'],
  );
});

test('a reboot request reboots each host once: not before its time, not hosts created after it, not again once served', () => {
  const requested = '2025-06-07T01:00:00Z';
  assert.equal(rebootRequestPending(requested, { createdAt: '2025-01-01T00:00:00Z' }, now), true);
  assert.equal(rebootRequestPending(requested, {}, now), true, 'nothing known: reboot');
  assert.equal(rebootRequestPending('2025-06-07T03:00:00Z', {}, now), false, 'scheduled for later');
  assert.equal(rebootRequestPending(requested, { createdAt: '2025-06-07T01:30:00Z' }, now), false);
  assert.equal(
    rebootRequestPending(requested, { lastRebootAt: '2025-06-07T01:00:00Z' }, now),
    false,
  );
  assert.equal(
    rebootRequestPending(requested, { lastRebootAt: '2025-06-07T00:59:59Z' }, now),
    true,
  );
  assert.equal(rebootRequestPending(undefined, {}, now), false);
  // Offsets are compared as instants.
  assert.equal(
    rebootRequestPending(
      '2025-06-07T03:00:00+02:00',
      { lastRebootAt: '2025-06-07T00:30:00Z' },
      now,
    ),
    true,
  );
});

test('the request in force is the later of the pool’s and the host annotation; a bad annotation is reported', () => {
  const field = 'annotation winfleet.io/reboot-requested';
  assert.deepEqual(rebootRequestFor('2025-06-07T01:00:00Z', undefined, field), {
    requestedAt: '2025-06-07T01:00:00Z',
    problems: [],
  });
  assert.deepEqual(rebootRequestFor(null, '2025-06-07T01:00:00Z', field), {
    requestedAt: '2025-06-07T01:00:00Z',
    problems: [],
  });
  assert.deepEqual(rebootRequestFor('2025-06-07T01:00:00Z', '2025-06-07T02:00:00+02:00', field), {
    requestedAt: '2025-06-07T01:00:00Z',
    problems: [],
  });
  assert.deepEqual(
    rebootRequestFor('2025-06-07T01:00:00Z', '2025-06-07T04:00:00+02:00', field).requestedAt,
    '2025-06-07T04:00:00+02:00',
  );
  const bad = rebootRequestFor('2025-06-07T01:00:00Z', 'now', field);
  assert.equal(bad.requestedAt, '2025-06-07T01:00:00Z');
  assert.deepEqual(bad.problems, [
    'annotation winfleet.io/reboot-requested: "now" is not an RFC 3339 time; write e.g. "2025-06-07T01:00:00Z"',
  ]);
  assert.deepEqual(rebootRequestFor(undefined, undefined, field), { problems: [] });
});

test('RFC 3339 times: as Kubernetes writes them, strictly', () => {
  assert.equal(parseApiTime('2025-06-07T01:00:00Z', 'f'), Date.parse('2025-06-07T01:00:00Z'));
  assert.equal(parseApiTime('2025-06-07T03:00:00+02:00', 'f'), Date.parse('2025-06-07T01:00:00Z'));
  assert.equal(parseApiTime('2025-06-06T20:30:00-04:30', 'f'), Date.parse('2025-06-07T01:00:00Z'));
  assert.equal(
    parseApiTime('2025-06-07T01:00:00.123456789Z', 'f'),
    Date.parse('2025-06-07T01:00:00.123Z'),
  );
  assert.equal(parseApiTime('2024-02-29T00:00:00Z', 'f'), Date.parse('2024-02-29T00:00:00Z'));
  assert.equal(
    parseApiTime('0099-01-01T00:00:00Z', 'f'),
    Date.parse('0099-01-01T00:00:00Z'),
    'two-digit years stay years',
  );
  for (const bad of [
    '2025-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2025-13-01T00:00:00Z',
    '2025-06-07T24:00:00Z',
    '2025-06-07T23:59:60Z',
    '2025-06-07T01:00:00',
    '2025-06-07t01:00:00Z',
    '2025-06-07T01:00:00z',
    '2025-06-07 01:00:00Z',
    '2025-06-07T01:00Z',
    '2025-06-07T01:00:00+0200',
    '2025-06-07T01:00:00+24:00',
    '2025-06-07T01:00:00.Z',
    '2025-06-07T01:00:00.1234567890Z',
    '2025-06-07',
    ' 2025-06-07T01:00:00Z',
    '',
    1_749_258_000_000,
    null,
  ]) {
    assert.throws(
      () => parseApiTime(bad, 'spec.rebootRequestedAt'),
      /^WinfleetError: spec\.rebootRequestedAt: .* is not an RFC 3339 time; write e\.g\./,
      String(bad),
    );
  }
});

test('every instant round-trips through its ISO form', (t) => {
  fc.assert(
    fc.property(
      fc.date({
        min: new Date('1970-01-01T00:00:00Z'),
        max: new Date('2999-12-31T23:59:59Z'),
        noInvalidDate: true,
      }),
      (d) => {
        assert.equal(parseApiTime(d.toISOString(), 'f'), d.getTime());
      },
    ),
    { seed: testSeed(t) },
  );
});

test('a repair request is a change that needs a reboot, served by a reboot after it', () => {
  const now = new Date('2025-06-07T02:00:00Z');
  const target = { patchPolicy: 'None' as const, repairRequestedAt: '2025-06-07T01:00:00Z' };
  const facts = { availableUpdates: [], rebootPending: false, createdAt: '2025-01-01T00:00:00Z' };
  assert.deepEqual(pendingChanges(target, facts, now), ['repair']);
  assert.equal(changesNeedReboot(['repair']), true);
  assert.deepEqual(
    pendingChanges(target, { ...facts, lastRebootAt: '2025-06-07T01:30:00Z' }, now),
    [],
    'served by the reboot after it',
  );
});
