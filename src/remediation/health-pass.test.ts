/**
 * The remediation core: health from Node conditions, the ladder rung by rung with its timeouts,
 * recovery, maxUnhealthy, the skip annotation, restarts, and the reboot rung only ever as a
 * request to the rollout.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import type { HostRemediationStatus } from '../api/remediation-status.ts';
import type { HostRolloutStatus } from '../api/rollout-status.ts';
import { apiTime } from '../kube/api-time.ts';
import { type HealthPassHost, healthPass, holdFor, hostConditionSamples } from './health-pass.ts';
import { checkHealthSpec, defaultHealthPolicy } from './health-spec.ts';
import { assessHealth, type NodeCondition } from './host-health.ts';

const t0 = Date.parse('2025-06-07T10:00:00Z');
const at = (minutes: number) => new Date(t0 + minutes * 60_000);
const iso = (minutes: number) => apiTime(at(minutes));
const policy = defaultHealthPolicy;

function node(conditions: NodeCondition[]) {
  return { name: 'win-a', conditions };
}
const ready = (since = -60): NodeCondition => ({
  type: 'Ready',
  status: 'True',
  lastTransitionTime: iso(since),
});
/** Ready=Unknown: the node controller's mark once the Node's heartbeats stop. */
const lost = (since: number): NodeCondition => ({
  type: 'Ready',
  status: 'Unknown',
  lastTransitionTime: iso(since),
  reason: 'NodeStatusUnknown',
});
const kubeletDown = (since: number): NodeCondition => ({
  type: 'KubeletUnhealthy',
  status: 'True',
  lastTransitionTime: iso(since),
  reason: 'HealthzFailed',
});

function host(key: string, extra: Partial<HealthPassHost> = {}): HealthPassHost {
  return {
    key,
    status: {},
    node: node([ready()]),
    bootstrappedAt: iso(-120),
    cordonedByRemediation: false,
    skipRemediation: false,
    deleting: false,
    ...extra,
  };
}

test('health: a condition counts from its lastTransitionTime; the host is unhealthy past its timeout', () => {
  const input = { node: node([ready(), kubeletDown(0)]), bootstrappedAt: iso(-120), policy };
  const early = assessHealth({ ...input, now: at(1) });
  assert.equal(early.holding.length, 1);
  assert.deepEqual(early.due, []);
  assert.equal(early.dueAt?.getTime(), at(2).getTime());
  const late = assessHealth({ ...input, now: at(2) });
  assert.equal(late.due[0]?.type, 'KubeletUnhealthy');
  // A time in the future counts from now: never due early.
  const future = assessHealth({ ...input, node: node([ready(), kubeletDown(60)]), now: at(1) });
  assert.deepEqual(future.due, []);
});

test('health: a Node that never reports Ready within nodeStartupTimeout of the bootstrap is unhealthy', () => {
  const input = { bootstrappedAt: iso(0), policy };
  assert.deepEqual(assessHealth({ ...input, now: at(14) }).due, []);
  assert.equal(assessHealth({ ...input, now: at(15) }).due[0]?.type, 'NodeStartup');
  // Not bootstrapped yet: the join controller reports it, not health.
  assert.deepEqual(assessHealth({ policy, now: at(60) }).holding, []);
});

/** Runs passes of one host every `step` minutes, feeding back the recorded status. */
function drive(
  h: HealthPassHost,
  minutes: number[],
  world: (m: number, h: HealthPassHost) => Partial<HealthPassHost> = () => ({}),
  pol = policy,
) {
  let current = h;
  const log: { m: number; result: ReturnType<typeof healthPass> }[] = [];
  for (const m of minutes) {
    current = { ...current, ...world(m, current) };
    const result = healthPass({
      pool: 'windows/web',
      policy: pol,
      specProblems: [],
      hosts: [current],
      now: at(m),
    });
    current = { ...current, status: result.hosts.get(current.key)!.status };
    log.push({ m, result });
  }
  return { host: current, log };
}

const everyMinute = (to: number) => Array.from({ length: to + 1 }, (_, i) => i);

