import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { isUnavailable, type PlanInput, type PlannerHost, planRollout } from './slot-planner.ts';

/** Six hosts, as in the upgrade test: all Ready, all with the new payload pending. */
const six = (overrides: Record<string, Partial<PlannerHost>> = {}): PlannerHost[] =>
  ['win-1', 'win-2', 'win-3', 'win-4', 'win-5', 'win-6'].map((name) => ({
    key: `windows/${name}`,
    ready: true,
    pending: true,
    inProgress: false,
    ...overrides[name],
  }));

const base = { maxUnavailable: 2, paused: false, windowOpen: true };

test('starts up to maxUnavailable hosts, in key order', () => {
  const plan = planRollout({ ...base, hosts: six() });
  assert.deepEqual(plan.start, ['windows/win-1', 'windows/win-2']);
  assert.deepEqual(plan.waiting, [
    'windows/win-3',
    'windows/win-4',
    'windows/win-5',
    'windows/win-6',
  ]);
  assert.equal(plan.unavailable, 0);
  assert.equal(plan.blockedBy, 'budget');
});

test('hosts already NotReady count against the budget and do not start', () => {
  const plan = planRollout({ ...base, hosts: six({ 'win-2': { ready: false } }) });
  assert.deepEqual(plan.start, ['windows/win-1']);
  assert.ok(plan.waiting.includes('windows/win-2'));
  assert.equal(plan.unavailable, 1);
  // Two down already: nothing starts.
  const down = planRollout({
    ...base,
    hosts: six({ 'win-5': { ready: false, pending: false }, 'win-6': { ready: false } }),
  });
  assert.deepEqual(down.start, []);
  assert.equal(down.unavailable, 2);
  assert.equal(down.blockedBy, 'budget');
});

test('hosts mid-change go on and take their slots', () => {
  const plan = planRollout({ ...base, hosts: six({ 'win-4': { inProgress: true } }) });
  assert.deepEqual(plan.inProgress, ['windows/win-4']);
  assert.deepEqual(plan.start, ['windows/win-1']);
});

test('a failed host stops the rollout and takes only its own slot', () => {
  const failed = { step: 'Reboot', reason: 'RebootTimedOut', message: 'did not come back' };
  const plan = planRollout({
    ...base,
    maxUnavailable: 3,
    hosts: six({
      'win-1': { inProgress: true, ready: false, failed },
      'win-2': { inProgress: true },
    }),
  });
  assert.deepEqual(plan.start, []);
  assert.equal(plan.blockedBy, 'failed');
  assert.equal(plan.unavailable, 2, 'a failed NotReady host counts once');
  assert.deepEqual(plan.inProgress, ['windows/win-1', 'windows/win-2'], 'the other host goes on');
});

test('paused, held and closed-window pools start nothing, but hosts in a change go on', () => {
  const hosts = six({ 'win-3': { inProgress: true } });
  for (const [input, block] of [
    [{ paused: true }, 'paused'],
    [{ held: true }, 'held'],
    [{ windowOpen: false }, 'window'],
  ] as const) {
    const plan = planRollout({ ...base, ...input, hosts });
    assert.deepEqual(plan.start, [], block);
    assert.equal(plan.blockedBy, block);
    assert.deepEqual(plan.inProgress, ['windows/win-3']);
  }
});

test('a host two pools select never starts; up-to-date hosts are not candidates', () => {
  const plan = planRollout({
    ...base,
    hosts: six({ 'win-1': { shared: true }, 'win-2': { pending: false } }),
  });
  assert.deepEqual(plan.start, ['windows/win-3', 'windows/win-4']);
  assert.ok(plan.waiting.includes('windows/win-1'));
  assert.ok(!plan.waiting.includes('windows/win-2'));
});

test('nothing to do: no start, no block', () => {
  const plan = planRollout({
    ...base,
    hosts: six(
      Object.fromEntries(
        ['win-1', 'win-2', 'win-3', 'win-4', 'win-5', 'win-6'].map((n) => [n, { pending: false }]),
      ),
    ),
  });
  assert.deepEqual(plan, {
    start: [],
    inProgress: [],
    waiting: [],
    setAside: [],
    unavailable: 0,
    maxUnavailable: 2,
  });
});

test('least recently changed first: a host changed a moment ago waits behind every other, whatever its name', () => {
  const t = Date.parse('2025-06-07T01:00:00Z');
  const plan = planRollout({
    ...base,
    maxUnavailable: 1,
    hosts: six({
      // win-1 sorts first by name and has just finished a change; win-3 and win-5 changed long
      // ago; the others never did (they go first, by name).
      'win-1': { lastChangeEndedAt: t },
      'win-3': { lastChangeEndedAt: t - 3_600_000 },
      'win-5': { lastChangeEndedAt: t - 7_200_000 },
    }),
  });
  assert.deepEqual(plan.start, ['windows/win-2']);
  assert.deepEqual(plan.waiting, [
    'windows/win-4',
    'windows/win-6',
    'windows/win-5',
    'windows/win-3',
    'windows/win-1',
  ]);
});

