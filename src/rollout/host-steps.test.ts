import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { ConditionReason, EventReason } from '../api/reasons.ts';
import type {
  AvailableUpdate,
  HostChange,
  HostRolloutStatus,
  RolloutTarget,
} from '../api/rollout-status.ts';
import { rebootTokenPattern } from '../api/windows-updates.ts';
import { apiTime } from '../kube/api-time.ts';
import { act, laggingCache, observe, simulatedHost, tick } from './fixtures/simulated-hosts.ts';
import { advanceHost, type HostObservation, type StepInput } from './host-steps.ts';
import type { ObservedNode } from './observed-node.ts';

const host = 'windows/win-web-1';
const v1 = 'v1.36.5-wf.1';
const v2 = 'v1.36.6-wf.1';
const t0 = new Date('2025-06-07T01:00:00Z');
const later = (ms: number) => new Date(t0.getTime() + ms);
const minute = 60_000;
const timeouts = { drainTimeoutMs: 10 * minute, readyTimeoutMs: 15 * minute };
const cumulative: AvailableUpdate = { kb: 'KB5040437', categories: ['Security Updates'] };

const readyNode: ObservedNode = {
  name: 'win-web-1',
  ready: true,
  unschedulable: false,
  cordonedByWinfleet: false,
  bootId: '41',
};

function observed(
  overrides: Omit<Partial<HostObservation>, 'node'> & { node?: Partial<ObservedNode> | null } = {},
): HostObservation {
  const { node, ...rest } = overrides;
  return {
    node: node === null ? undefined : { ...readyNode, ...node },
    drained: false,
    facts: {
      servicesVersion: v1,
      availableUpdates: [],
      rebootPending: false,
      createdAt: '2025-01-01T00:00:00Z',
    },
    deleting: false,
    ...rest,
  };
}

const upgrade: RolloutTarget = { servicesVersion: v2, patchPolicy: 'None' };

function input(overrides: Partial<StepInput>): StepInput {
  return {
    host,
    status: {},
    observed: observed(),
    target: upgrade,
    start: false,
    timeouts,
    now: t0,
    ...overrides,
  };
}

function change(step: HostChange['step'], extra: Partial<HostChange> = {}): HostRolloutStatus {
  return {
    current: {
      target: upgrade,
      changes: ['services'],
      step,
      startedAt: apiTime(t0),
      stepStartedAt: apiTime(t0),
      ...extra,
    },
  };
}

test('an idle host with nothing started does nothing; a stray winfleet cordon is undone', () => {
  const quiet = advanceHost(input({}));
  assert.deepEqual(quiet.action, { kind: 'none' });
  assert.deepEqual(quiet.events, []);
  const stray = advanceHost(
    input({ observed: observed({ node: { unschedulable: true, cordonedByWinfleet: true } }) }),
  );
  assert.deepEqual(stray.action, { kind: 'uncordon' });
  // A cordon someone else made is left alone.
  const theirs = advanceHost(input({ observed: observed({ node: { unschedulable: true } }) }));
  assert.deepEqual(theirs.action, { kind: 'none' });
});

test('start: the change is recorded at Cordon, then the node is cordoned', () => {
  const r = advanceHost(input({ start: true }));
  assert.deepEqual(r.status, {
    // Recorded before the cordon: the only proof that the cordon is winfleet's.
    cordoned: 'win-web-1',
    current: {
      target: upgrade,
      changes: ['services'],
      step: 'Cordon',
      startedAt: apiTime(t0),
      stepStartedAt: apiTime(t0),
    },
  });
  assert.deepEqual(r.action, { kind: 'cordon' });
  assert.deepEqual(r.events, [
    {
      type: 'Normal',
      reason: EventReason.RolloutStarted,
      message: `Cordoning Node win-web-1 for services ${v2}`,
    },
  ]);
  assert.deepEqual(r.recheckAt, later(timeouts.drainTimeoutMs));
});

test('start with nothing pending does nothing', () => {
  const r = advanceHost(
    input({ start: true, target: { servicesVersion: v1, patchPolicy: 'None' } }),
  );
  assert.deepEqual(r.status, {});
  assert.deepEqual(r.action, { kind: 'none' });
});

test('cordoned → drain; drained → apply', () => {
  const cordoned = observed({ node: { unschedulable: true, cordonedByWinfleet: true } });
  const drain = advanceHost(
    input({ status: change('Cordon'), observed: cordoned, now: later(1000) }),
  );
  assert.equal(drain.status.current?.step, 'Drain');
  assert.equal(
    drain.status.current?.stepStartedAt,
    apiTime(later(1000)),
    'each step has its own clock',
  );
  assert.deepEqual(drain.action, { kind: 'drain' });
  const apply = advanceHost(
    input({ status: drain.status, observed: { ...cordoned, drained: true }, now: later(2000) }),
  );
  assert.equal(apply.status.current?.step, 'Apply');
  assert.deepEqual(apply.action, { kind: 'apply', target: upgrade });
  assert.deepEqual(apply.recheckAt, later(2000 + timeouts.readyTimeoutMs));
});

test('one pass goes as far as the world allows: an empty, cordoned node goes straight to apply', () => {
  const r = advanceHost(
    input({
      start: true,
      observed: observed({
        node: { unschedulable: true, cordonedByWinfleet: true },
        drained: true,
      }),
    }),
  );
  assert.equal(r.status.current?.step, 'Apply');
  assert.deepEqual(r.action, { kind: 'apply', target: upgrade });
});

