/**
 * The pure part of `lab:fault --watch`: what is watched per fault, the lines printed for each
 * change, and when the watch stops (repaired, needs a person, timeout), fed with sequences of
 * host snapshots as the API server would show them; and the loop, with a reader that replays
 * them and a fake clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  clip,
  closingLines,
  formatElapsed,
  type HostSnapshot,
  observe,
  outcomeOf,
  parseWatchTimeout,
  remediationOf,
  type SeenCondition,
  startWatch,
  type WatchPlan,
  type WatchState,
  watchFault,
  watchPlanFor,
} from './fault-watch.ts';

const healthy = { status: 'False', reason: 'ServiceHealthy' };
const ready = { status: 'True', reason: 'KubeletReady' };

function snap(
  conditions: Record<string, SeenCondition>,
  more: Partial<HostSnapshot> = {},
): HostSnapshot {
  return {
    node: { conditions, unschedulable: false },
    remediation: { lastActions: [] },
    events: [],
    ...more,
  };
}

/** Feeds the snapshots one per second; returns every line and the outcome, if any. */
function replay(plan: WatchPlan, baseline: HostSnapshot, looks: HostSnapshot[]) {
  let state: WatchState = startWatch(baseline);
  const lines: string[] = [];
  for (const [i, look] of looks.entries()) {
    const step = observe(plan, state, look, (i + 1) * 1000);
    state = step.state;
    lines.push(...step.lines);
    const outcome = outcomeOf(plan, state, (i + 1) * 1000);
    if (outcome) return { lines, outcome, state, looks: i + 1 };
  }
  return { lines, outcome: undefined, state, looks: looks.length };
}

test('what is watched per fault', () => {
  const plan = (request: Parameters<typeof watchPlanFor>[0]) => watchPlanFor(request);
  assert.deepEqual(plan({ host: 'h', fault: 'service-down', service: 'kubelet' }), {
    conditions: ['KubeletUnhealthy', 'FrequentServiceRestart'],
    events: ['ServiceRestarted'],
    eventPrefix: 'kubelet ',
    readyIsSignal: false,
    needsPerson: false,
    recovery: false,
  });
  // A service without a condition of its own: only its ServiceRestarted Event shows it.
  assert.deepEqual(plan({ host: 'h', fault: 'service-down', service: 'csi-proxy' }).conditions, [
    'FrequentServiceRestart',
  ]);
  assert.deepEqual(plan({ host: 'h', fault: 'crash-loop', service: 'containerd' }).conditions, [
    'FrequentServiceRestart',
    'ContainerRuntimeUnhealthy',
  ]);
  assert.deepEqual(plan({ host: 'h', fault: 'hns-delete' }).conditions, ['HNSNetworkMissing']);
  assert.deepEqual(plan({ host: 'h', fault: 'clock-skew', seconds: -600 }).conditions, [
    'ClockSkew',
  ]);
  const disk = plan({ host: 'h', fault: 'disk-full' });
  assert.deepEqual(
    [disk.conditions, disk.events, disk.needsPerson],
    [['SystemDiskLow'], ['SystemDiskLow'], true],
  );
  const gone = plan({ host: 'h', fault: 'unreachable' });
  assert.deepEqual([gone.conditions, gone.readyIsSignal, gone.needsPerson], [[], true, true]);
  const clear = plan({ host: 'h', fault: 'clear' });
  assert.equal(clear.recovery, true);
  assert.ok(clear.conditions.includes('ClockSkew') && clear.conditions.includes('SystemDiskLow'));
});

test('clock skew: condition True, then False: repaired by the agent, times from injection', () => {
  const plan = watchPlanFor({ host: 'h', fault: 'clock-skew', seconds: 600 });
  const before = snap({ Ready: ready, ClockSkew: healthy });
  const skewed = snap({
    Ready: ready,
    ClockSkew: { status: 'True', reason: 'ClockSkewed', message: 'clock is 600 s ahead' },
  });
  const run = replay(plan, before, [before, skewed, skewed, before]);
  assert.deepEqual(run.lines, [
    '+    2.0s  Node ClockSkew: False → True (ClockSkewed: clock is 600 s ahead)',
    '+    2.0s  detected',
    '+    4.0s  Node ClockSkew: True → False (ServiceHealthy)',
  ]);
  assert.deepEqual(run.outcome, {
    kind: 'repaired',
    afterMs: 4000,
    detectedAfterMs: 2000,
    by: 'the agent (no rung)',
  });
  assert.deepEqual(closingLines(run.outcome, run.state, 4000, 'x clear'), [
    'repaired after 4.0s (detected after 2.0s; by the agent (no rung))',
  ]);
});

