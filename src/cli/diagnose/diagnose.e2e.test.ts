/**
 * `winfleet diagnose` as a user runs it, a child process against a real cluster with joined
 * simulated hosts: every item of issue 14 is in the bundle and not empty, no secret the test
 * world made is anywhere in it, an unreachable host is noted in index.html (exit 1, the other
 * hosts still collected), and with a broken kubeconfig the hosts given by --host still are.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../../../sim/cluster/free-port.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createLinuxNode } from '../../../sim/testkit/nodes.ts';
import {
  findLeaks,
  type Needle,
  needlesFor,
  readTree,
  secretsInFiles,
} from '../../../sim/testkit/secret-scan.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
  windowsHostFor,
} from '../../../sim/testkit/windows-hosts.ts';
import { diagnosticItems } from '../../hostaccess/remote-scripts.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';

const node = process.execPath;
const main = new URL('../main.ts', import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  bytes: Buffer;
  stderr: string;
}

function winfleet(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      node,
      [main, ...args],
      {
        cwd,
        timeout: 300_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'buffer',
        env: { ...process.env, NO_COLOR: '1' },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout: stdout.toString(), bytes: stdout, stderr: stderr.toString() });
      },
    );
  });
}

/** The bundle unpacked with the system tar, as a colleague would: path → text. */
async function unpack(bundle: string): Promise<Map<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-bundle-'));
  await new Promise<void>((resolve, reject) =>
    execFile('tar', ['-xzf', bundle, '-C', dir], (error) => (error ? reject(error) : resolve())),
  );
  const files = new Map<string, string>();
  for (const [path, content] of await readTree(dir))
    files.set(path.slice(dir.length + 1), content.toString('utf8'));
  return files;
}

function decode(secret: k8s.V1Secret, key: string): string {
  return Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
}