test('applied without a reboot: wait for Ready on the version, then uncordon, then finish', () => {
  const appliedFacts = { servicesVersion: v2, availableUpdates: [], rebootPending: false };
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const waiting = advanceHost(
    input({
      status: change('Apply'),
      observed: observed({ node: { ...cordoned, ready: false }, facts: appliedFacts }),
    }),
  );
  assert.equal(waiting.status.current?.step, 'WaitReady');
  assert.deepEqual(waiting.action, { kind: 'none' });
  const uncordon = advanceHost(
    input({ status: waiting.status, observed: observed({ node: cordoned, facts: appliedFacts }) }),
  );
  assert.equal(uncordon.status.current?.step, 'Uncordon');
  assert.deepEqual(uncordon.action, { kind: 'uncordon' });
  assert.equal(uncordon.recheckAt, undefined, 'uncordon has no deadline');
  const done = advanceHost(
    input({ status: uncordon.status, observed: observed({ facts: appliedFacts }) }),
  );
  assert.deepEqual(done.status, { lastChange: { endedAt: apiTime(t0) } });
  assert.deepEqual(done.action, { kind: 'none' });
  assert.deepEqual(done.events, [
    {
      type: 'Normal',
      reason: EventReason.RolloutFinished,
      message: `Node win-web-1 is Ready with services ${v2} and uncordoned`,
    },
  ]);
});

test('a node someone else had cordoned is never uncordoned by the change', () => {
  const theirs = { unschedulable: true, cordonedByWinfleet: false };
  const start = advanceHost(input({ start: true, observed: observed({ node: theirs }) }));
  assert.equal(start.status.current?.step, 'Drain', 'already cordoned');
  const end = advanceHost(
    input({
      status: change('WaitReady'),
      observed: observed({
        node: theirs,
        facts: { servicesVersion: v2, availableUpdates: [], rebootPending: false },
      }),
    }),
  );
  assert.deepEqual(end.status, { lastChange: { endedAt: apiTime(t0) } });
  assert.deepEqual(end.action, { kind: 'none' }, 'finished without an uncordon');
});

test('reboot: the boot id and token are recorded before the agent is asked; the same token is repeated until the boot id changes', () => {
  const target: RolloutTarget = { patchPolicy: 'Security' };
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const patched = { servicesVersion: v1, availableUpdates: [], rebootPending: true };
  const status: HostRolloutStatus = {
    current: {
      target,
      changes: ['patches'],
      step: 'Apply',
      startedAt: apiTime(t0),
      stepStartedAt: apiTime(t0),
    },
  };
  const asked = advanceHost(
    input({
      status,
      target,
      observed: observed({ node: cordoned, facts: patched }),
      now: later(minute),
    }),
  );
  assert.equal(asked.status.current?.step, 'Reboot');
  const reboot = asked.status.current?.reboot;
  assert.deepEqual(reboot, {
    token: `reboot-${later(minute).getTime()}`,
    bootIdBefore: '41',
    requestedAt: apiTime(later(minute)),
  });
  assert.deepEqual(asked.action, { kind: 'reboot', token: reboot!.token });
  assert.match(reboot!.token, rebootTokenPattern, 'a token the Node annotation may carry');
  assert.deepEqual(
    asked.events.map((e) => e.reason),
    [EventReason.Rebooting],
  );

  // A restart before the host went down: the same token again, nothing new recorded.
  const again = advanceHost(
    input({
      status: asked.status,
      target,
      observed: observed({ node: cordoned, facts: patched }),
      now: later(2 * minute),
    }),
  );
  assert.equal(again.status, asked.status, 'unchanged status is the same object: nothing to write');
  assert.deepEqual(again.action, { kind: 'reboot', token: reboot!.token });
  assert.deepEqual(again.events, []);

  // Down: no boot id to compare yet.
  const down = advanceHost(
    input({
      status: asked.status,
      target,
      observed: observed({
        node: { ...cordoned, ready: false, bootId: undefined },
        facts: patched,
      }),
    }),
  );
  assert.deepEqual(down.action, { kind: 'reboot', token: reboot!.token });

  // Back with a new boot id: the reboot is recorded and the change waits for Ready.
  const back = advanceHost(
    input({
      status: asked.status,
      target,
      observed: observed({
        node: { ...cordoned, ready: false, bootId: '42' },
        facts: { ...patched, rebootPending: false },
      }),
      now: later(5 * minute),
    }),
  );
  assert.equal(back.status.current?.step, 'WaitReady');
  assert.deepEqual(back.status.current?.reboot, reboot, 'kept: one reboot per change');
  assert.equal(back.status.lastRebootAt, apiTime(later(minute)));
  assert.deepEqual(back.action, { kind: 'none' });
});

test('reboot without a known boot id waits instead of asking', () => {
  const target: RolloutTarget = { patchPolicy: 'None', rebootRequestedAt: apiTime(t0) };
  const r = advanceHost(
    input({
      status: {
        current: {
          target,
          changes: ['reboot-requested'],
          step: 'Apply',
          startedAt: apiTime(t0),
          stepStartedAt: apiTime(t0),
        },
      },
      target,
      observed: observed({
        node: { unschedulable: true, cordonedByWinfleet: true, bootId: undefined },
      }),
    }),
  );
  assert.equal(r.status.current?.step, 'Reboot');
  assert.equal(r.status.current?.reboot, undefined);
  assert.deepEqual(r.action, { kind: 'none' });
  const late = advanceHost(
    input({
      status: r.status,
      target,
      observed: observed({ node: { unschedulable: true, bootId: undefined } }),
      now: later(timeouts.readyTimeoutMs),
    }),
  );
  assert.equal(late.status.current?.failure?.reason, ConditionReason.RebootTimedOut);
  assert.match(
    late.status.current!.failure!.message,
    /Node win-web-1 reported no boot id within spec\.readyTimeout 15m, so no reboot was asked for/,
  );
});

