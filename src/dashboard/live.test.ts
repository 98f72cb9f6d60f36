import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OverviewBroadcaster, type StreamClient } from './live.ts';

/** Timers run by hand: `fire()` runs what is due, in order. */
function manualTimers() {
  let next = 1;
  const timeouts = new Map<number, () => void>();
  const intervals = new Map<number, () => void>();
  return {
    timers: {
      setTimeout: (fn: () => void) => {
        const id = next++;
        timeouts.set(id, fn);
        return id;
      },
      clearTimeout: (id: unknown) => void timeouts.delete(id as number),
      setInterval: (fn: () => void) => {
        const id = next++;
        intervals.set(id, fn);
        return id;
      },
      clearInterval: (id: unknown) => void intervals.delete(id as number),
    },
    pendingTimeouts: () => timeouts.size,
    intervals: () => intervals.size,
    fireTimeouts() {
      for (const [id, fn] of [...timeouts]) {
        timeouts.delete(id);
        fn();
      }
    },
    fireIntervals() {
      for (const fn of intervals.values()) fn();
    },
  };
}

class FakeClient implements StreamClient {
  chunks: string[] = [];
  ended = false;
  writableLength = 0;
  write(chunk: string) {
    this.chunks.push(chunk);
  }
  end() {
    this.ended = true;
  }
  overviews(): { n: number }[] {
    return this.chunks
      .flatMap((c) => [...c.matchAll(/^event: overview\ndata: (.*)$/gm)])
      .map((m) => JSON.parse(m[1] ?? 'null'));
  }
}

function setup(maxClients = 20) {
  const clock = manualTimers();
  let n = 0;
  let builds = 0;
  const b = new OverviewBroadcaster<{ generatedAt: string; n: number }>({
    build: () => {
      builds++;
      return { generatedAt: new Date(builds).toISOString(), n };
    },
    maxClients,
    timers: clock.timers,
  });
  return { clock, b, set: (v: number) => (n = v), builds: () => builds };
}

test('a client gets the overview on connect, and one overview for a burst of changes', () => {
  const { clock, b, set, builds } = setup();
  const c = new FakeClient();
  assert.equal(b.add(c), true);
  assert.deepEqual(c.overviews(), [{ generatedAt: new Date(1).toISOString(), n: 0 }]);
  assert.match(c.chunks[0] ?? '', /^retry: 3000\n/);
  set(1);
  for (let i = 0; i < 100; i++) b.changed();
  assert.equal(clock.pendingTimeouts(), 1, 'one coalescing timer for 100 changes');
  assert.equal(builds(), 1, 'nothing built before the timer fires');
  clock.fireTimeouts();
  assert.deepEqual(
    c.overviews().map((o) => o.n),
    [0, 1],
  );
  assert.equal(b.broadcasts, 1);
});

test('an overview equal to the last one sent is not sent again (heartbeat-only Node updates)', () => {
  const { clock, b, set } = setup();
  const c = new FakeClient();
  b.add(c);
  b.changed();
  clock.fireTimeouts();
  assert.equal(c.overviews().length, 1, 'same content (only generatedAt differs): not sent');
  set(2);
  b.changed();
  clock.fireTimeouts();
  assert.deepEqual(
    c.overviews().map((o) => o.n),
    [0, 2],
  );
});

test('heartbeat comments while clients are connected; timers stop when the last one goes', () => {
  const { clock, b } = setup();
  assert.equal(clock.intervals(), 0);
  const a = new FakeClient();
  const c = new FakeClient();
  b.add(a);
  b.add(c);
  assert.equal(clock.intervals(), 1, 'one heartbeat timer for all clients');
  clock.fireIntervals();
  assert.equal(a.chunks.at(-1), ': keep-alive\n\n');
  b.changed();
  b.remove(a);
  assert.equal(b.clientCount, 1);
  b.remove(c);
  assert.equal(b.clientCount, 0);
  assert.equal(clock.intervals(), 0);
  assert.equal(clock.pendingTimeouts(), 0);
  b.changed();
  assert.equal(clock.pendingTimeouts(), 0, 'changes without clients schedule nothing');
});

test('at most maxClients streams; a freed slot can be taken again', () => {
  const { b } = setup(3);
  const clients = Array.from({ length: 3 }, () => new FakeClient());
  for (const c of clients) assert.equal(b.add(c), true);
  const extra = new FakeClient();
  assert.equal(b.add(extra), false);
  assert.deepEqual(extra.chunks, [], 'nothing written to a refused client');
  b.remove(clients[0]!);
  assert.equal(b.add(extra), true);
  assert.equal(b.clientCount, 3);
});

test('a client too slow to read is dropped; close() ends every stream and refuses new ones', () => {
  const { clock, b, set } = setup();
  const slow = new FakeClient();
  const fine = new FakeClient();
  b.add(slow);
  b.add(fine);
  slow.writableLength = 10 * 1024 * 1024;
  set(5);
  b.changed();
  clock.fireTimeouts();
  assert.equal(slow.ended, true);
  assert.equal(b.clientCount, 1);
  assert.equal(fine.overviews().at(-1)?.n, 5);
  b.close();
  assert.equal(fine.ended, true);
  assert.equal(b.clientCount, 0);
  assert.equal(b.add(new FakeClient()), false);
  assert.equal(clock.intervals(), 0);
});
