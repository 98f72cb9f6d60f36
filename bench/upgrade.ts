/**
 * npm run bench:upgrade — the makespan of a payload upgrade rolled through one WindowsNodePool
 * of N simulated hosts (default 30) with maxUnavailable k (default 1 — the WMCO way — 5 and
 * 10), against ⌈N/k⌉ × the time one host takes, measured in the same run; with the largest
 * number of the pool's hosts seen unavailable at once and the PodDisruptionBudget breaches of a
 * Windows Deployment spread over the hosts, both sampled every 200 ms.
 *
 *   npm run bench:upgrade [-- --hosts 30 --steps 1,5,10 --agent-check-seconds 2]
 *
 * --agent-check-seconds is the operator's hosts.agentCheckIntervalSeconds (product default 120).
 * The agent also watches its Node and wakes at once for a new desired version, so the interval
 * should not matter; but an agent whose watch is not running sleeps the whole interval, which
 * stalls a rolling upgrade for up to 2 minutes per such host. The bench uses 2 s (the e2e
 * tests use 1 s) so that it measures the rollout, not that stall; give 120 to see it.
 *
 * The world (one fresh control plane for the whole run; the operator and the simulated hosts
 * each in their own process, as bench:join runs them):
 * - N + 1 simulated Windows Server 2022 hosts (bench/upgrade-hosts.ts prints their timings);
 *   N labelled pool=bench into the WindowsNodePool "bench", one labelled pool=bench-one into
 *   the WindowsNodePool "bench-one" — the one-host pool of the baseline (the median of three
 *   upgrades of it);
 * - Deployment "web" (N + 1 replicas, spread one per node by a topology spread constraint,
 *   ScheduleAnyway so that evicted pods find room on other nodes) and a PDB on it with
 *   maxUnavailable = the largest k. Why that budget: a pool that honours its maxUnavailable k
 *   takes down at most k hosts, about one pod each, so the budget holds at every step; a
 *   rollout that takes more hosts down than its budget, or takes them down without draining
 *   (the all-at-once upgrade), breaches it. At the largest k, concurrent drains race for the
 *   last disruptions and the Eviction API refuses some (that is the budget working, not a
 *   breach). A tighter budget (maxUnavailable 1) would serialise the drains of every k > 1
 *   and measure the PDB, not the pool.
 * - Both pools start paused. Each measurement writes a new payload (kubelet patch version + 1,
 *   so every service is replaced), then unpauses only the measured pool with its maxUnavailable;
 *   the makespan runs from the payload write until every host of the pool reports the new
 *   version (WindowsHost status.servicesVersion and its Node's winfleet.io/services-version),
 *   is Ready, uncordoned and out of its change. Then the pool is paused again and the bench
 *   waits for the whole fleet and the Deployment to settle before the next measurement.
 *
 * A host counts as unavailable when any of these holds (a superset of the pool controller's
 * own unavailableHosts — its Node NotReady, or status.rollout.current set — plus what an
 * upgrade looks like without the pool engine):
 * - it has no Node, or its Node is NotReady;
 * - its Node is cordoned (spec.unschedulable);
 * - its WindowsHost's Ready condition is not True;
 * - its status.rollout.current is set (it is in a pool change);
 * - its Node's winfleet.io/desired-services-version differs from winfleet.io/services-version
 *   (the agent has been asked to replace the services and has not finished).
 * The pool's own status.unavailableHosts is sampled too and printed beside it.
 *
 * A PDB breach is a sample where fewer pods of the Deployment are Ready (and not terminating)
 * than the budget's desiredHealthy (replicas − maxUnavailable); consecutive samples in breach
 * count once. The PDB's own status (currentHealthy < desiredHealthy) is counted the same way.
 */
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { createOwnedTempDir, removeOwnedTempDir } from '../sim/cluster/owned-temp-dir.ts';
import { type Cluster, startCluster } from '../sim/cluster/start-cluster.ts';
import { generateTestKey } from '../sim/hosts/ssh-test-client.ts';
import { spawnOperator, stopProcess } from '../sim/testkit/operator-process.ts';
import { writeStandInPayload } from '../sim/testkit/payload.ts';
import { writeOperatorConfig } from '../sim/testkit/test-operator.ts';
import { windowsHostFor, writeSshKeySecret } from '../sim/testkit/windows-hosts.ts';
import { apiVersion } from '../src/api/group-version.ts';
import { installCrds } from '../src/api/install-crds.ts';
import {
  desiredServicesVersionAnnotation,
  servicesVersionAnnotation,
} from '../src/api/node-annotations.ts';
import type { WindowsHost } from '../src/api/windows-host.ts';
import type { WindowsNodePool } from '../src/api/windows-node-pool.ts';
import { nodeIsReady } from '../src/controller-runtime/informer-factory.ts';
import { loadKubeConfig } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { startSimHostsProcess } from './sim-hosts-process.ts';
import { benchHostTimings } from './upgrade-hosts.ts';

