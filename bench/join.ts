/**
 * npm run bench:join — joining simulated Windows hosts over SSH, two ways:
 *
 *   npm run bench:join [-- --sizes 1,10,50 --concurrency 10]
 *
 * the makespan of joining 1, 10 and 50 hosts with the operator's default concurrency (10),
 * against joining them one at a time as WMCO does (the next host is configured only once the
 * previous one is a Ready node), measured in the same run; also the operator with a single
 * worker (concurrency 1) but all hosts submitted at once. Stand-in payload files, pushed by the
 * operator over SFTP.
 *
 *   npm run bench:join -- --payload-mib 358 [--sizes 10,50 --deliveries push,pull]
 *
 * push vs pull (issue 15): the operator pushing the payload over SFTP (--payload-dir), against
 * the hosts pulling it from a registry (--payload-image: the operator copies only the agent,
 * its service shim and the config; a real docker-registry holds the artifact, pushed with
 * winfleet payload push's code), each with stand-in files of a few bytes and with synthetic
 * files of N MiB in all (split between its files as a real payload is: kubelet 33 %, the agent
 * 15 %, …; sparse on the operator's disk), all hosts at once at the default concurrency. For
 * each run: the makespan, what the operator wrote to hosts over SFTP (its own
 * winfleet_host_bytes_sent_total) and everything it wrote (/proc/<pid>/io wchar), and its peak
 * RSS (VmHWM) — the figure issue 17 asks to stay within 10 % of the stand-in's.
 *
 * Each run gets a fresh control plane. The operator and the hosts run in their own processes,
 * as they would for real (hosts here share one process: memory per host is its growth / N).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../sim/cluster/free-port.ts';
import { startCluster } from '../sim/cluster/start-cluster.ts';
import type { SimulatedHostDescription } from '../sim/hosts/fleet.ts';
import { generateTestKey } from '../sim/hosts/ssh-test-client.ts';
import { startTestRegistry, type TestRegistry } from '../sim/registry/registry-process.ts';
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
import { hostBytesSentMetric } from '../src/hostaccess/bytes-sent.ts';
import { loadKubeConfig } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { pushPayload } from '../src/payload/oci/push-payload.ts';
import { parseMetricsText, sumOf } from './metrics-text.ts';
import { simHostsCli, startSimHostsProcess } from './sim-hosts-process.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string' },
    concurrency: { type: 'string', default: '10' },
    'payload-mib': { type: 'string' },
    deliveries: { type: 'string', default: 'push,pull' },
  },
});
const payloadMiB = values['payload-mib'] === undefined ? undefined : Number(values['payload-mib']);
if (payloadMiB !== undefined && !(payloadMiB > 0)) {
  console.error('--payload-mib: give the payload size in MiB, e.g. 358');
  process.exit(2);
}
const sizes = (values.sizes ?? (payloadMiB === undefined ? '1,10,50' : '10,50'))
  .split(',')
  .map(Number);
const concurrency = Number(values.concurrency);
const deliveries = values.deliveries.split(',') as Delivery[];
if (deliveries.some((d) => d !== 'push' && d !== 'pull')) {
  console.error('--deliveries: push, pull or both (push,pull)');
  process.exit(2);
}
const namespace = 'winfleet-system';
const mib = 1024 * 1024;

/** A /proc/<pid>/status memory field (VmRSS now, VmHWM the peak), in MiB. */
function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) / 1024;
}
const rssMiB = (pid: number) => statusMiB(pid);

/** Bytes the process has written to files and sockets (/proc/<pid>/io wchar), in MiB. */
function writtenMiB(pid: number): number {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/wchar:\s+(\d+)/.exec(io)?.[1] ?? Number.NaN) / mib;
}

type Mode = 'concurrent' | 'one-worker' | 'one-at-a-time';
type Delivery = 'push' | 'pull';

/** A payload the bench joins hosts with: on disk, and (for pull runs) in the registry. */
interface BenchPayload {
  name: string;
  dir: string;
  /** The pinned reference `winfleet payload push` printed. */
  reference?: string;
  /** Bytes of the agent and its service shim: what a pulling host is sent besides config. */
  ownBytes: number;
}

