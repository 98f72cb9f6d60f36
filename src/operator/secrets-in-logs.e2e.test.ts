/**
 * No secret reaches a log. Two simulated hosts are joined, upgraded to a new payload and
 * removed by the operator process running at debug level, while every log is captured: the
 * operator's output, the output of every process on the hosts (the agent, over SSH and as a
 * service, and the kubelet), the hosts' service logs and events, and any *.log file on their
 * disks.
 * Each secret made along the way (bootstrap tokens, the SSH key, the node's keys and
 * kubeconfig credentials, the webhook's keys) is then searched for in all of them.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../../sim/cluster/free-port.ts';
import { startSimulatedHosts } from '../../sim/hosts/fleet.ts';
import {
  defaultPrograms,
  type ProgramDefinition,
  ProgramRegistry,
} from '../../sim/hosts/programs.ts';
import { serviceLog } from '../../sim/hosts/service-logs.ts';
import { generateTestKey } from '../../sim/hosts/ssh-test-client.ts';
import { windowsBaseName } from '../../sim/hosts/windows-path.ts';
import { nextBaseAddress } from '../../sim/testkit/loopback-range.ts';
import { spawnOperator, stopProcess } from '../../sim/testkit/operator-process.ts';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import {
  findLeaks,
  type Needle,
  needlesFor,
  readTree,
  secretsInFiles,
} from '../../sim/testkit/secret-scan.ts';
import { freshCluster } from '../../sim/testkit/test-cluster.ts';
import { writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
  writeSshKeySecret,
} from '../../sim/testkit/windows-hosts.ts';
import { installCrds } from '../api/install-crds.ts';
import { waitFor } from '../kube/wait-for.ts';

/** The simulated hosts' programs, with every line they print also kept in `sink`. */
class CapturedPrograms extends ProgramRegistry {
  readonly #inner: ProgramRegistry;
  readonly #sink: (source: string, text: string) => void;

  constructor(inner: ProgramRegistry, sink: (source: string, text: string) => void) {
    super();
    this.#inner = inner;
    this.#sink = sink;
  }

  override lookup(imageName: string): ProgramDefinition {
    const definition = this.#inner.lookup(imageName);
    const sink = this.#sink;
    return {
      ...definition,
      run: (context) => {
        const source = `${context.machine.hostname} ${windowsBaseName(context.binaryPath)} ${context.argv[0] ?? ''}`;
        return definition.run({
          ...context,
          stdout: (text) => {
            sink(source, text);
            context.stdout(text);
          },
          stderr: (text) => {
            sink(source, text);
            context.stderr(text);
          },
        });
      },
    };
  }
}

const decode = (secret: k8s.V1Secret, key: string) =>
  Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');