test('a reboot request reboots once: after the change the same request is served', () => {
  const requestedAt = '2025-06-07T00:30:00Z';
  const target: RolloutTarget = { patchPolicy: 'None', rebootRequestedAt: requestedAt };
  const first = advanceHost(
    input({
      start: true,
      target,
      observed: observed({
        node: { unschedulable: true, cordonedByWinfleet: true },
        drained: true,
      }),
    }),
  );
  assert.deepEqual(first.status.current?.changes, ['reboot-requested']);
  assert.equal(first.status.current?.step, 'Reboot');
  const back = advanceHost(
    input({
      status: first.status,
      target,
      observed: observed({ node: { cordonedByWinfleet: true, unschedulable: true, bootId: '42' } }),
      now: later(minute),
    }),
  );
  const done = advanceHost(
    input({
      status: back.status,
      target,
      observed: observed({ node: { bootId: '42' } }),
      now: later(2 * minute),
    }),
  );
  assert.deepEqual(done.status, {
    lastRebootAt: apiTime(t0),
    lastChange: { endedAt: apiTime(later(2 * minute)) },
  });
  // Planned again with the same request: nothing to do.
  const again = advanceHost(
    input({
      status: done.status,
      start: true,
      target,
      observed: observed({ node: { bootId: '42' } }),
      now: later(3 * minute),
    }),
  );
  assert.deepEqual(again.status, done.status);
  assert.deepEqual(again.action, { kind: 'none' });
});

test('a drain past spec.drainTimeout stops: Warning naming host, node, timeout and pods; nothing forced', () => {
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const status = change('Drain');
  const early = advanceHost(
    input({ status, observed: observed({ node: cordoned }), now: later(10 * minute - 1) }),
  );
  assert.deepEqual(early.action, { kind: 'drain' });
  const blocked = observed({ node: cordoned, drainBlockers: ['shop/web-7d9f-abc'] });
  const stopped = advanceHost(input({ status, observed: blocked, now: later(10 * minute) }));
  assert.deepEqual(stopped.action, { kind: 'none' });
  const failure = stopped.status.current?.failure;
  assert.equal(failure?.step, 'Drain');
  assert.equal(failure?.reason, ConditionReason.DrainTimedOut);
  assert.equal(failure?.since, apiTime(later(10 * minute)));
  assert.equal(
    failure?.message,
    'windows/win-web-1: draining Node win-web-1 did not finish within spec.drainTimeout 10m; pods left: shop/web-7d9f-abc. Nothing was forced: let the PodDisruptionBudgets allow the evictions (or move the pods), then retry the step: kubectl annotate --overwrite windowshost -n windows win-web-1 winfleet.io/retry-rollout=$(date +%s)',
  );
  assert.deepEqual(stopped.events, [
    { type: 'Warning', reason: EventReason.DrainTimedOut, message: failure!.message },
  ]);
  assert.equal(stopped.recheckAt, undefined, 'a stopped step waits for a person or the world');

  // Still stopped later: no eviction, no new Event, nothing to write.
  const still = advanceHost(
    input({ status: stopped.status, observed: blocked, now: later(60 * minute) }),
  );
  assert.equal(still.status, stopped.status);
  assert.deepEqual(still.action, { kind: 'none' });
  assert.deepEqual(still.events, []);

  // A retry restarts the step's clock and drains again.
  const retried = advanceHost(
    input({
      status: stopped.status,
      observed: { ...blocked, retryAnnotation: 'now' },
      now: later(61 * minute),
    }),
  );
  assert.equal(retried.retryConsumed, true);
  assert.equal(retried.status.current?.failure, undefined);
  assert.equal(retried.status.current?.stepStartedAt, apiTime(later(61 * minute)));
  assert.deepEqual(retried.action, { kind: 'drain' });
  assert.deepEqual(
    retried.events.map((e) => [e.reason, e.message]),
    [[EventReason.RolloutResumed, 'Drain goes on: winfleet.io/retry-rollout was set']],
  );
});

test('a host that does not come back from its reboot stops the change; when it does come back, the change goes on', () => {
  const target: RolloutTarget = { patchPolicy: 'None', rebootRequestedAt: '2025-06-07T00:00:00Z' };
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const status: HostRolloutStatus = {
    current: {
      target,
      changes: ['reboot-requested'],
      step: 'Reboot',
      startedAt: apiTime(t0),
      stepStartedAt: apiTime(t0),
      reboot: { token: 'reboot-x', bootIdBefore: '41', requestedAt: apiTime(t0) },
    },
  };
  const gone = observed({ node: { ...cordoned, ready: false } });
  const stopped = advanceHost(input({ status, target, observed: gone, now: later(15 * minute) }));
  assert.equal(stopped.status.current?.failure?.reason, ConditionReason.RebootTimedOut);
  assert.match(
    stopped.status.current!.failure!.message,
    /^windows\/win-web-1: Node win-web-1 did not come back from its reboot within spec\.readyTimeout 15m/,
  );
  assert.deepEqual(stopped.action, { kind: 'none' }, 'no second reboot request');
  const back = advanceHost(
    input({
      status: stopped.status,
      target,
      observed: observed({ node: { ...cordoned, bootId: '42' } }),
      now: later(40 * minute),
    }),
  );
  assert.deepEqual(
    back.events.map((e) => [e.reason, e.message]),
    [[EventReason.RolloutResumed, 'Reboot goes on: the host got there after all']],
  );
  assert.equal(back.status.current?.step, 'Uncordon');
  assert.equal(back.status.lastRebootAt, apiTime(t0));
  assert.deepEqual(back.action, { kind: 'uncordon' });
});

