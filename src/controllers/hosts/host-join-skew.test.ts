/**
 * What a join pass reports when the payload's kubelet is outside the skew policy
 * (checkKubeletSkew's refusal, written by refuseSkewedPayload): Ready False and Degraded True
 * with reason KubeletVersionSkew and the rule, a Warning Event once, and a look again later.
 * That the refusal comes before anything reaches the host, and that a payload within the
 * policy then joins it, is host-join-skew.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import { checkKubeletSkew } from '../../rollout/kubelet-skew.ts';
import { refuseSkewedPayload } from './host-join.ts';

const host = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'simwin-1-a', namespace: 'winfleet-system', uid: 'u1', generation: 1 },
  spec: { address: '127.0.1.10', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
} as WindowsHost;

test('a joining host is not configured while the payload’s kubelet is outside the skew policy', () => {
  // The test cluster's API server is v1.36.x: a v1.37 kubelet may not join it.
  const skew = checkKubeletSkew('v1.37.0', 'v1.36.5');
  assert.equal(skew.ok, false);
  const { message } = skew as { message: string };
  const events: string[] = [];
  const ctx = {
    events: {
      record: (_s: unknown, type: string, reason: string, text: string) =>
        events.push(`${type} ${reason}: ${text}`),
    },
  };
  const hs = new HostStatus(host);
  assert.deepEqual(refuseSkewedPayload(ctx, host, hs, message), { requeueAfterMs: 60_000 });
  const degraded = hs.condition(ConditionType.Degraded)!;
  assert.deepEqual(
    [degraded.status, degraded.reason],
    ['True', ConditionReason.KubeletVersionSkew],
  );
  assert.match(degraded.message, /v1\.37\.0, newer than the API server v1\.36/);
  assert.match(degraded.message, /payload\.json kubernetesVersion/);
  assert.equal(degraded.message, `Not configuring the host: ${message}`);
  const ready = hs.condition(ConditionType.Ready)!;
  assert.deepEqual(
    [ready.status, ready.reason, ready.message],
    ['False', ConditionReason.KubeletVersionSkew, degraded.message],
  );
  assert.deepEqual(events, [`Warning KubeletVersionSkew: ${degraded.message}`]);
  // The next pass finds it refused already: no second Event.
  refuseSkewedPayload(ctx, host, new HostStatus({ ...host, status: hs.status }), message);
  assert.equal(events.length, 1);
});
