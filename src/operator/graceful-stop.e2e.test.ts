/**
 * SIGTERM (what the kubelet sends a pod) to the operator process runs its stop path to the end:
 * the leader Lease is released, so another replica takes over at once, and the process exits 0.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { waitFor } from '../kube/wait-for.ts';

const operatorMain = fileURLToPath(new URL('./main.ts', import.meta.url));

test('SIGTERM to the operator process releases its leader lease and exits 0', async (t) => {
  // Its own cluster: an operator acts on the whole cluster (test-cluster.ts refuseSharedCluster).
  const { kc, kubeconfigPath } = await freshCluster(t);
  const namespace = await testNamespace(kc, 'graceful-stop');
  const child = spawn(
    process.execPath,
    [
      operatorMain,
      '--kubeconfig',
      kubeconfigPath,
      '--namespace',
      namespace,
      '--no-webhook',
      '--status-port',
      '0',
      '--dashboard-port',
      '0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  const identity = `${hostname()}-${child.pid}`;
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const held = await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`the operator exited early:\n${output}`);
      const lease = await coordination.readNamespacedLease({
        name: 'winfleet-operator',
        namespace,
      });
      return lease.spec?.holderIdentity === identity && lease;
    },
    { description: `the operator (${identity}) to lead`, timeoutMs: 60_000 },
  );
  await waitFor(() => output.includes('operator running'), {
    description: 'the operator to report it runs',
  });

  child.kill('SIGTERM');
  const [code, signal] = await Promise.race([
    exited,
    new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error(`the operator did not exit within 30 s of SIGTERM:\n${output}`)),
        30_000,
      ).unref(),
    ),
  ]);
  assert.equal(signal, null, output);
  assert.equal(code, 0, output);
  assert.match(output, /released the leader lease/);

  const released = await coordination.readNamespacedLease({ name: 'winfleet-operator', namespace });
  assert.equal(released.spec?.holderIdentity, '', 'the lease has no holder');
  assert.equal(released.spec?.leaseDurationSeconds, 1);
  assert.equal(released.spec?.leaseTransitions, held.spec?.leaseTransitions);
});
