import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WindowsHost } from '../../api/windows-host.ts';
import { cliExitCode, ExitCode } from '../exit-codes.ts';
import { waitForRemoval } from './hosts.ts';

const deleting = {
  metadata: { name: 'w1', namespace: 'ns', deletionTimestamp: '2026-11-23T08:00:00Z' },
} as unknown as WindowsHost;

test('hosts remove --wait: losing the cluster while waiting fails the command (exit 3) with the reason', async () => {
  let reads = 0;
  const unreachable = new TypeError('fetch failed', {
    cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), {
      code: 'ECONNREFUSED',
    }),
  });
  await assert.rejects(
    waitForRemoval(
      ['w1', 'w2'],
      async (name) => {
        reads++;
        if (name === 'w2') return undefined; // gone
        if (reads > 2) throw unreachable;
        return deleting;
      },
      { deadline: Date.now() + 60_000, namespace: 'ns', quiet: true },
    ),
    (error: unknown) => {
      assert.equal(cliExitCode(error), ExitCode.cluster);
      assert.match(
        (error as Error).message,
        /^--wait: cannot follow the removal of w1 \(cannot reach the API server \(connect ECONNREFUSED 127\.0\.0\.1:6443\)/,
      );
      assert.match((error as Error).message, /winfleet hosts list -n ns$/);
      return true;
    },
  );
});

test('hosts remove --wait: any other read error fails it too (exit 1); hosts that go away succeed', async () => {
  await assert.rejects(
    waitForRemoval(
      ['w1'],
      async () => {
        throw new Error('the reply was not JSON');
      },
      { deadline: Date.now() + 60_000, namespace: 'ns', quiet: true },
    ),
    (error: unknown) =>
      cliExitCode(error) === ExitCode.problem &&
      /w1 \(the reply was not JSON\)/.test((error as Error).message),
  );
  await waitForRemoval(['w1'], async () => undefined, {
    deadline: Date.now() + 60_000,
    namespace: 'ns',
    quiet: true,
  });
});

test('hosts remove --wait: a host still there at the deadline fails with what blocks it (exit 1)', async () => {
  await assert.rejects(
    waitForRemoval(['w1'], async () => deleting, {
      deadline: Date.now(),
      namespace: 'ns',
      quiet: true,
    }),
    (error: unknown) =>
      cliExitCode(error) === ExitCode.problem &&
      /^w1 is not removed yet: deconfiguring/.test((error as Error).message),
  );
});
