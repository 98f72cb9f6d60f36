/**
 * npm run bench:join — the makespan of joining 1, 10 and 50 simulated Windows hosts with the
 * operator's default concurrency (10), against joining them one at a time as WMCO does (the
 * next host is configured only once the previous one is a Ready node), measured in the same
 * run; also the operator with a single worker (concurrency 1) but all hosts submitted at once.
 * Plus the resident memory of the operator process and of the simulated-host process.
 *
 *   npm run bench:join [-- --sizes 1,10,50 --concurrency 10 --payload-mib 358 --modes
 *                         concurrent,one-worker,one-at-a-time --settle-seconds 60 --leftovers]
 *
 * The operator runs as the image ships it (the bundle, IMAGE_NODE_FLAGS, IMAGE_ENV);
 * --from-source runs `node src/operator/main.ts` (the figures before issue 17's second pass).
 *
 * Besides the makespan: the operator's peak RSS over the joins (VmHWM), its RSS once every host
 * is Ready and again after --settle-seconds with nothing to do, and with --leftovers what a
 * join leaves behind in it: the operator runs with its inspector on loopback, and before the
 * hosts are created and after the settling, a full collection, then the V8 heap used and the
 * handles it keeps open (process.getActiveResourcesInfo(): timers, sockets, …) by kind. The
 * inspector costs some memory of its own, the same before and after.
 *
 * `--payload-mib N` pads the stand-in payload to N MiB in all, split between its files as a
 * real payload is (kubelet, kube-proxy, containerd, the agent, ...; sparse files), so the
 * operator streams real-size files; without it the files are a few bytes each.
 *
 * Each run gets a fresh control plane. The operator and the hosts run in their own processes,
 * as they would for real (hosts here share one process: memory per host is its growth / N).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { IMAGE_NODE_FLAGS } from '../scripts/build-image.ts';
import { freePorts } from '../sim/cluster/free-port.ts';
import { startCluster } from '../sim/cluster/start-cluster.ts';
import type { SimulatedHostDescription } from '../sim/hosts/fleet.ts';
import { generateTestKey } from '../sim/hosts/ssh-test-client.ts';
import {
  buildOperatorBundle,
  spawnOperator,
  stopProcess,
} from '../sim/testkit/operator-process.ts';
import { realPayloadSizes, writeStandInPayload } from '../sim/testkit/payload.ts';
import { writeOperatorConfig } from '../sim/testkit/test-operator.ts';
import {
  hostReady,
  listWindowsHosts,
  windowsHostFor,
  writeSshKeySecret,
} from '../sim/testkit/windows-hosts.ts';
import { installCrds } from '../src/api/install-crds.ts';
import { loadKubeConfig } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { connectInspector, type Inspector } from './inspector-client.ts';
import { simHostsCli, startSimHostsProcess } from './sim-hosts-process.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1,10,50' },
    concurrency: { type: 'string', default: '10' },
    'payload-mib': { type: 'string' },
    modes: { type: 'string', default: 'concurrent,one-worker,one-at-a-time' },
    'settle-seconds': { type: 'string', default: '0' },
    leftovers: { type: 'boolean', default: false },
    'from-source': { type: 'boolean', default: false },
  },
});
const payloadMiB = values['payload-mib'] === undefined ? undefined : Number(values['payload-mib']);
const sizes = values.sizes.split(',').map(Number);
const concurrency = Number(values.concurrency);
const allModes = ['concurrent', 'one-worker', 'one-at-a-time'] as const;
const modes = values.modes.split(',').map((m) => {
  const mode = allModes.find((a) => a === m);
  if (!mode) throw new Error(`--modes takes ${allModes.join(', ')}, not "${m}"`);
  return mode;
});
const settleSeconds = Number(values['settle-seconds']);
const shipped = !values['from-source'];
if (shipped) await buildOperatorBundle();
const namespace = 'winfleet-system';

/** A /proc/<pid>/status memory field (VmRSS now, VmHWM the peak), in MiB. */
function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) / 1024;
}
const rssMiB = (pid: number) => statusMiB(pid);

/** Bytes the process has written to files and sockets (/proc/<pid>/io wchar), in MiB. */
function writtenMiB(pid: number): number {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/wchar:\s+(\d+)/.exec(io)?.[1] ?? Number.NaN) / (1024 * 1024);
}

type Mode = 'concurrent' | 'one-worker' | 'one-at-a-time';

