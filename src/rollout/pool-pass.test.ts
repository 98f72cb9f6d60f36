/**
 * Whole pools rolling through the pure engine (membership, spec, planner, host steps, status)
 * over simulated hosts, with the pools and hosts of fixtures/pools.yaml: the upgrade,
 * window, failure, operator-kill and skew scenarios without a cluster.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { ConditionReason } from '../api/reasons.ts';
import type { HostChange, HostRolloutStatus } from '../api/rollout-status.ts';
import type { WindowsNodePool } from '../api/windows-node-pool.ts';
import {
  act,
  isDown,
  laggingCache,
  observe,
  type SimulatedHost,
  simulatedHost,
  tick,
} from './fixtures/simulated-hosts.ts';
import { assignPools, defaultPoolKey, objectKey } from './pool-membership.ts';
import { type PoolPassInput, type PoolPassResult, poolPass, soonestDue } from './pool-pass.ts';
import { checkPoolSpec, defaultPoolPolicy, type PoolPolicy } from './pool-spec.ts';

interface Manifest {
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    generation?: number;
    labels?: Record<string, string>;
  };
  spec: unknown;
}

const manifests = parseAllDocuments(
  readFileSync(new URL('./fixtures/pools.yaml', import.meta.url), 'utf8'),
).map((d) => d.toJS() as Manifest);
const pools = manifests.filter((m) => m.kind === 'WindowsNodePool') as unknown as WindowsNodePool[];
const hostManifests = manifests.filter((m) => m.kind === 'WindowsHost');
const membership = assignPools(
  pools.map((p) => ({
    namespace: p.metadata.namespace!,
    name: p.metadata.name,
    ...(checkPoolSpec(p.spec).policy.selector
      ? { selector: checkPoolSpec(p.spec).policy.selector! }
      : {}),
  })),
  hostManifests.map((h) => ({
    namespace: h.metadata.namespace,
    name: h.metadata.name,
    labels: h.metadata.labels ?? {},
  })),
);

const v2 = 'v1.36.6-wf.1';
const payload = { servicesVersion: v2, kubeletVersion: 'v1.36.6' };
const apiServerVersion = 'v1.36.5';
// Saturday 2025-06-07 01:00 UTC: the web pool's weekend window has just opened.
const saturday = Date.parse('2025-06-07T01:00:00Z');
const passMs = 10_000;

function poolNamed(name: string): {
  pool: WindowsNodePool;
  policy: PoolPolicy;
  problems: string[];
} {
  const pool = pools.find((p) => p.metadata.name === name)!;
  return { pool, ...checkPoolSpec(pool.spec) };
}

test('the fixtures: who belongs to which pool', () => {
  const members = (key: string) => membership.pools.get(key)!.hosts;
  assert.deepEqual(members('windows/windows-nodepool-1'), [
    'windows/win-np1-a',
    'windows/win-np1-b',
    'windows/win-np1-c',
  ]);
  assert.deepEqual(
    members('windows/web'),
    [1, 2, 3, 4, 5, 6, 7].map((n) => `windows/win-web-${n}`),
  );
  assert.deepEqual(members('windows/batch'), ['windows/win-batch-1', 'windows/win-web-7']);
  assert.deepEqual(membership.pools.get('windows/web')!.shared, [
    { host: 'windows/win-web-7', otherPools: ['windows/batch'] },
  ]);
  // Another namespace's "pool: web" label is not the web pool's: the default pool takes it.
  assert.deepEqual(members(defaultPoolKey), [
    'openshift-windows/byoh-10-0-0-5',
    'openshift-windows/byoh-10-0-0-6',
    'windows/win-batch-2',
  ]);
  for (const pool of pools)
    assert.deepEqual(checkPoolSpec(pool.spec).problems, [], pool.metadata.name);
});

interface Fleet {
  hosts: Map<string, SimulatedHost>;
  statuses: Map<string, HostRolloutStatus>;
  caches: Map<string, ReturnType<typeof laggingCache>>;
}

function fleet(
  keys: readonly string[],
  make: (key: string, i: number) => Partial<SimulatedHost> = () => ({}),
): Fleet {
  return {
    hosts: new Map(keys.map((k, i) => [k, simulatedHost(k.split('/')[1]!, make(k, i))])),
    statuses: new Map(keys.map((k) => [k, {}])),
    caches: new Map(keys.map((k) => [k, laggingCache()])),
  };
}

/**
 * One controller pass over a pool: read (through lagging caches), plan, then per host in key
 * order write its status and act — unless the operator is killed at host `crashAt` (mode 1:
 * before that host's write, 2: after its write, before its action; the rest are not reached).
 */