test('healthy at first is not "repaired": the watch waits until the fault was noticed', () => {
  const plan = watchPlanFor({ host: 'h', fault: 'hns-delete' });
  const fine = snap({ Ready: ready, HNSNetworkMissing: healthy });
  const run = replay(plan, fine, [fine, fine, fine]);
  assert.equal(run.outcome, undefined);
  assert.deepEqual(run.lines, []);
  assert.deepEqual(closingLines(undefined, run.state, 900_000, 'x clear'), [
    'not repaired within 900.0s (not detected; still: nothing wrong seen, but the fault was not detected)',
  ]);
});

test('crash loop: the ladder, its rung results and Ready; stops only once the ladder ended', () => {
  const plan = watchPlanFor({ host: 'h', fault: 'crash-loop', service: 'kubelet' });
  const base = snap(
    { Ready: ready, FrequentServiceRestart: healthy },
    {
      remediation: {
        lastActions: [{ time: '2026-11-23T04:00:00Z', rung: 'Reboot', result: 'Succeeded' }],
      },
    },
  );
  const looping = {
    Ready: { status: 'False', reason: 'KubeletNotReady' },
    FrequentServiceRestart: { status: 'True', reason: 'RestartLoop', message: 'kubelet\nloops' },
  };
  const ladder = {
    current: { rung: 'Rebootstrap', problem: 'FrequentServiceRestart True' },
    lastActions: base.remediation!.lastActions,
  };
  const done = {
    lastActions: [
      ...base.remediation!.lastActions,
      {
        time: '2026-11-23T05:00:00Z',
        rung: 'Rebootstrap',
        result: 'Succeeded',
        message: 'healthy again',
      },
    ],
  };
  const run = replay(plan, base, [
    snap(looping),
    snap(looping, { remediation: ladder }),
    // Healthy again but the ladder has not recorded its result yet: keep watching.
    snap({ Ready: ready, FrequentServiceRestart: healthy }, { remediation: ladder }),
    snap({ Ready: ready, FrequentServiceRestart: healthy }, { remediation: done }),
  ]);
  assert.deepEqual(run.lines, [
    '+    1.0s  Node Ready: True → False (KubeletNotReady)',
    '+    1.0s  Node FrequentServiceRestart: False → True (RestartLoop: kubelet loops)',
    '+    1.0s  detected',
    '+    2.0s  ladder: rung Rebootstrap (for FrequentServiceRestart True)',
    '+    3.0s  Node Ready: False → True (KubeletReady)',
    '+    3.0s  Node FrequentServiceRestart: True → False (ServiceHealthy)',
    '+    4.0s  ladder: ended',
    '+    4.0s  Rebootstrap:Succeeded healthy again',
  ]);
  assert.equal(run.looks, 4);
  assert.deepEqual(run.outcome, {
    kind: 'repaired',
    afterMs: 4000,
    detectedAfterMs: 1000,
    by: 'rung Rebootstrap',
  });
});