test('diagnose: a bundle with every item, no secret in it, an unreachable host noted; host-only with a broken kubeconfig', async (t) => {
  const world = await joinWorld(t, { releases: ['2019', '2022'], startOperator: false });
  const { kc, namespace, fleet } = world;
  const work = await mkdtemp(join(tmpdir(), 'winfleet-diagnose-'));
  const secrets = new Map<string, string>([['SSH private key', world.key.privateKey]]);
  const watch = await new k8s.Watch(kc).watch(
    '/api/v1/namespaces/kube-system/secrets',
    {},
    (_phase: string, secret: k8s.V1Secret) => {
      if (secret.type !== 'bootstrap.kubernetes.io/token') return;
      const id = decode(secret, 'token-id');
      secrets.set(`bootstrap token ${id}`, `${id}.${decode(secret, 'token-secret')}`);
    },
    () => {},
  );
  t.after(() => watch.abort());
  // The operator as in the lab: outside the cluster, logging to a file, its status server local.
  const operatorLog = join(work, 'operator.log');
  const operator = await startTestOperator(kc, {
    namespace,
    payloadDir: world.payloadDir,
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
    log: createLogger({ level: 'debug', write: (line) => appendFileSync(operatorLog, line) }),
  });
  t.after(() => operator.stop());

  await createLinuxNode(kc, { name: 'linux-1' });
  await createWindowsHosts(kc, namespace, fleet.hosts);
  await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, namespace);
      return list.length === 2 && list.every(hostReady) ? list : undefined;
    },
    { description: 'both hosts Ready', timeoutMs: 180_000, intervalMs: 500 },
  );
  // An installed update each, for Get-HotFix.
  for (const host of fleet.hosts) {
    host.machine.windowsUpdate.publish({
      kb: 'KB5041160',
      title: '2024-08 Cumulative Update',
      categories: ['Security Updates'],
      rebootRequired: false,
    });
    host.machine.windowsUpdate.install(['KB5041160']);
  }
  // A third WindowsHost nothing answers for (a closed loopback port).
  const closedPort = await freePort();
  await k8s.KubernetesObjectApi.makeApiClient(kc).create(
    windowsHostFor({ name: 'gone', address: '127.0.0.1', port: closedPort }, namespace),
  );
  // A component that logged credentials (as a misconfigured one might): a bootstrap token and a
  // private key in the containerd log of the first host, which the bundle collects; the
  // scrubber must take them out.
  const plantedToken = `${randomBytes(3).toString('hex')}.${randomBytes(8).toString('hex')}`;
  const plantedKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  await fleet.hosts[0]!.machine.fs.writeFile(
    `${hostPaths.logs}\\containerd.log`,
    `time="2026-11-23T07:00:00Z" level=debug msg="bootstrap with --token ${plantedToken}"\n${plantedKey}`,
  );
  secrets.set('token planted in a log', plantedToken);
  secrets.set('key planted in a log', plantedKey);
  // Secrets the hosts keep on disk: the kubelet's client key, kubeconfig tokens, bootstrap.json.
  for (const host of fleet.hosts)
    for (const [name, value] of secretsInFiles(await readTree(host.machine.fs.root)))
      secrets.set(`${host.name} ${name}`, value);
  // The test kubeconfig's own client key.
  for (const [name, value] of secretsInFiles(
    new Map([['kubeconfig', await readFile(world.cluster.kubeconfigPath)]]),
  ))
    secrets.set(`test ${name}`, value);
  assert.ok(secrets.size >= 4, `secrets to look for: ${[...secrets.keys()].join(', ')}`);
  const needles: Needle[] = [...secrets].flatMap(([name, value]) => needlesFor(name, value));

  const run = await winfleet(
    [
      'diagnose',
      '--kubeconfig',
      world.cluster.kubeconfigPath,
      '--operator-log',
      operatorLog,
      '--operator-url',
      `http://127.0.0.1:${operator.status!.port}`,
      '--since',
      '2h',
      '-o',
      'bundle.tar.gz',
    ],
    work,
  );
  assert.equal(run.code, 1, `exit 1: one host unreachable\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /^cluster: \d+ items; 3 WindowsHost\(s\) to visit$/m);
  // The planted token and key were found and scrubbed (at least those two).
  const scrubbed = /(\d+) credential\(s\) scrubbed/.exec(run.stdout);
  assert.ok(scrubbed && Number(scrubbed[1]) >= 2, run.stdout);
  assert.match(run.stdout, /not collected: Host winfleet-system\/gone .*cannot reach/);
  const files = await unpack(join(work, 'bundle.tar.gz'));
  const root = [...files.keys()][0]!.split('/')[0]!;
  // For docs/cli.md: what a user sees, and what the bundle holds.
  t.diagnostic(`winfleet diagnose stdout:\n${run.stdout}`);
  t.diagnostic(
    `bundle:\n${[...files]
      .map(([path, text]) => `${String(Buffer.byteLength(text)).padStart(8)}  ${path}`)
      .sort((a, b) => a.slice(10).localeCompare(b.slice(10)))
      .join('\n')}`,
  );
  assert.match(root, /^winfleet-diagnose-\d{8}T\d{6}Z$/);
  const expected = [
    'index.html',
    'cluster/versions.txt',
    'cluster/windowshosts.yaml',
    'cluster/windowsnodepools.yaml',
    'cluster/nodes.yaml',
    'cluster/events.yaml',
    'cluster/runtimeclasses.yaml',
    'cluster/webhooks.yaml',
    'cluster/secrets.txt',
    'cluster/operator-logs/operator-log-file.log',
    'cluster/operator-metrics.txt',
    ...fleet.hosts.flatMap((h) =>
      diagnosticItems.map((item) => `hosts/${namespace}_${h.name.toLowerCase()}/${item}.txt`),
    ),
  ];
  for (const path of expected) {
    const text = files.get(`${root}/${path}`);
    assert.ok(
      text !== undefined,
      `${path} is in the bundle (it has ${[...files.keys()].join(', ')})`,
    );
    assert.ok(
      text.trim().length > 0 && !text.startsWith('(the command printed nothing)'),
      `${path} is not empty`,
    );
  }
  const file = (path: string) => files.get(`${root}/${path}`)!;
  const hostDir = `hosts/${namespace}_${fleet.hosts[1]!.name.toLowerCase()}`;
  assert.match(file('cluster/versions.txt'), /^API server: v1\.\d+/m);
  assert.match(file('cluster/windowshosts.yaml'), /kind: WindowsHost/);
  assert.match(file('cluster/runtimeclasses.yaml'), /windows-2022/);
  assert.match(file('cluster/webhooks.yaml'), /kind: (Mutating|Validating)WebhookConfiguration/);
  assert.match(file('cluster/secrets.txt'), /^winfleet-ssh-key\t/m);
  assert.match(file('cluster/operator-metrics.txt'), /^# (HELP|TYPE) /m);
  assert.match(
    file(`${hostDir}/services.txt`),
    /SERVICE_NAME: kubelet \r\n.*\r\n +STATE +: 4 {2}RUNNING/,
  );
  // No pod has run yet, so the CNI has made no network: the sections are there, empty.
  assert.match(file(`${hostDir}/hns.txt`), /^Networks:\r\n[\s\S]*\r\nLoadBalancers:\r\n/);
  assert.match(file(`${hostDir}/firewall.txt`), /Name +: winfleet-kubelet/);
  assert.match(file(`${hostDir}/hotfixes.txt`), /KB5041160/);
  assert.match(file(`${hostDir}/os-version.txt`), /CurrentBuildNumber +: 20348/);
  assert.match(file(`${hostDir}/events-system.txt`), /Id +: 7036/);
  assert.match(file(`${hostDir}/log-kubelet.txt`), /==> C:\\k\\logs\\kubelet\.log <==\r\n./);
  assert.match(file(`${hostDir}/agent-status.txt`), /"services": \[/);
  const index = file('index.html');
  assert.match(
    index,
    /<h2>Host winfleet-system\/gone \(127\.0\.0\.1:\d+\)<\/h2>\n<p class="failed">Not collected: <span class="note">cannot reach/,
  );
  assert.match(index, /<a href="cluster\/nodes\.yaml">/);
  // Each host's presented SSH key, checked against the key the operator pinned.
  for (const host of fleet.hosts) {
    const line = `Host key: ${host.address}:${host.port} presented ${host.hostKeyFingerprint}, matching the key the operator pinned in status.hostKeyFingerprint (checked on connecting)`;
    assert.ok(index.includes(`<p class="fact">${line}</p>`), `${host.name} key in index.html`);
    assert.ok(run.stdout.includes(line), `${host.name} key on stdout`);
  }
  const leaks = findLeaks(files, needles);
  assert.deepEqual(
    leaks.map((l) => `${l.secret} in ${l.log}: ${l.line.slice(0, 120)}`),
    [],
    'no secret in the bundle',
  );

  // Host-only: the kubeconfig is broken, the host is given by address and key file.
  await writeFile(join(work, 'broken.kubeconfig'), 'apiVersion: v1\nclusters: [\n');
  await writeFile(join(work, 'id_test'), world.key.privateKey, { mode: 0o600 });
  const host = fleet.hosts[0]!;
  const hostOnly = await winfleet(
    [
      'diagnose',
      '--kubeconfig',
      'broken.kubeconfig',
      '--host',
      `${host.address}:${host.port}`,
      '--ssh-key',
      'id_test',
      '-o',
      '-',
    ],
    work,
  );
  assert.equal(hostOnly.code, 1, hostOnly.stderr);
  assert.ok(
    hostOnly.stderr.includes(
      `Host key: ${host.address}:${host.port} presented ${host.hostKeyFingerprint}; not verified (no --host-key)`,
    ),
    hostOnly.stderr,
  );
  assert.match(
    hostOnly.stderr,
    /not collected: Cluster: --kubeconfig: cannot read broken\.kubeconfig/,
  );
  await writeFile(join(work, 'host-only.tar.gz'), hostOnly.bytes);
  const hostFiles = await unpack(join(work, 'host-only.tar.gz'));
  const hostRoot = [...hostFiles.keys()][0]!.split('/')[0]!;
  const hostIndex = hostFiles.get(`${hostRoot}/index.html`)!;
  assert.match(
    hostIndex,
    /<h2>Cluster<\/h2>\n<p class="failed">Not collected: <span class="note">--kubeconfig: cannot read broken\.kubeconfig/,
  );
  for (const item of diagnosticItems) {
    const text = hostFiles.get(`${hostRoot}/hosts/${host.address}_${host.port}/${item}.txt`);
    assert.ok(text?.trim(), `host-only ${item}`);
  }
  assert.deepEqual(
    findLeaks(hostFiles, needles).map((l) => `${l.secret} in ${l.log}`),
    [],
  );
});
