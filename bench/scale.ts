/**
 * npm run bench:scale — the operator at 0, 1,000, 5,000 and 10,000 kwok Windows nodes of mixed
 * builds (2019, 2022, 2025), with simulated hosts joined over SSH. At each step it prints:
 * - the operator's resident memory (VmRSS, idle and peak) and V8 heap;
 * - the time for a batch of 1,000 new nodes to be reconciled: from the batch's first create
 *   until the operator's webhook facts count every one as a Ready Windows node
 *   (winfleet_webhook_ready_windows_nodes), against the baseline of the same batch's last node
 *   becoming Ready in the API server (the bench's own watch), measured in the same run;
 * - the API requests the operator made over an idle window, by verb and resource (its own
 *   request counter, winfleet_kube_api_requests_total);
 * - the Pod webhook's p50 and p99 at a fixed rate over HTTPS, against a no-op admission server
 *   loaded the same way in the same run.
 *
 *   npm run bench:scale [-- --steps 1000,5000,10000 --hosts 1 --idle-seconds 300
 *                          --rate 1000 --load-seconds 10 --batch-size 1000 --from-source
 *                          --node-flags="--max-semi-space-size=2" --profile-dir DIR
 *                          --baseline-bundle FILE --kwok-lease-seconds 300
 *                          --flag-variants="FLAGS;FLAGS" --pause-control-plane
 *                          --memory-probe --keep-dir]
 *
 * (An option value that starts with "-" takes "=": --node-flags=--max-semi-space-size=2.)
 *
 * The operator runs as the image ships it (the bundle, IMAGE_NODE_FLAGS and IMAGE_ENV);
 * --from-source runs `node src/operator/main.ts` instead; --node-flags replaces
 * IMAGE_NODE_FLAGS ("" for none).
 *
 * As the chart runs it, the webhook is a process of its own (issue 33): the operator runs
 * `--mode controllers` (it keeps the webhook's certificate Secret and configuration) and a
 * second process `--mode webhook` serves admissions from the Secret's tls.crt and tls.key,
 * written to files here as the kubelet would mount them, with --webhook-node-flags (default
 * none: V8's default young generation, tuned for latency). The RSS columns are the
 * controllers' process; the webhook's RSS is printed beside. --one-process measures the
 * operator with its webhook in one process, as before.
 *
 * --hosts N joins N simulated hosts (all at once) before the first step.
 *
 * --flag-variants="FLAGS;FLAGS": at the last step, the operator is stopped and started again
 * with each of these Node flag sets in turn ("" for none), and measured again over the same
 * Nodes: the same-run comparison of, say, --max-semi-space-size=2 against V8's default.
 *
 * --kwok-lease-seconds N (default 300): kwok's node Lease duration; it renews each Lease every
 * N/4 s, so 10,000 Nodes at 300 s are 133 Lease writes a second for the API server and etcd
 * (the node monitor grace period follows: max(400, N/2 + 100) s). kwok renews 16 Leases at
 * once (its default, 4, falls behind at 9,000 Nodes on a busy machine: Nodes went NotReady
 * and back, over and over) and logs at WARN (INFO is a line per renewal).
 *
 * --rounds N (default 5): each server's --load-seconds is split into N rounds, the webhook's
 * and the no-op server's alternating (the order swapped every round) and then pooled; each
 * round's p99 is printed too. The control plane's work comes in bursts, and one window after
 * the other gave a burst to one server only (1,000 nodes, 2026-11-27: the webhook's window met
 * kube-apiserver at 26 % of a core, the no-op's at 2 %).
 *
 * Where the time and memory go:
 * - at every webhook window, the CPU each process used (the operator, each control-plane
 *   component, the simulated hosts, the bench's no-op server, the load generator) and the
 *   machine as a whole (other work on it included), from /proc;
 * - --profile-dir DIR: the operator runs with its inspector on loopback; at every step, a CPU
 *   profile of its webhook window (DIR/cpu-<nodes>.cpuprofile) and its GC pauses over the
 *   window; at the last step, a heap snapshot (DIR/heap-<nodes>.heapsnapshot).
 * - --pause-control-plane: after the webhook windows, the same two again with every
 *   control-plane process (etcd, kube-apiserver, the controller manager, the scheduler, both
 *   kwok) stopped (SIGSTOP) and continued after: the admission servers with the Nodes cached
 *   and the cores free of the control plane's own work (kwok's Lease renewals, the API
 *   server's), against the same servers a minute before with it.
 * - --memory-probe: the operator loads bench/memory-probe.cjs, and at every step, idle and
 *   again after the webhook load, its RSS is split into file-backed and anonymous memory, and
 *   the anonymous part into what V8's heap spaces hold resident and the rest (malloc: TLS,
 *   libuv, thread stacks).
 * - --baseline-bundle FILE: a second operator, the given bundle (another commit's, built with
 *   `node scripts/build-image.ts --bundle-only FILE`), with the same flags, started once the
 *   hosts are Ready, in a namespace of its own with no hosts and no webhook: it caches the same
 *   Nodes, so its RSS at each step is the same-run baseline of the operator's.
 *
 * A quick look: --steps 20,40 --batch-size 10 --idle-seconds 10 --load-seconds 2.
 *
 * The control plane is sized for it (sim/cluster/start-cluster.ts `scale`): a /10 pod range,
 * kwok Leases of 300 s (renewed every 75 s, as the kubelet renews at a quarter of the
 * duration) with the node monitor grace period above that, and the controller manager at 100
 * QPS so that assigning pod CIDRs (kwok marks a node Ready only once it has one) keeps up.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { IMAGE_ENV, IMAGE_NODE_FLAGS } from '../scripts/build-image.ts';
import { freePorts } from '../sim/cluster/free-port.ts';
import { startCluster } from '../sim/cluster/start-cluster.ts';
import { generateTestKey } from '../sim/hosts/ssh-test-client.ts';
import { parseMetricsText, type Sample, samplesOf, sumOf } from '../sim/testkit/metrics-text.ts';
import { createWindowsNode } from '../sim/testkit/nodes.ts';
import {
  buildOperatorBundle,
  spawnOperator,
  stopProcess,
} from '../sim/testkit/operator-process.ts';
import { writeStandInPayload } from '../sim/testkit/payload.ts';
import { writeOperatorConfig } from '../sim/testkit/test-operator.ts';
import {
  hostReady,
  listWindowsHosts,
  windowsHostFor,
  writeSshKeySecret,
} from '../sim/testkit/windows-hosts.ts';
import { installCrds } from '../src/api/install-crds.ts';
import { Informer } from '../src/controller-runtime/informer.ts';
import { nodeIsReady } from '../src/controller-runtime/informer-factory.ts';
import { loadKubeConfig } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { silentLogger } from '../src/log/logger.ts';
import { createCertificateAuthority, issueCertificate } from '../src/pki/certificates.ts';
import { createAdmissionServer } from '../src/webhook/admission-server.ts';
import { formatLoad, type LoadResult, mergeLoads, runAdmissionLoad } from './admission-load.ts';
import { connectInspector, type GcPause, type Inspector, summarizeGc } from './inspector-client.ts';
import { type CpuWindow, cpuWindow, formatCpu, sumCpuWindows } from './process-cpu.ts';
import { simHostsCli, startSimHostsProcess } from './sim-hosts-process.ts';

const usage =
  'npm run bench:scale [-- --steps 1000,5000,10000 --hosts 1 --idle-seconds 300 --rate 1000 --load-seconds 10 --batch-size 1000 --from-source --node-flags FLAGS --profile-dir DIR --baseline-bundle FILE --kwok-lease-seconds 300 --flag-variants="A;B" --pause-control-plane --memory-probe --rounds 5 --one-process --webhook-node-flags FLAGS --keep-dir]';
const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '1000,5000,10000' },
    hosts: { type: 'string', default: '1' },
    'idle-seconds': { type: 'string', default: '300' },
    rate: { type: 'string', default: '1000' },
    'load-seconds': { type: 'string', default: '10' },
    'batch-size': { type: 'string', default: '1000' },
    'from-source': { type: 'boolean', default: false },
    'node-flags': { type: 'string' },
    'profile-dir': { type: 'string' },
    'baseline-bundle': { type: 'string' },
    'kwok-lease-seconds': { type: 'string', default: '300' },
    'flag-variants': { type: 'string' },
    'memory-probe': { type: 'boolean', default: false },
    'pause-control-plane': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '5' },
    'keep-dir': { type: 'boolean', default: false },
    'one-process': { type: 'boolean', default: false },
    'webhook-node-flags': { type: 'string', default: '' },
  },
  strict: true,
});
function whole(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    console.error(
      `--${name} must be a whole number from ${min} to ${max}, not "${text}"\n${usage}`,
    );
    process.exit(2);
  }
  return n;
}
const batchSize = whole('batch-size', values['batch-size'], 10, 1000);
const steps = values.steps.split(',').map((s) => whole('steps', s, batchSize, 16_000));
if (steps.some((s, i) => i > 0 && s <= steps[i - 1]!)) {
  console.error(`--steps must increase, as 1000,5000,10000\n${usage}`);
  process.exit(2);
}
const hostCount = whole('hosts', values.hosts, 1, 200);
const idleSeconds = whole('idle-seconds', values['idle-seconds'], 10, 1800);
const rate = whole('rate', values.rate, 10, 5000);
const loadSeconds = whole('load-seconds', values['load-seconds'], 2, 120);
const rounds = whole('rounds', values.rounds, 1, 20);
const kwokLeaseSeconds = whole('kwok-lease-seconds', values['kwok-lease-seconds'], 40, 3600);
// Above kwok's renewal interval (a quarter of the lease), with room for a renewal that is late
// by as much again (kwok falls behind when the API server is busy).
const nodeGraceSeconds = Math.max(400, kwokLeaseSeconds / 2 + 100);
/** --flag-variants "A;B": the operator's Node flags for each extra run at the last step. */
const flagVariants = (values['flag-variants']?.split(';') ?? []).map((v) =>
  v.split(/\s+/).filter(Boolean),
);
const namespace = 'winfleet-system';
const baselineNamespace = 'winfleet-baseline';
const podCidr = '100.64.0.0/10';
const releases = ['2019', '2022', '2025'] as const;
const progress = (message: string) => console.error(`[bench:scale] ${message}`);