test('a set-aside host never starts and holds back no other host; down, it takes its own slot', () => {
  const up = planRollout({
    ...base,
    maxUnavailable: 1,
    hosts: six({ 'win-1': { setAside: true } }),
  });
  assert.deepEqual(up.start, ['windows/win-2']);
  assert.deepEqual(up.setAside, ['windows/win-1']);
  assert.ok(!up.waiting.includes('windows/win-1'));
  const down = planRollout({
    ...base,
    maxUnavailable: 2,
    hosts: six({ 'win-1': { setAside: true, ready: false } }),
  });
  assert.deepEqual(down.start, ['windows/win-2'], 'one slot left of two');
  assert.equal(down.blockedBy, 'budget');
});

test('maxUnavailable must be resolved first', () => {
  assert.throws(
    () => planRollout({ ...base, maxUnavailable: 0, hosts: [] }),
    /whole number ≥ 1, got 0/,
  );
});

// Properties over random pools.

const hostArbitrary: fc.Arbitrary<PlannerHost> = fc
  .record({
    id: fc.integer({ min: 0, max: 40 }),
    ready: fc.boolean(),
    pending: fc.boolean(),
    inProgress: fc.boolean(),
    failed: fc.boolean(),
    shared: fc.boolean(),
  })
  .map(({ id, failed, inProgress, shared, ...rest }) => ({
    key: `ns-${id % 3}/host-${String(id).padStart(2, '0')}`,
    ...rest,
    inProgress: inProgress || failed,
    ...(failed ? { failed: { step: 'Drain', reason: 'DrainTimedOut', message: 'x' } } : {}),
    ...(shared ? { shared: true } : {}),
  }));

const inputArbitrary: fc.Arbitrary<PlanInput> = fc.record({
  hosts: fc.uniqueArray(hostArbitrary, { selector: (h) => h.key, maxLength: 30 }),
  maxUnavailable: fc.integer({ min: 1, max: 8 }),
  paused: fc.boolean(),
  windowOpen: fc.boolean(),
  held: fc.boolean(),
});

test('property: the plan never takes more than the budget down', (t) => {
  fc.assert(
    fc.property(inputArbitrary, (input) => {
      const plan = planRollout(input);
      assert.equal(plan.unavailable, input.hosts.filter(isUnavailable).length);
      if (plan.start.length > 0) {
        assert.ok(plan.unavailable + plan.start.length <= input.maxUnavailable);
      }
    }),
    { seed: testSeed(t) },
  );
});

test('property: paused, held, failed or outside the window, nothing starts', (t) => {
  fc.assert(
    fc.property(inputArbitrary, (input) => {
      const blocked =
        input.paused || input.held || !input.windowOpen || input.hosts.some((h) => h.failed);
      if (blocked) assert.deepEqual(planRollout(input).start, []);
    }),
    { seed: testSeed(t) },
  );
});

test('property: only Ready, pending, unshared hosts not yet in a change start; all in-change hosts go on', (t) => {
  fc.assert(
    fc.property(inputArbitrary, (input) => {
      const plan = planRollout(input);
      const byKey = new Map(input.hosts.map((h) => [h.key, h]));
      for (const key of plan.start) {
        const h = byKey.get(key)!;
        assert.ok(h.ready && h.pending && !h.inProgress && !h.failed && !h.shared, key);
      }
      assert.deepEqual(
        new Set(plan.inProgress),
        new Set(input.hosts.filter((h) => h.inProgress).map((h) => h.key)),
      );
    }),
    { seed: testSeed(t) },
  );
});

test('property: idempotent — once the started hosts are recorded as in a change, a new plan starts nothing', (t) => {
  fc.assert(
    fc.property(inputArbitrary, (input) => {
      const first = planRollout(input);
      const started = new Set(first.start);
      const after = input.hosts.map((h) => (started.has(h.key) ? { ...h, inProgress: true } : h));
      assert.deepEqual(planRollout({ ...input, hosts: after }).start, []);
    }),
    { seed: testSeed(t) },
  );
});

test('property: deterministic — the order of the hosts does not matter, and the first keys go', (t) => {
  fc.assert(
    fc.property(
      inputArbitrary.chain((input) =>
        fc.tuple(
          fc.constant(input),
          fc.shuffledSubarray([...input.hosts], { minLength: input.hosts.length }),
        ),
      ),
      ([input, shuffled]) => {
        const plan = planRollout(input);
        assert.deepEqual(planRollout({ ...input, hosts: shuffled }), plan);
        const eligible = input.hosts
          .filter((h) => h.ready && h.pending && !h.inProgress && !h.shared)
          .map((h) => h.key)
          .sort();
        assert.deepEqual(plan.start, eligible.slice(0, plan.start.length));
      },
    ),
    { seed: testSeed(t) },
  );
});

