/**
 * npm run bench:prepull — what pre-pull changes in a pool's rolling upgrade, for an image of
 * servercore's size, measured in process with no control plane:
 * - the real rollout engine (src/rollout poolPass: planner, host steps, the WaitReady that
 *   waits for the pulls of the Node's boot and version, the pool's spec.prePull checked);
 * - the agent's real pulls (src/agent/pre-pull.ts pullImages) into each host's simulated
 *   containerd store (sim/hosts/containerd-images.ts: compressed size over the download rate,
 *   plus over the unpack rate), the ImagesPrePulled state the Node would show (prePullState);
 * - a model of the rest, stated here because nothing else plays it: each host runs one replica
 *   of a workload whose image is servercore; a host upgraded has none of it in its store (as a
 *   node of a new Windows build has none of its build's image); the pod evicted by a drain is
 *   bound at once to the node uncordoned last (the first drained goes to a host not yet
 *   upgraded, which has the image); a pod bound to a node without its image pulls it there
 *   (the kubelet's CRI pull, played by a pull of the same store); cordon, drain and apply take
 *   no time. The simulated kubelet and kwok do not pull a pod's image (docs/fidelity-ledger.md).
 *
 *   npm run bench:prepull [-- --hosts 3 --image-gb 2.5 --pull-mbps 1000 --unpack-mbps 2000 --runs 3]
 *
 * Per run, with and without spec.prePull: the rollout's makespan (first cordon to the last
 * host's change ended), until every replica runs again, and per upgraded node that took a pod:
 * Node Ready on the new version → first pod Running, and node schedulable (uncordoned) → first
 * pod Running; per evicted pod: evicted → Running again. Medians over --runs.
 */
import { parseArgs } from 'node:util';
import { SimContainerdImages } from '../sim/hosts/containerd-images.ts';
import type { HostOS } from '../src/agent/host-os.ts';
import { pullImages } from '../src/agent/pre-pull.ts';
import { prePullCommand } from '../src/api/pre-pull.ts';
import type { HostRolloutStatus } from '../src/api/rollout-status.ts';
import {
  checkPoolSpec,
  type ObservedNode,
  type PoolPassHost,
  poolPass,
} from '../src/rollout/index.ts';

const reference = 'mcr.microsoft.com/windows/servercore:ltsc2022';
const v1 = '1.36.5-wf.1';
const v2 = '1.36.5-wf.2';

const { values } = parseArgs({
  options: {
    hosts: { type: 'string', default: '3' },
    'image-gb': { type: 'string', default: '2.5' },
    'pull-mbps': { type: 'string', default: '1000' },
    'unpack-mbps': { type: 'string', default: '2000' },
    runs: { type: 'string', default: '3' },
  },
});
const hostCount = Number(values.hosts);
const bytes = Number(values['image-gb']) * 1e9;
const pullBytesPerSecond = Number(values['pull-mbps']) * 1e6;
const unpackBytesPerSecond = Number(values['unpack-mbps']) * 1e6;
const runs = Number(values.runs);
if (![hostCount, bytes, pullBytesPerSecond, unpackBytesPerSecond, runs].every((n) => n > 0))
  throw new Error(
    '--hosts, --image-gb, --pull-mbps, --unpack-mbps and --runs take numbers above 0',
  );

function store(): SimContainerdImages {
  return new SimContainerdImages({
    registry: { [reference]: bytes },
    pullBytesPerSecond,
    unpackBytesPerSecond,
  });
}

/** The agent's HostOS, as far as pre-pull reaches it, over `images`. */
function hostOver(images: SimContainerdImages): HostOS {
  return {
    hasImage: async (r: string) => images.has(r),
    pullImage: (r: string, signal: AbortSignal) => images.pull(r, signal),
    freeDiskBytes: async () => 1e13,
  } as unknown as HostOS;
}

interface SimHost {
  key: string;
  images: SimContainerdImages;
  node: ObservedNode;
  servicesVersion: string;
  drained: boolean;
  status: HostRolloutStatus;
  /** When the agent ran the new version (Node Ready on it), when uncordoned, first pod Running. */
  readyAt?: number;
  schedulableAt?: number;
  firstPodAt?: number;
}

interface RunResult {
  makespan: number;
  allRunning: number;
  readyToPod: number[];
  schedulableToPod: number[];
  podDowntime: number[];
}