test("service down: only that service's ServiceRestarted Event counts; old Events are not news", () => {
  const plan = watchPlanFor({ host: 'h', fault: 'service-down', service: 'kubelet' });
  const old = {
    uid: 'u0',
    reason: 'ServiceRestarted',
    type: 'Warning',
    about: 'Node h',
    message: 'kubelet ended earlier',
  };
  const base = snap({ Ready: ready }, { events: [old] });
  const other = {
    ...old,
    uid: 'u1',
    message: 'kube-proxy ended and was started again since the check 5 s ago',
  };
  const mine = { ...old, uid: 'u2', message: 'kubelet ended and was started again' };
  const run = replay(plan, base, [
    snap({ Ready: ready }, { events: [old] }),
    snap({ Ready: ready }, { events: [old, other] }),
    snap({ Ready: ready }, { events: [old, other, mine] }),
  ]);
  assert.deepEqual(run.lines, [
    '+    2.0s  Event ServiceRestarted (Warning) on Node h: kube-proxy ended and was started again since the check 5 s ago',
    '+    3.0s  Event ServiceRestarted (Warning) on Node h: kubelet ended and was started again',
    '+    3.0s  detected',
  ]);
  assert.equal(run.outcome?.kind, 'repaired');
  assert.equal(run.outcome?.afterMs, 3000);
});

test('disk full and unreachable stop once noticed and say who must act', () => {
  const disk = watchPlanFor({ host: 'h', fault: 'disk-full' });
  const full = { status: 'True', reason: 'FreeSpaceLow', message: 'C:\\ has 0 B free' };
  const lowEvent = {
    uid: 'e1',
    reason: 'SystemDiskLow',
    type: 'Warning',
    about: 'Node h',
    message: 'System drive C:\\ has 0 MiB free',
  };
  const diskRun = replay(disk, snap({ Ready: ready, SystemDiskLow: healthy }), [
    snap({ Ready: ready, SystemDiskLow: healthy }),
    // The Event comes first: noticed, but the watch goes on until the condition.
    snap({ Ready: ready, SystemDiskLow: healthy }, { events: [lowEvent] }),
    snap({ Ready: ready, SystemDiskLow: full }, { events: [lowEvent] }),
  ]);
  assert.deepEqual(diskRun.outcome, { kind: 'needs-person', afterMs: 3000 });
  assert.equal(diskRun.state.detectedAfterMs, 2000);
  assert.deepEqual(closingLines(diskRun.outcome, diskRun.state, 3000, 'lab h clear'), [
    "detected after 2.0s, on the Node's conditions after 3.0s; needs a person: nothing in winfleet repairs this fault; run lab h clear",
  ]);

  const gone = watchPlanFor({ host: 'h', fault: 'unreachable' });
  const unknown = { status: 'Unknown', reason: 'NodeStatusUnknown' };
  const goneRun = replay(gone, snap({ Ready: ready }), [
    snap({ Ready: ready }),
    // A failed read of the Node keeps the last one: it is not the host going away.
    { events: [] },
    snap({ Ready: unknown }),
  ]);
  assert.deepEqual(goneRun.lines, [
    '+    3.0s  Node Ready: True → Unknown (NodeStatusUnknown)',
    '+    3.0s  detected',
  ]);
  assert.deepEqual(goneRun.outcome, { kind: 'needs-person', afterMs: 3000 });
});

test('clear: stops once Ready, no health condition True, no ladder and no RemediationFailed', () => {
  const plan = watchPlanFor({ host: 'h', fault: 'clear' });
  const failed = snap(
    { Ready: { status: 'Unknown' } },
    { remediation: { failed: 'every rung ran', lastActions: [] } },
  );
  const back = snap(
    { Ready: ready },
    { remediation: { failed: 'every rung ran', lastActions: [] } },
  );
  const run = replay(plan, failed, [
    failed,
    back,
    { ...snap({ Ready: ready }), node: { conditions: { Ready: ready }, unschedulable: false } },
  ]);
  assert.equal(run.outcome?.kind, 'repaired');
  assert.equal(run.outcome?.afterMs, 3000);
  assert.deepEqual(closingLines(run.outcome, run.state, 3000, 'x'), [
    'healthy again after 3.0s (by clear)',
  ]);
  // Cordon changes are printed.
  const cordoned = replay(plan, failed, [
    { ...failed, node: { conditions: { Ready: { status: 'Unknown' } }, unschedulable: true } },
  ]);
  assert.deepEqual(cordoned.lines, ['+    1.0s  Node cordoned']);
});