test('a stopped repair reboot whose request remediation withdrew ends: uncordon, no second reboot', () => {
  const target: RolloutTarget = { patchPolicy: 'None', repairRequestedAt: '2025-06-07T00:30:00Z' };
  const cordoned = { unschedulable: true, cordonedByWinfleet: true, ready: false };
  const status: HostRolloutStatus = {
    current: {
      target,
      changes: ['repair'],
      step: 'Reboot',
      startedAt: apiTime(t0),
      stepStartedAt: apiTime(t0),
      reboot: { token: 'reboot-x', bootIdBefore: '41', requestedAt: apiTime(t0) },
      failure: {
        step: 'Reboot',
        reason: 'RebootTimedOut',
        message: 'did not come back',
        since: apiTime(later(15 * minute)),
      },
    },
  };
  const gone = observed({ node: cordoned });
  // Still asked for: it stays stopped.
  const kept = advanceHost(input({ status, target, observed: gone, now: later(16 * minute) }));
  assert.equal(kept.status.current?.failure?.reason, 'RebootTimedOut');
  assert.deepEqual(kept.action, { kind: 'none' });
  // Withdrawn (the ladder ended): the change leaves Reboot for Uncordon, its failure cleared.
  const withdrawn: RolloutTarget = { patchPolicy: 'None' };
  const ended = advanceHost(
    input({ status, target: withdrawn, observed: gone, now: later(16 * minute) }),
  );
  assert.equal(ended.status.current?.step, 'Uncordon');
  assert.equal(ended.status.current?.failure, undefined);
  assert.deepEqual(ended.action, { kind: 'uncordon' });
  // A reboot a person asked for is not withdrawn with it.
  const both: HostRolloutStatus = {
    current: { ...status.current!, changes: ['reboot-requested', 'repair'] },
  };
  const stays = advanceHost(
    input({
      status: both,
      target: { ...withdrawn, rebootRequestedAt: '2025-06-07T00:00:00Z' },
      observed: gone,
      now: later(16 * minute),
    }),
  );
  assert.equal(stays.status.current?.step, 'Reboot');
});

test('apply and ready timeouts name the step, the change and what the agent said', () => {
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const apply = advanceHost(
    input({
      status: change('Apply'),
      observed: observed({ node: cordoned, agentError: 'kubelet: service did not start' }),
      now: later(15 * minute),
    }),
  );
  assert.equal(apply.status.current?.failure?.reason, ConditionReason.ApplyTimedOut);
  assert.equal(
    apply.status.current?.failure?.message,
    `windows/win-web-1: the agent did not apply services ${v2} within spec.readyTimeout 15m; the agent says: kubelet: service did not start. Check the agent's log on the host, then retry the step: kubectl annotate --overwrite windowshost -n windows win-web-1 winfleet.io/retry-rollout=$(date +%s)`,
  );
  assert.deepEqual(
    apply.events.map((e) => [e.type, e.reason]),
    [['Warning', EventReason.ApplyTimedOut]],
  );
  const ready = advanceHost(
    input({
      status: change('WaitReady'),
      observed: observed({
        node: { ...cordoned, ready: false },
        facts: { servicesVersion: v2, availableUpdates: [], rebootPending: false },
      }),
      now: later(15 * minute),
    }),
  );
  assert.equal(ready.status.current?.failure?.reason, ConditionReason.ReadyTimedOut);
  assert.match(
    ready.status.current!.failure!.message,
    /Node win-web-1 was not Ready on services v1\.36\.6-wf\.1 within spec\.readyTimeout 15m/,
  );
  const cordon = advanceHost(
    input({
      status: change('Cordon'),
      observed: observed({ node: null }),
      now: later(10 * minute),
    }),
  );
  assert.equal(cordon.status.current?.failure?.reason, ConditionReason.DrainTimedOut);
  assert.match(
    cordon.status.current!.failure!.message,
    /its Node could not be cordoned within spec\.drainTimeout 10m/,
  );
});

test('a new target before anything is applied is taken; nothing left to do uncordons', () => {
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const v3 = 'v1.36.7-wf.1';
  const newer = advanceHost(
    input({
      status: change('Drain'),
      target: { servicesVersion: v3, patchPolicy: 'None' },
      observed: observed({ node: cordoned }),
    }),
  );
  assert.equal(newer.status.current?.target.servicesVersion, v3);
  assert.equal(newer.status.current?.step, 'Drain');
  // The pool went back to what the host runs: nothing to do.
  const back = advanceHost(
    input({
      status: change('Drain'),
      target: { servicesVersion: v1, patchPolicy: 'None' },
      observed: observed({ node: cordoned }),
    }),
  );
  assert.equal(back.status.current?.step, 'Uncordon');
  assert.deepEqual(back.action, { kind: 'uncordon' });
  const finished = advanceHost(
    input({ status: back.status, target: { servicesVersion: v1, patchPolicy: 'None' } }),
  );
  assert.deepEqual(finished.status, { lastChange: { endedAt: apiTime(t0) } });
  assert.deepEqual(
    finished.events.map((e) => e.message),
    ['Nothing is left to change on Node win-web-1; it is uncordoned'],
  );
});

test('a new target in Apply is applied; in WaitReady it goes back to Apply; a reboot in flight is finished first', () => {
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const v3 = 'v1.36.7-wf.1';
  const target3: RolloutTarget = { servicesVersion: v3, patchPolicy: 'None' };
  const apply = advanceHost(
    input({ status: change('Apply'), target: target3, observed: observed({ node: cordoned }) }),
  );
  assert.deepEqual(apply.action, { kind: 'apply', target: target3 });
  const wait = advanceHost(
    input({
      status: change('WaitReady'),
      target: target3,
      observed: observed({
        node: cordoned,
        facts: { servicesVersion: v2, availableUpdates: [], rebootPending: false },
      }),
      now: later(minute),
    }),
  );
  assert.equal(wait.status.current?.step, 'Apply');
  assert.equal(wait.status.current?.stepStartedAt, apiTime(later(minute)));
  assert.deepEqual(wait.action, { kind: 'apply', target: target3 });
  const rebooting = change('Reboot', {
    reboot: { token: 'reboot-a', bootIdBefore: '41', requestedAt: apiTime(t0) },
  });
  const keep = advanceHost(
    input({ status: rebooting, target: target3, observed: observed({ node: cordoned }) }),
  );
  assert.equal(keep.status, rebooting);
  assert.deepEqual(keep.action, { kind: 'reboot', token: 'reboot-a' });
});

test('patches: installed updates that leave a reboot pending lead to one reboot', () => {
  const target: RolloutTarget = { patchPolicy: 'Security' };
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const start = advanceHost(
    input({
      start: true,
      target,
      observed: observed({
        node: cordoned,
        drained: true,
        facts: { servicesVersion: v1, availableUpdates: [cumulative], rebootPending: false },
      }),
    }),
  );
  assert.deepEqual(start.status.current?.changes, ['patches']);
  assert.deepEqual(start.action, { kind: 'apply', target });
  const installed = advanceHost(
    input({
      status: start.status,
      target,
      observed: observed({
        node: cordoned,
        facts: { servicesVersion: v1, availableUpdates: [], rebootPending: true },
      }),
    }),
  );
  assert.equal(installed.status.current?.step, 'Reboot');
  assert.equal(installed.action.kind, 'reboot');
});