test('each rung is reached in order, each at its timeout, then RemediationFailed leaves it cordoned', () => {
  // The kubelet stays down whatever is done; the rollout reboots when asked, at once.
  let rebootAt: string | undefined;
  const { host: end, log } = drive(
    host('windows/win-a', { node: node([ready(), kubeletDown(0)]) }),
    everyMinute(60),
    (m, h) => {
      const requested = h.status.current?.reboot?.requestedAt;
      if (requested && !rebootAt && m >= 25) rebootAt = requested; // the rollout took a while
      const rollout: HostRolloutStatus = rebootAt ? { lastRebootAt: rebootAt } : {};
      return { rollout, cordonedByRemediation: h.status.failed !== undefined && m > 50 };
    },
  );
  const rungs = log.map(({ m, result }) => ({ m, s: result.hosts.get('windows/win-a')! }));
  const firstAt = (rung: string) => rungs.find((r) => r.s.status.current?.rung === rung)?.m;
  assert.equal(firstAt('RestartService'), 2, 'KubeletUnhealthy 2m');
  assert.equal(firstAt('Rebootstrap'), 7, 'restartServiceTimeout 5m');
  assert.equal(firstAt('Reboot'), 22, 'rebootstrapTimeout 15m');
  // The reboot is only ever a request to the rollout; done at minute 25, 15m to be healthy.
  const failedAt = rungs.find((r) => r.s.status.failed)?.m;
  assert.equal(failedAt, 40);
  const actions = end.status.lastActions!.map((a) => `${a.rung}:${a.result}`);
  assert.deepEqual(actions, ['RestartService:TimedOut', 'Rebootstrap:TimedOut', 'Reboot:TimedOut']);
  assert.equal(rungs.find((r) => r.m === 40)!.s.action.kind, 'cordon');
  assert.equal(rungs.find((r) => r.m === 60)!.s.action.kind, 'none', 'cordoned already');
  assert.equal(rungs.find((r) => r.m === 40)!.s.degraded?.reason, 'RemediationFailed');
  // Rebootstrap asked once, with one request time, while it ran.
  const rebootstraps = new Set(
    rungs.filter((r) => r.s.action.kind === 'rebootstrap').map((r) => JSON.stringify(r.s.action)),
  );
  assert.equal(rebootstraps.size, 1);
  const counter = log.flatMap(({ result }) =>
    result.metrics.filter((s) => s.name === 'winfleet_remediations_total').map((s) => s.labels),
  );
  assert.deepEqual(
    counter.map((l) => `${l.rung}:${l.result}`),
    actions,
  );
});

test('a host that recovers mid-ladder stops it (Succeeded), and a remediation cordon is lifted', () => {
  const { host: end, log } = drive(
    host('windows/win-a', { node: node([ready(), kubeletDown(0)]) }),
    everyMinute(12),
    (m) => (m === 10 ? { node: node([ready()]) } : {}),
  );
  assert.equal(log[9]!.result.hosts.get('windows/win-a')!.status.current?.rung, 'Rebootstrap');
  assert.equal(end.status.current, undefined);
  assert.deepEqual(
    end.status.lastActions!.map((a) => `${a.rung}:${a.result}`),
    ['RestartService:TimedOut', 'Rebootstrap:Succeeded'],
  );
  const after = drive({ ...end, cordonedByRemediation: true }, [13]);
  assert.equal(after.log[0]!.result.hosts.get('windows/win-a')!.action.kind, 'uncordon');
});

test('a restart loop and a Node that never started begin at Rebootstrap', () => {
  const loop = drive(
    host('windows/win-a', {
      node: node([
        ready(),
        { type: 'FrequentServiceRestart', status: 'True', lastTransitionTime: iso(0) },
      ]),
    }),
    [0],
  );
  assert.equal(loop.host.status.current?.rung, 'Rebootstrap');
  assert.deepEqual(loop.log[0]!.result.hosts.get('windows/win-a')!.action, {
    kind: 'rebootstrap',
    requestedAt: iso(0),
  });
  const never = drive(host('windows/win-b', { node: undefined, bootstrappedAt: iso(0) }), [15]);
  assert.equal(never.host.status.current?.rung, 'Rebootstrap');
});