function pass(
  f: Fleet,
  poolKey: string,
  policy: PoolPolicy,
  now: number,
  options: {
    lag?: number;
    crashAt?: number;
    crashMode?: 1 | 2;
    payload?: PoolPassInput['payload'];
    specProblems?: string[];
  } = {},
): PoolPassResult {
  const { shared } = membership.pools.get(poolKey)!;
  const keys = [...f.hosts.keys()].sort();
  for (const k of keys) f.caches.get(k)!.record(observe(f.hosts.get(k)!));
  const result = poolPass({
    generation: 1,
    policy,
    specProblems: options.specProblems ?? [],
    hosts: keys.map((key) => {
      const other = shared.find((s) => s.host === key)?.otherPools;
      return {
        key,
        ...(other ? { otherPools: other } : {}),
        status: f.statuses.get(key)!,
        observed: f.caches.get(key)!.read(options.lag ?? 0),
      };
    }),
    payload: 'payload' in options ? options.payload : payload,
    apiServerVersion,
    now: new Date(now),
  });
  keys.forEach((key, i) => {
    if (options.crashAt !== undefined && i > options.crashAt) return;
    if (options.crashAt === i && options.crashMode === 1) return;
    const r = result.hosts.get(key)!;
    f.statuses.set(key, r.status);
    if (options.crashAt === i && options.crashMode === 2) return;
    act(f.hosts.get(key)!, r.action);
  });
  for (const h of f.hosts.values()) tick(h);
  return result;
}

const webKeys = membership.pools.get('windows/web')!.hosts;

test('upgrade: six web hosts with maxUnavailable 2 and a PDB, killed and lagging at random — never more than 2 down, all on the new version, none cordoned', (t) => {
  const { policy } = poolNamed('web');
  fc.assert(
    fc.property(
      fc.array(fc.nat(6), { minLength: 6, maxLength: 6 }),
      fc.array(
        fc.record({
          lag: fc.nat(2),
          crashAt: fc.option(fc.nat(7), { nil: undefined }),
          crashMode: fc.constantFrom(1 as const, 2 as const),
        }),
        {
          minLength: 150,
          maxLength: 150,
        },
      ),
      (pods, passes) => {
        const f = fleet(webKeys, (_, i) => ({ pods: pods[i] ?? 0, applyDelay: i % 3 }));
        let last: PoolPassResult | undefined;
        passes.forEach((p, n) => {
          last = pass(
            f,
            'windows/web',
            policy,
            saturday + n * passMs,
            p.crashAt === undefined ? { lag: p.lag } : p,
          );
          const down = [...f.hosts.values()].filter(isDown).length;
          assert.ok(down <= 2, `pass ${n}: ${down} hosts down`);
        });
        // A last quiet pass lets the pool report what the last killed pass could not.
        last = pass(f, 'windows/web', policy, saturday + passes.length * passMs);
        const shared = f.hosts.get('windows/win-web-7')!;
        for (const [key, h] of f.hosts) {
          if (h === shared) continue;
          assert.equal(h.servicesVersion, v2, key);
          assert.equal(h.unschedulable, false, `${key} left cordoned`);
          assert.equal(h.pods, 0, key);
          assert.equal(f.statuses.get(key)!.current, undefined, key);
          assert.equal(f.statuses.get(key)!.setAside, undefined, key);
        }
        assert.equal(
          shared.servicesVersion,
          'v1.36.5-wf.1',
          'a host two pools select is never touched',
        );
        assert.equal(shared.unschedulable, false);
        assert.equal(last.status.updatedHosts, 6);
        assert.equal(last.status.unavailableHosts, 0);
        const degraded = last.status.conditions.find((c) => c.type === 'Degraded')!;
        assert.equal(degraded.reason, ConditionReason.HostInMultiplePools);
        assert.match(degraded.message, /windows\/win-web-7 \(also in windows\/batch\)/);
      },
    ),
    { seed: testSeed(t), numRuns: 30 },
  );
});