/** What bench/memory-probe.cjs writes (the fields read here). */
interface ProbeSample {
  proc: { rss: number; rssAnon: number; rssFile: number };
  memoryUsage: { heapUsed: number; heapTotal: number; external: number };
  heapSpaces: Record<string, { used: number; size: number; physical: number }>;
}

/** One line: RSS = file-backed + anonymous, anonymous = V8 heap resident + the rest. */
function describeProbe(p: ProbeSample): string {
  const m = (b: number) => (b / 2 ** 20).toFixed(1);
  const v8Resident = Object.values(p.heapSpaces).reduce((a, s) => a + s.physical, 0);
  const newSpace = p.heapSpaces.new_space?.physical ?? 0;
  const oldSpace = p.heapSpaces.old_space?.physical ?? 0;
  return `RSS ${m(p.proc.rss)} = file ${m(p.proc.rssFile)} + anon ${m(p.proc.rssAnon)}; anon = V8 heap resident ${m(v8Resident)} (new ${m(newSpace)}, old ${m(oldSpace)}; used ${m(p.memoryUsage.heapUsed)}) + other ${m(p.proc.rssAnon - v8Resident)} (malloc, stacks, wasm)`;
}

const rssKiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN);
const mib = (kib: number) => kib / 1024;

/** Samples the operator's RSS every 500 ms; `peak()` since the last reset. */
function rssSampler(pid: () => number) {
  let peak = 0;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssKiB(pid()));
    } catch {}
  }, 500);
  timer.unref();
  return {
    peak: () => Math.max(peak, rssKiB(pid())),
    reset: () => {
      peak = rssKiB(pid());
    },
    stop: () => clearInterval(timer),
  };
}

