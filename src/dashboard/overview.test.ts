import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../api/windows-host.ts';
import type { WindowsNodePool } from '../api/windows-node-pool.ts';
import { buildHostDetail, buildOverview, detailEventLimit, hostPools } from './overview.ts';

const t0 = '2026-11-23T10:00:00Z';
const hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">';

function host(name: string, extra: Partial<WindowsHost> = {}): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name, namespace: 'winfleet-system' },
    spec: { address: '127.0.0.5', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
    ...extra,
  };
}

const cond = (
  type: string,
  status: 'True' | 'False' | 'Unknown',
  reason: string,
  message = '',
) => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: t0,
});

function node(name: string, conditions: k8s.V1NodeCondition[]): k8s.V1Node {
  return {
    metadata: {
      name,
      labels: { 'kubernetes.io/os': 'windows', 'node.kubernetes.io/windows-build': '10.0.20348' },
      annotations: {
        'winfleet.io/services-version': 'v1',
        'winfleet.io/desired-services-version': 'v2',
      },
    },
    status: {
      conditions,
      nodeInfo: {
        kernelVersion: '10.0.20348.2582',
        kubeletVersion: 'v1.36.5',
        kubeProxyVersion: 'v1.36.5',
        containerRuntimeVersion: 'containerd://2.4.2',
        operatingSystem: 'windows',
        architecture: 'amd64',
        bootID: 'b',
        machineID: 'm',
        osImage: 'Windows Server 2022 Datacenter',
        systemUUID: 'u',
      },
    },
  };
}

const joined = host('win-a', {
  spec: {
    address: '127.0.0.5',
    username: 'Administrator',
    sshKeySecretRef: { name: 'k' },
    pool: 'web',
  },
  status: {
    nodeName: 'win-a',
    windowsVersion: '10.0.20348.2582',
    windowsBuild: '10.0.20348',
    servicesVersion: 'v1',
    bootstrappedAt: t0,
    conditions: [
      cond('Ready', 'True', 'NodeReady', 'Node win-a is Ready'),
      cond('Degraded', 'False', 'AsExpected'),
      cond('Reachable', 'True', 'Connected'),
      cond('NodeRegistered', 'True', 'NodeExists'),
      cond('Bootstrapped', 'True', 'AgentBootstrapped'),
    ],
  },
});