interface Run {
  hosts: number;
  mode: Mode;
  makespanS: number;
  operatorMiB: number;
  /** The operator's peak RSS over the run (VmHWM). */
  operatorPeakMiB: number;
  /** What the operator wrote to sockets and files over the run (mostly the payload copies). */
  operatorSentMiB: number;
  hostsMiB: number;
  /** The operator's RSS after settleSeconds more with every host Ready. */
  settledMiB?: number;
  leftovers?: { before: Snapshot; after: Snapshot };
}

/** The operator after a full collection: heap used and open handles by kind. */
interface Snapshot {
  heapMiB: number;
  externalMiB: number;
  rssMiB: number;
  resources: Record<string, number>;
}

async function snapshot(inspector: Inspector, pid: number): Promise<Snapshot> {
  await inspector.send('HeapProfiler.collectGarbage');
  const { heapUsed, external, resources } = await inspector.evaluate<{
    heapUsed: number;
    external: number;
    resources: string[];
  }>('({ ...process.memoryUsage(), resources: process.getActiveResourcesInfo() })');
  const counts: Record<string, number> = {};
  for (const r of resources) counts[r] = (counts[r] ?? 0) + 1;
  counts['armed timers (ref and unref)'] = await inspector.countTimers();
  return {
    heapMiB: heapUsed / 2 ** 20,
    externalMiB: external / 2 ** 20,
    rssMiB: rssMiB(pid),
    resources: counts,
  };
}

async function joinRun(count: number, mode: Mode, base: number): Promise<Run> {
  const workers = mode === 'one-worker' ? 1 : concurrency;
  const cluster = await startCluster();
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-bench-join-'));
  const key = generateTestKey();
  await writeFile(join(dir, 'key.pub'), key.publicKey);
  const payloadDir = join(dir, 'payload');
  await writeStandInPayload(payloadDir, {
    sizes: payloadMiB === undefined ? undefined : realPayloadSizes(payloadMiB * 1024 * 1024),
  });
  await installCrds(kc);
  await writeOperatorConfig(kc, namespace, { hosts: { concurrency: workers } });
  await writeSshKeySecret(kc, namespace, key.privateKey);

  const { child: sims, hosts: described } = await startSimHostsProcess(
    simHostsCli,
    [
      '--count',
      String(count),
      '--releases',
      '2019,2022,2025',
      '--authorized-key',
      join(dir, 'key.pub'),
      '--base-address',
      `127.0.${base}.10`,
    ],
    count,
  );
  const leftovers = values.leftovers && mode === 'concurrent';
  const [inspectorPort] = leftovers ? await freePorts(1) : [0];
  const operator = spawnOperator({
    kubeconfig: cluster.kubeconfigPath,
    namespace,
    payloadDir,
    shipped,
    ...(leftovers
      ? {
          nodeFlags: [...(shipped ? IMAGE_NODE_FLAGS : []), `--inspect=127.0.0.1:${inspectorPort}`],
        }
      : {}),
  });
  const inspector = leftovers ? await connectInspector(inspectorPort!) : undefined;
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  await waitFor(
    async () =>
      (await kc
        .makeApiClient(k8s.CoreV1Api)
        .readNamespacedConfigMap({ name: 'winfleet-config', namespace })) && true,
    {
      description: 'config',
    },
  );
  // The operator settled before the hosts come: its informers listed, its first passes done.
  if (inspector) await sleep(10_000);
  const before = inspector ? await snapshot(inspector, operator.pid!) : undefined;
  const create = (h: SimulatedHostDescription) => objects.create(windowsHostFor(h, namespace));
  const started = performance.now();
  if (mode === 'one-at-a-time') {
    // WMCO's way: the next host is configured only once the previous one is a Ready node.
    for (const [i, h] of described.entries()) {
      await create(h);
      await waitFor(
        async () => {
          const list = await listWindowsHosts(kc, namespace);
          return list.length === i + 1 && list.every(hostReady);
        },
        { description: `host ${i + 1} Ready`, timeoutMs: 10 * 60_000, intervalMs: 100 },
      );
    }
  } else {
    await Promise.all(described.map(create));
  }
  await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, namespace);
      return list.length === count && list.every(hostReady);
    },
    { description: `${count} hosts Ready`, timeoutMs: 30 * 60_000, intervalMs: 250 },
  );
  const makespanS = (performance.now() - started) / 1000;
  const run: Run = {
    hosts: count,
    mode,
    makespanS,
    operatorMiB: rssMiB(operator.pid!),
    operatorPeakMiB: statusMiB(operator.pid!, 'VmHWM'),
    operatorSentMiB: writtenMiB(operator.pid!),
    hostsMiB: rssMiB(sims.pid!),
  };
  if (settleSeconds > 0) {
    await sleep(settleSeconds * 1000);
    run.settledMiB = rssMiB(operator.pid!);
  }
  if (inspector && before) {
    run.leftovers = { before, after: await snapshot(inspector, operator.pid!) };
    inspector.close();
  }
  await stopProcess(operator);
  await stopProcess(sims);
  await cluster.stop();
  return run;
}