test('a host that cannot be re-bootstrapped (Pull mode) skips the rung, says why, and goes on to Reboot', () => {
  const why = 'the host is in Pull mode and winfleet never reaches it over SSH';
  // After RestartService times out: Rebootstrap recorded Skipped, the reboot asked at once.
  const { host: end, log } = drive(
    host('windows/win-a', { node: node([ready(), kubeletDown(0)]), rebootstrapUnavailable: why }),
    everyMinute(8),
  );
  assert.equal(log[7]!.result.hosts.get('windows/win-a')!.status.current?.rung, 'Reboot');
  assert.ok(
    log.every(({ result }) => result.hosts.get('windows/win-a')!.action.kind !== 'rebootstrap'),
  );
  assert.equal(end.status.current?.reboot?.requestedAt, iso(7));
  assert.equal(log[7]!.result.hosts.get('windows/win-a')!.repairRebootRequestedAt, iso(7));
  assert.deepEqual(
    end.status.lastActions!.map((a) => `${a.rung}:${a.result}`),
    ['RestartService:TimedOut', 'Rebootstrap:Skipped'],
  );
  assert.match(
    end.status.lastActions![1]!.message,
    /rung Rebootstrap skipped: .*Pull mode.*; next: Reboot$/,
  );
  assert.match(end.status.lastActions![0]!.message, /next: Reboot$/);
  const events = log[7]!.result.hosts.get('windows/win-a')!.events.map((e) => e.reason);
  assert.deepEqual(events, ['RemediationEscalated', 'RemediationRungSkipped']);
  // A restart loop, which would start at Rebootstrap, starts at Reboot.
  const loop = drive(
    host('windows/win-b', {
      node: node([
        ready(),
        { type: 'FrequentServiceRestart', status: 'True', lastTransitionTime: iso(0) },
      ]),
      rebootstrapUnavailable: why,
    }),
    [0],
  );
  assert.equal(loop.host.status.current?.rung, 'Reboot');
  assert.equal(loop.host.status.current?.reboot?.requestedAt, iso(0));
  assert.deepEqual(
    loop.host.status.lastActions!.map((a) => `${a.rung}:${a.result}`),
    ['Rebootstrap:Skipped'],
  );
});

test('a failed re-bootstrap escalates at once to a reboot request; a stopped repair change fails the ladder', () => {
  const { log } = drive(
    host('windows/win-a', { node: node([ready(), kubeletDown(0)]) }),
    [2, 7, 8, 9],
    (m) =>
      m === 8
        ? { bootstrapError: { time: iso(8), message: 'agent bootstrap: kubelet: exit 1' } }
        : m === 9
          ? {
              rollout: {
                current: {
                  target: { patchPolicy: 'None', rebootRequestedAt: iso(8) },
                  changes: ['repair'] as never,
                  step: 'Drain',
                  startedAt: iso(8),
                  stepStartedAt: iso(8),
                  failure: {
                    step: 'Drain',
                    reason: 'DrainTimedOut',
                    message: 'draining did not finish',
                    since: iso(9),
                  },
                },
              },
            }
          : {},
  );
  const r8 = log[2]!.result.hosts.get('windows/win-a')!;
  assert.equal(r8.status.current?.rung, 'Reboot');
  assert.equal(r8.repairRebootRequestedAt, iso(8));
  const r9 = log[3]!.result.hosts.get('windows/win-a')!;
  assert.ok(r9.status.failed);
  assert.equal(r9.status.lastActions!.at(-1)!.result, 'Failed');
});

test('maxUnhealthy: 3 of 5 unhealthy → nothing starts and the pool is Degraded; 1 recovers → the other 2 proceed', () => {
  const keys = ['a', 'b', 'c', 'd', 'e'].map((k) => `windows/win-${k}`);
  const sick = new Set(keys.slice(0, 3));
  let hosts = keys.map((k) => host(k, { node: node(sick.has(k) ? [lost(0)] : [ready()]) }));
  const pass = (m: number) => {
    const r = healthPass({ pool: 'windows/web', policy, specProblems: [], hosts, now: at(m) });
    hosts = hosts.map((h) => ({ ...h, status: r.hosts.get(h.key)!.status }));
    return r;
  };
  for (const m of [5, 7, 10]) {
    const r = pass(m);
    assert.equal(r.shortCircuited, true);
    assert.equal(r.maxUnhealthy, 2);
    assert.equal(r.degraded?.reason, 'TooManyUnhealthy');
    assert.match(r.degraded!.message, /spec\.health\.maxUnhealthy 40% \(2 of 5\)/);
    assert.match(r.degraded!.message, /windows\/win-a, windows\/win-b, windows\/win-c/);
    for (const k of keys) {
      assert.equal(r.hosts.get(k)!.action.kind, 'none');
      assert.equal(r.hosts.get(k)!.status.current?.rung, undefined, `${k}: no ladder starts`);
    }
  }
  hosts = hosts.map((h) => (h.key === keys[0] ? { ...h, node: node([ready()]) } : h));
  const r = pass(11);
  assert.equal(r.shortCircuited, false);
  assert.equal(r.degraded, undefined);
  assert.equal(r.hosts.get(keys[1]!)!.status.current?.rung, 'RestartService');
  assert.equal(r.hosts.get(keys[2]!)!.status.current?.rung, 'RestartService');
  assert.equal(r.hosts.get(keys[0]!)!.status.current, undefined);
});