interface Run {
  hosts: number;
  mode: Mode;
  delivery: Delivery;
  payload: string;
  makespanS: number;
  operatorMiB: number;
  /** The operator's peak RSS over the run (VmHWM). */
  operatorPeakMiB: number;
  /** What the operator wrote to hosts over SFTP (its winfleet_host_bytes_sent_total). */
  sftpMiB: number;
  /** Everything it wrote to sockets and files (/proc wchar): SFTP, API, logs, its cache. */
  operatorWrittenMiB: number;
  hostsMiB: number;
  hostsPeakMiB: number;
  /** Bytes of the agent and shim, per host. */
  ownMiB: number;
}

async function prepare(dir: string, name: string, totalMiB?: number): Promise<BenchPayload> {
  const payloadDir = join(dir, name);
  const sizes = totalMiB === undefined ? undefined : realPayloadSizes(totalMiB * mib);
  const payload = await writeStandInPayload(payloadDir, sizes ? { sizes } : {});
  const own = ['winfleet-agent.exe', 'winfleet-service.exe'];
  const ownBytes = payload.files
    .filter((f) => own.includes(f.name))
    .reduce(
      (sum, f) =>
        sum +
        (sizes?.[f.name] ??
          `winfleet-standin ${f.name.replace(/\.exe$/, '')} ${f.version}\n`.length),
      0,
    );
  return {
    name: totalMiB === undefined ? 'stand-in' : `${totalMiB} MiB`,
    dir: payloadDir,
    ownBytes,
  };
}