const usage = 'npm run bench:upgrade [-- --hosts 30 --steps 1,5,10 --agent-check-seconds 2]';
const maxHosts = 200;
/** How often the sampler looks. */
const sampleEveryMs = 200;
/** The whole run gives up after this long (cleaning up). */
const runBudgetMs = 100 * 60_000;
/** One measurement gives up after this long. */
const measurementTimeoutMs = 30 * 60_000;
/** One-host upgrades measured for the baseline (the median is used). */
const baselineRuns = 3;

const [group, version] = apiVersion.split('/') as [string, string];
const namespace = 'winfleet-system';
const workloadNamespace = 'bench-web';
const mainPool = 'bench';
const onePool = 'bench-one';

// ---------------------------------------------------------------------------------------------
// Flags

export interface BenchFlags {
  hosts: number;
  steps: number[];
  agentCheckSeconds: number;
}

/** Parses and checks the flags; every error names the flag and how to fix it. */
export function parseFlags(argv: string[]): BenchFlags {
  let values: { hosts?: string; steps?: string; 'agent-check-seconds'?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        hosts: { type: 'string' },
        steps: { type: 'string' },
        'agent-check-seconds': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new Error(`${(error as Error).message}; usage: ${usage}`);
  }
  const hostsText = values.hosts ?? '30';
  const hosts = Number(hostsText);
  if (!/^\d+$/.test(hostsText) || hosts < 2 || hosts > maxHosts) {
    throw new Error(
      `--hosts must be a whole number from 2 to ${maxHosts} (the pool's size), not "${hostsText}"; e.g. --hosts 30`,
    );
  }
  const stepsText = values.steps ?? '1,5,10';
  const parts = stepsText.split(',').map((s) => s.trim());
  const steps: number[] = [];
  for (const part of parts) {
    const k = Number(part);
    if (!/^\d+$/.test(part) || k < 1 || k > hosts) {
      throw new Error(
        `--steps must be a comma-separated list of maxUnavailable values, each a whole number from 1 to --hosts (${hosts}); "${part}" is not; e.g. --steps 1,5,10`,
      );
    }
    if (steps.includes(k)) {
      throw new Error(
        `--steps lists ${k} twice; give each maxUnavailable once, e.g. --steps 1,5,10`,
      );
    }
    steps.push(k);
  }
  const checkText = values['agent-check-seconds'] ?? '2';
  const agentCheckSeconds = Number(checkText);
  if (!/^\d+(\.\d+)?$/.test(checkText) || agentCheckSeconds < 0.2 || agentCheckSeconds > 3600) {
    throw new Error(
      `--agent-check-seconds must be a number of seconds from 0.2 to 3600 (the operator's hosts.agentCheckIntervalSeconds), not "${checkText}"; e.g. --agent-check-seconds 2`,
    );
  }
  return { hosts, steps, agentCheckSeconds };
}

// ---------------------------------------------------------------------------------------------
// Observing the world

interface Snapshot {
  hosts: WindowsHost[];
  nodes: Map<string, k8s.V1Node>;
  pods: k8s.V1Pod[];
  pdb?: k8s.V1PodDisruptionBudget;
  pools: Map<string, WindowsNodePool>;
}

interface Clients {
  core: k8s.CoreV1Api;
  custom: k8s.CustomObjectsApi;
  policy: k8s.PolicyV1Api;
  apps: k8s.AppsV1Api;
}