test('winfleet.io/skip-remediation: reported and counted, never repaired; a ladder under way holds', () => {
  const skipped = drive(
    host('windows/win-a', { node: node([ready(), kubeletDown(0)]), skipRemediation: true }),
    everyMinute(60),
  );
  assert.equal(skipped.host.status.current, undefined);
  assert.ok(
    skipped.log.every(({ result }) => result.hosts.get('windows/win-a')!.action.kind === 'none'),
  );
  assert.deepEqual(skipped.log.at(-1)!.result.unhealthy, ['windows/win-a']);
  // Set mid-ladder: it holds (no rung moves on, no request), then goes on with a fresh clock.
  const { log } = drive(
    host('windows/win-a', { node: node([ready(), kubeletDown(0)]) }),
    everyMinute(40),
    (m) => ({ skipRemediation: m >= 8 && m < 30 }),
  );
  const held = log
    .filter(({ m }) => m >= 8 && m < 30)
    .map(({ result }) => result.hosts.get('windows/win-a')!);
  assert.ok(
    held.every((r) => r.status.current?.rung === 'Rebootstrap' && r.action.kind === 'none'),
  );
  assert.equal(held.at(-1)!.status.current?.held?.reason, 'SkipAnnotation');
  const resumed = log.find(({ m }) => m === 30)!.result.hosts.get('windows/win-a')!;
  assert.equal(resumed.status.current?.rungStartedAt, iso(30));
  assert.equal(resumed.action.kind, 'rebootstrap');
});

test('a host in a rollout change of its pool’s own is not remediated (it is down on purpose)', () => {
  const rollout: HostRolloutStatus = {
    current: {
      target: { patchPolicy: 'Security' },
      changes: ['patches'],
      step: 'Reboot',
      startedAt: iso(0),
      stepStartedAt: iso(0),
    },
  };
  const r = drive(
    host('windows/win-a', {
      node: node([{ type: 'Ready', status: 'Unknown', lastTransitionTime: iso(0) }]),
      rollout,
    }),
    [10],
  );
  assert.equal(r.host.status.current, undefined);
  assert.deepEqual(r.log[0]!.result.unhealthy, []);
});

test('property: restarts and lost writes never repeat a rung, rungs only climb, the reboot is only a rollout request, and a Pull host is never re-bootstrapped', (t) => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          gap: fc.integer({ min: 0, max: 7 }),
          crash: fc.boolean(),
          recover: fc.boolean(),
        }),
        {
          minLength: 5,
          maxLength: 40,
        },
      ),
      fc.integer({ min: 0, max: 10 }),
      fc.boolean(),
      (steps, rebootDelay, pull) => {
        let recorded: HostRemediationStatus = {};
        let m = 0;
        let sickSince: number | undefined = 0;
        let lastRebootAt: string | undefined;
        const requests = new Map<string, Set<string>>();
        for (const step of steps) {
          m += step.gap;
          if (step.recover && sickSince !== undefined && m > 30) sickSince = undefined;
          const requested = recorded.current?.reboot?.requestedAt;
          if (
            requested &&
            !lastRebootAt &&
            m >= Date.parse(requested) / 60_000 - t0 / 60_000 + rebootDelay
          ) {
            lastRebootAt = requested;
          }
          const h = host('windows/win-a', {
            status: recorded,
            node: node(sickSince === undefined ? [ready()] : [ready(), kubeletDown(sickSince)]),
            ...(lastRebootAt ? { rollout: { lastRebootAt } } : {}),
            // A Pull-mode host: Rebootstrap is never asked for.
            ...(pull ? { rebootstrapUnavailable: 'Pull mode' } : {}),
          });
          const r = healthPass({
            pool: 'p',
            policy,
            specProblems: [],
            hosts: [h],
            now: at(m),
          }).hosts.get(h.key)!;
          // A crash between computing and writing: nothing recorded, nothing acted on.
          if (step.crash) continue;
          const before = recorded.current;
          const after = r.status.current;
          if (before && after && before.startedAt === after.startedAt) {
            const order = ['RestartService', 'Rebootstrap', 'Reboot'];
            assert.ok(order.indexOf(after.rung) >= order.indexOf(before.rung), 'rungs only climb');
          }
          // One request per rung per ladder, however often the pass runs.
          const ladder = after?.startedAt;
          if (r.action.kind === 'rebootstrap' && ladder) {
            const s = requests.get(`${ladder}/rebootstrap`) ?? new Set();
            s.add(r.action.requestedAt);
            requests.set(`${ladder}/rebootstrap`, s);
            assert.equal(s.size, 1, 'one re-bootstrap request per ladder');
            assert.equal(r.repairRebootRequestedAt, undefined, 'never two rungs at once');
          }
          if (r.repairRebootRequestedAt && ladder) {
            assert.equal(after?.rung, 'Reboot');
            const s = requests.get(`${ladder}/reboot`) ?? new Set();
            s.add(r.repairRebootRequestedAt);
            requests.set(`${ladder}/reboot`, s);
            assert.equal(s.size, 1, 'one reboot request per ladder');
          }
          assert.notEqual(r.action.kind as string, 'reboot', 'no reboot but through the rollout');
          if (pull) {
            assert.notEqual(r.action.kind, 'rebootstrap', 'no re-bootstrap of a Pull host');
            assert.notEqual(after?.rung, 'Rebootstrap');
          }
          recorded = r.status;
        }
      },
    ),
    { seed: testSeed(t), numRuns: 300 },
  );
});

