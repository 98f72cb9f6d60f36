import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { Condition } from '../../controller-runtime/conditions.ts';
import { buildFleetStatus, renderFleetStatus } from './fleet-status.ts';
import { fingerprintProblem, hostKeyState } from './host-key.ts';
import { formatAge, hostListTable, hostRows, oneLine } from './host-rows.ts';

const now = new Date('2026-11-23T12:00:00Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();
const cond = (type: string, status: string, reason: string, message = ''): Condition =>
  ({ type, status, reason, message, lastTransitionTime: ago(60) }) as Condition;

function host(
  name: string,
  extra: Partial<WindowsHost> = {},
  labels?: Record<string, string>,
): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: {
      name,
      namespace: 'winfleet-system',
      creationTimestamp: ago(3 * 3600) as never,
      ...(labels ? { labels } : {}),
    },
    spec: {
      address: `10.0.0.${name.length}`,
      username: 'Administrator',
      sshKeySecretRef: { name: 'k' },
    },
    ...extra,
  };
}

const pinned = `SHA256:${'p'.repeat(43)}`;
const presented = `SHA256:${'N'.repeat(42)}+`;

const ready = host(
  'win-ready',
  {
    status: {
      nodeName: 'win-ready',
      windowsVersion: '10.0.20348.2582',
      servicesVersion: '1.2.3',
      hostKeyFingerprint: pinned,
      conditions: [
        cond('Reachable', 'True', 'Connected'),
        cond('Ready', 'True', 'NodeReady', 'the node is Ready'),
        cond('Degraded', 'False', 'AsExpected'),
      ],
    },
  },
  { pool: 'web' },
);
const rekeyed = host(
  'win-rekeyed',
  {
    status: {
      hostKeyFingerprint: pinned,
      conditions: [
        cond(
          'Reachable',
          'False',
          'HostKeyChanged',
          `Host key of 10.0.0.11:22 is ${presented}, but ${pinned} is pinned; if the host was rebuilt on purpose, annotate …`,
        ),
        cond(
          'Degraded',
          'True',
          'HostKeyChanged',
          `Host key of 10.0.0.11:22 is ${presented}, but ${pinned} is pinned; if …`,
        ),
      ],
      lastError: { step: 'Connect', message: 'host key\nchanged', time: ago(5) },
    },
  },
  { pool: 'web' },
);
const fresh = host('win-new'); // the operator has not looked at it: no status at all
const nodes: k8s.V1Node[] = [
  {
    metadata: {
      name: 'win-ready',
      labels: { 'kubernetes.io/os': 'windows', 'node.kubernetes.io/windows-build': '10.0.20348' },
      annotations: { 'winfleet.io/services-version': '1.2.3' },
    },
    status: {
      nodeInfo: { kubeletVersion: 'v1.36.5' } as k8s.V1NodeSystemInfo,
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'KubeProxyUnhealthy', status: 'True' },
        { type: 'ClockSkew', status: 'False' },
        { type: 'MemoryPressure', status: 'True' },
      ],
    },
  },
  { metadata: { name: 'linux-1', labels: { 'kubernetes.io/os': 'linux' } }, status: {} },
];
const rolling: WindowsNodePool = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsNodePool',
  metadata: { name: 'web', namespace: 'winfleet-system' },
  spec: { selector: { matchLabels: { pool: 'web' } } },
  status: {
    hosts: 2,
    readyHosts: 1,
    updatedHosts: 1,
    unavailableHosts: 1,
    hostsInProgress: [{ name: 'win-rekeyed', step: 'Drain', since: ago(90) }],
    conditions: [
      cond('Progressing', 'True', 'RollingOut'),
      cond('Degraded', 'True', 'DrainTimedOut', 'win-rekeyed: drain\ntimed out'),
    ],
  },
};
const noStatusPool: WindowsNodePool = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsNodePool',
  metadata: { name: 'empty', namespace: 'winfleet-system' },
  spec: { selector: { matchLabels: { pool: 'none' } }, paused: true },
};

test('formatAge is kubectl’s', () => {
  assert.equal(formatAge(ago(5), now), '5s');
  assert.equal(formatAge(ago(600), now), '10m');
  assert.equal(formatAge(ago(3 * 3600), now), '3h');
  assert.equal(formatAge(ago(5 * 86400), now), '5d');
  assert.equal(formatAge(undefined, now), '-');
  assert.equal(formatAge('garbage', now), '-');
  assert.equal(formatAge(ago(-30), now), '0s', 'a creation time ahead of our clock');
});