async function snapshot(c: Clients): Promise<Snapshot> {
  const [hosts, nodes, pods, pdb, pools] = await Promise.all([
    c.custom.listNamespacedCustomObject({ group, version, namespace, plural: 'windowshosts' }),
    c.core.listNode(),
    c.core.listNamespacedPod({ namespace: workloadNamespace, labelSelector: 'app=web' }),
    c.policy
      .readNamespacedPodDisruptionBudget({ name: 'web', namespace: workloadNamespace })
      .catch(() => undefined),
    c.custom.listNamespacedCustomObject({ group, version, namespace, plural: 'windowsnodepools' }),
  ]);
  return {
    hosts: (hosts as { items: WindowsHost[] }).items,
    nodes: new Map(nodes.items.map((n) => [n.metadata!.name!, n])),
    pods: pods.items,
    ...(pdb ? { pdb } : {}),
    pools: new Map((pools as { items: WindowsNodePool[] }).items.map((p) => [p.metadata.name, p])),
  };
}

function hostPool(host: WindowsHost): string | undefined {
  return host.metadata.labels?.pool;
}

function nodeOf(s: Snapshot, host: WindowsHost): k8s.V1Node | undefined {
  const name = host.status?.nodeName;
  return name ? s.nodes.get(name) : undefined;
}

/** Why the host is unavailable (see the module comment), or undefined when it is available. */
function unavailableBecause(s: Snapshot, host: WindowsHost): string | undefined {
  const node = nodeOf(s, host);
  if (!node) return 'no Node';
  if (!nodeIsReady(node)) return 'Node NotReady';
  if (node.spec?.unschedulable) return 'cordoned';
  const ready = host.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') return `host Ready=${ready?.status ?? 'unknown'}`;
  if (host.status?.rollout?.current) return `in change (${host.status.rollout.current.step})`;
  const a = node.metadata?.annotations ?? {};
  if (a[desiredServicesVersionAnnotation] !== a[servicesVersionAnnotation])
    return 'services being replaced';
  return undefined;
}

function onVersion(s: Snapshot, host: WindowsHost, wanted: string): boolean {
  return (
    host.status?.servicesVersion === wanted &&
    nodeOf(s, host)?.metadata?.annotations?.[servicesVersionAnnotation] === wanted &&
    unavailableBecause(s, host) === undefined
  );
}

function podReady(pod: k8s.V1Pod): boolean {
  return (
    !pod.metadata?.deletionTimestamp &&
    (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false)
  );
}

// ---------------------------------------------------------------------------------------------
// One measurement

interface Measurement extends SampleStats {
  label: string;
  k: number;
  version: string;
  makespanS: number;
}

interface Budget {
  replicas: number;
  desiredHealthy: number;
}

/** What the 200 ms sampler records while it watches one pool. */
interface SampleStats {
  /** Hosts of the watched pool (at the last sample). */
  hosts: number;
  /** Largest number of the pool's hosts unavailable at once (this bench's view). */
  maxUnavailable: number;
  /** Largest status.unavailableHosts the pool itself reported. */
  maxPoolUnavailable: number;
  /** Largest number of hosts outside the pool unavailable at once. */
  maxOthersUnavailable: number;
  /** PDB breach episodes: by Ready pods counted here, and by the PDB's own status. */
  podBreaches: number;
  pdbStatusBreaches: number;
  minReadyPods: number;
  samples: number;
  maxGapMs: number;
  failedSamples: number;
  /** Seconds from t0 to the first sample with a host of the pool unavailable. */
  firstDownS?: number;
}

/**
 * Samples every 200 ms (bounded by `timeoutMs` and the sample count it allows) until `until`
 * returns true for a snapshot; returns the stats and the time (performance.now()) that
 * snapshot was in, or throws naming the last state `until` described.
 */