test('checkHealthSpec: absent health is the defaults; a bad field keeps its default and is named', () => {
  assert.deepEqual(checkHealthSpec(undefined), { policy: { ...policy }, problems: [] });
  const { policy: p, problems } = checkHealthSpec({
    maxUnhealthy: 'lots',
    nodeStartupTimeout: '20m',
  });
  assert.deepEqual(p.maxUnhealthy, policy.maxUnhealthy);
  assert.equal(p.nodeStartupTimeoutMs, 1_200_000);
  assert.match(problems.join(), /^Cannot parse spec\.health\.maxUnhealthy "lots"/);
  const r = healthPass({
    pool: 'p',
    policy: p,
    specProblems: problems,
    hosts: [host('n/h', { node: node([ready(), kubeletDown(0)]) })],
    now: at(10),
  });
  assert.equal(r.degraded?.reason, 'InvalidSpec');
  assert.equal(r.hosts.get('n/h')!.status.current, undefined, 'no repair with a spec problem');
});

test('maxUnhealthy counts only what the control plane saw: one node faking every condition cannot stop the repair of a lost host in a pool of 4', () => {
  const keys = ['a', 'b', 'c', 'd'].map((k) => `windows/win-${k}`);
  const [liar, victim] = keys as [string, string];
  // The liar writes every condition of the default policy on its own Node (its credentials may),
  // Ready=False included (the kubelet's own), all since minute 0.
  const faked: NodeCondition[] = [
    { type: 'Ready', status: 'False', lastTransitionTime: iso(0), reason: 'KubeletNotReady' },
    ...[
      'KubeletUnhealthy',
      'ContainerRuntimeUnhealthy',
      'KubeProxyUnhealthy',
      'HNSNetworkMissing',
      'FrequentServiceRestart',
      'ClockSkew',
    ].map((type) => ({ type, status: 'True', lastTransitionTime: iso(0) })),
  ];
  const hosts = keys.map((k) =>
    host(k, { node: node(k === liar ? faked : k === victim ? [lost(0)] : [ready()]) }),
  );
  const r = healthPass({ pool: 'windows/web', policy, specProblems: [], hosts, now: at(6) });
  assert.equal(r.maxUnhealthy, 1, '40% of 4, at least 1');
  assert.deepEqual(r.unhealthy, [liar, victim]);
  assert.deepEqual(r.selfReported, [liar]);
  assert.equal(r.shortCircuited, false, 'the liar is not counted');
  assert.equal(r.degraded, undefined);
  assert.equal(
    r.hosts.get(victim)!.status.current?.rung,
    'RestartService',
    'the lost host is repaired',
  );
  // The liar's own ladder runs: its lies cost only itself.
  assert.ok(r.hosts.get(liar)!.status.current, 'the liar is repaired too (its own ladder)');
  // Two hosts the control plane lost are still a mass failure: the liar is named as not counted.
  const two = hosts.map((h) => (h.key === keys[2] ? { ...h, node: node([lost(0)]) } : h));
  const held = healthPass({
    pool: 'windows/web',
    policy,
    specProblems: [],
    hosts: two,
    now: at(6),
  });
  assert.equal(held.shortCircuited, true);
  assert.match(
    held.degraded!.message,
    /^2 of 4 hosts are unhealthy \(windows\/win-b, windows\/win-c\), more than spec\.health\.maxUnhealthy 40% \(1 of 4\).*; not counted, as only their own Node conditions say so: windows\/win-a$/,
  );
});