const cluster = await startCluster({
  keepDir: values['keep-dir'],
  onProgress: progress,
  scale: {
    podCidr,
    nodeCidrMaskSize: 24,
    kwokNodeLeaseSeconds: kwokLeaseSeconds,
    nodeMonitorGracePeriodSeconds: nodeGraceSeconds,
    kwokNodeLeaseParallelism: 16,
    kwokLogLevel: 'WARN',
    controllerManagerQps: 100,
  },
});
const kc = loadKubeConfig(cluster.kubeconfigPath);
const core = kc.makeApiClient(k8s.CoreV1Api);
const dir = await mkdtemp(join(tmpdir(), 'winfleet-bench-scale-'));
const stops: (() => Promise<void>)[] = [];
async function cleanUp(): Promise<void> {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  await cluster.stop();
  if (!values['keep-dir']) await rm(dir, { recursive: true, force: true });
  else progress(`kept ${cluster.dir} and ${dir}`);
}
process.once('SIGINT', () => void cleanUp().then(() => process.exit(130)));

try {
  const key = generateTestKey();
  await writeFile(join(dir, 'key.pub'), key.publicKey);
  const payloadDir = join(dir, 'payload');
  await writeStandInPayload(payloadDir);
  await installCrds(kc);
  await writeOperatorConfig(kc, namespace, { hosts: { podCIDR: podCidr } });
  await writeSshKeySecret(kc, namespace, key.privateKey);

  progress(`starting ${hostCount} simulated host(s)`);
  const sims = await startSimHostsProcess(
    simHostsCli,
    [
      '--count',
      String(hostCount),
      '--releases',
      releases.join(','),
      '--authorized-key',
      join(dir, 'key.pub'),
      '--base-address',
      '127.0.90.10',
    ],
    hostCount,
  );
  stops.push(() => stopProcess(sims.child));

  const [
    webhookPort,
    statusPort,
    inspectorPort,
    baselineStatusPort,
    baselineWebhookPort,
    webhookStatusPort,
  ] = (await freePorts(6)) as [number, number, number, number, number, number];
  const split = !values['one-process'];
  const webhookNodeFlags = values['webhook-node-flags'].split(/\s+/).filter(Boolean);
  const shipped = !values['from-source'];
  if (shipped) await buildOperatorBundle();
  const profileDir = values['profile-dir'];
  if (profileDir) await mkdir(profileDir, { recursive: true });
  const nodeFlags = [
    ...(values['node-flags'] === undefined
      ? shipped
        ? IMAGE_NODE_FLAGS
        : []
      : values['node-flags'].split(/\s+/).filter(Boolean)),
  ];
  const probeFile = values['memory-probe'] ? join(dir, 'memory-probe.jsonl') : undefined;
  const memoryProbe = fileURLToPath(new URL('./memory-probe.cjs', import.meta.url));
  /** The operator's memory by kind now (--memory-probe), labelled `what`. */
  const probes: { what: string; line: string }[] = [];
  async function probe(what: string): Promise<void> {
    if (!probeFile) return;
    const lines = () =>
      readFile(probeFile, 'utf8').then(
        (t) => t.trim().split('\n'),
        () => [],
      );
    const before = (await lines()).length;
    operator.kill('SIGUSR2');
    const line = await waitFor(async () => (await lines())[before], {
      description: 'the memory probe',
      timeoutMs: 30_000,
    });
    probes.push({ what, line: describeProbe(JSON.parse(line) as ProbeSample) });
    // With the inspector: again after a full collection, to tell garbage from what is held.
    if (inspector && !what.endsWith('full GC')) {
      await inspector.send('HeapProfiler.collectGarbage');
      await probe(`${what}, after a full GC`);
    }
  }
  const metricsUrl = `http://127.0.0.1:${statusPort}/metrics`;
  const scrape = async (): Promise<Sample[]> =>
    parseMetricsText(await (await fetch(metricsUrl)).text());
  /** The operator now (another is started for each of --flag-variants). */
  let operator!: ChildProcess;
  let inspector: Inspector | undefined;
  let operatorRuns = 0;
  async function startOperator(flags: string[]): Promise<void> {
    operatorRuns++;
    const started = spawnOperator({
      kubeconfig: cluster.kubeconfigPath,
      namespace,
      payloadDir,
      webhookPort,
      statusPort,
      logFile: join(dir, `operator-${operatorRuns}.log`),
      shipped,
      ...(split ? { args: ['--mode', 'controllers'] } : {}),
      nodeFlags: [
        ...(probeFile ? ['--require', memoryProbe] : []),
        ...flags,
        ...(profileDir ? [`--inspect=127.0.0.1:${inspectorPort}`] : []),
      ],
      ...(probeFile
        ? { env: { ...(shipped ? IMAGE_ENV : {}), WINFLEET_MEMORY_PROBE: probeFile } }
        : {}),
    });
    operator = started;
    stops.push(() => stopProcess(started));
    progress(
      `operator: node ${flags.join(' ') || '(no flags)'}${shipped ? ' (bundle)' : ' src/operator/main.ts'}`,
    );
    if (profileDir) {
      const connected = await connectInspector(inspectorPort);
      inspector = connected;
      stops.push(async () => connected.close());
    }
    await waitFor(() => scrape().catch(() => undefined), {
      description: 'the operator /metrics',
      timeoutMs: 120_000,
    });
  }
  await startOperator(nodeFlags);

  /**
   * The webhook's own process (the chart's webhook Deployment), its certificate the Secret's
   * tls.crt and tls.key in files, as the kubelet mounts them.
   */
  let webhookProcess: ChildProcess | undefined;
  if (split) {
    const certDir = join(dir, 'webhook-tls');
    await mkdir(certDir, { recursive: true });
    const secret = await waitFor(
      async () => {
        const s = await core
          .readNamespacedSecret({ name: 'winfleet-webhook-tls', namespace })
          .catch(() => undefined);
        return s?.data?.['tls.crt'] && s.data['tls.key'] ? s : undefined;
      },
      { description: 'the webhook certificate Secret', timeoutMs: 60_000 },
    );
    for (const file of ['tls.crt', 'tls.key'])
      await writeFile(join(certDir, file), Buffer.from(secret.data![file]!, 'base64'), {
        mode: 0o600,
      });
    const started = spawnOperator({
      kubeconfig: cluster.kubeconfigPath,
      namespace,
      webhookPort,
      statusPort: webhookStatusPort,
      logFile: join(dir, 'webhook.log'),
      shipped,
      nodeFlags: webhookNodeFlags,
      args: [
        '--mode',
        'webhook',
        '--tls-cert-file',
        join(certDir, 'tls.crt'),
        '--tls-key-file',
        join(certDir, 'tls.key'),
      ],
    });
    webhookProcess = started;
    stops.push(() => stopProcess(started));
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${webhookStatusPort}/readyz`).then(
          (r) => r.ok,
          () => undefined,
        ),
      { description: "the webhook process's /readyz", timeoutMs: 120_000 },
    );
    progress(
      `webhook process: node ${webhookNodeFlags.join(' ') || '(no flags)'} --mode webhook (pid ${started.pid})`,
    );
  }

  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  await Promise.all(sims.hosts.map((h) => objects.create(windowsHostFor(h, namespace))));
  await waitFor(
    async () => {
      const hosts = await listWindowsHosts(kc, namespace);
      return hosts.length === hostCount && hosts.every(hostReady);
    },
    { description: `${hostCount} host(s) Ready`, timeoutMs: 15 * 60_000, intervalMs: 500 },
  );
  progress(`${hostCount} host(s) joined and Ready`);

  // The same-run baseline: another build of the operator caching the same Nodes.
  let baseline: ReturnType<typeof spawnOperator> | undefined;
  let baselineCa = '';
  if (values['baseline-bundle']) {
    await core.createNamespace({ body: { metadata: { name: baselineNamespace } } });
    await writeOperatorConfig(kc, baselineNamespace, { hosts: { podCIDR: podCidr } });
    baseline = spawnOperator({
      kubeconfig: cluster.kubeconfigPath,
      namespace: baselineNamespace,
      statusPort: baselineStatusPort,
      logFile: join(dir, 'baseline-operator.log'),
      shipped,
      script: values['baseline-bundle'],
      nodeFlags,
      // Its webhook takes the same load as the operator's, unregistered (the two would fight
      // over the one MutatingWebhookConfiguration); the bench trusts its CA from its Secret.
      webhookPort: baselineWebhookPort,
      args: ['--webhook-configurations', 'none'],
    });
    const started = baseline;
    stops.push(() => stopProcess(started));
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${baselineStatusPort}/metrics`).then(
          (r) => r.ok,
          () => undefined,
        ),
      { description: 'the baseline operator /metrics', timeoutMs: 120_000 },
    );
    baselineCa = await waitFor(
      async () => {
        const secret = await core
          .readNamespacedSecret({ name: 'winfleet-webhook-tls', namespace: baselineNamespace })
          .catch(() => undefined);
        const bundle = secret?.data?.['ca-bundle.crt'] ?? secret?.data?.['ca.crt'];
        return bundle ? Buffer.from(bundle, 'base64').toString('utf8') : undefined;
      },
      { description: "the baseline operator's webhook CA", timeoutMs: 120_000 },
    );
    progress(
      `baseline operator ${values['baseline-bundle']} started (namespace ${baselineNamespace})`,
    );
  }

  // The webhook's CA, as the API server gets it: the MutatingWebhookConfiguration's caBundle.
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const readWebhookCa = () =>
    waitFor(
      async () => {
        const list = await admission.listMutatingWebhookConfiguration();
        const bundle = list.items
          .flatMap((c) => c.webhooks ?? [])
          .find((w) => w.clientConfig.url?.includes(`:${webhookPort}`))?.clientConfig.caBundle;
        return bundle ? Buffer.from(bundle, 'base64').toString('utf8') : undefined;
      },
      { description: 'the webhook configuration', timeoutMs: 60_000 },
    );
  let webhookCa = await readWebhookCa();

  // The baseline admission server: the same server code, answering allowed at once.
  const noopCa = await createCertificateAuthority('bench-scale-ca');
  const noopTls = await issueCertificate(noopCa, {
    commonName: 'bench',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const noop = createAdmissionServer({
    cert: noopTls.certPem,
    key: noopTls.keyPem,
    log: silentLogger,
    routes: { '/mutate/pods': { name: 'mutate', handler: async () => ({ allowed: true }) } },
  });
  const noopPort = await noop.listen(0);
  stops.push(() => noop.close());
  /** Runs `work` with every control-plane process stopped (--pause-control-plane). */
  async function pausingControlPlane<T>(work: () => Promise<T>): Promise<T> {
    const pids = cluster.components.map((c) => c.pid!);
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    try {
      return await work();
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
  }
  const loadOnce = (port: number, ca: string, seconds = loadSeconds): Promise<LoadResult> =>
    runAdmissionLoad({
      url: `https://127.0.0.1:${port}/mutate/pods`,
      ca,
      mode: 'open',
      concurrency: 64,
      rate,
      seconds,
      raw: true,
    });
  /**
   * The webhook and the no-op server in alternating rounds (the order swapped every round),
   * pooled: the control plane's activity comes in bursts (kwok renewing Leases, Node status
   * updates), and one window after the other would give a burst to one server only.
   */
  async function alternatingLoads(): Promise<{
    webhook: LoadResult;
    noop: LoadResult;
    webhookCpu: CpuWindow;
    noopCpu: CpuWindow;
  }> {
    const seconds = loadSeconds / rounds;
    const runs = { webhook: [] as LoadResult[], noop: [] as LoadResult[] };
    const cpu = { webhook: [] as CpuWindow[], noop: [] as CpuWindow[] };
    for (let round = 0; round < rounds; round++) {
      const order =
        round % 2 === 0 ? (['noop', 'webhook'] as const) : (['webhook', 'noop'] as const);
      for (const which of order) {
        const window = cpuWindow(pids());
        runs[which].push(
          which === 'noop'
            ? await loadOnce(noopPort, noopCa.certPem, seconds)
            : await loadOnce(webhookPort, webhookCa, seconds),
        );
        cpu[which].push(window.stop());
      }
    }
    return {
      webhook: mergeLoads(runs.webhook),
      noop: mergeLoads(runs.noop),
      webhookCpu: sumCpuWindows(cpu.webhook),
      noopCpu: sumCpuWindows(cpu.noop),
    };
  }

  // The bench's own view of Node readiness (the baseline of each batch): winfleet's informer,
  // which resumes its watch when it ends (a bare client-node Watch gives up when quiet).
  const readyAt = new Map<string, number>();
  // Only what readiness needs: the no-op server shares this process, and 10,000 whole Nodes
  // in its heap would slow its collections and so the baseline.
  const benchNodes = new Informer<k8s.V1Node>(kc, {
    resource: { apiVersion: 'v1', kind: 'Node', plural: 'nodes' },
    labelSelector: 'bench=scale',
    transform: (node) => ({
      metadata: { name: node.metadata?.name, resourceVersion: node.metadata?.resourceVersion },
      status: {
        conditions: node.status?.conditions
          ?.filter((c) => c.type === 'Ready')
          .map((c) => ({ type: c.type, status: c.status })),
      },
    }),
  });
  const noteReady = (node: k8s.V1Node) => {
    const name = node.metadata?.name;
    if (name && !readyAt.has(name) && nodeIsReady(node)) readyAt.set(name, performance.now());
  };
  benchNodes.on('add', noteReady).on('update', noteReady);
  await benchNodes.start();
  stops.push(async () => benchNodes.stop());

  const rss = rssSampler(() => operator.pid!);
  /** The processes whose CPU each webhook window reports. */
  const pids = () =>
    new Map<string, number>([
      [split ? 'operator (controllers)' : 'operator', operator.pid!],
      ...(webhookProcess ? [['webhook', webhookProcess.pid!] as [string, number]] : []),
      ...(baseline ? [['baseline operator', baseline.pid!] as [string, number]] : []),
      ...cluster.components.map((c) => [c.name, c.pid!] as [string, number]),
      ['simulated hosts', sims.child.pid!],
      ['bench (no-op server, its Node watch)', process.pid],
      ['load generator', -process.pid],
    ]);
  stops.push(async () => rss.stop());
  const nodeName = (i: number) => `scale-${String(i).padStart(5, '0')}`;
  const readyWindows = async () => sumOf(await scrape(), 'winfleet_webhook_ready_windows_nodes');

  interface Row {
    nodes: number;
    /** The operator's node flags, when a --flag-variants run. */
    variant?: string;
    rssIdleMiB: number;
    rssAfterLoadMiB: number;
    rssPeakMiB: number;
    heapMiB: number;
    batchS?: number;
    batchApiS?: number;
    requests: Map<string, number>;
    webhook: LoadResult;
    /** --pause-control-plane: the two loads again with the control plane stopped. */
    paused?: { webhook: LoadResult; noop: LoadResult; webhookCpu: CpuWindow };
    noop: LoadResult;
    load: string;
    baselineRssMiB?: number;
    baselineAfterLoadMiB?: number;
    baselineWebhook?: LoadResult;
    baselineHeapMiB?: number;
    /** The webhook process's RSS, idle and after the load (split). */
    webhookRssIdleMiB?: number;
    webhookRssAfterLoadMiB?: number;
    webhookCpu: CpuWindow;
    noopCpu: CpuWindow;
    gc?: GcPause[];
  }
  const rows: Row[] = [];
  const baseReady = await readyWindows();

  async function createBatch(from: number, to: number): Promise<void> {
    let next = from;
    const worker = async () => {
      while (next < to) {
        const i = next++;
        await createWindowsNode(kc, {
          name: nodeName(i),
          release: releases[i % releases.length]!,
          labels: { bench: 'scale' },
          waitReady: false,
        });
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  }

  async function measure(
    nodes: number,
    batch?: { s: number; apiS: number },
    variant?: string,
  ): Promise<Row> {
    progress(`${nodes} nodes: idle window of ${idleSeconds}s`);
    const before = samplesOf(await scrape(), 'winfleet_kube_api_requests_total');
    await sleep(idleSeconds * 1000);
    const after = samplesOf(await scrape(), 'winfleet_kube_api_requests_total');
    const requests = new Map<string, number>();
    for (const s of after) {
      const old = before.find(
        (b) =>
          b.labels.verb === s.labels.verb &&
          b.labels.resource === s.labels.resource &&
          b.labels.code === s.labels.code,
      );
      const delta = s.value - (old?.value ?? 0);
      if (delta > 0) {
        const k = `${s.labels.verb} ${s.labels.resource}`;
        requests.set(k, (requests.get(k) ?? 0) + delta);
      }
    }
    const samples = await scrape();
    const heap = sumOf(samples, 'nodejs_heap_size_used_bytes');
    const rssIdle = rssKiB(operator.pid!);
    const webhookRssIdle = webhookProcess ? rssKiB(webhookProcess.pid!) : undefined;
    const baselineIdle = baseline ? rssKiB(baseline.pid!) : undefined;
    const baselineHeap = baseline
      ? sumOf(
          parseMetricsText(
            await (await fetch(`http://127.0.0.1:${baselineStatusPort}/metrics`)).text(),
          ),
          'nodejs_heap_size_used_bytes',
        )
      : undefined;
    progress(`${nodes} nodes: webhook at ${rate}/s for ${loadSeconds}s (and the no-op baseline)`);
    await probe(`${nodes} nodes${variant === undefined ? '' : ` [node ${variant}]`}, idle`);
    if (inspector) {
      await inspector.recordGc();
      await inspector.send('Profiler.enable');
      await inspector.send('Profiler.setSamplingInterval', { interval: 200 });
      await inspector.send('Profiler.start');
      // Starting the profiler stalls the operator for ~0.1 s: not in the measured rounds.
      await sleep(1000);
    }
    const { webhook, noop: noopResult, webhookCpu, noopCpu } = await alternatingLoads();
    await probe(`${nodes} nodes${variant === undefined ? '' : ` [node ${variant}]`}, after load`);
    const baselineWebhook = baseline ? await loadOnce(baselineWebhookPort, baselineCa) : undefined;
    const paused = values['pause-control-plane']
      ? await pausingControlPlane(alternatingLoads)
      : undefined;
    let gc: GcPause[] | undefined;
    if (inspector && profileDir) {
      const { profile } = await inspector.send<{ profile: unknown }>('Profiler.stop');
      const tag = `${nodes}${variant === undefined ? '' : `-variant-${operatorRuns}`}`;
      await writeFile(join(profileDir, `cpu-${tag}.cpuprofile`), JSON.stringify(profile));
      gc = await inspector.gcPauses();
      if (nodes === steps.at(-1) && variant === undefined) {
        progress(`${nodes} nodes: heap snapshot`);
        await inspector.heapSnapshot(join(profileDir, `heap-${nodes}.heapsnapshot`));
      }
    }
    const row: Row = {
      nodes,
      ...(variant !== undefined ? { variant } : {}),
      rssIdleMiB: mib(rssIdle),
      rssAfterLoadMiB: mib(rssKiB(operator.pid!)),
      rssPeakMiB: mib(rss.peak()),
      heapMiB: heap / 2 ** 20,
      ...(webhookProcess && webhookRssIdle !== undefined
        ? {
            webhookRssIdleMiB: mib(webhookRssIdle),
            webhookRssAfterLoadMiB: mib(rssKiB(webhookProcess.pid!)),
          }
        : {}),
      ...(batch ? { batchS: batch.s, batchApiS: batch.apiS } : {}),
      requests,
      webhook,
      noop: noopResult,
      ...(paused ? { paused } : {}),
      webhookCpu,
      noopCpu,
      ...(gc ? { gc } : {}),
      ...(baselineIdle !== undefined ? { baselineRssMiB: mib(baselineIdle) } : {}),
      ...(baseline
        ? { baselineAfterLoadMiB: mib(rssKiB(baseline.pid!)), baselineWebhook: baselineWebhook! }
        : {}),
      ...(baselineHeap !== undefined ? { baselineHeapMiB: baselineHeap / 2 ** 20 } : {}),
      load: loadavg()
        .map((l) => l.toFixed(1))
        .join(' '),
    };
    progress(
      `${nodes} nodes: RSS ${row.rssIdleMiB.toFixed(0)} MiB, webhook p99 ${webhook.p99.toFixed(1)} ms (no-op ${noopResult.p99.toFixed(1)} ms)`,
    );
    rss.reset();
    return row;
  }

  rss.reset();
  rows.push(await measure(0));
  let created = 0;
  for (const target of steps) {
    // Up to the last batch, fill; the last 1,000 of each step is the timed batch.
    if (target - batchSize > created) {
      progress(`creating nodes ${created}..${target - batchSize - 1}`);
      await createBatch(created, target - batchSize);
      created = target - batchSize;
      await waitFor(async () => (await readyWindows()) - baseReady >= created, {
        description: `${created} nodes in the operator's facts`,
        timeoutMs: 30 * 60_000,
        intervalMs: 1000,
      });
    }
    progress(`timed batch: nodes ${created}..${target - 1}`);
    const started = performance.now();
    await createBatch(created, target);
    const batchNames = Array.from({ length: target - created }, (_, i) => nodeName(created + i));
    created = target;
    await waitFor(async () => (await readyWindows()) - baseReady >= created, {
      description: `${created} nodes in the operator's facts`,
      timeoutMs: 30 * 60_000,
      intervalMs: 200,
    });
    const operatorS = (performance.now() - started) / 1000;
    await waitFor(() => batchNames.every((n) => readyAt.has(n)) || undefined, {
      description: 'the batch Ready in the API server',
      timeoutMs: 10 * 60_000,
      intervalMs: 200,
    });
    const apiS = (Math.max(...batchNames.map((n) => readyAt.get(n)!)) - started) / 1000;
    rows.push(await measure(target, { s: operatorS, apiS }));
  }

  // The same Nodes, the operator restarted with other Node flags: same cluster, same minute.
  for (const variant of flagVariants) {
    await stopProcess(operator);
    inspector?.close();
    await startOperator(variant);
    await waitFor(async () => (await readyWindows()) - baseReady >= created || undefined, {
      description: `${created} nodes in the restarted operator's facts`,
      timeoutMs: 30 * 60_000,
      intervalMs: 1000,
    });
    webhookCa = await readWebhookCa();
    rss.reset();
    rows.push(await measure(created, undefined, variant.join(' ') || '(none)'));
  }

  const rowName = (r: Row) => `${r.nodes}${r.variant === undefined ? '' : ` [node ${r.variant}]`}`;
  const ready = (await core.listNode({ labelSelector: 'bench=scale' })).items.filter(nodeIsReady);
  console.log(
    `\nOperator at scale: ${hostCount} joined host(s), kwok Windows nodes of builds ${releases.join('/')}, ${ready.length} Ready at the end; the operator ${shipped ? 'as shipped (bundle, image env)' : 'from source'} with node flags ${nodeFlags.join(' ') || '(none)'}; ${split ? `the webhook in its own process with node flags ${webhookNodeFlags.join(' ') || '(none)'} (RSS columns: the controllers' process)` : 'the webhook in the same process'}; kwok Leases of ${kwokLeaseSeconds} s, renewed every ${kwokLeaseSeconds / 4} s\n`,
  );
  console.log(
    `  nodes   RSS idle  after load   peak   V8 heap   batch of ${batchSize} (operator / API Ready)   webhook p50 / p99 at rate   no-op p99   p99 ratio   load avg`,
  );
  for (const r of rows) {
    const batch =
      r.batchS === undefined
        ? '                     –'
        : `${r.batchS.toFixed(1).padStart(8)} s / ${r.batchApiS!.toFixed(1).padStart(6)} s`;
    console.log(
      `  ${rowName(r).padStart(6)}  ${r.rssIdleMiB.toFixed(0).padStart(5)} MiB  ${r.rssAfterLoadMiB.toFixed(0).padStart(6)} MiB  ${r.rssPeakMiB.toFixed(0).padStart(4)} MiB  ${r.heapMiB.toFixed(0).padStart(4)} MiB  ${batch.padStart(38)}   ${r.webhook.p50.toFixed(2).padStart(6)} / ${r.webhook.p99.toFixed(1).padStart(6)} ms   ${r.noop.p99.toFixed(1).padStart(6)} ms   ${(r.webhook.p99 / r.noop.p99).toFixed(2).padStart(6)}x   ${r.load}`,
    );
  }
  if (split) {
    console.log("\nThe webhook process's RSS (idle / after the load):");
    for (const r of rows)
      console.log(
        `  ${rowName(r).padStart(6)} nodes  ${r.webhookRssIdleMiB?.toFixed(0) ?? '?'} / ${r.webhookRssAfterLoadMiB?.toFixed(0) ?? '?'} MiB`,
      );
  }
  if (baseline) {
    console.log(
      `\nSame-run baseline: ${values['baseline-bundle']} (namespace ${baselineNamespace}, no hosts; its webhook unregistered, loaded as the operator's right after it):`,
    );
    console.log(
      '   nodes   RSS idle: operator / baseline (ratio)   after load: operator / baseline   V8 heap: operator / baseline   webhook p99: operator / baseline',
    );
    for (const r of rows.filter((x) => x.baselineRssMiB !== undefined)) {
      console.log(
        `  ${rowName(r).padStart(6)}   ${r.rssIdleMiB.toFixed(0).padStart(14)} / ${r.baselineRssMiB!.toFixed(0).padStart(3)} MiB (${(r.rssIdleMiB / r.baselineRssMiB!).toFixed(2)})   ${r.rssAfterLoadMiB.toFixed(0).padStart(19)} / ${r.baselineAfterLoadMiB!.toFixed(0).padStart(3)} MiB   ${r.heapMiB.toFixed(0).padStart(16)} / ${r.baselineHeapMiB!.toFixed(0).padStart(3)} MiB   ${r.webhook.p99.toFixed(1).padStart(14)} / ${r.baselineWebhook!.p99.toFixed(1)} ms`,
      );
    }
  }
  console.log(
    `\nCPU over each server's ${rounds} rounds (share of one core; the machine is shared):`,
  );
  for (const r of rows) {
    console.log(`  ${rowName(r).padStart(6)} nodes  winfleet: ${formatCpu(r.webhookCpu)}`);
    console.log(`  ${' '.repeat(13)}no-op:    ${formatCpu(r.noopCpu)}`);
  }
  if (rows.some((r) => r.gc)) {
    console.log(
      "\nThe operator's GC pauses over each step's rounds (its own and the no-op server's):",
    );
    for (const r of rows)
      console.log(`  ${rowName(r).padStart(6)} nodes  ${summarizeGc(r.gc ?? [])}`);
  }
  if (probes.length > 0) {
    console.log("\nThe operator's memory by kind (bench/memory-probe.cjs), MiB:");
    for (const p of probes) console.log(`  ${p.what.padEnd(28)} ${p.line}`);
  }
  console.log(`\nAPI requests by the operator over each ${idleSeconds}s idle window:`);
  for (const r of rows) {
    const list = [...r.requests].map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    console.log(`  ${rowName(r).padStart(6)} nodes: ${list}`);
  }
  if (rows.some((r) => r.paused)) {
    console.log(
      '\nThe webhook again with the control plane stopped (SIGSTOP) for the window, p50 / p99:',
    );
    for (const r of rows.filter((x) => x.paused)) {
      const p = r.paused!;
      console.log(
        `  ${rowName(r).padStart(6)} nodes  winfleet ${p.webhook.p50.toFixed(2)} / ${p.webhook.p99.toFixed(1)} ms   no-op ${p.noop.p50.toFixed(2)} / ${p.noop.p99.toFixed(1)} ms   ratio ${(p.webhook.p99 / p.noop.p99).toFixed(2)}   (running: ${r.webhook.p99.toFixed(1)} / ${r.noop.p99.toFixed(1)} ms)`,
      );
      console.log(`  ${' '.repeat(13)}CPU: ${formatCpu(p.webhookCpu)}`);
    }
  }
  console.log('\nWebhook load, full figures:');
  for (const r of rows) {
    console.log(`  ${rowName(r).padStart(6)} nodes  winfleet ${formatLoad(r.webhook)}`);
    console.log(`  ${' '.repeat(13)}no-op    ${formatLoad(r.noop)}`);
  }
} finally {
  await cleanUp();
}