async function sampleUntil(
  c: Clients,
  options: {
    label: string;
    pool: string;
    budget: Budget;
    t0: number;
    timeoutMs: number;
    /** True when done; otherwise a line describing the state (for progress and errors). */
    until: (s: Snapshot, members: WindowsHost[], stats: SampleStats) => true | string;
  },
): Promise<{ stats: SampleStats; doneAt: number }> {
  const stats: SampleStats = {
    hosts: 0,
    maxUnavailable: 0,
    maxPoolUnavailable: 0,
    maxOthersUnavailable: 0,
    podBreaches: 0,
    pdbStatusBreaches: 0,
    minReadyPods: Number.POSITIVE_INFINITY,
    samples: 0,
    maxGapMs: 0,
    failedSamples: 0,
  };
  const { t0, timeoutMs } = options;
  let podBreach = false;
  let pdbBreach = false;
  let lastStart: number | undefined;
  let lastLine = '';
  let lastProgress = t0;
  const maxSamples = Math.ceil(timeoutMs / sampleEveryMs) + 1;
  for (let i = 0; i < maxSamples; i++) {
    const start = performance.now();
    if (lastStart !== undefined) stats.maxGapMs = Math.max(stats.maxGapMs, start - lastStart);
    lastStart = start;
    let s: Snapshot | undefined;
    try {
      s = await snapshot(c);
    } catch (error) {
      stats.failedSamples++;
      lastLine = `sample failed: ${(error as Error).message}`;
    }
    const seenAt = performance.now();
    if (s) {
      stats.samples++;
      const members = s.hosts.filter((h) => hostPool(h) === options.pool);
      const others = s.hosts.filter((h) => hostPool(h) !== options.pool);
      stats.hosts = members.length;
      const snap = s;
      const down = members.filter((h) => unavailableBecause(snap, h) !== undefined);
      stats.maxUnavailable = Math.max(stats.maxUnavailable, down.length);
      if (down.length > 0 && stats.firstDownS === undefined)
        stats.firstDownS = (seenAt - t0) / 1000;
      stats.maxOthersUnavailable = Math.max(
        stats.maxOthersUnavailable,
        others.filter((h) => unavailableBecause(snap, h) !== undefined).length,
      );
      stats.maxPoolUnavailable = Math.max(
        stats.maxPoolUnavailable,
        s.pools.get(options.pool)?.status?.unavailableHosts ?? 0,
      );
      const ready = s.pods.filter(podReady).length;
      stats.minReadyPods = Math.min(stats.minReadyPods, ready);
      const breachNow = ready < options.budget.desiredHealthy;
      if (breachNow && !podBreach) stats.podBreaches++;
      podBreach = breachNow;
      const pdb = s.pdb;
      const pdbObserved =
        pdb?.status?.observedGeneration !== undefined &&
        pdb.status.observedGeneration === pdb.metadata?.generation;
      const pdbNow =
        pdbObserved && (pdb.status?.currentHealthy ?? 0) < (pdb.status?.desiredHealthy ?? 0);
      if (pdbNow && !pdbBreach) stats.pdbStatusBreaches++;
      pdbBreach = pdbNow;
      const verdict = options.until(s, members, stats);
      if (verdict === true) return { stats, doneAt: seenAt };
      const why = down
        .slice(0, 3)
        .map((h) => `${h.metadata.name}: ${unavailableBecause(snap, h)}`)
        .join('; ');
      lastLine = `${verdict}, ${down.length} unavailable${why ? ` (${why})` : ''}, ${ready}/${options.budget.replicas} pods Ready`;
    }
    if (seenAt - lastProgress > 10_000) {
      lastProgress = seenAt;
      console.error(
        `[bench]   ${options.label}: ${((seenAt - t0) / 1000).toFixed(0)} s, ${lastLine}`,
      );
    }
    if (seenAt - t0 > timeoutMs) break;
    await sleep(Math.max(0, start + sampleEveryMs - performance.now()));
  }
  throw new Error(
    `${options.label}: gave up after ${(timeoutMs / 1000).toFixed(0)} s (last sample: ${lastLine})`,
  );
}

async function measure(
  c: Clients,
  options: {
    label: string;
    pool: string;
    k: number;
    payloadDir: string;
    step: number;
    budget: Budget;
    deadline: number;
  },
): Promise<Measurement> {
  const kubernetesVersion = `v1.36.${5 + options.step}`;
  const wanted = `${kubernetesVersion.slice(1)}-wf.1`;
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const patchPool = (spec: Partial<WindowsNodePool['spec']>) =>
    c.custom.patchNamespacedCustomObject(
      { group, version, namespace, plural: 'windowsnodepools', name: options.pool, body: { spec } },
      merge,
    );

  await writeStandInPayload(options.payloadDir, { kubernetesVersion, version: wanted });
  const t0 = performance.now();
  await patchPool({ maxUnavailable: options.k, paused: false });
  try {
    const { stats, doneAt } = await sampleUntil(c, {
      label: options.label,
      pool: options.pool,
      budget: options.budget,
      t0,
      timeoutMs: Math.min(measurementTimeoutMs, options.deadline - Date.now()),
      until: (s, members) => {
        const done = members.filter((h) => onVersion(s, h, wanted)).length;
        return (
          (members.length > 0 && done === members.length) ||
          `${done}/${members.length} on ${wanted}`
        );
      },
    });
    return {
      ...stats,
      label: options.label,
      k: options.k,
      version: wanted,
      makespanS: (doneAt - t0) / 1000,
    };
  } finally {
    await patchPool({ paused: true });
  }
}