test('a host being deleted is left to its removal', () => {
  const status = change('Drain');
  const r = advanceHost(
    input({
      status,
      observed: observed({
        deleting: true,
        node: { unschedulable: true, cordonedByWinfleet: true },
      }),
    }),
  );
  assert.equal(r.status, status);
  assert.deepEqual(r.action, { kind: 'none' });
  const idle = advanceHost(
    input({
      observed: observed({
        deleting: true,
        node: { unschedulable: true, cordonedByWinfleet: true },
      }),
    }),
  );
  assert.deepEqual(idle.action, { kind: 'none' }, 'removal cordoned it: not a stray cordon');
});

test('a retry annotation with nothing stopped is used up and changes nothing', () => {
  const r = advanceHost(
    input({
      status: change('Drain'),
      observed: observed({
        node: { unschedulable: true, cordonedByWinfleet: true },
        retryAnnotation: '1',
      }),
    }),
  );
  assert.equal(r.retryConsumed, true);
  assert.deepEqual(r.action, { kind: 'drain' });
  assert.deepEqual(r.events, []);
  const idle = advanceHost(input({ observed: observed({ retryAnnotation: '1' }) }));
  assert.equal(idle.retryConsumed, true);
});

// The operator killed at any moment: a simulated node and agent, and a controller loop that
// records the status, then acts — and crashes at random between or instead of the two.

test('property: killed at random moments and reading a lagging cache, the change converges: node uncordoned, target applied, exactly one reboot when one is needed', (t) => {
  fc.assert(
    fc.property(
      fc.record({
        services: fc.boolean(),
        patches: fc.boolean(),
        rebootRequest: fc.boolean(),
        pods: fc.nat(7),
        applyDelay: fc.nat(4),
        rebootDelay: fc.nat(4),
        // Per pass: 0 = runs through, 1 = killed before writing status, 2 = killed after
        // writing status, before the action.
        crashes: fc.array(fc.constantFrom(0, 0, 0, 1, 2), { minLength: 200, maxLength: 200 }),
        // Per pass: how many passes behind the operator's cache is (it never goes backwards).
        lags: fc.array(fc.nat(3), { minLength: 200, maxLength: 200 }),
      }),
      ({ services, patches, rebootRequest, pods, applyDelay, rebootDelay, crashes, lags }) => {
        fc.pre(services || patches || rebootRequest);
        const target: RolloutTarget = {
          servicesVersion: services ? v2 : v1,
          patchPolicy: patches ? 'Security' : 'None',
          ...(rebootRequest ? { rebootRequestedAt: '2025-06-07T00:00:00Z' } : {}),
        };
        const world = simulatedHost('win-web-1', {
          pods,
          applyDelay,
          rebootDelay,
          updates: patches ? [cumulative] : [],
        });
        const cache = laggingCache();
        let stored: HostRolloutStatus = {};
        let started = false;
        let finished = false;
        for (let pass = 0; pass < crashes.length && !finished; pass++) {
          cache.record(observe(world));
          const r = advanceHost({
            host,
            status: stored,
            observed: cache.read(lags[pass]!),
            target,
            start: !started || stored.current === undefined,
            timeouts,
            now: later(pass * 1000), // one second a pass: no deadline passes
          });
          const crash = crashes[pass];
          if (crash !== 1) {
            stored = r.status;
            if (stored.current) started = true;
            if (crash !== 2) act(world, r.action);
          }
          if (started && !stored.current && !world.cordonedByWinfleet) finished = true;
          tick(world);
        }
        assert.ok(finished, 'the change finished');
        assert.equal(world.cordonedByWinfleet, false, 'no node left cordoned');
        assert.equal(world.unschedulable, false);
        assert.equal(world.pods, 0, 'drained before the change');
        if (services) assert.equal(world.servicesVersion, v2);
        assert.deepEqual(world.updates, []);
        const rebootNeeded = patches || rebootRequest;
        assert.equal(world.reboots, rebootNeeded ? 1 : 0, 'one reboot, never two');
        if (rebootNeeded) assert.ok(stored.lastRebootAt);
      },
    ),
    { seed: testSeed(t), numRuns: 300 },
  );
});

const stepArbitrary = fc.constantFrom(
  'Cordon',
  'Drain',
  'Apply',
  'Reboot',
  'WaitReady',
  'Uncordon',
) as fc.Arbitrary<HostChange['step']>;

const stateArbitrary: fc.Arbitrary<HostRolloutStatus> = fc
  .option(
    fc.record({
      step: stepArbitrary,
      services: fc.boolean(),
      reboot: fc.option(fc.constantFrom('41', '42'), { nil: undefined }),
      failed: fc.boolean(),
      startedMinutesAgo: fc.nat(30),
    }),
    { nil: undefined },
  )
  .map((s): HostRolloutStatus => {
    if (!s) return {};
    const at = apiTime(later(-s.startedMinutesAgo * minute));
    return {
      current: {
        target: s.services
          ? upgrade
          : { patchPolicy: 'None', rebootRequestedAt: '2025-06-06T00:00:00Z' },
        changes: s.services ? ['services'] : ['reboot-requested'],
        step: s.step,
        startedAt: at,
        stepStartedAt: at,
        ...(s.reboot && s.step === 'Reboot'
          ? { reboot: { token: 'reboot-a', bootIdBefore: s.reboot, requestedAt: at } }
          : {}),
        ...(s.failed && s.step !== 'Uncordon'
          ? {
              failure: {
                step: s.step,
                reason: ConditionReason.DrainTimedOut,
                message: 'm',
                since: at,
              },
            }
          : {}),
      },
    };
  });