test('patches outside the window: nothing happens, the pool says when the window opens', () => {
  const { policy } = poolNamed('web');
  const f = fleet(webKeys.slice(0, 6), () => ({
    updates: [{ kb: 'KB5040437', categories: ['Security Updates'] }],
  }));
  const monday = Date.parse('2025-06-09T10:00:00Z');
  for (let n = 0; n < 20; n++) {
    const r = pass(f, 'windows/web', policy, monday + n * passMs, { payload: undefined });
    for (const step of r.hosts.values()) assert.deepEqual(step.action, { kind: 'none' });
    const progressing = r.status.conditions.find((c) => c.type === 'Progressing')!;
    assert.equal(progressing.reason, ConditionReason.WaitingForWindow);
    assert.equal(
      progressing.message,
      '6 hosts wait for the maintenance window; it opens next at 2025-06-14T01:00:00.000Z',
    );
    assert.deepEqual(r.recheckAt, new Date('2025-06-14T01:00:00Z'));
  }
  assert.deepEqual([...f.statuses.values()], Array(6).fill({}));
  // Inside the window: the patches go in, with one reboot per host, two hosts at a time.
  for (let n = 0; n < 200; n++) {
    pass(f, 'windows/web', policy, saturday + n * passMs, { payload: undefined });
    assert.ok([...f.hosts.values()].filter(isDown).length <= 2);
  }
  for (const [key, h] of f.hosts) {
    assert.deepEqual(h.updates, [], key);
    assert.equal(h.reboots, 1, key);
    assert.equal(h.unschedulable, false, key);
  }
});

test('a host that does not come back from its reboot is set aside: the rest of the pool goes on, it holds only its own slot while down', () => {
  const { policy } = poolNamed('web');
  // A one-minute readyTimeout, so the failure comes while hosts still wait.
  const rebootAll = {
    ...policy,
    readyTimeoutMs: 60_000,
    rebootRequestedAt: '2025-06-07T00:30:00Z',
  };
  const keys = webKeys.slice(0, 6);
  const f = fleet(keys, (key) => ({ brokenReboot: key === 'windows/win-web-1' }));
  let asideAt: number | undefined;
  let last: PoolPassResult | undefined;
  for (let n = 0; n < 300; n++) {
    last = pass(f, 'windows/web', rebootAll, saturday + n * passMs, { payload: undefined });
    const down = [...f.hosts.values()].filter(isDown).length;
    assert.ok(down <= 2, `pass ${n}: ${down} hosts down`);
    if (asideAt === undefined && f.statuses.get('windows/win-web-1')!.setAside) asideAt = n;
  }
  // Asked to reboot at pass 1; its step's minute is up at pass 7: set aside then.
  assert.equal(asideAt, 7);
  const aside = f.statuses.get('windows/win-web-1')!;
  assert.equal(aside.current, undefined, 'its change ended');
  assert.equal(aside.setAside?.cause, 'ChangeFailed');
  assert.match(aside.setAside!.message, /did not come back from its reboot|was not Ready/);
  assert.match(aside.setAside!.message, /winfleet\.io\/retry-rollout=/);
  assert.equal(f.hosts.get('windows/win-web-1')!.cordonedByWinfleet, false, 'uncordoned');
  for (const key of keys.slice(1)) {
    const h = f.hosts.get(key)!;
    assert.equal(h.reboots, 1, `${key} rebooted once: the pool went on`);
    assert.equal(h.unschedulable, false, key);
    assert.equal(f.statuses.get(key)!.current, undefined, key);
  }
  const degraded = last!.status.conditions.find((c) => c.type === 'Degraded')!;
  assert.equal(degraded.status, 'True');
  assert.equal(degraded.reason, ConditionReason.HostSetAside);
  assert.match(degraded.message, /windows\/win-web-1 is set aside/);
  const progressing = last!.status.conditions.find((c) => c.type === 'Progressing')!;
  assert.equal(progressing.reason, ConditionReason.RolloutComplete);
  assert.match(progressing.message, /set aside: windows\/win-web-1/);
  assert.equal(last!.status.unavailableHosts, 1, 'down, the set-aside host takes its own slot');
});

