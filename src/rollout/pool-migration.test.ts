/**
 * Pool-to-pool migration's pure core: spec.replaces checked (same namespace only, no cycle, no
 * rival), who may retire a pool's hosts (retiringBy), the gate (Waiting, Invalid, Blocked,
 * Migrating, Complete), and retirement through the engine — Cordon → Drain, then left cordoned,
 * at most maxUnavailable at a time, resumed after an operator kill, undone when the migration
 * stops.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason } from '../api/reasons.ts';
import type { HostRolloutStatus } from '../api/rollout-status.ts';
import type {
  PoolMigrationStatus,
  WindowsNodePool,
  WindowsNodePoolSpec,
} from '../api/windows-node-pool.ts';
import { act, observe, simulatedHost, tick } from './fixtures/simulated-hosts.ts';
import { advanceHost } from './host-steps.ts';
import { migrationGate, replacesProblem, retiringBy } from './pool-migration.ts';
import { poolPass } from './pool-pass.ts';
import { checkPoolSpec } from './pool-spec.ts';

function pool(
  namespace: string,
  name: string,
  spec: Partial<WindowsNodePoolSpec> = {},
  migration?: PoolMigrationStatus,
): WindowsNodePool {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsNodePool',
    metadata: { namespace, name, generation: 3 },
    spec: { selector: { matchLabels: { pool: name } }, ...spec },
    ...(migration ? { status: { migration } } : {}),
  };
}

const migrating = (replaces: string): PoolMigrationStatus => ({
  replaces,
  phase: 'Migrating',
  observedGeneration: 3,
  oldHosts: 2,
  retiredHosts: 0,
  message: '',
});

test('spec.replaces names a pool of the same namespace, not itself, not a cycle, not a rival', () => {
  const old = pool('win', 'win2019');
  const fresh = pool('win', 'win2022', { replaces: 'win2019' });
  assert.equal(replacesProblem(fresh, [old, fresh]), undefined);
  assert.equal(replacesProblem(old, [old, fresh]), undefined, 'no spec.replaces: no problem');
  const self = pool('win', 'a', { replaces: 'a' });
  assert.match(replacesProblem(self, [self])!, /^spec\.replaces: names this pool itself/);
  const missing = pool('win', 'b', { replaces: 'nothing' });
  assert.match(
    replacesProblem(missing, [missing])!,
    /^spec\.replaces: no WindowsNodePool nothing in namespace win/,
  );
  const x = pool('win', 'x', { replaces: 'y' });
  const y = pool('win', 'y', { replaces: 'x' });
  assert.match(
    replacesProblem(x, [x, y])!,
    /^spec\.replaces: pool y replaces this pool \(a cycle\)/,
  );
  const chain = pool('win', 'z', { replaces: 'x' });
  assert.match(replacesProblem(chain, [chain, x, y])!, /pool x itself replaces y/);
  const rival = pool('win', 'win2025', { replaces: 'win2019' });
  assert.match(
    replacesProblem(fresh, [old, fresh, rival])!,
    /pool win2019 is replaced by win2025 too/,
  );
  // Not a pool name: refused as such (the CRD's pattern refuses it first).
  const bad = pool('win', 'c', { replaces: 'Win_2019' });
  assert.match(replacesProblem(bad, [bad])!, /^spec\.replaces: "Win_2019" is not a pool name/);
  // A replaces problem never holds the pool's own rollout (checkPoolSpec does not see it).
  assert.deepEqual(checkPoolSpec(self.spec).problems, []);
});

test('attacker: a pool can never make winfleet drain a pool of another namespace', () => {
  // tenant-a may create pools in its own namespace only; the pool it wants drained is in win.
  const victim = pool('win', 'web');
  const byName = pool('tenant-a', 'evil', { replaces: 'web' }, migrating('web'));
  const byPath = pool('tenant-a', 'evil2', { replaces: 'win/web' }, migrating('win/web'));
  const byDots = pool('tenant-a', 'evil3', { replaces: '../win/web' }, migrating('web'));
  const all = [victim, byName, byPath, byDots];
  assert.match(replacesProblem(byName, all)!, /no WindowsNodePool web in namespace tenant-a/);
  assert.match(replacesProblem(byPath, all)!, /"win\/web" is not a pool name/);
  assert.match(replacesProblem(byDots, all)!, /is not a pool name/);
  // Even with a status that says Migrating (as if someone wrote it), the victim is not retired:
  // only a pool of its own namespace can retire it.
  assert.equal(retiringBy(victim, all), undefined);
  // The same pool in the victim's namespace, with its migration's go, does retire it.
  const legit = pool('win', 'web2022', { replaces: 'web' }, migrating('web'));
  assert.equal(retiringBy(victim, [...all, legit])?.metadata.name, 'web2022');
});

test('retiringBy: only a sound replacer whose status, for its current spec, says go', () => {
  const old = pool('win', 'old');
  const at = (m: Partial<PoolMigrationStatus>, spec: Partial<WindowsNodePoolSpec> = {}) =>
    pool('win', 'new', { replaces: 'old', ...spec }, { ...migrating('old'), ...m });
  assert.equal(retiringBy(old, [old, at({})])?.metadata.name, 'new');
  assert.equal(retiringBy(old, [old, at({ phase: 'Complete' })])?.metadata.name, 'new');
  for (const phase of ['Waiting', 'Blocked', 'Invalid'] as const)
    assert.equal(retiringBy(old, [old, at({ phase })]), undefined, phase);
  assert.equal(retiringBy(old, [old, at({ observedGeneration: 2 })]), undefined, 'stale status');
  assert.equal(retiringBy(old, [old, at({ replaces: 'other' })]), undefined, 'status of another');
  const noStatus = pool('win', 'new', { replaces: 'old' });
  assert.equal(retiringBy(old, [old, noStatus]), undefined);
  const rival = pool('win', 'rival', { replaces: 'old' }, migrating('old'));
  assert.equal(retiringBy(old, [old, at({}), rival]), undefined, 'two replacers: neither');
});

const newReady = [
  { key: 'win/new-1', ready: true, build: '10.0.20348' },
  { key: 'win/new-2', ready: true, build: '10.0.20348' },
];
const oldHosts = [
  { key: 'win/old-1', build: '10.0.17763', retired: false },
  { key: 'win/old-2', build: '10.0.17763', retired: false },
];

test('the gate: waits for every new host Ready, then asks for the workloads, then goes', () => {
  const base = { replaces: 'old', generation: 3, newHosts: newReady, oldHosts };
  const empty = migrationGate({ ...base, newHosts: [] });
  assert.equal(empty.status.phase, 'Waiting');
  assert.equal(empty.condition.reason, ConditionReason.MigrationWaiting);
  const oneDown = migrationGate({
    ...base,
    newHosts: [newReady[0]!, { key: 'win/new-2', ready: false }],
  });
  assert.equal(oneDown.status.phase, 'Waiting');
  assert.match(oneDown.status.message, /win\/new-2/);
  assert.equal(oneDown.checkWorkloads, undefined, 'no workload is looked at before');
  const ask = migrationGate(base);
  assert.deepEqual(ask.checkWorkloads, { build: '10.0.20348' });
  const go = migrationGate({ ...base, blocked: [] });
  assert.equal(go.status.phase, 'Migrating');
  assert.equal(go.condition.reason, ConditionReason.MigrationInProgress);
  assert.equal(go.condition.status, 'False');
  assert.deepEqual(
    { old: go.status.oldHosts, retired: go.status.retiredHosts, gen: go.status.observedGeneration },
    { old: 2, retired: 0, gen: 3 },
  );
  const half = migrationGate({
    ...base,
    oldHosts: [{ ...oldHosts[0]!, retired: true }, oldHosts[1]!],
    blocked: [],
  });
  assert.match(half.status.message, /^1 of 2 host\(s\) of old drained/);
  // Under way, one new host down (its own reboot) does not undo it; all of them down does.
  const oneNewDown = [newReady[0]!, { key: 'win/new-2', ready: false }];
  const underWay = migrationGate({
    ...base,
    newHosts: oneNewDown,
    oldHosts: [{ ...oldHosts[0]!, retired: true }, oldHosts[1]!],
    blocked: [],
  });
  assert.equal(underWay.status.phase, 'Migrating');
  const allDown = migrationGate({
    ...base,
    newHosts: oneNewDown.map((h) => ({ ...h, ready: false })),
    oldHosts: [{ ...oldHosts[0]!, retired: true }, oldHosts[1]!],
  });
  assert.equal(allDown.status.phase, 'Waiting');
  const done = migrationGate({ ...base, oldHosts: oldHosts.map((h) => ({ ...h, retired: true })) });
  assert.equal(done.status.phase, 'Complete');
  assert.equal(done.condition.status, 'True');
  assert.equal(done.condition.reason, ConditionReason.MigrationComplete);
});

test('the gate: a workload that cannot move blocks it, named with its images and why', () => {
  const blocked = [
    {
      namespace: 'apps',
      kind: 'Deployment',
      name: 'legacy',
      images: ['mcr.microsoft.com/windows/servercore:ltsc2019'],
      reasons: ['spec.containers[0] image … is for 10.0.17763.6054'],
    },
  ];
  const gate = migrationGate({ replaces: 'old', newHosts: newReady, oldHosts, blocked });
  assert.equal(gate.status.phase, 'Blocked');
  assert.equal(gate.condition.reason, ConditionReason.MigrationBlocked);
  assert.match(gate.condition.message, /apps\/Deployment\/legacy/);
  assert.match(gate.condition.message, /old's hosts are uncordoned/);
  assert.deepEqual(gate.status.blockedWorkloads, blocked);
});

test('the gate: a bad spec.replaces, mixed builds or the same build are Invalid', () => {
  const invalid = migrationGate({
    replaces: 'old',
    problem: 'spec.replaces: names this pool itself; …',
    newHosts: newReady,
    oldHosts: [],
  });
  assert.equal(invalid.status.phase, 'Invalid');
  assert.equal(invalid.condition.reason, ConditionReason.InvalidSpec);
  const mixed = migrationGate({
    replaces: 'old',
    newHosts: [newReady[0]!, { key: 'win/new-3', ready: true, build: '10.0.26100' }],
    oldHosts,
  });
  assert.match(
    mixed.status.message,
    /^spec\.replaces: this pool's hosts run different Windows builds/,
  );
  const same = migrationGate({
    replaces: 'old',
    newHosts: newReady,
    oldHosts: [{ key: 'win/old-1', build: '10.0.20348', retired: false }],
  });
  assert.equal(same.status.phase, 'Invalid');
  assert.match(same.status.message, /old's hosts run build 10\.0\.20348 too/);
});

const t0 = new Date('2026-06-07T01:00:00Z');
const timeouts = { drainTimeoutMs: 600_000, readyTimeoutMs: 900_000 };
const retire = { patchPolicy: 'None' as const, retire: true };

test('retirement: Cordon → Drain, then the change ends with the node left cordoned', () => {
  const h = simulatedHost('win-old-1', { pods: 3, evictPerPass: 2 });
  let status: HostRolloutStatus = {};
  const actions: string[] = [];
  for (let pass = 0; pass < 10; pass++) {
    const r = advanceHost({
      host: 'win/old-1',
      status,
      observed: observe(h),
      target: retire,
      start: true,
      timeouts,
      now: new Date(t0.getTime() + pass * 1000),
    });
    status = r.status;
    actions.push(r.action.kind);
    act(h, r.action);
    tick(h);
  }
  assert.deepEqual(actions.slice(0, 4), ['cordon', 'drain', 'drain', 'none']);
  assert.ok(actions.every((a) => a !== 'apply' && a !== 'reboot' && a !== 'uncordon'));
  assert.equal(status.current, undefined, 'the change ended');
  assert.equal(status.retired?.node, 'win-old-1');
  assert.equal(status.cordoned, 'win-old-1', 'winfleet still records its cordon');
  assert.equal(h.unschedulable, true, 'left cordoned');
  assert.equal(h.pods, 0);
});

test('retirement stopped (the migration is blocked): the retired host is uncordoned', () => {
  const h = simulatedHost('win-old-1', { unschedulable: true, cordonedByWinfleet: true });
  const status: HostRolloutStatus = {
    retired: { at: '2026-06-07T00:00:00Z', node: 'win-old-1' },
    cordoned: 'win-old-1',
    lastChange: { endedAt: '2026-06-07T00:00:00Z' },
  };
  const keep = advanceHost({
    host: 'win/old-1',
    status,
    observed: observe(h),
    target: retire,
    start: true,
    timeouts,
    now: t0,
  });
  assert.equal(keep.action.kind, 'none', 'still replaced: stays cordoned, nothing starts');
  assert.equal(keep.status, status);
  const undo = advanceHost({
    host: 'win/old-1',
    status,
    observed: observe(h),
    target: { patchPolicy: 'None', servicesVersion: 'v1.36.5-wf.1' },
    start: true,
    timeouts,
    now: t0,
  });
  assert.equal(undo.action.kind, 'uncordon');
  assert.equal(undo.status.retired, undefined);
  assert.equal(undo.status.current, undefined, 'nothing else starts before the uncordon');
});

test('retirement mid-drain when the migration stops: uncordoned, nothing left to do', () => {
  const h = simulatedHost('win-old-1', { unschedulable: true, cordonedByWinfleet: true, pods: 2 });
  const status: HostRolloutStatus = {
    current: {
      target: retire,
      changes: ['retire'],
      step: 'Drain',
      startedAt: '2026-06-07T00:59:00Z',
      stepStartedAt: '2026-06-07T00:59:00Z',
    },
    cordoned: 'win-old-1',
  };
  const r = advanceHost({
    host: 'win/old-1',
    status,
    observed: observe(h),
    target: { patchPolicy: 'None', servicesVersion: 'v1.36.5-wf.1' },
    start: false,
    timeouts,
    now: t0,
  });
  assert.equal(r.action.kind, 'uncordon');
  assert.equal(r.status.retired, undefined);
});

test('a replaced pool retires its hosts maxUnavailable at a time, and resumes after an operator kill', () => {
  const hosts = ['a', 'b', 'c'].map((n) =>
    simulatedHost(`win-old-${n}`, { pods: 2, evictPerPass: 1 }),
  );
  const statuses = new Map<string, HostRolloutStatus>(hosts.map((h) => [h.nodeName, {}]));
  const policy = checkPoolSpec({ selector: {}, maxUnavailable: 1 }).policy;
  let maxCordonedAtOnce = 0;
  for (let pass = 0; pass < 40; pass++) {
    const result = poolPass({
      policy,
      specProblems: [],
      hosts: hosts.map((h) => ({
        key: `win/${h.nodeName}`,
        status: statuses.get(h.nodeName)!,
        observed: observe(h),
      })),
      apiServerVersion: 'v1.36.5',
      now: new Date(t0.getTime() + pass * 1000),
      retire: true,
    });
    for (const h of hosts) {
      const step = result.hosts.get(`win/${h.nodeName}`)!;
      // An operator killed every fourth pass: it recorded the state and took no action.
      statuses.set(h.nodeName, step.status);
      if (pass % 4 !== 3) act(h, step.action);
      tick(h);
    }
    const inChange = [...statuses.values()].filter((s) => s.current).length;
    maxCordonedAtOnce = Math.max(maxCordonedAtOnce, inChange);
  }
  assert.equal(maxCordonedAtOnce, 1, 'at most maxUnavailable hosts in a retirement at once');
  for (const h of hosts) {
    assert.ok(statuses.get(h.nodeName)!.retired, `${h.nodeName} retired`);
    assert.equal(h.unschedulable, true);
    assert.equal(h.pods, 0);
  }
});