const observationArbitrary: fc.Arbitrary<HostObservation> = fc
  .record({
    node: fc.option(
      fc.record({
        ready: fc.boolean(),
        unschedulable: fc.boolean(),
        cordonedByWinfleet: fc.boolean(),
        bootId: fc.option(fc.constantFrom('41', '42'), { nil: undefined }),
      }),
      { nil: null },
    ),
    drained: fc.boolean(),
    servicesVersion: fc.constantFrom(v1, v2),
    rebootPending: fc.boolean(),
    retryAnnotation: fc.option(fc.constantFrom('1', '2'), { nil: undefined }),
    deleting: fc.boolean(),
  })
  .map(({ node, servicesVersion, rebootPending, ...rest }) =>
    observed({
      node:
        node === null
          ? null
          : { ...node, unschedulable: node.unschedulable || node.cordonedByWinfleet },
      facts: { servicesVersion, availableUpdates: [], rebootPending },
      ...rest,
    }),
  );

test('property: level-triggered — run again on what it recorded and the same world, it records and does the same', (t) => {
  fc.assert(
    fc.property(stateArbitrary, observationArbitrary, fc.boolean(), (status, seen, start) => {
      const first = advanceHost(input({ status, observed: seen, start }));
      const again = advanceHost(input({ status: first.status, observed: seen, start: false }));
      assert.deepEqual(again.status, first.status);
      assert.deepEqual(again.action, first.action);
    }),
    { seed: testSeed(t), numRuns: 2000 },
  );
});

test('property: it only ever asks what its step allows — nothing for a deleted or stopped host, one token per reboot', (t) => {
  fc.assert(
    fc.property(stateArbitrary, observationArbitrary, fc.boolean(), (status, seen, start) => {
      const r = advanceHost(input({ status, observed: seen, start }));
      const step = r.status.current?.step;
      if (seen.deleting) assert.deepEqual(r.action, { kind: 'none' });
      if (r.status.current?.failure) assert.deepEqual(r.action, { kind: 'none' });
      switch (r.action.kind) {
        case 'cordon':
          assert.equal(step, 'Cordon');
          break;
        case 'drain':
          assert.equal(step, 'Drain');
          break;
        case 'apply':
          assert.equal(step, 'Apply');
          break;
        case 'reboot': {
          assert.equal(step, 'Reboot');
          assert.equal(r.action.token, r.status.current!.reboot!.token);
          const before = status.current?.reboot;
          // A second token only when a person retries a stopped reboot (a new retry value).
          const retried =
            status.current?.failure !== undefined &&
            seen.retryAnnotation !== undefined &&
            seen.retryAnnotation !== status.retryHandled;
          if (before && status.current?.step === 'Reboot' && !retried)
            assert.equal(r.action.token, before.token, 'never a second token');
          break;
        }
        case 'uncordon':
          assert.ok(step === 'Uncordon' || r.status.current === undefined);
          assert.equal(seen.node?.cordonedByWinfleet, true, 'only winfleet’s own cordon is undone');
          break;
        case 'none':
          break;
      }
    }),
    { seed: testSeed(t), numRuns: 2000 },
  );
});

test('one reboot per change: a reboot still pending after it (or a stale report of one) waits for the next change', () => {
  const cordoned = { unschedulable: true, cordonedByWinfleet: true, bootId: '42' };
  const rebooted = change('WaitReady', {
    target: { patchPolicy: 'None', rebootRequestedAt: '2025-06-07T00:00:00Z' },
    changes: ['reboot-requested'],
    reboot: { token: 'reboot-a', bootIdBefore: '41', requestedAt: apiTime(t0) },
  });
  // The pool moved to a new payload meanwhile: back to Apply, applied, Windows says reboot.
  const r = advanceHost(
    input({
      status: rebooted,
      target: upgrade,
      observed: observed({
        node: cordoned,
        facts: { servicesVersion: v2, availableUpdates: [], rebootPending: true },
      }),
    }),
  );
  assert.notEqual(r.status.current?.step, 'Reboot');
  assert.notEqual(r.action.kind, 'reboot');
  assert.deepEqual(r.action, { kind: 'uncordon' });
});

test('after patches, WaitReady needs a report from the new boot; an update offered again then times out instead of looping', () => {
  const target: RolloutTarget = { patchPolicy: 'Security' };
  const waiting: HostRolloutStatus = {
    current: {
      target,
      changes: ['patches'],
      step: 'WaitReady',
      startedAt: apiTime(t0),
      stepStartedAt: apiTime(t0),
      reboot: { token: 'reboot-1', bootIdBefore: 'old', requestedAt: apiTime(t0) },
    },
    lastRebootAt: apiTime(t0),
  };
  const facts = (updatesReported: boolean, availableUpdates: AvailableUpdate[]) =>
    observed({
      node: { unschedulable: true, cordonedByWinfleet: true, bootId: 'new' },
      facts: { servicesVersion: v1, availableUpdates, rebootPending: false, updatesReported },
    });
  // Ready in the new boot, but the agent has not searched yet: no news is not good news.
  const early = advanceHost(input({ status: waiting, target, observed: facts(false, []) }));
  assert.equal(early.status.current?.step, 'WaitReady');
  // It searched: the update is offered again (Windows rolled it back at boot).
  const rolledBack = advanceHost(
    input({ status: waiting, target, observed: facts(true, [cumulative]) }),
  );
  assert.equal(rolledBack.status.current?.step, 'WaitReady');
  const late = advanceHost(
    input({
      status: waiting,
      target,
      observed: facts(true, [cumulative]),
      now: later(timeouts.readyTimeoutMs),
    }),
  );
  assert.equal(late.status.current?.failure?.reason, ConditionReason.ReadyTimedOut);
  // It searched and the update stayed installed: on to Uncordon.
  const done = advanceHost(input({ status: waiting, target, observed: facts(true, []) }));
  assert.equal(done.status.current?.step, 'Uncordon');
});