test('beyond maxUnavailable hosts set aside, a stopped change stops the pool as before', () => {
  const { policy } = poolNamed('web'); // maxUnavailable 2
  const quick = { ...policy, readyTimeoutMs: 60_000 };
  const keys = webKeys.slice(0, 6);
  // Three hosts whose agents never apply the upgrade (they stay Ready): a bad change.
  const bad = new Set(keys.slice(0, 3));
  const f = fleet(keys, (key) => ({ applyDelay: bad.has(key) ? 1_000_000 : 0 }));
  let last: PoolPassResult | undefined;
  for (let n = 0; n < 200; n++) last = pass(f, 'windows/web', quick, saturday + n * passMs);
  const statuses = keys.map((k) => f.statuses.get(k)!);
  assert.deepEqual(
    statuses.map((s) => s.setAside?.cause ?? s.current?.failure?.reason ?? 'ok'),
    ['ChangeFailed', 'ChangeFailed', 'ApplyTimedOut', 'ok', 'ok', 'ok'],
    'two set aside, the third failure stops the pool',
  );
  // Started with the first two set aside: at most maxUnavailable at a time never changes.
  assert.equal(f.hosts.get(keys[2]!)!.unschedulable, true, 'the stopped one stays cordoned');
  const progressing = last!.status.conditions.find((c) => c.type === 'Progressing')!;
  assert.equal(progressing.reason, ConditionReason.RolloutStopped);
  const degraded = last!.status.conditions.find((c) => c.type === 'Degraded')!;
  assert.equal(degraded.reason, ConditionReason.ApplyTimedOut);
  assert.match(degraded.message, /windows\/win-web-1 is set aside/);
  assert.match(degraded.message, /windows\/win-web-2 is set aside/);
});

test('least recently changed first: a host pending again after every change waits behind the others', () => {
  const { policy } = poolNamed('web');
  const one = {
    ...policy,
    maxUnavailable: { kind: 'count', count: 1 } as const,
    patchPolicy: 'Security' as const,
  };
  const [a, b, c] = webKeys.slice(0, 3) as [string, string, string];
  // a (first by name) claims a new Security update after every change: a fake KB.
  const f = fleet([a, b, c]);
  let kb = 5_040_000;
  const fake = () => ({ kb: `KB${kb++}`, categories: ['Security Updates'] });
  f.hosts.get(a)!.updates = [fake()];
  const order: string[] = [];
  for (let n = 0; n < 200; n++) {
    const r = pass(f, 'windows/web', one, saturday + n * passMs);
    order.push(...r.plan.start);
    const host = f.hosts.get(a)!;
    if (host.updates.length === 0 && !f.statuses.get(a)!.current) host.updates = [fake()];
  }
  assert.equal(f.hosts.get(b)!.servicesVersion, v2, 'b upgraded');
  assert.equal(f.hosts.get(c)!.servicesVersion, v2, 'c upgraded');
  // a went first (never changed, first by name), then both others before it went again.
  assert.deepEqual(order.slice(0, 3), [a, b, c]);
  assert.ok(order.length > 4, 'a goes on changing when nothing else waits');
});

test('skew: a payload whose kubelet is too new is refused before any host is touched', () => {
  const { policy } = poolNamed('web');
  const f = fleet(webKeys.slice(0, 6));
  for (let n = 0; n < 5; n++) {
    const r = pass(f, 'windows/web', policy, saturday + n * passMs, {
      payload: { servicesVersion: 'v1.37.0-wf.1', kubeletVersion: 'v1.37.0' },
    });
    for (const step of r.hosts.values()) assert.deepEqual(step.action, { kind: 'none' });
    const degraded = r.status.conditions.find((c) => c.type === 'Degraded')!;
    assert.equal(degraded.reason, ConditionReason.KubeletVersionSkew);
    assert.match(
      degraded.message,
      /^payload\.json kubernetesVersion is v1\.37\.0, newer than the API server v1\.36\.5/,
    );
    assert.equal(
      r.status.conditions.find((c) => c.type === 'Progressing')!.reason,
      ConditionReason.KubeletVersionSkew,
    );
  }
  for (const h of f.hosts.values()) assert.equal(h.unschedulable, false);
});

