import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NodeHealthCondition, NodeHealthEventReason, NodeHealthReason } from '../api/reasons.ts';
import {
  defaultHealthSettings,
  detect,
  emptyHealthState,
  type HealthObservations,
  type HealthResult,
  type HealthSettings,
  type HealthState,
  maxRememberedThreats,
  nextCheckState,
  type ServiceObservation,
  stateFromNode,
} from './detector.ts';

const GiB = 1024 ** 3;
const t0 = Date.parse('2026-11-23T01:00:00Z');
const running: ServiceObservation = { state: 'running', restarts: [t0 - 3600_000] };

/** A healthy host, every observation made. */
function healthy(now: number): HealthObservations {
  return {
    services: { kubelet: running, containerd: running, 'kube-proxy': running },
    kubeletHealthz: { ok: true },
    kubeProxyHealthz: { ok: true },
    hnsNetwork: { name: 'winfleet', present: true, expected: true },
    clock: { serverDate: Math.floor(now / 1000) * 1000, localTime: now },
    systemDrive: { path: 'C:\\', freeBytes: 40 * GiB },
    kubeletCertificate: {
      path: 'C:\\k\\pki\\kubelet-client-current.pem',
      notBefore: t0 - 30 * 86400_000,
      notAfter: t0 + 335 * 86400_000,
    },
    rebootPending: false,
    defenderThreats: [],
  };
}

/** Runs checks 30 s apart; each step may change the healthy observations. */
function run(
  steps: ((o: HealthObservations, now: number) => void)[],
  settings: HealthSettings = defaultHealthSettings,
  state: HealthState = emptyHealthState(),
): HealthResult[] {
  const results: HealthResult[] = [];
  steps.forEach((change, i) => {
    const now = t0 + i * 30_000;
    const o = healthy(now);
    change(o, now);
    const r = detect(o, state, settings, now);
    state = r.state;
    results.push(r);
  });
  return results;
}

const status = (r: HealthResult, type: NodeHealthCondition) =>
  r.conditions.find((c) => c.type === type)?.status;
const condition = (r: HealthResult, type: NodeHealthCondition) =>
  r.conditions.find((c) => c.type === type);
const ok = () => {};

test('a healthy host publishes every condition False at the first check', () => {
  const [r] = run([ok]);
  assert.equal(r!.conditions.length, 9);
  assert.ok(r!.conditions.every((c) => c.status === 'False'));
  assert.equal(r!.changed.length, 9);
  assert.deepEqual(r!.events, []);
  assert.deepEqual(r!.doNotRestart, []);
  assert.equal(run([ok, ok])[1]!.changed.length, 0, 'nothing changed at the second check');
});

/** For each condition: the observation change that makes the problem. */
const problems: [NodeHealthCondition, NodeHealthReason, (o: HealthObservations) => void][] = [
  [
    NodeHealthCondition.KubeletUnhealthy,
    NodeHealthReason.HealthzFailed,
    (o) => {
      o.kubeletHealthz = { ok: false, error: 'connection refused' };
    },
  ],
  [
    NodeHealthCondition.KubeletUnhealthy,
    NodeHealthReason.ServiceNotRunning,
    (o) => {
      o.services.kubelet = { state: 'stopped', exitCode: 1, restarts: [] };
    },
  ],
  [
    NodeHealthCondition.ContainerRuntimeUnhealthy,
    NodeHealthReason.ServiceMissing,
    (o) => {
      o.services.containerd = { state: 'missing', restarts: [] };
    },
  ],
  [
    NodeHealthCondition.KubeProxyUnhealthy,
    NodeHealthReason.HealthzFailed,
    (o) => {
      o.kubeProxyHealthz = { ok: false, error: 'HTTP 503' };
    },
  ],
  [
    NodeHealthCondition.HNSNetworkMissing,
    NodeHealthReason.NetworkMissing,
    (o) => {
      o.hnsNetwork = { name: 'winfleet', present: false, expected: true };
    },
  ],
  [
    NodeHealthCondition.ClockSkew,
    NodeHealthReason.ClockSkewed,
    (o) => {
      o.clock = { serverDate: o.clock!.serverDate - 300_000, localTime: o.clock!.localTime };
    },
  ],
  [
    NodeHealthCondition.SystemDiskLow,
    NodeHealthReason.FreeSpaceLow,
    (o) => {
      o.systemDrive = { path: 'C:\\', freeBytes: 1 * GiB };
    },
  ],
  [
    NodeHealthCondition.KubeletCertificateExpiring,
    NodeHealthReason.CertificateExpiring,
    (o) => {
      o.kubeletCertificate = { ...o.kubeletCertificate!, notAfter: t0 + 86400_000 };
    },
  ],
  [
    NodeHealthCondition.RebootPending,
    NodeHealthReason.RebootRequired,
    (o) => {
      o.rebootPending = true;
    },
  ],
];