async function operatorMetric(statusPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${statusPort}/metrics`)).text();
  return sumOf(parseMetricsText(text), name);
}

async function joinRun(
  count: number,
  mode: Mode,
  delivery: Delivery,
  payload: BenchPayload,
  base: number,
): Promise<Run> {
  const workers = mode === 'one-worker' ? 1 : concurrency;
  const cluster = await startCluster();
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-bench-join-'));
  const key = generateTestKey();
  await writeFile(join(dir, 'key.pub'), key.publicKey);
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
  const statusPort = await freePort();
  const operator = spawnOperator({
    kubeconfig: cluster.kubeconfigPath,
    namespace,
    statusPort,
    ...(delivery === 'push'
      ? { payloadDir: payload.dir }
      : {
          args: [
            '--payload-image',
            payload.reference!,
            '--payload-plain-http',
            '--payload-cache-dir',
            join(dir, 'payload-cache'),
          ],
        }),
  });
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
    { description: `${count} hosts Ready`, timeoutMs: 60 * 60_000, intervalMs: 250 },
  );
  const makespanS = (performance.now() - started) / 1000;
  const run: Run = {
    hosts: count,
    mode,
    delivery,
    payload: payload.name,
    makespanS,
    operatorMiB: rssMiB(operator.pid!),
    operatorPeakMiB: statusMiB(operator.pid!, 'VmHWM'),
    sftpMiB: (await operatorMetric(statusPort, hostBytesSentMetric)) / mib,
    operatorWrittenMiB: writtenMiB(operator.pid!),
    hostsMiB: rssMiB(sims.pid!),
    hostsPeakMiB: statusMiB(sims.pid!, 'VmHWM'),
    ownMiB: payload.ownBytes / mib,
  };
  await stopProcess(operator);
  // The hosts' drives hold the payload twice per host: removing them takes a while.
  await stopProcess(sims, 10 * 60_000);
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
  return run;
}

const scratch = await mkdtemp(join(tmpdir(), 'winfleet-bench-payloads-'));
let registry: TestRegistry | undefined;
try {
  const runs: Run[] = [];
  let base = 30;
  if (payloadMiB === undefined) {
    const standIn = await prepare(scratch, 'stand-in');
    for (const size of sizes) {
      for (const mode of ['concurrent', 'one-worker', 'one-at-a-time'] as const) {
        const run = await joinRun(size, mode, 'push', standIn, base++);
        runs.push(run);
        console.error(`[bench] ${size} host(s), ${mode}: ${run.makespanS.toFixed(1)} s`);
      }
    }
    printModes(runs);
  } else {
    const payloads = [
      await prepare(scratch, 'stand-in'),
      await prepare(scratch, 'sized', payloadMiB),
    ];
    if (deliveries.includes('pull')) {
      registry = await startTestRegistry({ storageDir: join(scratch, 'registry') });
      for (const p of payloads) {
        const pushed = await pushPayload(
          p.dir,
          {
            registry: registry.host,
            repository: `bench/${p.dir.split('/').at(-1)}`,
            tag: 'v1',
          },
          { plainHttp: true },
        );
        p.reference = pushed.reference;
        console.error(`[bench] pushed the ${p.name} payload: ${p.reference}`);
      }
    }
    for (const size of sizes) {
      for (const payload of payloads) {
        for (const delivery of deliveries) {
          const run = await joinRun(size, 'concurrent', delivery, payload, base++);
          runs.push(run);
          console.error(
            `[bench] ${size} host(s), ${payload.name}, ${delivery}: ${run.makespanS.toFixed(1)} s, SFTP ${run.sftpMiB.toFixed(1)} MiB, operator peak ${run.operatorPeakMiB.toFixed(0)} MiB`,
          );
        }
      }
    }
    printDeliveries(runs);
  }
} finally {
  await registry?.stop();
  await rm(scratch, { recursive: true, force: true });
}

function printModes(runs: Run[]): void {
  console.log(
    '\nJoin makespan (WindowsHosts created → all Ready), stand-in payload, loopback SSH:\n',
  );
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
    '\nThe operator over each run: peak RSS (VmHWM), sent over SFTP and written in all (/proc/<pid>/io wchar):\n',
  );
  console.log('  hosts  mode            peak RSS      SFTP     written');
  for (const r of runs) {
    console.log(
      `  ${String(r.hosts).padStart(5)}  ${r.mode.padEnd(14)}  ${r.operatorPeakMiB.toFixed(0).padStart(5)} MiB   ${r.sftpMiB.toFixed(1).padStart(7)} MiB   ${r.operatorWrittenMiB.toFixed(1).padStart(7)} MiB`,
    );
  }
}

function printDeliveries(runs: Run[]): void {
  console.log(
    `\nJoin of N hosts (all at once, concurrency ${concurrency}): push (the operator sends the payload over SFTP) vs pull (the hosts pull it from a docker-registry; the operator sends the agent, its shim and the config):\n`,
  );
  console.log(
    '  hosts  payload    delivery  makespan   SFTP sent   per host   of it agent+shim   operator wrote   operator peak RSS   hosts process peak',
  );
  for (const r of runs) {
    console.log(
      `  ${String(r.hosts).padStart(5)}  ${r.payload.padEnd(9)}  ${r.delivery.padEnd(8)}  ${r.makespanS.toFixed(1).padStart(6)} s  ${r.sftpMiB.toFixed(1).padStart(7)} MiB  ${(r.sftpMiB / r.hosts).toFixed(2).padStart(6)} MiB  ${(r.delivery === 'pull' ? `${r.ownMiB.toFixed(2)} MiB` : '–').padStart(16)}  ${r.operatorWrittenMiB.toFixed(1).padStart(10)} MiB  ${r.operatorPeakMiB.toFixed(0).padStart(13)} MiB  ${r.hostsPeakMiB.toFixed(0).padStart(14)} MiB`,
    );
  }
  console.log(
    '\nOperator peak RSS with the sized payload against the stand-in (issue 17: within 10 %), and pull against push:\n',
  );
  for (const size of sizes) {
    for (const delivery of deliveries) {
      const small = runs.find(
        (r) => r.hosts === size && r.delivery === delivery && r.payload === 'stand-in',
      );
      const big = runs.find(
        (r) => r.hosts === size && r.delivery === delivery && r.payload !== 'stand-in',
      );
      if (!small || !big) continue;
      const change = (big.operatorPeakMiB / small.operatorPeakMiB - 1) * 100;
      console.log(
        `  ${String(size).padStart(3)} hosts, ${delivery}: ${big.operatorPeakMiB.toFixed(0)} MiB (${big.payload}) vs ${small.operatorPeakMiB.toFixed(0)} MiB (stand-in): ${change >= 0 ? '+' : ''}${change.toFixed(1)} %`,
      );
    }
    const push = runs.find(
      (r) => r.hosts === size && r.delivery === 'push' && r.payload !== 'stand-in',
    );
    const pull = runs.find(
      (r) => r.hosts === size && r.delivery === 'pull' && r.payload !== 'stand-in',
    );
    if (push && pull)
      console.log(
        `  ${String(size).padStart(3)} hosts, ${pull.payload}: pull's makespan ${(pull.makespanS / push.makespanS).toFixed(2)}× push's, SFTP bytes ${(pull.sftpMiB / push.sftpMiB).toFixed(3)}× push's`,
      );
  }
}