/** One rolling upgrade v1 → v2 of the pool, with spec.prePull or without. */
async function rollout(prePull: boolean): Promise<RunResult> {
  const prePullSpec = { images: [reference], timeoutSeconds: 7200 };
  const spec = { selector: {}, maxUnavailable: 1, ...(prePull ? { prePull: prePullSpec } : {}) };
  const { policy, problems } = checkPoolSpec(spec);
  if (problems.length > 0) throw new Error(problems.join('; '));
  const hosts: SimHost[] = Array.from({ length: hostCount }, (_, i) => {
    const images = store();
    return {
      key: `bench/host-${i}`,
      images,
      node: {
        name: `win-${i}`,
        ready: true,
        unschedulable: false,
        cordonedByWinfleet: false,
        bootId: '1',
        readySince: new Date(0).toISOString(),
      },
      servicesVersion: v1,
      drained: false,
      status: {},
    };
  });
  // The old build's image is on every host; an upgraded host starts without it (see header).
  const pending: Promise<void>[] = [];
  const podDowntime: number[] = [];
  let lastRunning = 0;
  let schedulable: SimHost | undefined;
  const start = performance.now();
  /** The pod evicted from `from`: bound to the node uncordoned last, Running once its image is. */
  const evict = () => {
    const evictedAt = performance.now();
    const to = schedulable;
    const run = async () => {
      if (to && !to.images.has(reference))
        await to.images.pull(reference, new AbortController().signal);
      const now = performance.now();
      if (to && to.firstPodAt === undefined) to.firstPodAt = now;
      podDowntime.push(now - evictedAt);
      lastRunning = Math.max(lastRunning, now);
    };
    pending.push(run());
  };
  let ended = 0;
  while (ended === 0) {
    if (performance.now() - start > 600_000) throw new Error('the rollout did not end in 10 min');
    const now = new Date();
    const passHosts: PoolPassHost[] = hosts.map((h) => ({
      key: h.key,
      status: h.status,
      observed: {
        node: h.node,
        drained: h.drained,
        deleting: false,
        facts: {
          servicesVersion: h.servicesVersion,
          availableUpdates: [],
          rebootPending: false,
          createdAt: new Date(0).toISOString(),
        },
      },
    }));
    const result = poolPass({
      policy,
      specProblems: [],
      hosts: passHosts,
      payload: { servicesVersion: v2, kubeletVersion: 'v1.36.5' },
      apiServerVersion: 'v1.36.5',
      now,
    });
    for (const h of hosts) {
      const step = result.hosts.get(h.key)!;
      h.status = step.status;
      act(h, step.action.kind);
    }
    if (hosts.every((h) => h.servicesVersion === v2 && !h.status.current && !h.node.unschedulable))
      ended = performance.now();
    else await new Promise((resolve) => setTimeout(resolve, 5));
  }

  function act(h: SimHost, kind: string): void {
    switch (kind) {
      case 'cordon':
        h.node = { ...h.node, unschedulable: true, cordonedByWinfleet: true };
        return;
      case 'drain':
        if (!h.drained) evict();
        h.drained = true;
        return;
      case 'apply':
        if (h.servicesVersion === v2) return;
        // The new version runs (services restarted): a new build's store, the agent's pulls.
        h.servicesVersion = v2;
        h.images = store();
        h.readyAt = performance.now();
        if (prePull) {
          h.node = { ...h.node, prePull: 'pulling' };
          const images = h.images;
          pending.push(
            pullImages(
              hostOver(images),
              prePullCommand(prePullSpec, new Map([[reference, bytes]])),
            ).then((outcome) => {
              if (outcome.reason !== 'PrePulled') throw new Error(`pre-pull: ${outcome.message}`);
              h.node = { ...h.node, prePull: 'ended' };
            }),
          );
        }
        return;
      case 'uncordon':
        h.node = { ...h.node, unschedulable: false, cordonedByWinfleet: false };
        h.drained = false;
        h.schedulableAt ??= performance.now();
        schedulable = h;
        return;
    }
  }

  await Promise.all(pending);
  const upgradedWithPod = hosts.filter((h) => h.firstPodAt !== undefined);
  return {
    makespan: ended - start,
    allRunning: Math.max(ended, lastRunning) - start,
    readyToPod: upgradedWithPod.map((h) => h.firstPodAt! - h.readyAt!),
    schedulableToPod: upgradedWithPod.map((h) => h.firstPodAt! - h.schedulableAt!),
    podDowntime,
  };
}

async function measuredRate(): Promise<number> {
  const images = store();
  const begin = performance.now();
  await images.pull(reference, new AbortController().signal);
  return bytes / ((performance.now() - begin) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main(): Promise<void> {
  const rates: number[] = [];
  for (let i = 0; i < runs; i++) rates.push(await measuredRate());
  const results = { with: [] as RunResult[], without: [] as RunResult[] };
  for (let i = 0; i < runs; i++) {
    results.without.push(await rollout(false));
    results.with.push(await rollout(true));
  }
  const figure = (which: RunResult[], pick: (r: RunResult) => number | number[]) =>
    median(which.map((r) => pick(r)).flatMap((x) => (Array.isArray(x) ? [median(x)] : [x])));
  console.log(
    `image: ${reference}, ${(bytes / 1e9).toFixed(2)} GB compressed; pool of ${hostCount} hosts, maxUnavailable 1, services ${v1} → ${v2}`,
  );
  console.log(
    `simulated rates: download ${(pullBytesPerSecond / 1e6).toFixed(0)} MB/s, unpack ${(unpackBytesPerSecond / 1e6).toFixed(0)} MB/s; measured pull rate ${(median(rates) / 1e6).toFixed(0)} MB/s (download + unpack, one pull ${s((bytes / median(rates)) * 1000)})`,
  );
  const rows: [string, (r: RunResult) => number | number[]][] = [
    ['Node Ready on the new version → first pod Running', (r) => r.readyToPod],
    ['node schedulable (uncordoned) → first pod Running', (r) => r.schedulableToPod],
    ['evicted pod: evicted → Running again (median)', (r) => r.podDowntime],
    ['evicted pod: evicted → Running again (worst)', (r) => Math.max(...r.podDowntime)],
    ['rollout makespan (first cordon → last change ended)', (r) => r.makespan],
    ['until every replica Running again', (r) => r.allRunning],
  ];
  for (const [label, pick] of rows) {
    const without = figure(results.without, pick);
    const withPull = figure(results.with, pick);
    console.log(`${label}: without pre-pull ${s(without)}, with ${s(withPull)}`);
  }
  console.log(`(median of ${runs} runs each)`);
}

await main();