const runs: Run[] = [];
let base = 30;
for (const size of sizes) {
  for (const mode of modes) {
    const run = await joinRun(size, mode, base++);
    runs.push(run);
    console.error(`[bench] ${size} host(s), ${mode}: ${run.makespanS.toFixed(1)} s`);
  }
}

const payloadName =
  payloadMiB === undefined ? 'stand-in payload' : `stand-in payload padded to ${payloadMiB} MiB`;
const at = (size: number, mode: Mode) => runs.find((r) => r.hosts === size && r.mode === mode);
const seconds = (r: Run | undefined) => (r ? `${r.makespanS.toFixed(1)} s` : '–');
console.log(
  `\nJoin makespan (WindowsHosts created → all Ready), ${payloadName}, loopback SSH, the operator ${shipped ? 'as shipped' : 'from source'}:\n`,
);
console.log(
  `  hosts   concurrency ${concurrency}   1 worker, all at once   one at a time (WMCO)   speed-up vs WMCO   vs one host's time`,
);
const oneHost = at(Math.min(...sizes), 'concurrent');
for (const size of sizes) {
  const fast = at(size, 'concurrent');
  const slow = at(size, 'one-at-a-time');
  const speedUp = fast && slow ? `${(slow.makespanS / fast.makespanS).toFixed(1)}x` : '–';
  const vsOne =
    fast && oneHost && oneHost.hosts === 1
      ? `${(fast.makespanS / oneHost.makespanS).toFixed(1)}x`
      : '–';
  console.log(
    `  ${String(size).padStart(5)}   ${seconds(fast).padStart(14)}   ${seconds(at(size, 'one-worker')).padStart(21)}   ${seconds(slow).padStart(20)}   ${speedUp.padStart(16)}   ${vsOne.padStart(17)}`,
  );
}
console.log('\nResident memory (VmRSS) once every host is Ready, and after settling:\n');
console.log(
  `  hosts  mode            operator peak (VmHWM)   when all Ready   after ${settleSeconds} s more   simulated-hosts process   per host`,
);
for (const r of runs) {
  const one = runs.find((x) => x.hosts === Math.min(...sizes) && x.mode === r.mode)!;
  const perHost =
    r.hosts > one.hosts ? (r.hostsMiB - one.hostsMiB) / (r.hosts - one.hosts) : Number.NaN;
  console.log(
    `  ${String(r.hosts).padStart(5)}  ${r.mode.padEnd(14)}  ${r.operatorPeakMiB.toFixed(0).padStart(17)} MiB   ${r.operatorMiB.toFixed(0).padStart(10)} MiB   ${r.settledMiB === undefined ? '            –' : `${r.settledMiB.toFixed(0).padStart(9)} MiB`}   ${r.hostsMiB.toFixed(0).padStart(19)} MiB   ${Number.isNaN(perHost) ? '      –' : `${perHost.toFixed(1).padStart(5)} MiB`}`,
  );
}
console.log('\nWhat the operator wrote to sockets and files (/proc/<pid>/io wchar):\n');
for (const r of runs) {
  console.log(
    `  ${String(r.hosts).padStart(5)}  ${r.mode.padEnd(14)}  ${r.operatorSentMiB.toFixed(1).padStart(7)} MiB`,
  );
}
const withLeftovers = runs.filter((r) => r.leftovers);
if (withLeftovers.length > 0) {
  console.log(
    '\nWhat the joins left in the operator (after a full collection; before the hosts were created → after settling):\n',
  );
  for (const r of withLeftovers) {
    const { before, after } = r.leftovers!;
    const kinds = [
      ...new Set([...Object.keys(before.resources), ...Object.keys(after.resources)]),
    ].sort();
    console.log(
      `  ${r.hosts} host(s): V8 heap ${before.heapMiB.toFixed(1)} → ${after.heapMiB.toFixed(1)} MiB, external ${before.externalMiB.toFixed(1)} → ${after.externalMiB.toFixed(1)} MiB, RSS ${before.rssMiB.toFixed(0)} → ${after.rssMiB.toFixed(0)} MiB`,
    );
    console.log(
      `    open handles: ${kinds.map((k) => `${k} ${before.resources[k] ?? 0} → ${after.resources[k] ?? 0}`).join(', ')}`,
    );
  }
}
