import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkQueue } from '../controller-runtime/work-queue.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { waitFor } from '../kube/wait-for.ts';

test('a key added many times while waiting runs once', async () => {
  const runs: string[] = [];
  const queue = new WorkQueue(async (key) => {
    runs.push(key);
    await sleep(10);
  });
  queue.add('busy'); // the only worker is busy, so what follows waits
  for (let i = 0; i < 5; i++) queue.add('a');
  queue.add('b');
  queue.add('a');
  await queue.whenIdle();
  assert.deepEqual(runs, ['busy', 'a', 'b']);
});

test('the same key never runs twice at once; an add during a run runs it again after', async () => {
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  const queue = new WorkQueue(
    async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      await sleep(20);
      running--;
    },
    { concurrency: 4 },
  );
  queue.add('k');
  await sleep(5);
  queue.add('k');
  queue.add('k');
  await queue.whenIdle();
  assert.equal(maxRunning, 1);
  assert.equal(runs, 2, 'one run, then one more for the adds during it');
});

test('concurrency is bounded across keys', async () => {
  let running = 0;
  let maxRunning = 0;
  const queue = new WorkQueue(
    async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(10);
      running--;
    },
    { concurrency: 3 },
  );
  for (let i = 0; i < 12; i++) queue.add(`k${i}`);
  await queue.whenIdle();
  assert.equal(maxRunning, 3);
});

test('failures back off exponentially per key and reset after a success', async () => {
  const times: number[] = [];
  const delays: number[] = [];
  const queue = new WorkQueue(
    async () => {
      times.push(Date.now());
      if (times.length < 4) throw new Error('not yet');
    },
    { baseDelayMs: 20, onError: (_key, _error, retryIn) => delays.push(retryIn!) },
  );
  queue.add('x');
  for (let i = 0; i < 100 && times.length < 4; i++) await sleep(20);
  assert.equal(times.length, 4);
  assert.ok(delays[0]! >= 20 && delays[0]! <= 22, `first retry ~20ms, got ${delays[0]}`);
  assert.ok(delays[1]! >= 40 && delays[1]! <= 44, `second retry ~40ms, got ${delays[1]}`);
  assert.ok(delays[2]! >= 80 && delays[2]! <= 88, `third retry ~80ms, got ${delays[2]}`);
  assert.ok(times[3]! - times[2]! >= 78, 'the third retry waited its delay');
  assert.equal(queue.failures('x'), 0, 'a success resets the count');
  queue.stop();
});

test('errors the catalog calls not retryable are not retried', async () => {
  let runs = 0;
  const errors: (number | undefined)[] = [];
  const queue = new WorkQueue(
    async () => {
      runs++;
      throw new WinfleetError('WF_TERMINAL', 'spec.address is empty');
    },
    { baseDelayMs: 5, onError: (_k, _e, retryIn) => errors.push(retryIn) },
  );
  queue.add('x');
  await queue.whenIdle();
  assert.equal(runs, 1);
  assert.deepEqual(errors, [undefined], 'no retry was scheduled');
  assert.equal(queue.failures('x'), 0, 'a terminal failure is not counted for backoff');
});

test('errors the catalog calls retryable are retried', async () => {
  let runs = 0;
  const retries: (number | undefined)[] = [];
  const queue = new WorkQueue(
    async () => {
      runs++;
      if (runs === 1) throw new WinfleetError('WF_SSH_UNREACHABLE', 'host 10.0.0.5:22 refused');
    },
    { baseDelayMs: 5, onError: (_k, _e, retryIn) => retries.push(retryIn) },
  );
  queue.add('x');
  for (let i = 0; i < 100 && runs < 2; i++) await sleep(5);
  assert.equal(runs, 2);
  assert.equal(retries.length, 1);
  assert.ok(retries[0] !== undefined, 'a retry was scheduled');
  queue.stop();
});

test('requeueAfter runs the key again later; stop cancels it', async () => {
  let runs = 0;
  const queue = new WorkQueue(async () => {
    runs++;
    return { requeueAfterMs: 15 };
  });
  queue.add('x');
  await waitFor(() => runs >= 3, {
    description: 'three runs of x',
    timeoutMs: 5000,
    intervalMs: 5,
  });
  queue.stop();
  const after = runs;
  // A witness queue with the same requeue delay, started as the first one stopped: once it
  // has run three times, the stopped queue's timer would have fired too.
  let witnessRuns = 0;
  const witness = new WorkQueue(async () => {
    witnessRuns++;
    return { requeueAfterMs: 15 };
  });
  witness.add('x');
  await waitFor(() => witnessRuns >= 3, {
    description: 'three witness runs',
    timeoutMs: 5000,
    intervalMs: 5,
  });
  witness.stop();
  assert.equal(runs, after, 'nothing runs after stop');
});

test('a requeue far in the future does not overflow into an immediate retry', async () => {
  let runs = 0;
  let witnessRuns = 0;
  const queue = new WorkQueue(async (key) => {
    if (key === 'witness') {
      witnessRuns++;
      return witnessRuns < 3 ? { requeueAfterMs: 15 } : undefined;
    }
    runs++;
    return { requeueAfterMs: 300 * 24 * 60 * 60_000 };
  });
  queue.add('x');
  queue.add('witness');
  // A key requeued three times after x proves that the queue kept running meanwhile.
  await waitFor(() => witnessRuns >= 3, {
    description: 'three witness runs',
    timeoutMs: 5000,
    intervalMs: 5,
  });
  assert.equal(runs, 1);
  queue.stop();
});

test('passAfterNow resolves only after a run that started after the call has ended', async () => {
  const seen: number[] = [];
  let state = 0;
  let release: (() => void) | undefined;
  const queue = new WorkQueue(async () => {
    const looked = state;
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    seen.push(looked);
  });
  queue.add('k'); // a run that looks at state 0 and is held
  await waitFor(() => release !== undefined, { description: 'the first run', intervalMs: 1 });
  state = 1;
  let answered = false;
  const pass = queue.passAfterNow('k').then(() => {
    answered = true;
  });
  const first = release!;
  release = undefined;
  first(); // the run that started before the call ends: not the one asked for
  await waitFor(() => release !== undefined, { description: 'the second run', intervalMs: 1 });
  assert.equal(answered, false, 'the earlier run does not answer');
  release!();
  await pass;
  assert.deepEqual(seen, [0, 1], 'the answering run looked at the state of the call');
});

test('passAfterNow is answered by a failing run too, and by stop', async () => {
  let runs = 0;
  const queue = new WorkQueue(async () => {
    runs++;
    throw new WinfleetError('WF_TERMINAL', 'spec.address is empty');
  });
  await queue.passAfterNow('bad');
  assert.equal(runs, 1);
  const never = new WorkQueue(async () => new Promise<undefined>(() => {}));
  never.add('held'); // its only worker never ends this run
  const waiting = never.passAfterNow('other');
  never.stop();
  await waiting;
});