test('timeout: what is still wrong is named', () => {
  const plan = watchPlanFor({ host: 'h', fault: 'clock-skew', seconds: 600 });
  const skewed = snap(
    { Ready: ready, ClockSkew: { status: 'True' } },
    { remediation: { current: { rung: 'RestartService' }, lastActions: [] } },
  );
  const run = replay(plan, snap({ Ready: ready }), [skewed]);
  assert.equal(run.outcome, undefined);
  assert.deepEqual(closingLines(undefined, run.state, 10_000, 'x'), [
    'not repaired within 10.0s (detected after 1.0s; still: ClockSkew True, ladder at RestartService)',
  ]);
});

test('text from the cluster is clipped and loses control characters', () => {
  assert.equal(clip('a\u001b[31mred\r\nnext'), 'a [31mred next');
  assert.equal(clip('x'.repeat(300), 10), `${'x'.repeat(9)}…`);
  assert.equal(formatElapsed(61_234), '+   61.2s');
});

test('status.remediation read from untyped JSON, wrong types dropped', () => {
  assert.deepEqual(remediationOf({}), { lastActions: [] });
  assert.deepEqual(
    remediationOf({
      status: {
        remediation: {
          current: {
            rung: 'Reboot',
            problem: { type: 'Ready', status: 'Unknown' },
            held: { reason: 'InRollout' },
          },
          failed: { message: 42 },
          lastActions: [
            { time: 't', rung: 'Rebootstrap', result: 'Failed', message: 'ssh refused' },
            { rung: 7 },
          ],
        },
      },
    }),
    {
      current: { rung: 'Reboot', problem: 'Ready Unknown', held: 'InRollout' },
      failed: 'RemediationFailed',
      lastActions: [
        { time: 't', rung: 'Rebootstrap', result: 'Failed', message: 'ssh refused' },
        { time: '', rung: '?', result: '?' },
      ],
    },
  );
});

test('--timeout: whole seconds within 10..3600, else a message naming the flag', () => {
  assert.equal(parseWatchTimeout('10'), 10);
  assert.equal(parseWatchTimeout('3600'), 3600);
  for (const bad of ['9', '3601', '1e3', '-5', '60s', '', '0x20']) {
    assert.throws(
      () => parseWatchTimeout(bad),
      /^RangeError: --timeout ".*" is not whole seconds from 10 to 3600/,
    );
  }
});

test('the loop: reads until the outcome (exit 0), or gives up at the timeout (exit 1)', async () => {
  const plan = watchPlanFor({ host: 'h', fault: 'hns-delete' });
  const fine = snap({ Ready: ready, HNSNetworkMissing: healthy });
  const missing = snap({ Ready: ready, HNSNetworkMissing: { status: 'True' } });
  let clock = 0;
  const looks = [{ ...fine, error: 'ECONNREFUSED' }, missing, missing, fine];
  const out: string[] = [];
  const code = await watchFault({
    plan,
    read: async () => {
      clock += 500;
      return looks.shift() ?? fine;
    },
    state: startWatch(fine),
    injectedAt: 0,
    timeoutSeconds: 60,
    clearCommand: 'x',
    out: (l) => out.push(l),
    now: () => clock,
    intervalMs: 0,
  });
  assert.equal(code, 0);
  assert.deepEqual(out, [
    '+    0.5s  (API server read failed: ECONNREFUSED; still trying)',
    '+    1.0s  (API server reads work again)',
    '+    1.0s  Node HNSNetworkMissing: False → True',
    '+    1.0s  detected',
    '+    2.0s  Node HNSNetworkMissing: True → False (ServiceHealthy)',
    'repaired after 2.0s (detected after 1.0s; by the agent (no rung))',
  ]);

  clock = 0;
  let reads = 0;
  const never: string[] = [];
  const timedOut = await watchFault({
    plan,
    read: async () => {
      reads++;
      clock += 1000;
      return fine;
    },
    state: startWatch(fine),
    injectedAt: 0,
    timeoutSeconds: 10,
    clearCommand: 'x',
    out: (l) => never.push(l),
    now: () => clock,
    intervalMs: 0,
  });
  assert.equal(timedOut, 1);
  assert.equal(reads, 10);
  assert.match(never.at(-1)!, /^not repaired within 10\.0s \(not detected;/);
});