test('property: not blocked, it starts as many as the budget allows', (t) => {
  fc.assert(
    fc.property(inputArbitrary, (input) => {
      const plan = planRollout(input);
      if (plan.blockedBy && plan.blockedBy !== 'budget') return;
      const eligible = input.hosts.filter(
        (h) => h.ready && h.pending && !h.inProgress && !h.shared,
      );
      const free = Math.max(0, input.maxUnavailable - plan.unavailable);
      assert.equal(plan.start.length, Math.min(eligible.length, free));
    }),
    { seed: testSeed(t) },
  );
});

test('property: a rollout with hosts finishing and failing at random, replanned every round (as after a restart), never exceeds the budget and finishes every healthy host', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 6 }),
      fc.array(fc.record({ finish: fc.boolean(), outage: fc.nat(25) }), {
        minLength: 60,
        maxLength: 60,
      }),
      (count, maxUnavailable, rounds) => {
        let hosts: PlannerHost[] = Array.from({ length: count }, (_, i) => ({
          key: `windows/w${String(i).padStart(2, '0')}`,
          ready: true,
          pending: true,
          inProgress: false,
        }));
        for (const { finish, outage } of rounds) {
          const plan = planRollout({ hosts, maxUnavailable, paused: false, windowOpen: true });
          const started = new Set(plan.start);
          hosts = hosts.map((h) =>
            started.has(h.key) ? { ...h, inProgress: true, ready: false } : h,
          );
          const down = hosts.filter(isUnavailable).length;
          // Starts never push the pool over its budget (outages alone may).
          if (plan.start.length > 0) assert.ok(down <= maxUnavailable, `${down} down`);
          // Hosts in a change finish (become Ready and updated) or not, at random.
          hosts = hosts.map((h) =>
            h.inProgress && finish ? { ...h, inProgress: false, pending: false, ready: true } : h,
          );
          // An outside outage: one host goes NotReady for a round, or comes back.
          const victim = hosts[outage];
          if (victim && !victim.inProgress) {
            hosts = hosts.map((h) => (h === victim ? { ...h, ready: !h.ready } : h));
          }
        }
        // Ready hosts are never stuck: with every host Ready, the rollout finishes in ⌈N/k⌉ rounds.
        hosts = hosts.map((h) => ({ ...h, ready: true, inProgress: false }));
        for (let round = 0; round < Math.ceil(count / maxUnavailable); round++) {
          const plan = planRollout({ hosts, maxUnavailable, paused: false, windowOpen: true });
          assert.ok(plan.start.length <= maxUnavailable);
          const started = new Set(plan.start);
          hosts = hosts.map((h) => (started.has(h.key) ? { ...h, pending: false } : h));
        }
        assert.deepEqual(
          hosts.filter((h) => h.pending).map((h) => h.key),
          [],
        );
      },
    ),
    { seed: testSeed(t) },
  );
});

test('a NotReady host to repair starts without a free slot, within maxUnavailable hosts in a change, window or not', () => {
  const host = (key: string, over: Partial<PlannerHost> = {}): PlannerHost => ({
    key,
    ready: true,
    pending: false,
    inProgress: false,
    ...over,
  });
  const sick = (key: string) => host(key, { ready: false, pending: true, repair: true });
  // maxUnavailable 1, one host down: without the repair rule nothing could ever start.
  const one = planRollout({
    hosts: [host('a'), sick('b'), host('c')],
    maxUnavailable: 1,
    paused: false,
    windowOpen: false,
  });
  assert.deepEqual(one.start, ['b'], 'the sick host is repaired, outside the window too');
  // Two sick, maxUnavailable 1: one repair at a time.
  const two = planRollout({
    hosts: [sick('a'), sick('b'), host('c')],
    maxUnavailable: 1,
    paused: false,
    windowOpen: true,
  });
  assert.deepEqual(two.start, ['a']);
  // A host already in a change fills the budget: no repair starts.
  const busy = planRollout({
    hosts: [host('a', { inProgress: true }), sick('b')],
    maxUnavailable: 1,
    paused: false,
    windowOpen: true,
  });
  assert.deepEqual(busy.start, []);
  // Paused: nothing starts, repairs included.
  const paused = planRollout({
    hosts: [sick('a')],
    maxUnavailable: 1,
    paused: true,
    windowOpen: true,
  });
  assert.deepEqual(paused.start, []);
});