for (const [type, reason, breakIt] of problems) {
  test(`${type} (${reason}): set after 2 checks in a row, cleared when the problem goes, a blip ignored`, () => {
    // A blip: one bad check between good ones.
    const blip = run([ok, breakIt, ok, ok]);
    assert.ok(
      blip.every((r) => status(r, type) === 'False'),
      'one bad reading does not flip it',
    );
    assert.ok(blip.every((r) => !r.changed.includes(type) || r === blip[0]));

    const r = run([ok, breakIt, breakIt, breakIt, ok, breakIt, ok, ok]);
    assert.equal(status(r[1]!, type), 'False');
    assert.equal(status(r[2]!, type), 'True', 'the second bad check in a row sets it');
    const set = condition(r[2]!, type)!;
    assert.equal(set.reason, reason);
    assert.ok(r[2]!.changed.includes(type));
    assert.equal(set.lastTransitionTime, '2026-11-23T01:01:00Z');
    assert.ok(set.message.length > 20);
    assert.equal(status(r[3]!, type), 'True');
    assert.ok(!r[3]!.changed.includes(type), 'unchanged: nothing to write');
    assert.equal(status(r[4]!, type), 'True', 'one good reading does not clear it');
    assert.equal(status(r[5]!, type), 'True');
    assert.equal(status(r[6]!, type), 'True');
    assert.equal(status(r[7]!, type), 'False', 'cleared after 2 good checks in a row');
    assert.equal(condition(r[7]!, type)!.lastTransitionTime, '2026-11-23T01:03:30Z');
    // Only that condition changed.
    for (const other of r[2]!.conditions)
      if (other.type !== type) assert.equal(other.status, 'False', other.type);
  });
}

test('messages name what and the fix', () => {
  const msg = (change: (o: HealthObservations) => void, type: NodeHealthCondition) =>
    condition(run([change, change])[1]!, type)!.message;
  assert.match(
    msg(problems[0]![2], NodeHealthCondition.KubeletUnhealthy),
    /10248\/healthz fails: connection refused; read its log/,
  );
  assert.match(
    msg(problems[5]![2], NodeHealthCondition.ClockSkew),
    /5\.0 minutes ahead of the API server's .*w32tm \/resync/,
  );
  assert.match(
    msg(problems[6]![2], NodeHealthCondition.SystemDiskLow),
    /1\.0 GiB free, below 5\.0 GiB/,
  );
  assert.match(
    msg(problems[7]![2], NodeHealthCondition.KubeletCertificateExpiring),
    /expires in 24\.0 hours .*kubectl get csr/,
  );
});

test('consecutiveChecks is configurable: 1 flips at once, 3 needs three', () => {
  const breakIt = problems[0]![2];
  const one = run([ok, breakIt], { ...defaultHealthSettings, consecutiveChecks: 1 });
  assert.equal(status(one[1]!, NodeHealthCondition.KubeletUnhealthy), 'True');
  const three = run([ok, breakIt, breakIt, breakIt], {
    ...defaultHealthSettings,
    consecutiveChecks: 3,
  });
  assert.deepEqual(
    three.map((r) => status(r, NodeHealthCondition.KubeletUnhealthy)),
    ['False', 'False', 'False', 'True'],
  );
});

test('a problem from the first check is published only once it persisted', () => {
  const breakIt = problems[4]![2];
  const r = run([breakIt, breakIt]);
  assert.equal(condition(r[0]!, NodeHealthCondition.HNSNetworkMissing), undefined);
  assert.equal(status(r[1]!, NodeHealthCondition.HNSNetworkMissing), 'True');
});

test('an observation that could not be made changes nothing', () => {
  const breakIt = problems[0]![2];
  const unknown = (o: HealthObservations) => {
    delete o.kubeletHealthz;
    o.services = {};
    delete o.clock;
  };
  // bad, unknown, bad: the streak is not reset by the unknown check.
  const r = run([ok, breakIt, unknown, breakIt]);
  assert.equal(status(r[2]!, NodeHealthCondition.KubeletUnhealthy), 'False');
  assert.equal(status(r[3]!, NodeHealthCondition.KubeletUnhealthy), 'True');
  assert.equal(status(r[2]!, NodeHealthCondition.ClockSkew), 'False', 'kept as published');
});