test('the default pool takes one host at a time; a paused pool starts nothing but finishes what is under way', () => {
  const defaults = membership.pools.get(defaultPoolKey)!.hosts;
  const f = fleet(defaults, () => ({ pods: 3 }));
  for (let n = 0; n < 100; n++) {
    pass(f, defaultPoolKey, defaultPoolPolicy, saturday + n * passMs);
    assert.ok([...f.hosts.values()].filter(isDown).length <= 1, `pass ${n}`);
  }
  for (const h of f.hosts.values()) assert.equal(h.servicesVersion, v2);

  const { policy } = poolNamed('web');
  const g = fleet(webKeys.slice(0, 6));
  pass(g, 'windows/web', policy, saturday); // two start
  const paused = { ...policy, paused: true };
  let last: PoolPassResult | undefined;
  for (let n = 1; n < 60; n++) last = pass(g, 'windows/web', paused, saturday + n * passMs);
  const updated = [...g.hosts.values()].filter((h) => h.servicesVersion === v2).length;
  assert.equal(updated, 2);
  assert.ok([...g.hosts.values()].every((h) => !h.unschedulable));
  const progressing = last!.status.conditions.find((c) => c.type === 'Progressing')!;
  assert.equal(progressing.reason, ConditionReason.Paused);
  assert.equal(progressing.message, 'spec.paused is true: no change starts; 4 hosts wait');
});

test('a pool with a spec problem starts nothing and says which field', () => {
  const f = fleet(webKeys.slice(0, 2));
  const r = pass(f, 'windows/web', defaultPoolPolicy, saturday, {
    specProblems: [
      'spec.maintenanceWindow.timeZone: unknown time zone "Asia/Atlantis"; use an IANA time zone name such as "UTC" or "Europe/Berlin"',
    ],
  });
  assert.deepEqual(r.plan.start, []);
  assert.equal(r.plan.blockedBy, 'held');
  assert.equal(
    r.status.conditions.find((c) => c.type === 'Degraded')!.reason,
    ConditionReason.InvalidSpec,
  );
});

test('a bad reboot annotation on a host is reported and ignored', () => {
  const { policy } = poolNamed('web');
  const r = poolPass({
    policy,
    specProblems: [],
    hosts: [
      {
        key: 'windows/win-web-1',
        status: {},
        observed: observe(simulatedHost('win-web-1', { servicesVersion: v2 })),
        rebootRequested: 'tonight',
      },
    ],
    payload,
    apiServerVersion,
    now: new Date(saturday),
  });
  assert.deepEqual(r.hostProblems.get('windows/win-web-1'), [
    'windows/win-web-1: annotation winfleet.io/reboot-requested: "tonight" is not an RFC 3339 time; write e.g. "2025-06-07T01:00:00Z"',
  ]);
  assert.deepEqual(r.plan.start, []);
  assert.equal(objectKey({ namespace: 'windows', name: 'win-web-1' }), 'windows/win-web-1');
});

test('a host that becomes shared mid-change finishes the change it has, whichever pool passes', () => {
  const at = new Date('2025-06-07T01:00:00Z');
  const current: HostChange = {
    target: { patchPolicy: 'Security' },
    changes: ['patches'],
    step: 'Apply',
    startedAt: at.toISOString(),
    stepStartedAt: at.toISOString(),
  };
  const host = {
    key: 'windows/shared',
    otherPools: ['windows/other'],
    status: { current },
    observed: {
      node: {
        name: 'shared',
        ready: true,
        unschedulable: true,
        cordonedByWinfleet: true,
        bootId: 'b1',
      },
      drained: true,
      deleting: false,
      facts: {
        availableUpdates: [{ kb: 'KB5040437', categories: ['Security Updates'] }],
        rebootPending: false,
      },
    },
  };
  // The other pool's policy installs nothing: retargeted, the change would end at once.
  for (const patchPolicy of ['None', 'Security'] as const) {
    const result = poolPass({
      policy: { ...defaultPoolPolicy, patchPolicy },
      specProblems: [],
      hosts: [host],
      apiServerVersion,
      now: new Date(at.getTime() + 1000),
    });
    const step = result.hosts.get('windows/shared')!;
    assert.equal(step.status.current?.step, 'Apply', `${patchPolicy}: still applying`);
    assert.deepEqual(step.action, { kind: 'apply', target: { patchPolicy: 'Security' } });
  }
});

test('a host still joining is not started: the join brings it to the payload, the pool does not cordon it', () => {
  const at = new Date('2025-06-07T01:00:00Z');
  const joiningHost = {
    key: 'windows/new',
    status: {},
    joining: true,
    observed: {
      node: {
        name: 'new',
        ready: true,
        unschedulable: false,
        cordonedByWinfleet: false,
        bootId: 'b1',
      },
      drained: false,
      deleting: false,
      // The agent has not reported a services version yet.
      facts: { availableUpdates: [], rebootPending: false },
    },
  };
  const run = (joining: boolean) =>
    poolPass({
      policy: defaultPoolPolicy,
      specProblems: [],
      hosts: [{ ...joiningHost, joining }],
      payload,
      apiServerVersion,
      now: at,
    }).hosts.get('windows/new')!;
  assert.deepEqual(run(true).action, { kind: 'none' }, 'joining: left to the join');
  assert.equal(run(true).status.current, undefined);
  assert.deepEqual(run(false).action, { kind: 'cordon' }, 'joined and behind: the pool starts it');
});