test('no secret made while joining, upgrading and removing hosts reaches any log', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = 'winfleet-system';
  const key = generateTestKey();
  const payloadDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
  await writeStandInPayload(payloadDir);

  const logs = new Map<string, string>();
  const keep = (source: string, text: string) => logs.set(source, (logs.get(source) ?? '') + text);
  const fleet = await startSimulatedHosts({
    count: 2,
    releases: ['2022', '2019'],
    authorizedKeys: [key.publicKey],
    baseAddress: nextBaseAddress(),
    programs: () => new CapturedPrograms(defaultPrograms(), (source, text) => keep(source, text)),
  });
  t.after(() => fleet.stop());

  // Every bootstrap token, seen as it is made (they are deleted once the node joined).
  const secrets = new Map<string, string>();
  const watch = await new k8s.Watch(kc).watch(
    '/api/v1/namespaces/kube-system/secrets',
    {},
    (_phase: string, secret: k8s.V1Secret) => {
      if (secret.type !== 'bootstrap.kubernetes.io/token') return;
      const id = decode(secret, 'token-id');
      secrets.set(`bootstrap token ${id}`, `${id}.${decode(secret, 'token-secret')}`);
      secrets.set(`bootstrap token ${id} (secret part)`, decode(secret, 'token-secret'));
    },
    () => {},
  );
  t.after(() => watch.abort());

  await installCrds(kc);
  await writeOperatorConfig(kc, namespace, {
    hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 },
  });
  await writeSshKeySecret(kc, namespace, key.privateKey);
  secrets.set('SSH private key', key.privateKey);
  const operatorLog = join(cluster.dir, 'operator.log');
  const operator: ChildProcess = spawnOperator({
    kubeconfig: cluster.kubeconfigPath,
    namespace,
    payloadDir,
    webhookPort: await freePort(),
    logFile: operatorLog,
    logLevel: 'debug',
  });
  t.after(() => stopProcess(operator));

  // Secrets and *.log files on the hosts' disks, taken before removal cleans them away.
  const harvestHosts = async (phase: string) => {
    for (const host of fleet.hosts) {
      const files = await readTree(host.machine.fs.root);
      for (const [name, value] of secretsInFiles(files)) secrets.set(`${host.name} ${name}`, value);
      for (const [path, content] of files) {
        if (path.endsWith('.log')) logs.set(`${host.name} ${phase} ${path}`, content.toString());
      }
      // Services have no console: their logs are the .log files above (service-logs.ts).
      for (const service of host.machine.scm.names()) {
        logs.set(
          `${host.name} ${phase} service ${service}`,
          (await serviceLog(host.machine, service)).join('\n'),
        );
      }
    }
  };

  await createWindowsHosts(kc, namespace, fleet.hosts);
  const ready = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, namespace);
      return list.length === 2 && list.every(hostReady) ? list : undefined;
    },
    { description: 'both hosts Ready', timeoutMs: 120_000 },
  );
  await harvestHosts('joined');

  const next = await writeStandInPayload(payloadDir, {
    kubernetesVersion: 'v1.36.6',
    version: '1.36.6-wf.1',
  });
  await waitFor(
    async () =>
      (await listWindowsHosts(kc, namespace)).every(
        (h) => hostReady(h) && h.status?.servicesVersion === next.version,
      ),
    { description: `both hosts on ${next.version}`, timeoutMs: 120_000 },
  );
  await harvestHosts('upgraded');

  const webhookTls = await core.readNamespacedSecret({ name: 'winfleet-webhook-tls', namespace });
  for (const name of ['tls.key', 'ca.key'])
    secrets.set(`webhook ${name}`, decode(webhookTls, name));

  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const host of ready) await objects.delete(host);
  await waitFor(async () => (await listWindowsHosts(kc, namespace)).length === 0, {
    description: 'both WindowsHosts removed',
    timeoutMs: 120_000,
  });
  await stopProcess(operator);
  await harvestHosts('removed');
  logs.set('operator process', await readFile(operatorLog, 'utf8'));
  for (const host of fleet.hosts) {
    logs.set(`${host.name} service events`, host.machine.scm.events().join('\n'));
  }

  // The capture saw what it should, so an empty search proves something.
  assert.match(logs.get('operator process')!, /"level":"debug"/, 'the operator logged at debug');
  assert.ok(
    [...logs.keys()].some((source) => /winfleet-agent\.exe run/.test(source)),
    `the agent service's output was captured (sources: ${[...logs.keys()].join(', ')})`,
  );
  const tokens = [...secrets.keys()].filter((k) => /^bootstrap token \w+$/.test(k));
  assert.ok(tokens.length >= 2, `a bootstrap token per host was seen (${tokens.join(', ')})`);
  // The hosts' bootstrap files held the same tokens the watch saw; the agent deletes them once
  // the node's own credentials work, so they are not on disk when the hosts are read.
  for (const kind of [/private key in .*kubelet/i, /webhook tls.key/]) {
    assert.ok(
      [...secrets.keys()].some((k) => kind.test(k)),
      `a secret matching ${kind} was found (have: ${[...secrets.keys()].join('; ')})`,
    );
  }

  t.diagnostic(`secrets: ${[...secrets.keys()].join('; ')}`);
  t.diagnostic(`logs: ${[...logs].map(([name, text]) => `${name} (${text.length})`).join('; ')}`);
  const needles: Needle[] = [...secrets].flatMap(([name, value]) => needlesFor(name, value));
  const leaks = findLeaks(logs, needles);
  t.diagnostic(
    `searched ${logs.size} logs (${[...logs.values()].reduce((n, s) => n + s.length, 0)} characters) for ${needles.length} fragments of ${secrets.size} secrets: ${needles.length * logs.size} checks`,
  );
  assert.deepEqual(
    leaks.map((l) => `${l.secret} in ${l.log}: ${l.line.slice(0, 300)}`),
    [],
    'no secret appears in any log',
  );
});