test('an HNS network never created in this boot is not missing', () => {
  const fresh = (o: HealthObservations) => {
    o.hnsNetwork = { name: 'winfleet', present: false, expected: false };
  };
  const r = run([fresh, fresh, fresh]);
  assert.equal(status(r[2]!, NodeHealthCondition.HNSNetworkMissing), 'False');
  assert.match(condition(r[2]!, NodeHealthCondition.HNSNetworkMissing)!.message, /not created yet/);
});

test('clock skew within the threshold (and the Date header’s second) is in sync', () => {
  const skew = (ms: number) => (o: HealthObservations) => {
    o.clock = { serverDate: o.clock!.localTime - ms, localTime: o.clock!.localTime };
  };
  assert.equal(
    status(run([skew(60_900), skew(60_900)])[1]!, NodeHealthCondition.ClockSkew),
    'False',
  );
  const behind = run([skew(-62_500), skew(-62_500)])[1]!;
  assert.equal(status(behind, NodeHealthCondition.ClockSkew), 'True');
  assert.match(condition(behind, NodeHealthCondition.ClockSkew)!.message, /behind the API server/);
});

test('a certificate not yet past 90% of its lifetime is not expiring, even within the window', () => {
  // A one-day certificate with 12 h left: the kubelet renews it later (70%–90%).
  const young = (o: HealthObservations, now: number) => {
    o.kubeletCertificate = {
      path: 'x',
      notBefore: now - 12 * 3600_000,
      notAfter: now + 12 * 3600_000,
    };
  };
  assert.equal(
    status(run([young, young])[1]!, NodeHealthCondition.KubeletCertificateExpiring),
    'False',
  );
  const expired = (o: HealthObservations, now: number) => {
    o.kubeletCertificate = { path: 'x', notBefore: now - 86400_000, notAfter: now - 60_000 };
  };
  const r = run([expired, expired])[1]!;
  assert.equal(status(r, NodeHealthCondition.KubeletCertificateExpiring), 'True');
  assert.match(
    condition(r, NodeHealthCondition.KubeletCertificateExpiring)!.message,
    /has expired/,
  );
});

test('low disk: an Event once per episode below the Event threshold, then the condition lower', () => {
  const free = (gib: number) => (o: HealthObservations) => {
    o.systemDrive = { path: 'C:\\', freeBytes: gib * GiB };
  };
  const r = run([free(20), free(8), free(8), free(7), free(3), free(3), free(20), free(8)]);
  const diskEvents = r.map(
    (x) => x.events.filter((e) => e.reason === NodeHealthEventReason.SystemDiskLow).length,
  );
  assert.deepEqual(diskEvents, [0, 1, 0, 0, 0, 0, 0, 1], 'again only after it recovered');
  assert.match(r[1]!.events[0]!.message, /8\.0 GiB free, below 10\.0 GiB/);
  assert.deepEqual(
    r.map((x) => status(x, NodeHealthCondition.SystemDiskLow)),
    ['False', 'False', 'False', 'False', 'False', 'True', 'True', 'False'],
  );
});

