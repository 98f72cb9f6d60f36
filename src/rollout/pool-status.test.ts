import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason, PoolConditionType } from '../api/reasons.ts';
import { type PoolStatusHost, type PoolStatusInput, poolStatus } from './pool-status.ts';
import { planRollout } from './slot-planner.ts';

const web = (n: number, extra: Partial<PoolStatusHost> = {}): PoolStatusHost => ({
  key: `windows/win-web-${n}`,
  ready: true,
  pending: false,
  inProgress: false,
  ...extra,
});

function status(hosts: PoolStatusHost[], extra: Partial<PoolStatusInput> = {}, planExtra = {}) {
  const plan = planRollout({
    hosts,
    maxUnavailable: 2,
    paused: false,
    windowOpen: true,
    ...planExtra,
  });
  return poolStatus({
    generation: 3,
    hosts,
    plan,
    shared: [],
    specProblems: [],
    paused: false,
    ...extra,
  });
}

const condition = (s: ReturnType<typeof status>, type: string) =>
  s.conditions.find((c) => c.type === type)!;

test('a pool with everything up to date', () => {
  const s = status([1, 2, 3, 4, 5, 6].map((n) => web(n)));
  assert.deepEqual(
    { ...s, conditions: undefined },
    {
      observedGeneration: 3,
      hosts: 6,
      readyHosts: 6,
      updatedHosts: 6,
      unavailableHosts: 0,
      hostsInProgress: [],
      conditions: undefined,
    },
  );
  assert.deepEqual(s.conditions, [
    {
      type: PoolConditionType.Available,
      status: 'True',
      reason: ConditionReason.MinimumHostsAvailable,
      message: '6 of 6 hosts available; maxUnavailable 2',
      observedGeneration: 3,
    },
    {
      type: PoolConditionType.Progressing,
      status: 'False',
      reason: ConditionReason.RolloutComplete,
      message: 'All 6 hosts up to date',
      observedGeneration: 3,
    },
    {
      type: PoolConditionType.Degraded,
      status: 'False',
      reason: ConditionReason.AsExpected,
      message: '',
      observedGeneration: 3,
    },
  ]);
});

test('rolling: counts, hosts in progress and who waits for what', () => {
  const hosts = [
    web(1, {
      pending: true,
      inProgress: true,
      ready: false,
      step: 'Reboot',
      since: '2025-06-07T01:02:00Z',
    }),
    web(2, { pending: true, inProgress: true, step: 'Drain', since: '2025-06-07T01:01:00Z' }),
    web(3, { pending: true }),
    web(4, { pending: true }),
    web(5),
    web(6),
  ];
  const s = status(hosts);
  assert.equal(s.hosts, 6);
  assert.equal(s.readyHosts, 5);
  assert.equal(s.updatedHosts, 2);
  assert.equal(s.unavailableHosts, 2);
  assert.deepEqual(s.hostsInProgress, [
    { name: 'windows/win-web-1', step: 'Reboot', since: '2025-06-07T01:02:00Z' },
    { name: 'windows/win-web-2', step: 'Drain', since: '2025-06-07T01:01:00Z' },
  ]);
  assert.equal(
    condition(s, 'Available').message,
    '4 of 6 hosts available; maxUnavailable 2; unavailable: windows/win-web-1 (Reboot), windows/win-web-2 (Drain)',
  );
  const progressing = condition(s, 'Progressing');
  assert.equal(progressing.status, 'True');
  assert.equal(progressing.reason, ConditionReason.RollingOut);
  assert.equal(
    progressing.message,
    '2 of 6 hosts updated; changing: windows/win-web-1 (Reboot), windows/win-web-2 (Drain); waiting: windows/win-web-3, windows/win-web-4 (maxUnavailable 2)',
  );
});

test('more hosts down than maxUnavailable: Available is False, naming them', () => {
  const s = status([
    web(1, { ready: false }),
    web(2, { ready: false }),
    web(3, { ready: false }),
    web(4),
  ]);
  const available = condition(s, 'Available');
  assert.equal(available.status, 'False');
  assert.equal(available.reason, ConditionReason.MinimumHostsUnavailable);
  assert.equal(
    available.message,
    '3 hosts unavailable, more than maxUnavailable 2: windows/win-web-1 (NotReady), windows/win-web-2 (NotReady), windows/win-web-3 (NotReady); no change starts until enough are back',
  );
});

test('a failed host: rollout stopped, Degraded with its reason and message (host and step)', () => {
  const failed = {
    step: 'Reboot',
    reason: ConditionReason.RebootTimedOut,
    message:
      'windows/win-web-1: Node win-web-1 did not come back from its reboot within spec.readyTimeout 15m',
  };
  const s = status([
    web(1, { pending: true, inProgress: true, ready: false, step: 'Reboot', failed }),
    web(2, { pending: true }),
  ]);
  const progressing = condition(s, 'Progressing');
  assert.equal(progressing.status, 'False');
  assert.equal(progressing.reason, ConditionReason.RolloutStopped);
  assert.equal(
    progressing.message,
    'Stopped at windows/win-web-1 (Reboot); no other host starts a change until it goes on (see Degraded)',
  );
  const degraded = condition(s, 'Degraded');
  assert.equal(degraded.status, 'True');
  assert.equal(degraded.reason, ConditionReason.RebootTimedOut);
  assert.equal(degraded.message, failed.message);
});

