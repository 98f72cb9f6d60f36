import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { OverviewBroadcaster, type StreamClient, serveStream } from './live.ts';

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
  destroyed = false;
  writableLength = 0;
  write(chunk: string) {
    this.chunks.push(chunk);
  }
  end() {
    this.ended = true;
  }
  destroy() {
    this.destroyed = true;
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
  assert.equal(slow.destroyed, true, 'destroyed: end() would wait for it to read, forever');
  assert.equal(slow.ended, false);
  assert.equal(b.clientCount, 1);
  assert.equal(fine.overviews().at(-1)?.n, 5);
  b.close();
  assert.equal(fine.ended, true);
  assert.equal(b.clientCount, 0);
  assert.equal(b.add(new FakeClient()), false);
  assert.equal(clock.intervals(), 0);
});

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('a real client that never reads is destroyed: its connection goes, not only its slot', async (t) => {
  let n = 0;
  const big = 'x'.repeat(1024 * 1024);
  const b = new OverviewBroadcaster({
    build: () => ({ generatedAt: '', n, big }),
    coalesceMs: 0,
    maxBufferedBytes: 256 * 1024,
  });
  const server = createServer((req, res) => serveStream(b, req, res));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  const socket = connect(address.port, '127.0.0.1');
  t.after(() => {
    socket.destroy();
    b.close();
    server.closeAllConnections();
    server.close();
  });
  socket.write('GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  socket.pause();
  await until(() => b.clientCount === 1, 'the stream open');
  // 1 MiB per overview until the kernel's buffers are full and the response's own queue grows
  // past the limit (at most 200 MiB: loopback buffers are a few MiB).
  for (let i = 0; i < 200 && b.clientCount > 0; i++) {
    n++;
    b.changed();
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.equal(b.clientCount, 0, 'the slow client was dropped');
  const connections = () =>
    new Promise<number>((done, fail) =>
      server.getConnections((error, count) => (error ? fail(error) : done(count))),
    );
  await until(async () => (await connections()) === 0, 'the connection closed by the server');
});
