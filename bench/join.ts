/**
 * npm run bench:join — the makespan of joining 1, 10 and 50 simulated Windows hosts with the
 * operator's default concurrency (10), against joining them one at a time as WMCO does (the
 * next host is configured only once the previous one is a Ready node), measured in the same
 * run; also the operator with a single worker (concurrency 1) but all hosts submitted at once.
 * Plus the resident memory of the operator process and of the simulated-host process.
 *
 *   npm run bench:join [-- --sizes 1,10,50 --concurrency 10 --payload-mib 358]
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
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { startCluster } from '../sim/cluster/start-cluster.ts';
import type { SimulatedHostDescription } from '../sim/hosts/fleet.ts';
import { generateTestKey } from '../sim/hosts/ssh-test-client.ts';
import { spawnOperator, stopProcess } from '../sim/testkit/operator-process.ts';
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
import { simHostsCli, startSimHostsProcess } from './sim-hosts-process.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1,10,50' },
    concurrency: { type: 'string', default: '10' },
    'payload-mib': { type: 'string' },
  },
});
const payloadMiB = values['payload-mib'] === undefined ? undefined : Number(values['payload-mib']);
const sizes = values.sizes.split(',').map(Number);
const concurrency = Number(values.concurrency);
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
  const operator = spawnOperator({ kubeconfig: cluster.kubeconfigPath, namespace, payloadDir });
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
  await stopProcess(operator);
  await stopProcess(sims);
  await cluster.stop();
  return run;
}

const runs: Run[] = [];
let base = 30;
for (const size of sizes) {
  for (const mode of ['concurrent', 'one-worker', 'one-at-a-time'] as const) {
    const run = await joinRun(size, mode, base++);
    runs.push(run);
    console.error(`[bench] ${size} host(s), ${mode}: ${run.makespanS.toFixed(1)} s`);
  }
}

const payloadName =
  payloadMiB === undefined ? 'stand-in payload' : `stand-in payload padded to ${payloadMiB} MiB`;
console.log(`\nJoin makespan (WindowsHosts created → all Ready), ${payloadName}, loopback SSH:\n`);
console.log(
  `  hosts   concurrency ${concurrency}   1 worker, all at once   one at a time (WMCO)   speed-up vs WMCO`,
);
for (const size of sizes) {
  const at = (mode: Mode) => runs.find((r) => r.hosts === size && r.mode === mode)!;
  const fast = at('concurrent');
  const worker = at('one-worker');
  const slow = at('one-at-a-time');
  console.log(
    `  ${String(size).padStart(5)}   ${fast.makespanS.toFixed(1).padStart(12)} s   ${worker.makespanS.toFixed(1).padStart(19)} s   ${slow.makespanS.toFixed(1).padStart(18)} s   ${(slow.makespanS / fast.makespanS).toFixed(1).padStart(15)}x`,
  );
}
console.log('\nResident memory once every host is Ready (VmRSS):\n');
console.log(
  '  hosts  mode            operator   simulated-hosts process   per host (growth over the smallest run)',
);
for (const r of runs) {
  const one = runs.find((x) => x.hosts === Math.min(...sizes) && x.mode === r.mode)!;
  const perHost =
    r.hosts > one.hosts ? (r.hostsMiB - one.hostsMiB) / (r.hosts - one.hosts) : Number.NaN;
  console.log(
    `  ${String(r.hosts).padStart(5)}  ${r.mode.padEnd(14)}  ${r.operatorMiB.toFixed(0).padStart(5)} MiB   ${r.hostsMiB.toFixed(0).padStart(17)} MiB   ${Number.isNaN(perHost) ? '      –' : `${perHost.toFixed(1).padStart(5)} MiB`}`,
  );
}
console.log(
  '\nThe operator over each run: peak RSS (VmHWM) and bytes written (/proc/<pid>/io wchar):\n',
);
console.log('  hosts  mode            peak RSS      written');
for (const r of runs) {
  console.log(
    `  ${String(r.hosts).padStart(5)}  ${r.mode.padEnd(14)}  ${r.operatorPeakMiB.toFixed(0).padStart(5)} MiB   ${r.operatorSentMiB.toFixed(1).padStart(7)} MiB`,
  );
}