test('a host in two pools: Degraded naming it and the other pool; the rollout cannot finish', () => {
  const s = status([web(1), web(7, { pending: true, shared: true })], {
    shared: [{ host: 'windows/win-web-7', otherPools: ['windows/batch'] }],
  });
  const progressing = condition(s, 'Progressing');
  assert.deepEqual(
    [progressing.status, progressing.reason, progressing.message],
    [
      'False',
      ConditionReason.RolloutStopped,
      '1 of 2 hosts updated; no change can start on windows/win-web-7: in more than one pool (see Degraded)',
    ],
  );
  const rolling = status([
    web(1, { pending: true }),
    web(2, { pending: true, ready: false }),
    web(7, { pending: true, shared: true }),
  ]);
  assert.equal(
    condition(rolling, 'Progressing').message,
    '0 of 3 hosts updated; waiting: windows/win-web-2 (NotReady); no change can start on windows/win-web-7: in more than one pool (see Degraded)',
  );
  const degraded = condition(s, 'Degraded');
  assert.equal(degraded.reason, ConditionReason.HostInMultiplePools);
  assert.equal(
    degraded.message,
    "Selected by more than one pool, so no change starts on them: windows/win-web-7 (also in windows/batch); change their labels or the pools' selectors so that one pool selects each",
  );
});

test('paused, outside the window, a bad spec, a refused payload', () => {
  const hosts = [
    web(1, { pending: true, inProgress: true, step: 'Drain' }),
    web(2, { pending: true }),
  ];
  const paused = condition(status(hosts, { paused: true }, { paused: true }), 'Progressing');
  assert.deepEqual(
    [paused.status, paused.reason, paused.message],
    [
      'Unknown',
      ConditionReason.Paused,
      'spec.paused is true: no change starts; 1 host waits; finishing: windows/win-web-1 (Drain)',
    ],
  );

  const closed = status(
    [web(1, { pending: true }), web(2, { pending: true })],
    { nextWindowStart: new Date('2025-06-14T01:00:00Z') },
    { windowOpen: false },
  );
  const waiting = condition(closed, 'Progressing');
  assert.deepEqual(
    [waiting.status, waiting.reason, waiting.message],
    [
      'False',
      ConditionReason.WaitingForWindow,
      '2 hosts wait for the maintenance window; it opens next at 2025-06-14T01:00:00.000Z',
    ],
  );
  // In a change when the window closed: it goes on, and says why the others wait.
  const closing = condition(status(hosts, {}, { windowOpen: false }), 'Progressing');
  assert.equal(closing.reason, ConditionReason.RollingOut);
  assert.match(closing.message, /waiting: windows\/win-web-2 \(outside the maintenance window\)$/);

  const bad = status(
    hosts,
    {
      specProblems: [
        'spec.maintenanceWindow.timeZone: unknown time zone "Mars/Base"; use an IANA time zone name such as "UTC" or "Europe/Berlin"',
      ],
    },
    { held: true },
  );
  assert.equal(condition(bad, 'Progressing').reason, ConditionReason.InvalidSpec);
  const badDegraded = condition(bad, 'Degraded');
  assert.equal(badDegraded.reason, ConditionReason.InvalidSpec);
  assert.match(
    badDegraded.message,
    /^spec\.maintenanceWindow\.timeZone: unknown time zone "Mars\/Base"/,
  );

  const skew = condition(
    status([web(1)], {
      skew: 'payload.json kubernetesVersion is v1.37.0, newer than the API server v1.36.5',
    }),
    'Degraded',
  );
  assert.equal(skew.reason, ConditionReason.KubeletVersionSkew);
  assert.equal(
    skew.message,
    'payload.json kubernetesVersion is v1.37.0, newer than the API server v1.36.5; no host gets this payload',
  );
});

test('several problems: the most fundamental is the reason, all are in the message', () => {
  const failed = {
    step: 'Drain',
    reason: ConditionReason.DrainTimedOut,
    message: 'windows/win-web-1: drain timed out',
  };
  const s = status([web(1, { inProgress: true, pending: true, step: 'Drain', failed })], {
    skew: 'kubelet too new',
    shared: [{ host: 'windows/win-web-1', otherPools: ['windows/batch'] }],
  });
  const degraded = condition(s, 'Degraded');
  assert.equal(degraded.reason, ConditionReason.KubeletVersionSkew);
  assert.match(
    degraded.message,
    /^kubelet too new; no host gets this payload; windows\/win-web-1: drain timed out; Selected by more than one pool/,
  );
});

test('long lists name five hosts and count the rest; an empty pool is complete', () => {
  const hosts = Array.from({ length: 9 }, (_, i) => web(i + 1, { pending: true }));
  const s = poolStatus({
    hosts,
    plan: planRollout({ hosts, maxUnavailable: 1, paused: false, windowOpen: false }),
    shared: [],
    specProblems: [],
    paused: false,
  });
  assert.equal(s.observedGeneration, undefined);
  assert.equal(s.conditions[0]!.observedGeneration, undefined);
  assert.match(condition(s, 'Progressing').message, /^9 hosts wait for the maintenance window$/);
  const all = poolStatus({
    hosts,
    plan: planRollout({ hosts, maxUnavailable: 1, paused: false, windowOpen: true }),
    shared: [],
    specProblems: [],
    paused: false,
  });
  assert.match(
    condition(all, 'Progressing').message,
    /waiting: windows\/win-web-2, .*, windows\/win-web-6 and 3 more \(maxUnavailable 1\)$/,
  );
  const empty = poolStatus({
    hosts: [],
    plan: planRollout({ hosts: [], maxUnavailable: 1, paused: false, windowOpen: true }),
    shared: [],
    specProblems: [],
    paused: false,
  });
  assert.equal(condition(empty, 'Progressing').message, 'All 0 hosts up to date');
  assert.equal(condition(empty, 'Available').status, 'True');
});
