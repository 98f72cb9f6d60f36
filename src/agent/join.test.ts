import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testManifest } from '../../sim/hosts/agent-test-host.ts';
import { SimHostOS } from '../../sim/hosts/sim-host-os.ts';
import { createTestMachine } from '../../sim/hosts/test-machine.ts';
import { prePullTaint } from '../api/pre-pull.ts';
import { parseBootstrapConfig } from './agent-config.ts';
import { joinBootstrapConfig } from './join.ts';
import type { JoinFlags } from './join-flags.ts';
import { joinStatusPath, writeJoinStatus } from './join-status.ts';
import { runAgent } from './run-agent.ts';

const secret = '0123456789abcdef';

async function agent(t: Parameters<typeof createTestMachine>[0], argv: string[]) {
  const machine = await createTestMachine(t);
  let stdout = '';
  let stderr = '';
  const code = await runAgent(argv, {
    hostOS: new SimHostOS(machine),
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
  });
  return { code, stdout, stderr, machine };
}

test('join refuses bad flags with exit code 2, naming the flag, touching nothing', async (t) => {
  const { code, stderr, machine } = await agent(t, [
    'join',
    '--api-server',
    'https://10.0.0.1:6443',
    '--tokne',
    `abcdef.${secret}`,
  ]);
  assert.equal(code, 2);
  assert.match(stderr, /unknown flag "--tokne"/);
  assert.ok(!stderr.includes(secret));
  assert.equal(await machine.fs.tryReadFile(joinStatusPath), undefined);
  // The other commands still take no arguments.
  assert.equal((await agent(t, ['bootstrap', '--x'])).code, 2);
});

test('status shows where a join stands', async (t) => {
  const machine = await createTestMachine(t);
  const host = new SimHostOS(machine);
  await writeJoinStatus(host, { phase: 'pulling-payload', message: 'registry down', attempt: 3 });
  let stdout = '';
  assert.equal(
    await runAgent(['status'], { hostOS: host, stdout: (s) => (stdout += s), stderr: () => {} }),
    0,
  );
  const status = JSON.parse(stdout);
  assert.equal(status.join.phase, 'pulling-payload');
  assert.equal(status.join.attempt, 3);
  assert.match(status.join.time, /^\d{4}-\d\d-\d\dT/);
});

/** A join's flags, trusted cluster-info and materials, as discovery hands them over. */
const joinFlags = {
  apiServer: 'https://10.0.0.1:6443',
  token: { id: 'abcdef', secret },
  caCertHash: `sha256:${'a'.repeat(64)}`,
  namespace: 'winfleet-system',
};
const trusted = {
  server: 'https://10.0.0.1:6443',
  caPem: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
  kubeconfig: '',
};
const materials = () => ({
  joinInfo: {
    apiServer: 'https://api.example.com:6443',
    clusterDNS: '10.96.0.10',
    clusterDomain: 'cluster.local',
    serviceCIDR: '10.96.0.0/12',
    podCIDR: '10.244.0.0/16',
    windowsTaint: { key: 'os', value: 'windows', effect: 'NoSchedule' as const },
    kubelet: {
      systemReserved: { memory: '2Gi' },
      priorityClass: 'ABOVE_NORMAL_PRIORITY_CLASS',
      maxPods: 110,
    },
    checkIntervalSeconds: 30,
    servicesVersion: '1.0.0',
  },
  manifest: testManifest(),
});
const identity = { nodeName: 'win-a', nodeIP: '10.0.1.23', hostname: 'WIN-A' };

test('bootstrap.json from a join carries the join info, the pinned CA and the managed label', () => {
  const config = joinBootstrapConfig(joinFlags, trusted, materials(), identity);
  const parsed = parseBootstrapConfig(JSON.stringify(config));
  assert.equal(parsed.apiServer, 'https://api.example.com:6443');
  assert.equal(parsed.bootstrapToken, `abcdef.${secret}`);
  assert.deepEqual(parsed.labels, { 'winfleet.io/managed': 'true' });
  assert.deepEqual(parsed.taints, [{ key: 'os', value: 'windows', effect: 'NoSchedule' }]);
  assert.equal(parsed.operatorNamespace, 'winfleet-system');
  assert.match(parsed.caCertificate, /BEGIN CERTIFICATE/);
  assert.equal(parsed.pullsPayload, true, 'its upgrades are pulled too');
});

test("a pre-pulling pool's join registers the Node with the pre-pull taint too", () => {
  const taints = (flags: JoinFlags) =>
    joinBootstrapConfig(flags, trusted, materials(), identity).taints;
  assert.deepEqual(taints({ ...joinFlags, prePullTaint: true }), [
    { key: 'os', value: 'windows', effect: 'NoSchedule' },
    { ...prePullTaint },
  ]);
  assert.deepEqual(taints(joinFlags), [{ key: 'os', value: 'windows', effect: 'NoSchedule' }]);
});

test('a host without the Containers feature (a stock cloud image) stops before discovery: named, the fix said, nothing written, the token unused', async (t) => {
  for (const [state, fix] of [
    [
      'Available',
      /Install-WindowsFeature -Name Containers -Restart, then run the join command again/,
    ],
    ['InstallPending', /restart the host to finish the pending change/],
    ['Removed', /restore the feature from installation media/],
  ] as const) {
    const machine = await createTestMachine(t, { features: { Containers: state } });
    let stderr = '';
    const code = await runAgent(
      [
        'join',
        // Nothing listens here: a join that got as far as discovery would fail differently.
        '--api-server',
        'https://127.0.0.1:1',
        '--ca-cert-hash',
        `sha256:${'a'.repeat(64)}`,
        '--namespace',
        'winfleet-system',
      ],
      {
        hostOS: new SimHostOS(machine),
        stdout: () => {},
        stderr: (s) => {
          stderr += s;
        },
        env: (name) => (name === 'WINFLEET_JOIN_TOKEN' ? `abcdef.${secret}` : undefined),
      },
    );
    assert.notEqual(code, 0, state);
    assert.match(stderr, new RegExp(`Containers feature is ${state}, not Installed`));
    assert.match(stderr, fix);
    assert.doesNotMatch(stderr, /cluster-info/, 'no discovery was tried');
    assert.ok(!stderr.includes(secret));
    assert.equal(await machine.fs.tryReadFile('C:\\k\\winfleet\\bootstrap.json'), undefined);
  }
});
