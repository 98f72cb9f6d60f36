/** Each join failure gets its own reason, on the right conditions, with one Warning Event. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import { detect, networkConfig, view } from '../../network/cluster-fixtures.ts';
import { resolveNetwork } from '../../network/resolve-network.ts';
import { refuseNetwork } from './host-join.ts';
import { joinFailure, reportFailure } from './join-failure.ts';

const host: WindowsHost = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'win-1', namespace: 'winfleet-system', uid: 'u-1', generation: 1 },
  spec: { address: '10.0.0.5', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
};

function recorder(): EventRecorder & { recorded: string[] } {
  const recorded: string[] = [];
  return {
    recorded,
    record: (_s, type, reason, message) => recorded.push(`${type} ${reason}: ${message}`),
  };
}

test('the errors a newcomer makes each have their own reason', () => {
  const reasons = (
    [
      'WF_SSH_SECRET_MISSING',
      'WF_SSH_KEY_MISSING',
      'WF_SSH_KEY_INVALID',
      'WF_SSH_AUTH_REFUSED',
      'WF_SSH_HOST_KEY_CHANGED',
      'WF_SSH_UNREACHABLE',
    ] as const
  ).map((code) => joinFailure(new WinfleetError(code, 'x')).reason);
  assert.deepEqual(reasons, [
    ConditionReason.SecretNotFound,
    ConditionReason.SecretKeyMissing,
    ConditionReason.KeyInvalid,
    ConditionReason.AuthRefused,
    ConditionReason.HostKeyChanged,
    ConditionReason.Unreachable,
  ]);
  assert.equal(
    joinFailure(Object.assign(new Error('conflict'), { code: 409 })).reason,
    ConditionReason.ApiError,
  );
  assert.equal(
    joinFailure(new WinfleetError('WF_INVARIANT', 'x')).reason,
    ConditionReason.InternalError,
  );
});

test('a failure sets Ready, Reachable and Degraded as it applies, and is one Warning Event however often reported', () => {
  const hs = new HostStatus(host);
  const events = recorder();
  const error = new WinfleetError(
    'WF_SSH_AUTH_REFUSED',
    'Administrator@10.0.0.5:22 refused the SSH key',
  );
  reportFailure(events, host, hs, error, { ready: false }); // the connect
  reportFailure(events, host, hs, error, { ready: true }); // the join around it
  assert.deepEqual(events.recorded, [
    'Warning AuthRefused: Administrator@10.0.0.5:22 refused the SSH key',
  ]);
  for (const [type, status] of [
    [ConditionType.Reachable, 'False'],
    [ConditionType.Degraded, 'True'],
    [ConditionType.Ready, 'False'],
  ] as const) {
    assert.equal(hs.condition(type)?.status, status, type);
    assert.equal(hs.condition(type)?.reason, ConditionReason.AuthRefused, type);
  }
  const later = new HostStatus(host);
  reportFailure(events, host, later, new WinfleetError('WF_HOST_DISK_FULL', 'Only 0 bytes'), {
    ready: true,
  });
  assert.equal(
    later.condition(ConditionType.Reachable),
    undefined,
    'a full disk says nothing of reachability',
  );
  assert.equal(later.condition(ConditionType.Ready)?.reason, ConditionReason.DiskFull);
  assert.equal(events.recorded.length, 2);
});

test('a network refusal fails the join with its reason on Ready and Degraded, naming the mode and the fix', () => {
  const config = networkConfig({ mode: 'flannel-vxlan' });
  const resolution = resolveNetwork(config, detect(view(), config));
  assert.ok(!resolution.ok);
  const hs = new HostStatus(host);
  const events = recorder();
  assert.ok(refuseNetwork({ events }, host, hs, resolution).requeueAfterMs);
  const degraded = hs.condition(ConditionType.Degraded);
  assert.equal(degraded?.reason, ConditionReason.NetworkModeMismatch);
  assert.match(
    degraded?.message ?? '',
    /^Not configuring the host: network\.mode is flannel-vxlan, but Flannel does not run in the cluster.*\. Set network\.mode/,
  );
  assert.equal(hs.condition(ConditionType.Ready)?.reason, ConditionReason.NetworkModeMismatch);
  // One Warning Event however often the pass refuses.
  refuseNetwork({ events }, host, hs, resolution);
  assert.equal(events.recorded.length, 1);
  assert.match(
    events.recorded[0]!,
    /^Warning NetworkModeMismatch: Not configuring the host: network\.mode is flannel-vxlan/,
  );
});