test('a retry of a stopped Reboot asks with a new token (the old one may be recorded by an agent that failed to shut down)', () => {
  const target: RolloutTarget = { patchPolicy: 'None', rebootRequestedAt: apiTime(t0) };
  const stopped: HostRolloutStatus = {
    current: {
      target,
      changes: ['reboot-requested'],
      step: 'Reboot',
      startedAt: apiTime(t0),
      stepStartedAt: apiTime(t0),
      reboot: { token: 'reboot-1', bootIdBefore: 'b1', requestedAt: apiTime(t0) },
      failure: {
        step: 'Reboot',
        reason: ConditionReason.RebootTimedOut,
        message: 'did not come back',
        since: apiTime(later(timeouts.readyTimeoutMs)),
      },
    },
  };
  const node = { unschedulable: true, cordonedByWinfleet: true, bootId: 'b1' };
  const still = advanceHost(input({ status: stopped, target, observed: observed({ node }) }));
  assert.deepEqual(still.action, { kind: 'none' }, 'stopped: nothing without a retry');
  const retried = advanceHost(
    input({
      status: stopped,
      target,
      observed: observed({ node, retryAnnotation: '1' }),
      now: later(20 * minute),
    }),
  );
  const token = retried.status.current?.reboot?.token;
  assert.ok(token && token !== 'reboot-1', `a new token: ${token}`);
  assert.deepEqual(retried.action, { kind: 'reboot', token });
  assert.equal(retried.status.current?.failure, undefined);
});

test('set aside (security review 3, item 5): a stopped change the pool lets go of ends, uncordoned; a retry clears it', () => {
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const blocked = observed({ node: cordoned, drainBlockers: ['shop/web-7d9f-abc'] });
  const at = later(10 * minute);
  const aside = advanceHost(
    input({ status: change('Drain'), observed: blocked, now: at, mayAside: true }),
  );
  assert.equal(aside.status.current, undefined, 'the change ended');
  assert.equal(aside.status.setAside?.cause, 'ChangeFailed');
  assert.equal(aside.status.setAside?.since, apiTime(at));
  assert.match(aside.status.setAside!.message, /^windows\/win-web-1: draining Node win-web-1/);
  assert.match(
    aside.status.setAside!.message,
    /windows\/win-web-1 is set aside: its change ended, its node is uncordoned, and the pool's rollout goes on without it; once fixed, clear it with: kubectl annotate --overwrite windowshost -n windows win-web-1 winfleet\.io\/retry-rollout=\$\(date \+%s\)$/,
  );
  assert.deepEqual(aside.status.lastChange, { endedAt: apiTime(at) });
  assert.deepEqual(aside.action, { kind: 'uncordon' });
  assert.deepEqual(
    aside.events.map((e) => [e.type, e.reason]),
    [
      ['Warning', EventReason.DrainTimedOut],
      ['Warning', EventReason.HostSetAside],
    ],
  );
  // Later passes: nothing starts on it, even when the planner says start; no new Event.
  const uncordoned = observed({ drainBlockers: [] });
  const still = advanceHost(
    input({ status: aside.status, observed: uncordoned, start: true, now: later(20 * minute) }),
  );
  assert.equal(still.status, aside.status);
  assert.deepEqual(still.action, { kind: 'none' });
  assert.deepEqual(still.events, []);
  // A change already stopped (an operator before this one, or the pool's cap now free) too.
  const stopped = advanceHost(input({ status: change('Drain'), observed: blocked, now: at }));
  assert.ok(stopped.status.current?.failure, 'without mayAside it stops, as before');
  const later1 = advanceHost(
    input({ status: stopped.status, observed: blocked, now: later(11 * minute), mayAside: true }),
  );
  assert.equal(later1.status.setAside?.cause, 'ChangeFailed');
  assert.equal(later1.status.current, undefined);
  // winfleet.io/retry-rollout clears it: the host starts again when planned.
  const cleared = advanceHost(
    input({
      status: aside.status,
      observed: { ...uncordoned, retryAnnotation: '1' },
      start: true,
      now: later(30 * minute),
    }),
  );
  assert.equal(cleared.status.setAside, undefined);
  assert.equal(cleared.retryConsumed, true);
  assert.equal(cleared.status.current?.changes[0], 'services', 'started again');
  assert.equal(cleared.events[0]?.reason, EventReason.RolloutResumed);
});

test('set aside: a reboot pending that survives the reboot made for it is not served again until a retry', () => {
  const rebootOnly: RolloutTarget = { servicesVersion: v1, patchPolicy: 'None' };
  const pending = observed({
    facts: { servicesVersion: v1, availableUpdates: [], rebootPending: true },
  });
  const started = advanceHost(
    input({ target: rebootOnly, observed: pending, start: true, mayAside: false }),
  );
  assert.deepEqual(started.status.current?.changes, ['reboot-pending']);
  // The reboot is asked for and made (boot id 41 → 42); in the new boot Windows still says a
  // reboot is pending (the agent's report is the node's own word).
  const drained = observed({
    node: { unschedulable: true, cordonedByWinfleet: true },
    drained: true,
    facts: { servicesVersion: v1, availableUpdates: [], rebootPending: true },
  });
  const asked = advanceHost(
    input({ target: rebootOnly, status: started.status, observed: drained }),
  );
  assert.deepEqual(asked.action.kind, 'reboot');
  const rebooted = observed({
    node: { bootId: '42' },
    facts: { servicesVersion: v1, availableUpdates: [], rebootPending: true },
  });
  const done = advanceHost(
    input({ target: rebootOnly, status: asked.status, observed: rebooted, now: later(minute) }),
  );
  assert.equal(done.status.current, undefined, 'the change finished');
  assert.deepEqual(done.status.lastChange, {
    endedAt: apiTime(later(minute)),
    servedRebootPending: true,
  });
  assert.equal(done.status.setAside?.cause, 'RebootPendingPersists');
  assert.match(
    done.status.setAside!.message,
    /^windows\/win-web-1: Windows on Node win-web-1 still reports a reboot pending after the reboot winfleet made for it, so it is set aside/,
  );
  assert.deepEqual(
    done.events.map((e) => e.reason),
    [EventReason.HostSetAside, EventReason.RolloutFinished],
  );
  // Planned again, it does not start: no second reboot for the same claim.
  const again = advanceHost(
    input({
      target: rebootOnly,
      status: done.status,
      observed: rebooted,
      start: true,
      now: later(2 * minute),
    }),
  );
  assert.equal(again.status.current, undefined);
  assert.deepEqual(again.action, { kind: 'none' });
  // The same claim found only on a later pass (the report came after the change ended) sets it
  // aside then.
  const { setAside: _none, ...beforeReport } = done.status;
  const late = advanceHost(
    input({ target: rebootOnly, status: beforeReport, observed: rebooted, now: later(3 * minute) }),
  );
  assert.equal(late.status.setAside?.cause, 'RebootPendingPersists');
  // A retry serves the claim once more.
  const retried = advanceHost(
    input({
      target: rebootOnly,
      status: done.status,
      observed: { ...rebooted, retryAnnotation: 'x' },
      start: true,
      now: later(4 * minute),
    }),
  );
  assert.equal(retried.status.setAside, undefined);
  assert.deepEqual(retried.status.current?.changes, ['reboot-pending']);
  // A reboot pending after a change that was not made for one (patches that need a reboot)
  // is served: that is what Windows asks for after an update.
  const afterPatches = advanceHost(
    input({
      target: rebootOnly,
      status: { lastChange: { endedAt: apiTime(t0) } },
      observed: pending,
      start: true,
    }),
  );
  assert.deepEqual(afterPatches.status.current?.changes, ['reboot-pending']);
});