test('a host the rollout set aside fails the reboot rung at once: its repair reboot will not come', () => {
  const { log } = drive(
    host('windows/win-a', { node: node([ready(), kubeletDown(0)]) }),
    [2, 7, 8, 9],
    (m) =>
      m === 8
        ? { bootstrapError: { time: iso(8), message: 'agent bootstrap: kubelet: exit 1' } }
        : m === 9
          ? {
              rollout: {
                setAside: {
                  cause: 'ChangeFailed' as const,
                  message: 'windows/win-a: draining did not finish. windows/win-a is set aside',
                  since: iso(9),
                },
              },
            }
          : {},
  );
  assert.equal(log[2]!.result.hosts.get('windows/win-a')!.status.current?.rung, 'Reboot');
  const r9 = log[3]!.result.hosts.get('windows/win-a')!;
  assert.ok(r9.status.failed, 'RemediationFailed, not a wait without end');
  assert.equal(r9.status.lastActions!.at(-1)!.result, 'Failed');
  assert.match(r9.status.lastActions!.at(-1)!.message, /cannot run: .*is set aside/);
});

test('holdFor: the skip annotation, disabled, a bad spec, maxUnhealthy, then a change of the pool own, in that order', () => {
  const enabled = { policy, specProblems: [] as string[] };
  const disabled = { policy: { ...policy, remediationEnabled: false }, specProblems: [] };
  const badSpec = { policy, specProblems: ['spec.health.maxUnhealthy: bad'] };
  const inChange: HostRolloutStatus = {
    current: {
      target: { patchPolicy: 'None' },
      changes: ['services'],
      step: 'Drain',
      startedAt: iso(0),
      stepStartedAt: iso(0),
    },
  };
  const repairing: HostRolloutStatus = {
    current: { ...inChange.current!, changes: ['repair'] },
  };
  const plain = { skipRemediation: false };
  assert.equal(holdFor(enabled, plain, false), undefined);
  assert.equal(
    holdFor(enabled, { skipRemediation: true, rollout: inChange }, true),
    'SkipAnnotation',
  );
  assert.equal(holdFor(disabled, { ...plain, rollout: inChange }, true), 'Disabled');
  assert.equal(holdFor(badSpec, { ...plain, rollout: inChange }, true), 'InvalidSpec');
  assert.equal(holdFor(enabled, { ...plain, rollout: inChange }, true), 'TooManyUnhealthy');
  assert.equal(holdFor(enabled, { ...plain, rollout: inChange }, false), 'InRollout');
  // The ladder's own repair reboot is no other change: it does not hold the ladder.
  assert.equal(holdFor(enabled, { ...plain, rollout: repairing }, false), undefined);
});

test('hostConditionSamples: one gauge sample per holding Node condition, none for NodeStartup', () => {
  const problem = (type: string, status: string) => ({ type, status, since: iso(0), timeoutMs: 1 });
  const health = {
    holding: [problem('NodeStartup', 'Unknown'), problem('KubeletUnhealthy', 'True')],
  };
  assert.deepEqual(hostConditionSamples('ns/pool', 'ns/win-a', health), [
    {
      name: 'winfleet_host_condition',
      labels: {
        pool: 'ns/pool',
        namespace: 'ns',
        host: 'win-a',
        condition: 'KubeletUnhealthy',
        status: 'True',
      },
      value: 1,
    },
  ]);
  // A key without a namespace names the host, with an empty namespace.
  assert.deepEqual(
    hostConditionSamples('default', 'win-b', health).map((m) => m.labels),
    [
      {
        pool: 'default',
        namespace: '',
        host: 'win-b',
        condition: 'KubeletUnhealthy',
        status: 'True',
      },
    ],
  );
  assert.deepEqual(hostConditionSamples('default', 'win-b', { holding: [] }), []);
});