test('a NotReady host’s repair is a reboot alone, an upgrade pending or not; withdrawn, its stopped change ends', () => {
  const { policy } = checkPoolSpec({ maxUnavailable: 1, readyTimeout: '20s' });
  const v1 = 'v1.36.5-wf.1';
  const now = new Date(saturday);
  const sick = (key: string, extra: Partial<PoolPassInput['hosts'][number]> = {}) => ({
    key,
    status: {} as HostRolloutStatus,
    observed: {
      node: {
        name: key,
        ready: false,
        unschedulable: false,
        cordonedByWinfleet: false,
        bootId: '1',
      },
      drained: false,
      deleting: false,
      facts: { servicesVersion: v1, availableUpdates: [], rebootPending: false },
    },
    ...extra,
  });
  const input = (hosts: PoolPassInput['hosts']): PoolPassInput => ({
    policy,
    specProblems: [],
    hosts,
    payload,
    apiServerVersion,
    now,
  });
  const asked = '2025-06-07T00:59:00Z';
  const first = poolPass(input([sick('w/a', { repairRequestedAt: asked }), sick('w/b')]));
  const change = first.hosts.get('w/a')!.status.current!;
  assert.deepEqual(change.changes, ['repair'], 'the upgrade to v2 is not part of it');
  assert.equal(change.target.servicesVersion, v1);
  assert.equal(change.target.repairRequestedAt, asked);
  assert.equal(first.hosts.get('w/b')!.status.current, undefined, 'b has no repair asked');

  // The change stopped at Reboot (the host never rebooted); remediation then gave up.
  const stopped: HostRolloutStatus = {
    current: {
      ...change,
      step: 'Reboot',
      reboot: { token: 'reboot-1', bootIdBefore: '1', requestedAt: asked },
      failure: { step: 'Reboot', reason: 'RebootTimedOut', message: 'x', since: asked },
    },
  };
  const cordoned = sick('w/a', { status: stopped });
  cordoned.observed.node = {
    name: 'w/a',
    ready: false,
    bootId: '1',
    unschedulable: true,
    cordonedByWinfleet: true,
  };
  // Stopped, it is set aside (set-aside.ts) like any stopped change: it ends, uncordoned, and
  // holds back no other host; remediation's ladder then goes on with it.
  const held = poolPass(input([{ ...cordoned, repairRequestedAt: asked }]));
  assert.equal(held.hosts.get('w/a')!.status.current, undefined, 'set aside: the change ended');
  assert.equal(held.hosts.get('w/a')!.status.setAside?.cause, 'ChangeFailed');
  assert.deepEqual(held.hosts.get('w/a')!.action, { kind: 'uncordon' });
  const ended = poolPass(input([cordoned]));
  assert.equal(ended.hosts.get('w/a')!.status.current?.step, 'Uncordon');
  assert.deepEqual(ended.hosts.get('w/a')!.action, { kind: 'uncordon' });
});

test('soonestDue is the earliest host recheck or window opening, and nothing when none is due', () => {
  const result = (recheckAt?: Date) => ({
    status: {},
    action: { kind: 'none' as const },
    events: [],
    ...(recheckAt ? { recheckAt } : {}),
  });
  const hosts = new Map([
    ['ns/a', result(new Date('2026-03-02T10:00:00Z'))],
    ['ns/b', result()],
    ['ns/c', result(new Date('2026-03-02T09:30:00Z'))],
  ]);
  assert.deepEqual(soonestDue(hosts, undefined), new Date('2026-03-02T09:30:00Z'));
  assert.deepEqual(
    soonestDue(hosts, new Date('2026-03-02T09:00:00Z')),
    new Date('2026-03-02T09:00:00Z'),
  );
  assert.equal(soonestDue(new Map([['ns/b', result()]]), undefined), undefined);
  assert.deepEqual(
    soonestDue(new Map(), new Date('2026-03-02T11:00:00Z')),
    new Date('2026-03-02T11:00:00Z'),
  );
});