test('hosts list rows: states, pools, and a host with no status at all', () => {
  const rows = hostRows([rekeyed, fresh, ready], { now, pools: [rolling, noStatusPool] });
  assert.deepEqual(
    rows.map((r) => r.name),
    ['win-new', 'win-ready', 'win-rekeyed'],
  );
  const [n, r, k] = rows;
  assert.equal(n!.state, 'Pending');
  assert.deepEqual(n!.pools, ['(default)']);
  assert.deepEqual(n!.conditions, []);
  assert.equal(n!.node, undefined);
  assert.equal(r!.state, 'Ready');
  assert.deepEqual(r!.pools, ['web']);
  assert.equal(k!.state, 'Degraded (HostKeyChanged)');
  const table = hostListTable(rows, { wide: false, allNamespaces: false });
  assert.deepEqual(table.headers, [
    'NAME',
    'ADDRESS',
    'NODE',
    'POOL',
    'WINDOWS',
    'SERVICES',
    'STATE',
    'AGE',
  ]);
  assert.deepEqual(table.rows[0], [
    'win-new',
    '10.0.0.7:22',
    '-',
    '(default)',
    '-',
    '-',
    'Pending',
    '3h',
  ]);
  assert.deepEqual(table.rows[1], [
    'win-ready',
    '10.0.0.9:22',
    'win-ready',
    'web',
    '10.0.20348.2582',
    '1.2.3',
    'Ready',
    '3h',
  ]);
  const wide = hostListTable(rows, { wide: true, allNamespaces: true });
  assert.deepEqual(wide.headers.slice(0, 1), ['NAMESPACE']);
  assert.deepEqual(wide.headers.slice(-2), ['CONDITIONS', 'LAST ERROR']);
  assert.equal(wide.rows[2]!.at(-1), 'Connect: host key changed', 'newlines flattened');
  assert.equal(wide.rows[2]!.at(-2), 'Reachable=False,Degraded=True');
  // Without pools readable, POOL is empty rather than guessed.
  assert.deepEqual(hostRows([fresh], { now })[0]!.pools, []);
});

test('a host whose deletion started is Removing, with what blocks it', () => {
  const removing = host('win-gone', {
    metadata: { ...ready.metadata, name: 'win-gone', deletionTimestamp: ago(10) as never },
    status: { conditions: [cond('Ready', 'False', 'RemovalBlocked', 'cannot reach the host')] },
  });
  const [row] = hostRows([removing], { now });
  assert.equal(row!.state, 'Removing');
  assert.equal(row!.message, 'cannot reach the host');
});

test('status: summary, node health, a pool mid-rollout and a pool without status', () => {
  const status = buildFleetStatus(
    {
      hosts: [ready, rekeyed, fresh],
      nodes,
      pools: [rolling, noStatusPool],
      runtimeClasses: [
        {
          metadata: {
            name: 'windows-2022',
            labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
          },
          handler: 'runhcs-wcow-process',
          scheduling: { nodeSelector: { 'node.kubernetes.io/windows-build': '10.0.20348' } },
        },
      ],
    },
    now,
  );
  assert.deepEqual(status.summary, {
    hosts: { total: 3, ready: 1 },
    windowsNodes: { total: 1, ready: 1, byBuild: { '10.0.20348': 1 } },
    kubeletVersions: { 'v1.36.5': 1 },
    servicesVersions: { '1.2.3': 1 },
    pools: 2,
  });
  const readyRow = status.hosts.find((h) => h.name === 'win-ready')!;
  assert.deepEqual(
    readyRow.nodeProblems,
    ['KubeProxyUnhealthy'],
    'only health conditions that hold',
  );
  assert.equal(readyRow.nodeReady, true);
  const [empty, web] = status.pools;
  assert.deepEqual(empty, {
    namespace: 'winfleet-system',
    name: 'empty',
    hosts: 0,
    ready: 0,
    updated: 0,
    unavailable: 0,
    rollout: 'Paused',
    inProgress: [],
    remediation: [],
    paused: true,
  });
  assert.equal(web!.rollout, 'RollingOut: 1 of 2 updated');
  assert.deepEqual(web!.inProgress, ['win-rekeyed (Drain 90s)']);
  assert.equal(web!.degraded, 'DrainTimedOut: win-rekeyed: drain\ntimed out');
  const text = renderFleetStatus(status, { wide: false, paint: (_, t) => t });
  const lines = text.split('\n');
  assert.match(
    lines[0]!,
    /^Hosts: 1\/3 Ready {3}Windows nodes: 1\/1 Ready \(builds: 10\.0\.20348 ×1\) {3}kubelet: v1\.36\.5 ×1 {3}services: 1\.2\.3 ×1 {3}pools: 2$/,
  );
  assert.match(text, /\nHOST +NODE +POOL +WINDOWS +SERVICES +STATE +NODE READY +NODE HEALTH\n/);
  assert.match(
    text,
    /\nwin-ready +win-ready +web +10\.0\.20348\.2582 +1\.2\.3 +Ready +True +KubeProxyUnhealthy\n/,
  );
  assert.match(
    text,
    /\nweb +2 +1 +1 +1 +RollingOut: 1 of 2 updated; DrainTimedOut: win-rekeyed: drain timed out +win-rekeyed \(Drain 90s\) +-\n/,
  );
  assert.match(text, /\nwindows-2022 +runhcs-wcow-process +10\.0\.20348 +winfleet\n/);
  assert.ok(!text.includes('\u001b['), 'no colour when paint is plain');
});