test('restart loop: FrequentServiceRestart, doNotRestart at once, held until it runs again', () => {
  const loop = (o: HealthObservations, now: number) => {
    o.services.kubelet = {
      state: 'stopped',
      exitCode: 1,
      restarts: Array.from({ length: 6 }, (_, i) => now - i * 20_000),
    };
  };
  const stoppedAgedOut = (o: HealthObservations, now: number) => {
    o.services.kubelet = { state: 'stopped', exitCode: 1, restarts: [now - 3600_000] };
  };
  const runningAgain = (o: HealthObservations, now: number) => {
    o.services.kubelet = { state: 'running', restarts: [now - 3600_000] };
  };
  const r = run([ok, loop, loop, stoppedAgedOut, stoppedAgedOut, runningAgain, runningAgain]);
  assert.deepEqual(r[1]!.doNotRestart, ['kubelet'], 'stop restarting blindly at once');
  assert.equal(status(r[1]!, NodeHealthCondition.FrequentServiceRestart), 'False');
  assert.equal(status(r[2]!, NodeHealthCondition.FrequentServiceRestart), 'True');
  const c = condition(r[2]!, NodeHealthCondition.FrequentServiceRestart)!;
  assert.equal(c.reason, NodeHealthReason.RestartLoop);
  assert.match(
    c.message,
    /kubelet restarted 6 times in 10\.0 minutes .*winfleet stopped restarting it/,
  );
  assert.match(
    condition(r[2]!, NodeHealthCondition.KubeletUnhealthy)!.message,
    /restart loop, so winfleet no longer restarts it/,
  );
  // Its restarts aged out but it stays stopped: still held, still True.
  assert.deepEqual(r[4]!.doNotRestart, ['kubelet']);
  assert.equal(status(r[4]!, NodeHealthCondition.FrequentServiceRestart), 'True');
  assert.match(
    condition(r[4]!, NodeHealthCondition.FrequentServiceRestart)!.message,
    /kubelet was in a restart loop and is not running/,
  );
  // Someone started it and it stays up: released, cleared after 2 checks.
  assert.deepEqual(r[5]!.doNotRestart, []);
  assert.equal(status(r[6]!, NodeHealthCondition.FrequentServiceRestart), 'False');
  // Exactly N restarts in the window is not a loop.
  const five = (o: HealthObservations, now: number) => {
    o.services['kube-proxy'] = {
      state: 'running',
      restarts: Array.from({ length: 5 }, (_, i) => now - i * 20_000),
    };
  };
  const n = run([five, five, five]);
  assert.deepEqual(n[2]!.doNotRestart, []);
  assert.equal(status(n[2]!, NodeHealthCondition.FrequentServiceRestart), 'False');
});

test('restart loop: a service repaired and running a minute without a restart is out of its loop, within the window', () => {
  const looping = (o: HealthObservations, now: number) => {
    o.services.kubelet = {
      state: 'running',
      restarts: Array.from({ length: 6 }, (_, i) => now - 5000 - i * 10_000),
    };
  };
  // Re-bootstrapped: the last restart was 61 s ago, all six still inside the 10-minute window.
  const settled = (o: HealthObservations, now: number) => {
    o.services.kubelet = {
      state: 'running',
      restarts: Array.from({ length: 6 }, (_, i) => now - 61_000 - i * 10_000),
    };
  };
  const r = run([looping, looping, settled, settled]);
  assert.equal(status(r[1]!, NodeHealthCondition.FrequentServiceRestart), 'True');
  assert.deepEqual(r[2]!.doNotRestart, [], 'released once settled');
  assert.equal(status(r[3]!, NodeHealthCondition.FrequentServiceRestart), 'False');
  // Not yet a minute: still in the loop.
  const recent = (o: HealthObservations, now: number) => {
    o.services.kubelet = {
      state: 'running',
      restarts: Array.from({ length: 6 }, (_, i) => now - 59_000 - i * 10_000),
    };
  };
  const still = run([looping, looping, recent, recent]);
  assert.equal(status(still[3]!, NodeHealthCondition.FrequentServiceRestart), 'True');
});

test('a service that ended and was started again since the last check is an Event, once; a loop is not', () => {
  // One restart, 500 ms before the second check (checks are 30 s apart).
  const at = t0 + 30_000 - 500;
  const restarted = (o: HealthObservations) => {
    o.services.kubelet = { state: 'running', restarts: [at] };
  };
  const r = run([ok, restarted, restarted]);
  const counts = r.map(
    (x) => x.events.filter((e) => e.reason === NodeHealthEventReason.ServiceRestarted).length,
  );
  assert.deepEqual(counts, [0, 1, 0], 'new to the second check only');
  assert.match(
    r[1]!.events.find((e) => e.reason === NodeHealthEventReason.ServiceRestarted)!.message,
    /^kubelet ended and was started again since the check .* ago; 1 restart\(s\) in 10\.0 minutes/,
  );
  const loop = (o: HealthObservations, now: number) => {
    o.services.kubelet = {
      state: 'stopped',
      exitCode: 1,
      restarts: Array.from({ length: 6 }, (_, i) => now - 100 - i * 1000),
    };
  };
  const looping = run([ok, loop]);
  assert.equal(
    looping[1]!.events.filter((e) => e.reason === NodeHealthEventReason.ServiceRestarted).length,
    0,
    'a loop is FrequentServiceRestart, not an Event per restart',
  );
});