test('set aside after a failure, a host Ready again in a new boot is cleared by itself and starts again in turn', () => {
  const aside: HostRolloutStatus = {
    lastChange: { endedAt: apiTime(t0) },
    setAside: { cause: 'ChangeFailed', message: 'x', since: apiTime(t0), bootId: '41' },
  };
  const same = advanceHost(input({ status: aside, start: true, now: later(minute) }));
  assert.equal(same.status, aside, 'the same boot: still set aside');
  const down = advanceHost(
    input({ status: aside, observed: observed({ node: { ready: false, bootId: '42' } }) }),
  );
  assert.ok(down.status.setAside, 'not Ready: still set aside');
  const back = advanceHost(
    input({ status: aside, observed: observed({ node: { bootId: '42' } }), start: true }),
  );
  assert.equal(back.status.setAside, undefined);
  assert.equal(back.status.current?.step, 'Cordon', 'started again');
  assert.equal(back.events[0]?.reason, EventReason.RolloutResumed);
  // A pending reboot that survived is not cleared by a boot: only a retry clears it.
  const pendingAside: HostRolloutStatus = {
    lastChange: { endedAt: apiTime(t0), servedRebootPending: true },
    setAside: { cause: 'RebootPendingPersists', message: 'y', since: apiTime(t0) },
  };
  const rebooted = advanceHost(
    input({ status: pendingAside, observed: observed({ node: { bootId: '42' } }), start: true }),
  );
  assert.equal(rebooted.status, pendingAside);
});

test('spec.prePull: WaitReady waits for this boot and version’s pulls to end, then uncordons; without it, Ready alone', () => {
  const cordoned = { unschedulable: true, cordonedByWinfleet: true };
  const onTarget = { servicesVersion: v2, availableUpdates: [], rebootPending: false };
  const withPrePull = { ...timeouts, prePullWaitMs: 17 * minute };
  const at = (node: Partial<ObservedNode>, now = t0, t: StepInput['timeouts'] = withPrePull) =>
    advanceHost(
      input({
        status: change('WaitReady'),
        observed: observed({ node: { ...cordoned, ...node }, facts: onTarget }),
        timeouts: t,
        now,
      }),
    );
  // No run of this boot and version reported yet (none, or a PrePulled from before the
  // upgrade: prePullState leaves it out), then pulling: wait, looking again when the wait ends.
  for (const prePull of [undefined, 'pulling'] as const) {
    const waiting = at(prePull ? { prePull } : {}, later(minute));
    assert.equal(waiting.status.current?.step, 'WaitReady');
    assert.deepEqual(waiting.action, { kind: 'none' });
    assert.equal(waiting.recheckAt?.toISOString(), later(17 * minute).toISOString());
  }
  // The pulls ended (pulled, failed or timed out: the agent's ending, whatever it is): uncordon.
  const ended = at({ prePull: 'ended' }, later(minute));
  assert.equal(ended.status.current?.step, 'Uncordon');
  assert.deepEqual(ended.action, { kind: 'uncordon' });
  // The wait counts from when the Node was Ready, if that came after the step began.
  const readyLate = { readySince: apiTime(later(5 * minute)), prePull: 'pulling' as const };
  assert.equal(at(readyLate, later(21 * minute)).status.current?.step, 'WaitReady');
  assert.equal(at(readyLate, later(22 * minute)).status.current?.step, 'Uncordon');
  // Past spec.readyTimeout (15m) while Ready and pulling: no ReadyTimedOut, it waits on.
  const long = at({ prePull: 'pulling' }, later(16 * minute));
  assert.equal(long.status.current?.failure, undefined);
  assert.deepEqual(long.events, []);
  // An agent that never reports keeps no node cordoned: the wait passes, then uncordon.
  const silent = at({}, later(17 * minute));
  assert.equal(silent.status.current?.step, 'Uncordon');
  assert.equal(silent.status.current?.failure, undefined);
  // A Node that is not Ready still fails at spec.readyTimeout, as without pre-pull.
  const notReady = at({ ready: false, prePull: 'ended' }, later(15 * minute));
  assert.equal(notReady.status.current?.failure?.reason, ConditionReason.ReadyTimedOut);
  // Without spec.prePull: Ready on the target is enough, whatever the Node says of pulls.
  assert.equal(at({ prePull: 'pulling' }, t0, timeouts).status.current?.step, 'Uncordon');
  assert.equal(at({}, t0, timeouts).status.current?.step, 'Uncordon');
});