test('status of an empty cluster and without the pool CRD', () => {
  const status = buildFleetStatus(
    {
      hosts: [],
      nodes: [],
      runtimeClasses: [],
      unavailable: ['pools: the WindowsNodePool CRD is not installed'],
    },
    now,
  );
  const text = renderFleetStatus(status, { wide: true, paint: (_, t) => t });
  assert.match(text, /^Hosts: 0\/0 Ready {3}Windows nodes: 0\/0 Ready \(builds: none\)/);
  assert.match(text, /No WindowsHosts\. Add one with: winfleet hosts add/);
  assert.match(text, /Pools: not readable/);
  assert.match(text, /warning: pools: the WindowsNodePool CRD is not installed/);
});

test('remediation under way and failed shows on the pool', () => {
  const repairing = host(
    'win-a',
    {
      status: {
        remediation: {
          current: {
            problem: { type: 'Ready', status: 'False', since: ago(600) },
            startedAt: ago(300),
            rung: 'Reboot' as never,
            rungStartedAt: ago(60),
            held: { reason: 'TooManyUnhealthy', since: ago(30) },
          },
        },
      },
    },
    { pool: 'web' },
  );
  const failed = host(
    'win-b',
    { status: { remediation: { failed: { since: ago(5), message: 'x' } } } },
    { pool: 'web' },
  );
  const status = buildFleetStatus(
    { hosts: [repairing, failed], nodes: [], pools: [rolling], runtimeClasses: [] },
    now,
  );
  assert.deepEqual(status.pools[0]!.remediation, [
    'win-a: Reboot (held: TooManyUnhealthy)',
    'win-b: failed',
  ]);
});

test('trust-key: the presented fingerprint comes from the HostKeyChanged condition only', () => {
  assert.deepEqual(hostKeyState(rekeyed).presented, presented);
  assert.equal(hostKeyState(rekeyed).pinned, pinned);
  assert.deepEqual(hostKeyState(ready), { pinned });
  assert.deepEqual(hostKeyState(fresh), {});
  // A fingerprint in another condition's message is not taken for the presented key.
  const other = host('x', {
    status: {
      conditions: [
        cond(
          'Ready',
          'False',
          'StepFailed',
          `Host key of a:22 is ${presented}, but ${pinned} is pinned`,
        ),
      ],
    },
  });
  assert.deepEqual(hostKeyState(other), {});
});

test('trust-key: fingerprints are checked strictly', () => {
  assert.equal(fingerprintProblem(presented), undefined);
  for (const bad of [
    `sha256:${'A'.repeat(43)}`,
    `SHA256:${'A'.repeat(42)}`,
    `SHA256:${'A'.repeat(44)}`,
    `SHA256:${'A'.repeat(43)}=`,
    `SHA256:${'A'.repeat(42)}-`,
    `MD5:${'A'.repeat(43)}`,
    ` SHA256:${'A'.repeat(43)}`,
    `SHA256:${'A'.repeat(43)}\n`,
    `SHA256:${'A'.repeat(43)}\nx`,
  ])
    assert.match(
      fingerprintProblem(bad)!,
      /^FINGERPRINT .* is not an OpenSSH SHA-256 fingerprint/,
      JSON.stringify(bad),
    );
  assert.ok(fingerprintProblem('x'.repeat(500))!.length < 400, 'long input is cut');
});

test('oneLine flattens control characters and cuts', () => {
  assert.equal(oneLine('a\nb\u001b[31mc'), 'a b [31mc');
  assert.equal(oneLine('x'.repeat(200), 10)!.length, 10);
});