test('Defender threats: one Event per detection (ThreatID and detection time), remembered within bounds', () => {
  const detectedAt = Date.parse('2026-11-22T10:00:00Z');
  const threats =
    (ids: string[], at = detectedAt) =>
    (o: HealthObservations) => {
      o.defenderThreats = ids.map((id) => ({
        id,
        name: `Trojan:Win32/Test.${id}`,
        severity: 'Severe',
        status: 'Detected',
        detectedAt: at,
        resources: [`file:_C:\\Users\\Public\\x${id}.exe`],
      }));
    };
  const r = run([
    threats(['1']),
    threats(['1', '2']),
    threats(['1', '2']),
    threats(['1'], detectedAt + 3_600_000),
  ]);
  assert.deepEqual(
    r.map((x) => x.events.map((e) => e.reason)),
    [
      [NodeHealthEventReason.DefenderThreatDetected],
      [NodeHealthEventReason.DefenderThreatDetected],
      [],
      [NodeHealthEventReason.DefenderThreatDetected],
    ],
    'the same threat detected again later is a new detection',
  );
  assert.match(
    r[1]!.events[0]!.message,
    /active threat Trojan:Win32\/Test\.2 \(ThreatID 2, severity Severe, status Detected, detected 2026-11-22T10:00:00Z\) in file:_C:/,
  );
  const many = run([threats(Array.from({ length: 300 }, (_, i) => String(i)))]);
  assert.equal(many[0]!.state.reportedThreats.length, maxRememberedThreats);
});

test('stateFromNode: an agent that restarts keeps a True condition until it clears properly', () => {
  const state = stateFromNode([
    {
      type: 'ClockSkew',
      status: 'True',
      reason: 'ClockSkewed',
      message: 'was skewed',
      lastTransitionTime: new Date(t0 - 600_000),
    },
    { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    { type: 'RebootPending', status: 'True', reason: 'SomethingElse' },
  ]);
  assert.deepEqual(Object.keys(state.checks), ['ClockSkew']);
  const r = run([ok, ok], defaultHealthSettings, state);
  assert.equal(status(r[0]!, NodeHealthCondition.ClockSkew), 'True', 'one good reading is a blip');
  assert.equal(
    condition(r[0]!, NodeHealthCondition.ClockSkew)!.lastTransitionTime,
    '2026-11-23T00:50:00Z',
  );
  assert.equal(status(r[1]!, NodeHealthCondition.ClockSkew), 'False');
});

test('detect does not modify the previous state', () => {
  const previous = emptyHealthState();
  const snapshot = JSON.stringify(previous);
  detect(healthy(t0), previous, defaultHealthSettings, t0);
  assert.equal(JSON.stringify(previous), snapshot);
});

test('nextCheckState: a change is published after `needed` readings in a row; the same status keeps its transition time', () => {
  const type = NodeHealthCondition.ClockSkew;
  const skewed = {
    status: 'True' as const,
    reason: NodeHealthReason.ClockSkewed,
    message: 'off',
  };
  const inSync = {
    status: 'False' as const,
    reason: NodeHealthReason.ClockInSync,
    message: 'in sync',
  };
  // Never published: healthy at once, a problem only once it persisted.
  assert.deepEqual(nextCheckState(type, inSync, undefined, 2, 't1'), {
    condition: { type, ...inSync, lastTransitionTime: 't1' },
  });
  const first = nextCheckState(type, skewed, undefined, 2, 't1');
  assert.deepEqual(first, { pending: { status: 'True', count: 1 } });
  assert.deepEqual(nextCheckState(type, skewed, first, 2, 't2'), {
    condition: { type, ...skewed, lastTransitionTime: 't2' },
  });
  // Published False: one True reading is pending, a False one resets the streak and keeps the time.
  const published = { condition: { type, ...inSync, lastTransitionTime: 't0' } };
  const pending = nextCheckState(type, skewed, published, 3, 't1');
  assert.deepEqual(pending, { ...published, pending: { status: 'True', count: 1 } });
  const twice = nextCheckState(type, skewed, pending, 3, 't2');
  assert.deepEqual(twice.pending, { status: 'True', count: 2 });
  assert.deepEqual(nextCheckState(type, { ...inSync, message: 'new words' }, twice, 3, 't3'), {
    condition: { type, ...inSync, message: 'new words', lastTransitionTime: 't0' },
  });
  assert.deepEqual(nextCheckState(type, skewed, twice, 3, 't3'), {
    condition: { type, ...skewed, lastTransitionTime: 't3' },
  });
});
