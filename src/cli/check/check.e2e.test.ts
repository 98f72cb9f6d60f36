/**
 * `winfleet check` as a user runs it: the CLI as a child process (stdout not a TTY), against a
 * real control plane of its own (the check creates a ClusterRoleBinding that affects the whole
 * cluster) and simulated Windows hosts over SSH. Each test asserts the failing check names,
 * the exit code and the JSON shape.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../../../sim/cluster/free-port.ts';
import { type SimulatedHosts, startSimulatedHosts } from '../../../sim/hosts/fleet.ts';
import { generateTestKey } from '../../../sim/hosts/ssh-test-client.ts';
import { nextBaseAddress } from '../../../sim/testkit/loopback-range.ts';
import { createLinuxNode } from '../../../sim/testkit/nodes.ts';
import { freshCluster } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { createWindowsHosts, writeSshKeySecret } from '../../../sim/testkit/windows-hosts.ts';
import { installCrds } from '../../api/install-crds.ts';
import { nodeClientRole } from '../../controllers/csr/bootstrap-auto-approval.ts';
import type { CheckReport } from './check-report.ts';

const gib = 1024 ** 3;
const node = process.execPath;
const main = new URL('../main.ts', import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function winfleet(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      node,
      [main, ...args],
      { timeout: 180_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function json(run: Run): CheckReport {
  try {
    return JSON.parse(run.stdout) as CheckReport;
  } catch {
    throw new Error(`not JSON (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
}

function failing(checks: { name: string; status: string }[]): string[] {
  return checks.filter((c) => c.status === 'fail').map((c) => c.name);
}

/** Every check has exactly the documented fields, with a fix unless it passed. */
function assertShape(report: CheckReport): void {
  assert.deepEqual(Object.keys(report).sort(), [
    'cluster',
    'clusterUnreachable',
    'hosts',
    'notes',
    'summary',
  ]);
  const checks = [...(report.cluster?.checks ?? []), ...report.hosts.flatMap((h) => h.checks)];
  for (const check of checks) {
    assert.deepEqual(Object.keys(check).sort(), ['fix', 'message', 'name', 'status'], check.name);
    assert.ok(['pass', 'warn', 'fail'].includes(check.status), check.name);
    assert.ok(check.message.length > 0, check.name);
    assert.equal(
      check.fix === '',
      check.status === 'pass',
      `${check.name}: fix only when not passed`,
    );
  }
  const count = (s: string) => checks.filter((c) => c.status === s).length;
  assert.deepEqual(report.summary, {
    pass: count('pass'),
    warn: count('warn'),
    fail: count('fail'),
  });
}