/**
 * Shows that the sampler sees what it must count, on the real objects before any measurement:
 * cordons every node by hand (it must see every host of the main pool unavailable), then, with
 * nowhere to schedule replacements, deletes kMax + 1 pods of web outright (not evictions: an
 * involuntary disruption; it must see one PDB breach, lasting until the nodes are uncordoned).
 * A breach shorter than the 200 ms sampling interval would go unseen: without the cordon,
 * deleted pods were replaced and Ready again before the next sample on a quiet machine.
 * Undoes both and waits for the fleet to settle.
 */
async function checkSampler(
  c: Clients,
  budget: Budget,
  kMax: number,
  deadline: number,
): Promise<string> {
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const s = await snapshot(c);
  const members = s.hosts.filter((h) => hostPool(h) === mainPool);
  const setUnschedulable = (host: WindowsHost, value: boolean) =>
    c.core.patchNode(
      { name: host.status!.nodeName!, body: { spec: { unschedulable: value } } },
      merge,
    );
  const t0 = performance.now();
  await Promise.all(s.hosts.map((h) => setUnschedulable(h, true)));
  let cordoned: SampleStats;
  let deleted: SampleStats;
  let victims: k8s.V1Pod[];
  try {
    ({ stats: cordoned } = await sampleUntil(c, {
      label: 'sampler check (cordon)',
      pool: mainPool,
      budget,
      t0,
      timeoutMs: 30_000,
      until: (_s, _m, stats) =>
        stats.maxUnavailable >= members.length ||
        `saw ${stats.maxUnavailable} of ${members.length} cordoned`,
    }));
    victims = s.pods.filter(podReady).slice(0, kMax + 1);
    const t1 = performance.now();
    await Promise.all(
      victims.map((p) =>
        c.core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: workloadNamespace }),
      ),
    );
    ({ stats: deleted } = await sampleUntil(c, {
      label: 'sampler check (pods deleted)',
      pool: mainPool,
      budget,
      t0: t1,
      timeoutMs: 30_000,
      // The breach lasts while the nodes are cordoned; give the PDB's status 15 s to show it.
      until: (_s, _m, stats) =>
        (stats.podBreaches >= 1 &&
          (stats.pdbStatusBreaches >= 1 || performance.now() - t1 > 15_000)) ||
        `${stats.podBreaches} breach(es) seen, ${stats.pdbStatusBreaches} by the PDB status`,
    }));
  } finally {
    await Promise.all(s.hosts.map((h) => setUnschedulable(h, false)));
  }
  await settle(c, budget, deadline, 'the fleet settled after the sampler check');
  return `cordoned all ${s.hosts.length} nodes by hand → saw ${cordoned.maxUnavailable} of the ${members.length} hosts of ${mainPool} unavailable (its status.unavailableHosts said ${cordoned.maxPoolUnavailable}${cordoned.maxPoolUnavailable < members.length ? ': it does not count a hand-cordoned Ready host' : ''}); deleted ${victims.length} pods with nowhere to go → ${deleted.podBreaches} breach (PDB status: ${deleted.pdbStatusBreaches}), min ${deleted.minReadyPods}/${budget.replicas} Ready`;
}