test('hosts carry their conditions in join order, the Node Ready and its health problems', () => {
  const o = buildOverview(
    {
      hosts: [joined],
      nodes: [
        node('win-a', [
          { type: 'Ready', status: 'True', reason: 'KubeletReady' },
          {
            type: 'ContainerRuntimeUnhealthy',
            status: 'True',
            reason: 'ServiceNotRunning',
            message: 'containerd is Stopped',
          },
          { type: 'ClockSkew', status: 'False', reason: 'ClockInSync' },
          { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
        ]),
      ],
      pools: [],
      runtimeClasses: [],
    },
    new Date(t0),
  );
  const [h] = o.hosts;
  assert.equal(h?.state, 'Ready');
  assert.equal(h?.tone, 'ok');
  assert.deepEqual(
    h?.conditions.map((c) => `${c.type}=${c.status}:${c.tone}`),
    [
      'Reachable=True:ok',
      'Bootstrapped=True:ok',
      'NodeRegistered=True:ok',
      'Ready=True:ok',
      'Degraded=False:ok',
    ],
  );
  assert.equal(h?.nodeReady?.status, 'True');
  assert.deepEqual(
    h?.nodeProblems.map((c) => `${c.type}:${c.reason}:${c.message}`),
    ['ContainerRuntimeUnhealthy:ServiceNotRunning:containerd is Stopped'],
  );
  assert.equal(h?.kubeletVersion, 'v1.36.5');
  assert.equal(h?.key, 'winfleet-system/win-a');
  assert.deepEqual(
    o.nodes[0]?.problems.map((c) => c.type),
    ['ContainerRuntimeUnhealthy'],
  );
  assert.equal(o.generatedAt, '2026-11-23T10:00:00.000Z');
});

test('a Ready WindowsHost whose Node went NotReady shows the Node state and its message', () => {
  const o = buildOverview({
    hosts: [joined],
    nodes: [
      node('win-a', [
        {
          type: 'Ready',
          status: 'False',
          reason: 'KubeletNotReady',
          message: 'container runtime is down',
        },
      ]),
    ],
    pools: [],
    runtimeClasses: [],
  });
  assert.equal(o.hosts[0]?.state, 'Node NotReady');
  assert.equal(o.hosts[0]?.tone, 'bad');
  assert.equal(o.hosts[0]?.message, 'Node: container runtime is down');
  assert.equal(o.summary.readyHosts, 0);
  assert.equal(o.summary.notReadyNodes, 1);
  assert.equal(o.nodes[0]?.ready, false);
});

test('degraded, removing and pending hosts each get their state', () => {
  const degraded = host('b', {
    status: {
      conditions: [
        cond('Degraded', 'True', 'DiskFull', 'Only 0 bytes are free on C:'),
        cond('Reachable', 'True', 'Connected'),
      ],
    },
  });
  const removing = host('c', {
    metadata: { name: 'c', namespace: 'winfleet-system', deletionTimestamp: new Date(t0) },
    status: { conditions: [cond('Ready', 'False', 'Draining', 'draining')] },
  });
  const pending = host('d');
  const o = buildOverview({
    hosts: [pending, removing, degraded],
    nodes: [],
    pools: [],
    runtimeClasses: [],
  });
  assert.deepEqual(
    o.hosts.map((h) => [h.name, h.state, h.tone]),
    [
      ['b', 'Degraded (DiskFull)', 'bad'],
      ['c', 'Removing', 'warn'],
      ['d', 'Pending', 'warn'],
    ],
  );
  assert.equal(o.summary.degradedHosts, 1);
  assert.equal(o.hosts[0]?.conditions.find((c) => c.type === 'Degraded')?.tone, 'bad');
});

test('pools show counts, their state and the hosts in a change', () => {
  const pool = (
    name: string,
    status: WindowsNodePool['status'],
    paused = false,
  ): WindowsNodePool => ({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsNodePool',
    metadata: { name, namespace: 'winfleet-system' },
    spec: { selector: { matchLabels: { pool: name } }, maxUnavailable: '25%', paused },
    status,
  });
  const o = buildOverview({
    hosts: [],
    nodes: [],
    runtimeClasses: [],
    pools: [
      pool('web', {
        hosts: 4,
        readyHosts: 3,
        updatedHosts: 1,
        unavailableHosts: 1,
        hostsInProgress: [{ name: 'win-b', step: 'Drain', since: t0 }],
        conditions: [
          cond('Available', 'True', 'MinimumHostsAvailable'),
          cond('Progressing', 'True', 'RollingOut', 'rolling v2'),
        ],
      }),
      pool('batch', {
        conditions: [
          cond('Available', 'True', 'MinimumHostsAvailable'),
          cond('Progressing', 'False', 'RolloutComplete'),
        ],
      }),
      pool('db', {
        conditions: [
          cond('Degraded', 'True', 'DrainTimedOut', 'win-z did not drain'),
          cond('Progressing', 'False', 'RolloutStopped'),
        ],
      }),
      pool('gpu', { conditions: [cond('Progressing', 'True', 'RollingOut')] }, true),
      pool('new', undefined),
    ],
  });
  assert.deepEqual(
    o.pools.map((p) => [p.name, p.state, p.tone]),
    [
      ['batch', 'Rollout complete', 'ok'],
      ['db', 'Degraded (DrainTimedOut)', 'bad'],
      ['gpu', 'Paused', 'warn'],
      ['new', 'Unknown', 'none'],
      ['web', 'Rolling out', 'warn'],
    ],
  );
  const web = o.pools.find((p) => p.name === 'web');
  // A host's pools come from the selectors (a host two select shows both: a conflict).
  const member = (name: string, labels: Record<string, string>) =>
    host(name, { metadata: { name, namespace: 'winfleet-system', labels } });
  const withHosts = buildOverview({
    hosts: [member('h1', { pool: 'web' }), member('h2', {}), host('h3')],
    nodes: [],
    runtimeClasses: [],
    pools: [
      pool('web', undefined),
      {
        ...pool('all', undefined),
        spec: { selector: { matchExpressions: [{ key: 'pool', operator: 'Exists' }] } },
      },
    ],
  });
  assert.deepEqual(
    withHosts.hosts.map((h) => [h.name, h.pool]),
    [
      ['h1', 'all, web'],
      ['h2', undefined],
      ['h3', undefined],
    ],
  );
  assert.deepEqual(web?.inProgress, [{ name: 'win-b', step: 'Drain', since: t0 }]);
  assert.equal(web?.maxUnavailable, '25%');
  assert.deepEqual(
    [web?.hosts, web?.readyHosts, web?.updatedHosts, web?.unavailableHosts],
    [4, 3, 1, 1],
  );
  assert.equal(o.summary.rollingOut, 1);
  assert.equal(o.summary.pools, 5);
});

test('hostile strings from the cluster pass through as data, unchanged (the page sets them as text)', () => {
  const h = host('x', {
    spec: { address: '127.0.0.5', username: hostile, sshKeySecretRef: { name: 'k' } },
    status: {
      hostname: hostile,
      conditions: [cond('Reachable', 'False', 'Unreachable', hostile)],
      lastError: { step: 'connect', message: hostile, time: t0 },
    },
  });
  const o = buildOverview({ hosts: [h], nodes: [], pools: [], runtimeClasses: [] });
  assert.equal(o.hosts[0]?.hostname, hostile);
  assert.equal(o.hosts[0]?.message, hostile);
  assert.equal(o.hosts[0]?.lastError, `connect: ${hostile}`);
  // JSON keeps it one line: an SSE data line cannot be split by a message.
  assert.ok(!JSON.stringify(o).includes('\n'));
  const d = buildHostDetail(h, undefined, []);
  assert.equal(d.username, hostile);
});

test('a host detail has versions with the UBR, join steps, the Node conditions, rollout, remediation and Events newest first', () => {
  const h: WindowsHost = {
    ...joined,
    status: {
      ...joined.status,
      lastError: { step: 'bootstrap', message: 'agent exited 1', time: t0 },
      rollout: {
        current: {
          target: { servicesVersion: 'v2', patchPolicy: 'None' },
          changes: ['services'],
          step: 'Drain',
          startedAt: t0,
          stepStartedAt: t0,
        },
        lastRebootAt: t0,
      },
      remediation: {
        lastActions: [
          {
            time: '2026-11-23T09:00:00Z',
            rung: 'RestartService',
            result: 'Failed',
            message: 'still down',
          },
          {
            time: '2026-11-23T09:30:00Z',
            rung: 'Rebootstrap',
            result: 'Succeeded',
            message: 'healthy',
          },
        ],
      },
    },
  };
  const events: k8s.CoreV1Event[] = Array.from({ length: detailEventLimit + 5 }, (_, i) => ({
    metadata: { name: `e${i}` },
    involvedObject: { kind: i % 2 ? 'Node' : 'WindowsHost', name: 'win-a' },
    type: 'Normal',
    reason: `R${i}`,
    message: `m${i}`,
    count: 2,
    lastTimestamp: new Date(Date.parse(t0) + i * 1000),
    source: { component: 'winfleet-operator' },
  }));
  const d = buildHostDetail(
    h,
    node('win-a', [
      { type: 'MemoryPressure', status: 'False', reason: 'ok' },
      { type: 'KubeletUnhealthy', status: 'True', reason: 'HealthzFailed' },
      { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    ]),
    events,
    { eventsError: 'cannot read Events in namespace default: boom' },
  );
  assert.equal(d.versions.ubr, '2582');
  assert.equal(d.versions.windowsBuild, '10.0.20348');
  assert.equal(d.versions.kubeletVersion, 'v1.36.5');
  assert.equal(d.versions.containerRuntime, 'containerd://2.4.2');
  assert.equal(d.versions.desiredServicesVersion, 'v2');
  assert.deepEqual(
    d.joinSteps.map((c) => c.type),
    ['Reachable', 'Bootstrapped', 'NodeRegistered', 'Ready'],
  );
  assert.deepEqual(
    d.nodeConditions.map((c) => `${c.type}:${c.tone}`),
    ['Ready:ok', 'KubeletUnhealthy:bad', 'MemoryPressure:ok'],
  );
  assert.equal(d.rollout?.step, 'Drain');
  assert.equal(d.rollout?.target, 'services v2');
  assert.deepEqual(
    d.remediation.lastActions.map((a) => a.rung),
    ['Rebootstrap', 'RestartService'],
  );
  assert.equal(d.events.length, detailEventLimit);
  assert.equal(d.events[0]?.reason, `R${detailEventLimit + 4}`);
  assert.equal(d.events[0]?.count, 2);
  assert.equal(d.events[0]?.source, 'winfleet-operator');
  assert.equal(d.eventsError, 'cannot read Events in namespace default: boom');
  assert.equal(d.lastError?.step, 'bootstrap');
  assert.equal(d.mode, 'SSH');
});

test('a Pull-mode host’s detail says so, with no SSH account, host key or address', () => {
  const pull = {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'web-1', namespace: 'winfleet-system' },
    spec: { mode: 'Pull', nodeName: 'web-1', pool: 'web' },
    status: { nodeName: 'web-1', addresses: ['10.1.2.3'] },
  } as WindowsHost;
  const d = buildHostDetail(pull, undefined, []);
  assert.equal(d.mode, 'Pull');
  assert.equal(d.username, undefined);
  assert.equal(d.hostKeyFingerprint, undefined);
  assert.equal(d.host.address, '(pull)');
  assert.deepEqual(d.addresses, ['10.1.2.3']);
  assert.equal(d.prePull, undefined);
  const prePull = {
    status: 'False' as const,
    reason: 'PrePulling',
    message: '1 of 2 images done [boot b, services v]',
    imagesDone: 1,
    imagesTotal: 2,
  };
  const pulling = buildHostDetail({ ...pull, status: { ...pull.status, prePull } }, undefined, []);
  assert.deepEqual(pulling.prePull, prePull, 'the host view shows its pre-pull');
});

test("a host's detail carries exactly its overview row, the pool from the selectors included", () => {
  const labelled: WindowsHost = {
    ...joined,
    metadata: { ...joined.metadata, labels: { role: 'web' } },
    spec: { ...joined.spec, pool: 'legacy' },
  };
  const pools: WindowsNodePool[] = ['web', 'all'].map((name) => ({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsNodePool',
    metadata: { name, namespace: 'winfleet-system' },
    spec: {
      selector:
        name === 'web'
          ? { matchLabels: { role: 'web' } }
          : { matchExpressions: [{ key: 'role', operator: 'Exists' }] },
    },
  }));
  const n = node('win-a', [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }]);
  const sources = { hosts: [labelled, host('other')], nodes: [n], pools, runtimeClasses: [] };
  const row = buildOverview(sources).hosts.find((h) => h.name === 'win-a');
  assert.equal(row?.pool, 'all, web');
  const d = buildHostDetail(labelled, n, [], {
    pools: hostPools({ hosts: [labelled], pools }).get('winfleet-system/win-a'),
  });
  assert.deepEqual(d.host, row);
  // The page compares the rows as JSON: the same text, not only the same values.
  assert.equal(JSON.stringify(d.host), JSON.stringify(row));
});

test('a node pulling its pool’s images shows it (warn); one whose pull failed shows why (bad)', () => {
  const shown = (reason: string, status = 'False') =>
    buildOverview(
      {
        hosts: [joined],
        nodes: [
          node('win-a', [
            { type: 'Ready', status: 'True', reason: 'KubeletReady' },
            { type: 'ImagesPrePulled', status, reason, message: 'm' },
          ]),
        ],
        pools: [],
        runtimeClasses: [],
      },
      new Date(t0),
    ).hosts[0]?.nodeProblems.map((c) => `${c.type}:${c.reason}:${c.tone}`);
  assert.deepEqual(shown('PrePulling'), ['ImagesPrePulled:PrePulling:warn']);
  assert.deepEqual(shown('PrePullFailed'), ['ImagesPrePulled:PrePullFailed:bad']);
  assert.deepEqual(shown('PrePulled', 'True'), []);
});