test('winfleet check against a real cluster and simulated hosts', async (t) => {
  const cluster = await freshCluster(t);
  const kc = cluster.kc;
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-check-e2e-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const key = generateTestKey();
  const keyFile = join(dir, 'id_ed25519');
  await writeFile(keyFile, key.privateKey, { mode: 0o600 });
  const kube = ['--kubeconfig', cluster.kubeconfigPath];

  const fleets: SimulatedHosts[] = [];
  t.after(() => Promise.all(fleets.map((f) => f.stop())));
  const start = async (
    name: string,
    machine: Parameters<typeof startSimulatedHosts>[0]['machine'] = {},
    release = '2022',
  ) => {
    const fleet = await startSimulatedHosts({
      count: 1,
      names: [name],
      releases: [release],
      baseAddress: nextBaseAddress(),
      authorizedKeys: [key.publicKey],
      machine: { freeDiskBytes: 80 * gib, ...machine },
    });
    fleets.push(fleet);
    const host = fleet.hosts[0]!;
    return { host, flag: `${host.address}:${host.port}` };
  };
  const good = await start('wf-good');
  const small = await start('wf-small', { cpus: 1, memoryBytes: 4 * gib, freeDiskBytes: 30 * gib });
  const noContainers = await start('wf-nocontainers');
  noContainers.host.machine.features.set('Containers', 'Available');
  const longName = await start('a-name-of-16-chr');
  // Windows Server 2019 from before March 2019's KB4489899 (10.0.17763.379): no overlay networking.
  const old2019 = await start('wf-old2019', { ubr: 300 }, '2019');
  const hostFlags = (...hosts: { flag: string }[]) => [
    ...hosts.flatMap((h) => ['--host', h.flag]),
    '--ssh-key',
    keyFile,
  ];

  await t.test('cluster side: reports the cluster as it is', async () => {
    const nodes = (await kc.makeApiClient(k8s.CoreV1Api).listNode()).items;
    const run = await winfleet(['check', '--skip-hosts', '-o', 'json', ...kube]);
    const report = json(run);
    assertShape(report);
    assert.equal(report.cluster?.server, kc.getCurrentCluster()?.server);
    const c = Object.fromEntries(report.cluster!.checks.map((x) => [x.name, x]));
    assert.deepEqual(Object.keys(c), [
      'api-server-version',
      'node-restriction',
      'bootstrap-token-auth',
      'linux-node',
      'cni',
      'webhook',
      'payload-kubelet-skew',
      'bootstrap-auto-approval',
    ]);
    assert.equal(c['api-server-version']!.status, 'pass');
    assert.match(c['api-server-version']!.message, /^v1\.\d+\.\d+/);
    // The test cluster runs --enable-admission-plugins=NodeRestriction and --enable-bootstrap-token-auth.
    assert.equal(c['node-restriction']!.status, 'pass', c['node-restriction']!.message);
    assert.equal(c['bootstrap-token-auth']!.status, 'pass', c['bootstrap-token-auth']!.message);
    // A fresh cluster of the test kit has no nodes: no Linux node is the truth.
    assert.equal(
      nodes.filter((n) => n.metadata?.labels?.['kubernetes.io/os'] === 'linux').length,
      0,
    );
    assert.equal(c['linux-node']!.status, 'fail');
    // No CNI in the test cluster: network.mode auto (no winfleet-config: the defaults) joins
    // nothing, as the operator would not.
    assert.equal(c.cni!.status, 'fail', c.cni!.message);
    assert.match(
      c.cni!.message,
      /^network\.mode is auto, and the cluster shows no CNI winfleet recognises .*\[network\.mode auto \(the defaults: no ConfigMap winfleet-system\/winfleet-config\)\]$/,
    );
    assert.match(
      c.cni!.fix,
      /^Set network\.mode in winfleet-config: routed if your network routes/,
    );
    assert.equal(c.webhook!.status, 'warn', 'no operator: no webhook configuration');
    assert.equal(c['payload-kubelet-skew']!.status, 'warn');
    assert.equal(c['bootstrap-auto-approval']!.status, 'pass');
    assert.equal(run.code, 1);
    assert.deepEqual(report.hosts, []);
    // The token made for the probe is gone.
    const secrets = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedSecret({
      namespace: 'kube-system',
      labelSelector: 'app.kubernetes.io/managed-by=winfleet-check',
    });
    assert.deepEqual(secrets.items, []);
  });

  await t.test('cluster side: a binding that auto-approves bootstrap node CSRs fails', async () => {
    const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    const name = 'check-e2e-auto-approve';
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: nodeClientRole,
        },
        subjects: [
          { kind: 'Group', name: 'system:bootstrappers', apiGroup: 'rbac.authorization.k8s.io' },
        ],
      },
    });
    try {
      const report = json(await winfleet(['check', '--skip-hosts', '-o', 'json', ...kube]));
      const check = report.cluster!.checks.find((x) => x.name === 'bootstrap-auto-approval')!;
      assert.equal(check.status, 'fail');
      assert.match(check.message, new RegExp(name));
      assert.match(check.fix, /system:bootstrappers/);
    } finally {
      await rbac.deleteClusterRoleBinding({ name });
    }
  });

  await createLinuxNode(kc, { name: 'linux-1' });

  await t.test(
    'hosts: too small, a 16-character name for a domain join, no Containers',
    async () => {
      // --network-mode routed: the test cluster has no CNI; routed joins it with a warning.
      const run = await winfleet([
        'check',
        '-o',
        'json',
        '--domain-join',
        '--network-mode',
        'routed',
        ...kube,
        ...hostFlags(good, small, longName, noContainers),
      ]);
      const report = json(run);
      assertShape(report);
      assert.equal(run.code, 1, run.stderr);
      assert.deepEqual(failing(report.cluster!.checks), [], 'the cluster has a Linux node now');
      const cni = report.cluster!.checks.find((c) => c.name === 'cni')!;
      assert.equal(cni.status, 'warn', 'routed cannot be verified');
      assert.match(cni.message, /routed joins it \[network\.mode routed \(--network-mode;/);
      const byHost = Object.fromEntries(report.hosts.map((h) => [h.host, h]));
      assert.deepEqual(
        report.hosts.map((h) => h.host),
        [good.flag, small.flag, longName.flag, noContainers.flag],
      );
      assert.deepEqual(failing(byHost[good.flag]!.checks), []);
      assert.deepEqual(failing(byHost[small.flag]!.checks), ['cpu', 'memory', 'disk']);
      assert.deepEqual(failing(byHost[longName.flag]!.checks), ['hostname-length']);
      assert.match(
        byHost[longName.flag]!.checks.find((c) => c.name === 'hostname-length')!.message,
        /a-name-of-16-chr has 16 characters and it will be domain-joined/,
      );
      assert.deepEqual(failing(byHost[noContainers.flag]!.checks), ['containers-feature']);
      assert.deepEqual(
        byHost[good.flag]!.checks.map((c) => c.name),
        [
          'host-key',
          'windows-build',
          'patch-level',
          'containers-feature',
          'administrator',
          'cpu',
          'memory',
          'disk',
          'hostname-length',
          'clock-skew',
          'port-10250',
          'firewall-10250',
          'proxy',
        ],
      );
      assert.match(
        byHost[good.flag]!.checks.find((c) => c.name === 'clock-skew')!.message,
        /the API server's/,
      );
      // Without --host-key the presented key is reported, not verified.
      const hostKey = byHost[good.flag]!.checks.find((c) => c.name === 'host-key')!;
      assert.equal(hostKey.status, 'warn');
      assert.equal(
        hostKey.message,
        `${good.flag} presented ${good.host.hostKeyFingerprint}; not verified (no --host-key)`,
      );
    },
  );

  await t.test(
    'hosts: a host that meets every requirement exits 0; the table says so',
    async () => {
      const run = await winfleet([
        'check',
        '--network-mode',
        'routed',
        ...kube,
        ...hostFlags(good),
        '--host-key',
        good.host.hostKeyFingerprint,
      ]);
      assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /^ {2}WARN {2}cni +.*routed joins it/m);
      assert.match(
        run.stdout,
        /^ {2}PASS {2}host-key +\S+ presented SHA256:\S+, matching --host-key/m,
      );
      assert.match(run.stdout, new RegExp(`^host ${good.flag.replace(/\./g, '\\.')}$`, 'm'));
      assert.match(run.stdout, /^ {2}PASS {2}cpu +4 logical processors/m);
      assert.match(run.stdout, /\d+ passed, \d+ warned, 0 failed\n$/);
      // Not a terminal: progress is plain lines on stderr, never on stdout.
      assert.match(run.stderr, /winfleet check: host .*: ok/);
      process.stdout.write(`\n--- winfleet check (real output) ---\n${run.stdout}---\n`);
    },
  );

  await t.test('hosts: a host clock 5 minutes ahead fails clock-skew', async () => {
    good.host.machine.clockOffsetMs = 300_000;
    try {
      const report = json(await winfleet(['check', '-o', 'json', ...kube, ...hostFlags(good)]));
      assert.deepEqual(failing(report.hosts[0]!.checks), ['clock-skew']);
    } finally {
      good.host.machine.clockOffsetMs = 0;
    }
  });

  await t.test(
    'without --host: the WindowsHosts of the namespace (-n), or of all (-A)',
    async () => {
      const noCrd = json(await winfleet(['check', '-o', 'json', ...kube]));
      assert.match(noCrd.notes.join('\n'), /no WindowsHost API/);
      assert.deepEqual(noCrd.hosts, []);
      await installCrds(kc);
      const namespace = 'check-hosts';
      await writeSshKeySecret(kc, namespace, key.privateKey);
      await createWindowsHosts(kc, namespace, [small.host]);
      const run = await winfleet(['check', '-o', 'json', '-n', namespace, ...kube]);
      const report = json(run);
      assertShape(report);
      assert.equal(run.code, 1);
      assert.deepEqual(
        report.hosts.map((h) => [h.host, h.address]),
        [[`${namespace}/wf-small`, small.flag]],
      );
      assert.deepEqual(failing(report.hosts[0]!.checks), ['cpu', 'memory', 'disk']);
      const usage = await winfleet(['check', '--skip-cluster', ...kube]);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /--skip-cluster needs --host ADDRESS/);
      const everywhere = json(await winfleet(['check', '-o', 'json', '-A', ...kube]));
      assert.deepEqual(
        everywhere.hosts.map((h) => h.host),
        [`${namespace}/wf-small`],
      );
      const empty = json(await winfleet(['check', '-o', 'json', '-n', 'nothing-here', ...kube]));
      assert.match(empty.notes.join('\n'), /no WindowsHosts in namespace nothing-here/);
    },
  );

  await t.test(
    'webhook: with the operator running, a dry-run Windows pod gets its mutation',
    async () => {
      const operator = await startTestOperator(kc, { namespace: 'winfleet-system' });
      try {
        const report = json(await winfleet(['check', '--skip-hosts', '-o', 'json', ...kube]));
        const check = report.cluster!.checks.find((x) => x.name === 'webhook')!;
        assert.equal(check.status, 'pass', check.message);
        assert.match(check.message, /winfleet\.io\/mutations: .*toleration/);
        const pods = await kc
          .makeApiClient(k8s.CoreV1Api)
          .listNamespacedPod({ namespace: 'default' });
        assert.deepEqual(pods.items, [], 'a dry run stores nothing');
      } finally {
        await operator.stop();
        // The test operator's winfleet-config (network.mode routed): the checks below read the
        // defaults, as a cluster without winfleet installed has.
        await kc
          .makeApiClient(k8s.CoreV1Api)
          .deleteNamespacedConfigMap({ name: 'winfleet-config', namespace: 'winfleet-system' });
      }
    },
  );

  await t.test(
    '--hyperv: the Hyper-V role with its hypervisor passes; a VM without nested virtualization fails',
    async () => {
      const hyperV = await start('wf-hyperv', {
        virtualization: { vm: true, extensions: true },
        features: { Containers: 'Installed', 'Hyper-V': 'Installed' },
      });
      const run = await winfleet([
        'check',
        '--skip-cluster',
        '--hyperv',
        '-o',
        'json',
        ...hostFlags(hyperV, good),
      ]);
      const report = json(run);
      const hyperv = (i: number) => report.hosts[i]!.checks.find((c) => c.name === 'hyperv');
      assert.equal(hyperv(0)?.status, 'pass', hyperv(0)?.message);
      assert.equal(hyperv(1)?.status, 'fail');
      assert.match(hyperv(1)!.message, /does not expose nested virtualization/);
      assert.equal(run.code, 1);
      // Without --hyperv no such check runs.
      const plain = json(
        await winfleet(['check', '--skip-cluster', '-o', 'json', ...hostFlags(good)]),
      );
      assert.equal(
        plain.hosts[0]!.checks.find((c) => c.name === 'hyperv'),
        undefined,
      );
    },
  );

  await t.test('an unreachable cluster exits 3; the --host checks still run', async () => {
    const port = await freePort();
    const bad = join(dir, 'unreachable.kubeconfig');
    const server = kc.getCurrentCluster()!;
    const copy = new k8s.KubeConfig();
    copy.loadFromFile(cluster.kubeconfigPath);
    const text = copy.exportConfig().replace(server.server, `https://127.0.0.1:${port}`);
    await writeFile(bad, text);
    const run = await winfleet(['check', '-o', 'json', '--kubeconfig', bad, ...hostFlags(good)]);
    const report = json(run);
    assertShape(report);
    assert.equal(run.code, 3, run.stderr);
    assert.equal(report.cluster, null);
    assert.equal(report.clusterUnreachable, true);
    assert.match(report.notes.join('\n'), /cannot reach the API server .* the --host checks ran/);
    assert.deepEqual(failing(report.hosts[0]!.checks), []);
    assert.match(
      report.hosts[0]!.checks.find((c) => c.name === 'clock-skew')!.message,
      /this machine's/,
    );
    // And host-only on purpose: the host checks alone (the small host fails cpu: exit 1).
    const alone = await winfleet(['check', '--skip-cluster', '-o', 'yaml', ...hostFlags(small)]);
    assert.equal(alone.code, 1);
    assert.match(alone.stdout, /name: cpu\n\s+status: fail/);
  });

  await t.test(
    'cni: Antrea passes only with antrea-agent-windows in kube-system; a look-alike in another namespace does not count',
    async () => {
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const apps = kc.makeApiClient(k8s.AppsV1Api);
      await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
      // As Antrea's manifests make them; a selector no node has keeps kwok from running pods.
      const daemonSet = (namespace: string, name: string, os: 'linux' | 'windows') =>
        apps.createNamespacedDaemonSet({
          namespace,
          body: {
            metadata: { name },
            spec: {
              selector: { matchLabels: { app: name } },
              template: {
                metadata: { labels: { app: name } },
                spec: {
                  nodeSelector: { 'kubernetes.io/os': os, 'winfleet.io/check-e2e': 'no-node' },
                  ...(os === 'windows'
                    ? {
                        hostNetwork: true,
                        securityContext: {
                          windowsOptions: {
                            hostProcess: true,
                            runAsUserName: 'NT AUTHORITY\\SYSTEM',
                          },
                        },
                      }
                    : {}),
                  containers: [
                    {
                      name: 'antrea-agent',
                      image:
                        os === 'windows'
                          ? 'antrea/antrea-windows:v2.4.0'
                          : 'antrea/antrea-agent-ubuntu:v2.4.0',
                    },
                  ],
                },
              },
            },
          },
        });
      const cniCheck = async () =>
        json(await winfleet(['check', '--skip-hosts', '-o', 'json', ...kube])).cluster!.checks.find(
          (x) => x.name === 'cni',
        )!;
      await daemonSet('kube-system', 'antrea-agent', 'linux');
      try {
        const missing = await cniCheck();
        assert.equal(missing.status, 'fail');
        assert.match(
          missing.message,
          /Antrea \(DaemonSet kube-system\/antrea-agent\), but no Windows DaemonSet of it \(kube-system\/antrea-agent-windows\)/,
        );
        assert.match(missing.fix, /antrea-windows-with-ovs\.yml/);
        await daemonSet('team-a', 'antrea-agent-windows', 'windows');
        const faked = await cniCheck();
        assert.equal(faked.status, 'fail', 'a DaemonSet in team-a is not Antrea’s');
        assert.match(
          faked.message,
          /DaemonSet team-a\/antrea-agent-windows looks like Antrea's, which runs in kube-system: ignored/,
        );
        await daemonSet('kube-system', 'antrea-agent-windows', 'windows');
        const passed = await cniCheck();
        assert.equal(passed.status, 'pass', passed.message);
        assert.match(
          passed.message,
          /^Antrea with Windows DaemonSet kube-system\/antrea-agent-windows: auto chose external \(CNI directories C:\\etc\\cni\\net\.d and C:\\opt\\cni\\bin; winfleet's kube-proxy off\)/,
        );
        // flannel-vxlan on this cluster joins nothing.
        const wrong = json(
          await winfleet([
            'check',
            '--skip-hosts',
            '-o',
            'json',
            '--network-mode',
            'flannel-vxlan',
            ...kube,
          ]),
        ).cluster!.checks.find((x) => x.name === 'cni')!;
        assert.equal(wrong.status, 'fail');
        assert.match(
          wrong.message,
          /^network\.mode is flannel-vxlan, but Flannel does not run in the cluster: it shows Antrea/,
        );
      } finally {
        for (const [namespace, name] of [
          ['kube-system', 'antrea-agent'],
          ['kube-system', 'antrea-agent-windows'],
          ['team-a', 'antrea-agent-windows'],
        ] as const)
          await apps.deleteNamespacedDaemonSet({ namespace, name }).catch(() => {});
      }
    },
  );

  await t.test(
    "cni: Flannel's net-conf.json is read: default VXLAN fails, VNI 4096 and port 4789 pass; a 2019 host before KB4489899 fails patch-level",
    async () => {
      const core = kc.makeApiClient(k8s.CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: 'kube-flannel' } } });
      const netConf = (backend: object) =>
        JSON.stringify({ Network: '10.244.0.0/16', Backend: backend });
      await core.createNamespacedConfigMap({
        namespace: 'kube-flannel',
        body: {
          metadata: { name: 'kube-flannel-cfg' },
          data: { 'net-conf.json': netConf({ Type: 'vxlan' }) },
        },
      });
      const cniCheck = async (extra: string[] = []) =>
        json(
          await winfleet(['check', '--skip-hosts', '-o', 'json', ...extra, ...kube]),
        ).cluster!.checks.find((x) => x.name === 'cni')!;
      const defaults = await cniCheck();
      assert.equal(defaults.status, 'fail');
      assert.match(defaults.message, /Backend\.VNI is not set: Linux flanneld then uses VNI 1/);
      assert.match(defaults.message, /Backend\.Port is not set: Linux flanneld then uses UDP 8472/);
      assert.match(
        defaults.fix,
        /"VNI": 4096, "Port": 4789\} in net-conf\.json of ConfigMap kube-flannel\/kube-flannel-cfg/,
      );
      // A kube-flannel-cfg with the right settings in a namespace anyone may write to is not read.
      await core.createNamespacedConfigMap({
        namespace: 'team-a',
        body: {
          metadata: { name: 'kube-flannel-cfg' },
          data: { 'net-conf.json': netConf({ Type: 'vxlan', VNI: 4096, Port: 4789 }) },
        },
      });
      assert.equal((await cniCheck()).status, 'fail', 'team-a/kube-flannel-cfg is never read');
      await core.replaceNamespacedConfigMap({
        name: 'kube-flannel-cfg',
        namespace: 'kube-flannel',
        body: {
          metadata: { name: 'kube-flannel-cfg' },
          data: { 'net-conf.json': netConf({ Type: 'vxlan', VNI: 4096, Port: 4789 }) },
        },
      });
      const passed = await cniCheck();
      assert.equal(passed.status, 'pass', passed.message);
      assert.match(
        passed.message,
        /^Flannel VXLAN \(ConfigMap kube-flannel\/kube-flannel-cfg\): auto chose flannel-vxlan \(VNI 4096, UDP port 4789, Network 10\.244\.0\.0\/16\)/,
      );
      // Another mode: by flag, or from the operator's ConfigMap winfleet-config.
      const hostGw = await cniCheck(['--network-mode', 'flannel-host-gw']);
      assert.equal(hostGw.status, 'fail');
      assert.match(
        hostGw.message,
        /^network\.mode is flannel-host-gw, but the cluster runs Flannel VXLAN \(ConfigMap kube-flannel\/kube-flannel-cfg\)/,
      );
      assert.match(hostGw.fix, /Set network\.mode: flannel-vxlan \(or auto\)/);
      await core
        .createNamespace({ body: { metadata: { name: 'winfleet-system' } } })
        .catch((error: unknown) => {
          if ((error as { code?: number }).code !== 409) throw error;
        });
      await core.createNamespacedConfigMap({
        namespace: 'winfleet-system',
        body: {
          metadata: { name: 'winfleet-config' },
          data: { 'config.yaml': 'network:\n  mode: routed\n' },
        },
      });
      try {
        const routed = await cniCheck();
        assert.equal(routed.status, 'fail');
        assert.match(
          routed.message,
          /^network\.mode is routed, but the cluster's pods use Flannel VXLAN .*\[network\.mode routed \(ConfigMap winfleet-system\/winfleet-config\)\]$/,
        );
      } finally {
        await core.deleteNamespacedConfigMap({
          name: 'winfleet-config',
          namespace: 'winfleet-system',
        });
      }

      // The host checks judge the patch level against the overlay the cluster uses.
      const run = await winfleet(['check', '-o', 'json', ...kube, ...hostFlags(old2019, good)]);
      const report = json(run);
      assertShape(report);
      assert.equal(run.code, 1, run.stderr);
      // (The webhook check fails here: the operator was stopped, its configuration stays.)
      assert.equal(report.cluster!.checks.find((c) => c.name === 'cni')!.status, 'pass');
      const [old, current] = report.hosts;
      assert.deepEqual(failing(old!.checks), ['patch-level']);
      const patch = old!.checks.find((c) => c.name === 'patch-level')!;
      assert.match(
        patch.message,
        /^10\.0\.17763\.300 is below .* needs 10\.0\.17763\.379 \(KB4489899\)/,
      );
      assert.match(patch.message, /Flannel VXLAN \(ConfigMap kube-flannel\/kube-flannel-cfg\)/);
      assert.match(patch.fix, /^Install KB4489899 or any later cumulative update/);
      assert.equal(old!.checks.find((c) => c.name === 'windows-build')!.status, 'pass');
      assert.deepEqual(failing(current!.checks), []);
      // Without the cluster its CNI is unknown: the same host only warns.
      const alone = await winfleet([
        'check',
        '--skip-cluster',
        '-o',
        'json',
        ...hostFlags(old2019),
      ]);
      const loneReport = json(alone);
      assertShape(loneReport);
      assert.equal(loneReport.cluster, null);
      assert.match(loneReport.notes.join('\n'), /^--skip-cluster: no cluster-side checks/m);
      const lone = loneReport.hosts[0]!.checks.find((c) => c.name === 'patch-level')!;
      assert.equal(lone.status, 'warn');
      assert.match(lone.message, /not known \(--skip-cluster/);
      assert.equal(alone.code, 0, alone.stderr);
      // Told the mode, the host checks judge it without the cluster.
      const told = json(
        await winfleet([
          'check',
          '--skip-cluster',
          '--network-mode',
          'flannel-vxlan',
          '-o',
          'json',
          ...hostFlags(old2019),
        ]),
      );
      const toldPatch = told.hosts[0]!.checks.find((c) => c.name === 'patch-level')!;
      assert.equal(toldPatch.status, 'fail');
      assert.match(toldPatch.message, /the cluster uses it \(--network-mode flannel-vxlan\)/);
    },
  );
});