/** Waits until every host is available and the Deployment is whole again. */
async function settle(c: Clients, budget: Budget, deadline: number, what: string): Promise<void> {
  let last = '';
  try {
    await waitFor(
      async () => {
        const s = await snapshot(c);
        const down = s.hosts
          .map((h) => [h.metadata.name, unavailableBecause(s, h)] as const)
          .filter(([, why]) => why !== undefined);
        const ready = s.pods.filter(podReady).length;
        const terminating = s.pods.filter((p) => p.metadata?.deletionTimestamp).length;
        last = `${down.length} host(s) unavailable (${down
          .slice(0, 3)
          .map(([n, why]) => `${n}: ${why}`)
          .join(', ')}), ${ready}/${budget.replicas} pods Ready, ${terminating} terminating`;
        return down.length === 0 && ready === budget.replicas && terminating === 0;
      },
      {
        description: what,
        timeoutMs: Math.min(10 * 60_000, deadline - Date.now()),
        intervalMs: 500,
      },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message} (last: ${last})`);
  }
}

// ---------------------------------------------------------------------------------------------
// The run

function machineFacts(): string {
  const cpu = cpus();
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  return `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown'}), ${(totalmem() / 1024 ** 3).toFixed(0)} GiB, Node ${process.version}, load average ${load}`;
}

async function run(flags: BenchFlags): Promise<void> {
  const deadline = Date.now() + runBudgetMs;
  const factsAtStart = machineFacts();
  const total = flags.hosts + 1;
  const kMax = Math.max(...flags.steps);
  const budget: Budget = { replicas: total, desiredHealthy: total - kMax };
  const cleanups: (() => Promise<void>)[] = [];
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n[bench] ${signal}: cleaning up`);
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let keepDir = false;
  const dir = await createOwnedTempDir('winfleet-bench-upgrade-');
  cleanups.push(async () => {
    if (!keepDir) await removeOwnedTempDir(dir);
  });
  try {
    console.error(`[bench] starting the control plane`);
    const cluster: Cluster = await startCluster({
      onProgress: (message) => console.error(`[bench]   cluster: ${message}`),
    });
    cleanups.push(() => cluster.stop());
    const kc = loadKubeConfig(cluster.kubeconfigPath);
    const c: Clients = {
      core: kc.makeApiClient(k8s.CoreV1Api),
      custom: kc.makeApiClient(k8s.CustomObjectsApi),
      policy: kc.makeApiClient(k8s.PolicyV1Api),
      apps: kc.makeApiClient(k8s.AppsV1Api),
    };
    const key = generateTestKey();
    await writeFile(join(dir, 'key.pub'), key.publicKey);
    const payloadDir = join(dir, 'payload');
    await writeStandInPayload(payloadDir);
    await installCrds(kc);
    // The product's defaults (host concurrency 10 among them) but the agent check interval
    // (see the module comment).
    await writeOperatorConfig(kc, namespace, {
      hosts: { agentCheckIntervalSeconds: flags.agentCheckSeconds },
    });
    await writeSshKeySecret(kc, namespace, key.privateKey);

    console.error(`[bench] starting ${total} simulated hosts`);
    const baseAddress = `127.${64 + Math.floor(Math.random() * 64)}.0.10`;
    const { child: sims, hosts: described } = await startSimHostsProcess(
      fileURLToPath(new URL('./upgrade-hosts.ts', import.meta.url)),
      [
        '--count',
        String(total),
        '--authorized-key',
        join(dir, 'key.pub'),
        '--base-address',
        baseAddress,
      ],
      total,
    );
    cleanups.push(() => stopProcess(sims));

    const logFile = join(dir, 'operator.log');
    const operator = spawnOperator({
      kubeconfig: cluster.kubeconfigPath,
      namespace,
      payloadDir,
      logFile,
    });
    cleanups.push(() => stopProcess(operator));

    // Both pools paused: nothing of theirs changes until a measurement unpauses one.
    for (const [name, label] of [
      [mainPool, 'bench'],
      [onePool, 'bench-one'],
    ] as const) {
      await c.custom.createNamespacedCustomObject({
        group,
        version,
        namespace,
        plural: 'windowsnodepools',
        body: {
          apiVersion,
          kind: 'WindowsNodePool',
          metadata: { name, namespace },
          spec: { selector: { matchLabels: { pool: label } }, maxUnavailable: 1, paused: true },
        } satisfies WindowsNodePool,
      });
    }
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    const joinStarted = performance.now();
    await Promise.all(
      described.map((h, i) => {
        const host = windowsHostFor(h, namespace);
        host.metadata.labels = { pool: i === 0 ? 'bench-one' : 'bench' };
        return objects.create(host);
      }),
    );
    let lastJoin = '';
    let lastJoinLog = 0;
    await waitFor(
      async () => {
        const s = await snapshot(c);
        const ready = s.hosts.filter((h) => unavailableBecause(s, h) === undefined).length;
        const line = `${ready}/${total} hosts joined and Ready`;
        if (line !== lastJoin && performance.now() - lastJoinLog > 5000) {
          lastJoinLog = performance.now();
          console.error(`[bench]   ${line}`);
        }
        lastJoin = line;
        return s.hosts.length === total && ready === total;
      },
      {
        description: `${total} hosts joined and Ready`,
        timeoutMs: Math.min(20 * 60_000, deadline - Date.now()),
        intervalMs: 500,
      },
    );
    console.error(
      `[bench] ${total} hosts joined in ${((performance.now() - joinStarted) / 1000).toFixed(1)} s`,
    );

    console.error(
      `[bench] Deployment web (${total} replicas) and PDB (maxUnavailable ${kMax}, desiredHealthy ${budget.desiredHealthy})`,
    );
    await c.core.createNamespace({ body: { metadata: { name: workloadNamespace } } });
    await c.apps.createNamespacedDeployment({
      namespace: workloadNamespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: total,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              nodeSelector: { 'kubernetes.io/os': 'windows' },
              tolerations: [
                { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' },
              ],
              topologySpreadConstraints: [
                {
                  maxSkew: 1,
                  topologyKey: 'kubernetes.io/hostname',
                  whenUnsatisfiable: 'ScheduleAnyway',
                  labelSelector: { matchLabels: { app: 'web' } },
                },
              ],
              containers: [{ name: 'web', image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' }],
            },
          },
        },
      },
    });
    await c.policy.createNamespacedPodDisruptionBudget({
      namespace: workloadNamespace,
      body: {
        metadata: { name: 'web' },
        spec: { maxUnavailable: kMax, selector: { matchLabels: { app: 'web' } } },
      },
    });
    await settle(c, budget, deadline, `${total} pods of web Ready`);
    const placed = await snapshot(c);
    const perNode = new Map<string, number>();
    for (const p of placed.pods)
      perNode.set(p.spec?.nodeName ?? '-', (perNode.get(p.spec?.nodeName ?? '-') ?? 0) + 1);
    const counts = [...perNode.values()];
    const spread = `${perNode.size} nodes, ${Math.min(...counts)}–${Math.max(...counts)} pods per node`;
    console.error(`[bench] web spread over ${spread}`);

    console.error('[bench] checking that the sampler sees unavailable hosts and PDB breaches');
    const samplerCheck = await checkSampler(c, budget, kMax, deadline);
    console.error(`[bench] sampler check: ${samplerCheck}`);

    const measurements: Measurement[] = [];
    let step = 1;
    // The baseline is a few seconds long: the median of three runs, so one noisy run on this
    // shared machine does not scale into every ⌈N/k⌉ × one host.
    const baselines: Measurement[] = [];
    for (let i = 1; i <= baselineRuns; i++) {
      console.error(
        `[bench] baseline ${i}/${baselineRuns}: a payload upgrade of the one-host pool ${onePool}`,
      );
      const b = await measure(c, {
        label: `one host (${i}/${baselineRuns})`,
        pool: onePool,
        k: 1,
        payloadDir,
        step: step++,
        budget,
        deadline,
      });
      baselines.push(b);
      console.error(`[bench] one host: ${b.makespanS.toFixed(1)} s`);
      await settle(c, budget, deadline, 'the fleet settled after the baseline');
    }
    const baseline = [...baselines].sort((a, b) => a.makespanS - b.makespanS)[
      Math.floor(baselines.length / 2)
    ]!;
    for (const k of flags.steps) {
      console.error(`[bench] maxUnavailable ${k}: a payload upgrade of ${flags.hosts} hosts`);
      const m = await measure(c, {
        label: `maxUnavailable ${k}`,
        pool: mainPool,
        k,
        payloadDir,
        step: step++,
        budget,
        deadline,
      });
      measurements.push(m);
      console.error(`[bench] maxUnavailable ${k}: ${m.makespanS.toFixed(1)} s`);
      await settle(c, budget, deadline, `the fleet settled after maxUnavailable ${k}`);
    }

    printReport({
      flags,
      baseline,
      baselines,
      measurements,
      budget,
      kMax,
      spread,
      samplerCheck,
      factsAtStart,
      factsAtEnd: machineFacts(),
    });
  } catch (error) {
    keepDir = true;
    console.error(`[bench] kept ${dir} (operator.log) for a look`);
    throw error;
  } finally {
    console.error('[bench] cleaning up');
    await cleanup();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

function printReport(r: {
  flags: BenchFlags;
  baseline: Measurement;
  baselines: Measurement[];
  measurements: Measurement[];
  budget: Budget;
  kMax: number;
  spread: string;
  samplerCheck: string;
  factsAtStart: string;
  factsAtEnd: string;
}): void {
  const n = r.flags.hosts;
  const one = r.baseline.makespanS;
  const t = (s: number) => `${s.toFixed(1)} s`;
  console.log(
    `\nPayload upgrade through a WindowsNodePool of ${n} simulated hosts (stand-in payload, loopback SSH),`,
  );
  console.log(
    `makespan from the payload write to every host on the new version, Ready and uncordoned.`,
  );
  console.log(
    `One host (the baseline): the same upgrade of a one-host pool, in the same run: median ${t(one)} of ${r.baselines.map((b) => t(b.makespanS)).join(', ')} (the host was first seen unavailable after ${r.baselines.map((b) => (b.firstDownS === undefined ? '–' : t(b.firstDownS))).join(', ')}).`,
  );
  const othersDown = Math.max(...r.baselines.map((b) => b.maxOthersUnavailable));
  if (othersDown > 0) {
    console.log(
      `  Not a clean baseline: ${othersDown} host(s) of the paused pool ${mainPool} were unavailable at the same time (paused not honoured, or the operator upgrades every host at once).`,
    );
  }
  console.log(
    `Workload: Deployment web, ${r.budget.replicas} replicas (${r.spread}), PDB maxUnavailable ${r.kMax} (desiredHealthy ${r.budget.desiredHealthy}).\n`,
  );
  const header = [
    '    k',
    '  makespan',
    'first down',
    '⌈N/k⌉ × one host',
    ' ratio',
    'goal',
    'max unavailable',
    'pool said',
    'PDB violations',
    'min Ready pods',
    'samples (max gap)',
  ];
  console.log(`  ${header.join('   ')}`);
  for (const m of r.measurements) {
    const ideal = Math.ceil(n / m.k) * one;
    const ratio = m.makespanS / ideal;
    const row = [
      String(m.k).padStart(5),
      t(m.makespanS).padStart(10),
      (m.firstDownS === undefined ? '–' : t(m.firstDownS)).padStart(10),
      t(ideal).padStart(16),
      ratio.toFixed(2).padStart(6),
      (ratio <= 1.2 ? 'met' : 'MISSED').padEnd(4),
      `${m.maxUnavailable} of ${m.hosts}${m.maxUnavailable > m.k ? ' (> k!)' : ''}`.padStart(15),
      String(m.maxPoolUnavailable).padStart(9),
      `${m.podBreaches} (PDB status ${m.pdbStatusBreaches})`.padStart(14),
      `${m.minReadyPods}/${r.budget.replicas}`.padStart(14),
      `${m.samples} (${m.maxGapMs.toFixed(0)} ms)${m.failedSamples ? `, ${m.failedSamples} failed` : ''}`.padStart(
        17,
      ),
    ];
    console.log(`  ${row.join('   ')}`);
  }
  console.log(
    `\nGoal: ratio ≤ 1.2, max unavailable ≤ k, 0 PDB violations. "first down": from the payload write to the first host seen unavailable. "max unavailable" is this bench's view, sampled every ${sampleEveryMs} ms (NotReady or no Node, cordoned, WindowsHost not Ready, in a pool change, or services being replaced); "pool said" is the largest status.unavailableHosts the pool reported. A PDB violation is an episode of fewer Ready pods than desiredHealthy (refused evictions are not violations).`,
  );
  console.log(`Sampler check before the measurements: ${r.samplerCheck}.`);
  console.log(
    `Operator: hosts.agentCheckIntervalSeconds ${r.flags.agentCheckSeconds} (product default 120), other settings at their defaults.`,
  );
  const h = benchHostTimings;
  console.log(
    `Simulated host timings: reboot ${h.rebootDelayMs} ms delay + ${h.rebootDowntimeMs} ms down, service stop at shutdown ${h.shutdownTimeoutMs} ms, stop timeout ${h.stopTimeoutMs} ms, SCM handshake timeout ${h.serviceStartTimeoutMs} ms (Windows' default; only reached by a service that fails to start), delayed-auto start ${h.delayedAutoStartMs} ms.`,
  );
  console.log(`Machine at start: ${r.factsAtStart}`);
  console.log(`Machine at end:   ${r.factsAtEnd}`);
}

if (import.meta.main) {
  let flags: BenchFlags;
  try {
    flags = parseFlags(process.argv.slice(2));
  } catch (error) {
    console.error(`[bench] ${(error as Error).message}`);
    process.exit(2);
  }
  run(flags).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(`[bench] failed: ${(error as Error).stack ?? error}`);
      process.exit(1);
    },
  );
}
