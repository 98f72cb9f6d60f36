/**
 * npm run bench:join — the makespan of joining simulated Windows hosts over SSH (WindowsHosts
 * created → all Ready), and what the operator and the hosts use doing it:
 *
 *   npm run bench:join [-- --sizes 1,10,50 --concurrency 10
 *                         --modes concurrent,one-worker,one-at-a-time]
 *
 * joins 1, 10 and 50 hosts with the operator's default concurrency (10) against two baselines
 * measured in the same run: one host at a time as WMCO does it (the next host is configured
 * only once the previous one is a Ready node) and the operator with a single worker
 * (concurrency 1) but all hosts submitted at once; the stand-in payload (files of a few bytes)
 * pushed by the operator over SFTP. The concurrent makespan is also given against one host's
 * (when --sizes has 1).
 *
 *   npm run bench:join -- --payload-mib 358 [--sizes 10,50 --deliveries push,pull]
 *
 * push vs pull (issue 15): each size with the stand-in and with a payload of N MiB in all (see
 * payload-delivery.ts), pushed by the operator over SFTP (--payload-dir) and pulled by the
 * hosts from a docker-registry (--payload-image: the operator copies only the agent, its
 * service shim and the config). With --payload-mib the defaults are --sizes 10,50, --modes
 * concurrent and --deliveries push,pull; without it, --deliveries push. Every combination of
 * --sizes, payload, --deliveries and --modes is one run.
 *
 *   npm run bench:join -- --sizes 1,200 --modes concurrent --settle-seconds 60 --leftovers
 *
 * For each run: the makespan, the operator's peak RSS (VmHWM; issue 17: within 10 % of the
 * stand-in's with a real-size payload), its RSS once every host is Ready and, with
 * --settle-seconds N, again after N s more with nothing to do; the simulated-hosts process's
 * RSS and peak (hosts share one process: memory per host is its growth / N); what the operator
 * sent to hosts over SFTP (its own winfleet_host_bytes_sent_total) and wrote in all (/proc/<pid>/io
 * wchar). With --leftovers (concurrent runs), what the joins leave in the operator: it runs with
 * its inspector on loopback, and before the hosts are created and after the settling, a full
 * collection, then its V8 heap, external memory, RSS, open handles by kind and armed timers (see
 * process-leftovers.ts; the inspector costs some memory of its own, the same before and after).
 *
 * The operator runs as the image ships it (the bundle, IMAGE_NODE_FLAGS, IMAGE_ENV);
 * --from-source runs `node src/operator/main.ts` (the figures before issue 17's second pass).
 * --node-flags="FLAGS" replaces IMAGE_NODE_FLAGS ("" for none), for a same-machine comparison
 * of Node flags back to back.
 *   npm run bench:join -- --sizes 50 --modes concurrent --networks routed,flannel-vxlan
 *
 * Pod networks (issue 31): each run joins with network.mode routed (the default) or
 * flannel-vxlan (Flannel's objects installed in the cluster first: the hosts then run flanneld,
 * flannel's CNI and kube-proxy with a source VIP); flannel-vxlan's makespan is given against
 * routed's of the same run.
 * Each run gets a fresh control plane; the operator and the hosts run in their own processes.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { IMAGE_NODE_FLAGS } from '../scripts/build-image.ts';
import { freePort } from '../sim/cluster/free-port.ts';
import { startCluster } from '../sim/cluster/start-cluster.ts';
import type { SimulatedHostDescription } from '../sim/hosts/fleet.ts';
import { generateTestKey } from '../sim/hosts/ssh-test-client.ts';
import type { TestRegistry } from '../sim/registry/registry-process.ts';
import { installFlannelObjects } from '../sim/testkit/cluster-cni.ts';
import { parseMetricsText, sumOf } from '../sim/testkit/metrics-text.ts';
import {
  buildOperatorBundle,
  spawnOperator,
  stopProcess,
} from '../sim/testkit/operator-process.ts';
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
import { connectInspector } from './inspector-client.ts';
import {
  type BenchPayload,
  type Delivery,
  deliveryKinds,
  deliveryOptions,
  preparePayload,
  publishPayloads,
} from './payload-delivery.ts';
import { type CpuWindow, cpuWindow, formatCpu } from './process-cpu.ts';
import { describeLeftovers, type Leftovers, leftoversNow } from './process-leftovers.ts';
import { simHostsCli, startSimHostsProcess } from './sim-hosts-process.ts';

const allModes = ['concurrent', 'one-worker', 'one-at-a-time'] as const;
type Mode = (typeof allModes)[number];

const { values } = parseArgs({
  options: {
    sizes: { type: 'string' },
    concurrency: { type: 'string', default: '10' },
    'node-flags': { type: 'string' },
    modes: { type: 'string' },
    networks: { type: 'string', default: 'routed' },
    'payload-mib': { type: 'string' },
    deliveries: { type: 'string' },
    'settle-seconds': { type: 'string', default: '0' },
    leftovers: { type: 'boolean', default: false },
    'from-source': { type: 'boolean', default: false },
  },
});
function usage(message: string): never {
  console.error(message);
  process.exit(2);
}
/** A comma-separated option's items, each one of `allowed`. */
function oneOf<T extends string>(option: string, text: string, allowed: readonly T[]): T[] {
  return text.split(',').map((item) => {
    const found = allowed.find((a) => a === item);
    return found ?? usage(`--${option} takes ${allowed.join(', ')}, not "${item}"`);
  });
}
const payloadMiB = values['payload-mib'] === undefined ? undefined : Number(values['payload-mib']);
if (payloadMiB !== undefined && !(payloadMiB > 0))
  usage('--payload-mib: give the payload size in MiB, e.g. 358');
const sized = payloadMiB !== undefined;
const sizes = (values.sizes ?? (sized ? '10,50' : '1,10,50')).split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) usage('--sizes: host counts, e.g. 1,10,50');
const concurrency = Number(values.concurrency);
const modes = oneOf('modes', values.modes ?? (sized ? 'concurrent' : allModes.join(',')), allModes);
const networks = oneOf('networks', values.networks!, ['routed', 'flannel-vxlan'] as const);
type Network = (typeof networks)[number];
const deliveries = oneOf('deliveries', values.deliveries ?? (sized ? 'push,pull' : 'push'), [
  ...deliveryKinds,
]);
const settleSeconds = Number(values['settle-seconds']);
if (!(settleSeconds >= 0)) usage('--settle-seconds: seconds to wait after the joins, e.g. 60');
const shipped = !values['from-source'];
/** --node-flags: the operator's Node flags instead of IMAGE_NODE_FLAGS. */
const nodeFlags =
  values['node-flags'] === undefined
    ? undefined
    : values['node-flags'].split(/\s+/).filter(Boolean);
const namespace = 'winfleet-system';
const mib = 1024 * 1024;

/** A /proc/<pid>/status memory field (VmRSS now, VmHWM the peak), in MiB. */
function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** Bytes the process has written to files and sockets (/proc/<pid>/io wchar), in MiB. */
function writtenMiB(pid: number): number {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/wchar:\s+(\d+)/.exec(io)?.[1] ?? Number.NaN) / mib;
}

interface Run {
  hosts: number;
  payload: string;
  delivery: Delivery;
  mode: Mode;
  network: Network;
  makespanS: number;
  /** The operator's RSS once every host is Ready, and its peak over the run (VmHWM). */
  operatorMiB: number;
  operatorPeakMiB: number;
  /** The operator's RSS after settleSeconds more with every host Ready. */
  settledMiB?: number;
  /** What the operator wrote to hosts over SFTP (its winfleet_host_bytes_sent_total). */
  sftpMiB: number;
  /** Everything it wrote to sockets and files (/proc wchar): SFTP, API, logs, its cache. */
  operatorWrittenMiB: number;
  hostsMiB: number;
  hostsPeakMiB: number;
  /** Bytes of the agent and shim, per host. */
  ownMiB: number;
  leftovers?: { before: Leftovers; after: Leftovers };
  /** Seconds from the creates until every host's Node was Ready in the API server. */
  nodesReadyS?: number;
  /** CPU each process used from the creates until every host was Ready. */
  cpu: CpuWindow;
}

async function operatorMetric(statusPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${statusPort}/metrics`)).text();
  return sumOf(parseMetricsText(text), name);
}

async function joinRun(
  count: number,
  payload: BenchPayload,
  delivery: Delivery,
  mode: Mode,
  network: Network,
  base: number,
): Promise<Run> {
  const workers = mode === 'one-worker' ? 1 : concurrency;
  const cluster = await startCluster();
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-bench-join-'));
  const key = generateTestKey();
  await writeFile(join(dir, 'key.pub'), key.publicKey);
  await installCrds(kc);
  if (network === 'flannel-vxlan') await installFlannelObjects(kc);
  await writeOperatorConfig(kc, namespace, {
    hosts: { concurrency: workers },
    network: { mode: network },
  });
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
  const probe = values.leftovers && mode === 'concurrent';
  const statusPort = await freePort();
  const inspectorPort = probe ? await freePort() : 0;
  const operator = spawnOperator({
    kubeconfig: cluster.kubeconfigPath,
    namespace,
    statusPort,
    shipped,
    ...deliveryOptions(delivery, payload, join(dir, 'payload-cache')),
    ...(probe
      ? {
          nodeFlags: [
            ...(nodeFlags ?? (shipped ? IMAGE_NODE_FLAGS : [])),
            `--inspect=127.0.0.1:${inspectorPort}`,
          ],
        }
      : nodeFlags
        ? { nodeFlags }
        : {}),
  });
  const inspector = probe ? await connectInspector(inspectorPort) : undefined;
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  await waitFor(
    async () =>
      (await kc
        .makeApiClient(k8s.CoreV1Api)
        .readNamespacedConfigMap({ name: 'winfleet-config', namespace })) && true,
    { description: 'config' },
  );
  // The operator settled before the hosts come: its informers listed, its first passes done.
  if (inspector) await sleep(10_000);
  const before = inspector ? await leftoversNow(inspector) : undefined;
  const create = (h: SimulatedHostDescription) => objects.create(windowsHostFor(h, namespace));
  const cpu = cpuWindow(
    new Map<string, number>([
      ['operator', operator.pid!],
      ['simulated hosts', sims.pid!],
      ...cluster.components.map((c) => [c.name, c.pid!] as [string, number]),
    ]),
  );
  const started = performance.now();
  let nodesReadyS: number | undefined;
  const core = kc.makeApiClient(k8s.CoreV1Api);
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
      // When the hosts' Nodes were all Ready in the API server: the rest of the makespan is
      // the operator seeing it and writing the WindowsHosts' status.
      if (nodesReadyS === undefined) {
        const nodes = (await core.listNode()).items.filter(
          (n) => n.metadata?.labels?.['kubernetes.io/os'] === 'windows',
        );
        const ready = nodes.filter((n) =>
          n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        if (ready.length >= count) nodesReadyS = (performance.now() - started) / 1000;
      }
      const list = await listWindowsHosts(kc, namespace);
      return list.length === count && list.every(hostReady);
    },
    { description: `${count} hosts Ready`, timeoutMs: 60 * 60_000, intervalMs: 250 },
  );
  const cpuUsed = cpu.stop();
  const run: Run = {
    hosts: count,
    payload: payload.name,
    delivery,
    mode,
    network,
    makespanS: (performance.now() - started) / 1000,
    operatorMiB: statusMiB(operator.pid!),
    operatorPeakMiB: statusMiB(operator.pid!, 'VmHWM'),
    sftpMiB: (await operatorMetric(statusPort, hostBytesSentMetric)) / mib,
    operatorWrittenMiB: writtenMiB(operator.pid!),
    hostsMiB: statusMiB(sims.pid!),
    hostsPeakMiB: statusMiB(sims.pid!, 'VmHWM'),
    ownMiB: payload.ownBytes / mib,
    ...(nodesReadyS !== undefined ? { nodesReadyS } : {}),
    cpu: cpuUsed,
  };
  if (settleSeconds > 0) {
    await sleep(settleSeconds * 1000);
    run.settledMiB = statusMiB(operator.pid!);
  }
  if (inspector && before) {
    run.leftovers = { before, after: await leftoversNow(inspector) };
    inspector.close();
  }
  await stopProcess(operator);
  // The hosts' drives hold the payload twice per host: removing them takes a while.
  await stopProcess(sims, 10 * 60_000);
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
  return run;
}

if (shipped) await buildOperatorBundle();
const scratch = await mkdtemp(join(tmpdir(), 'winfleet-bench-payloads-'));
let registry: TestRegistry | undefined;
const runs: Run[] = [];
const payloads: BenchPayload[] = [];
try {
  payloads.push(await preparePayload(scratch));
  if (payloadMiB !== undefined) payloads.push(await preparePayload(scratch, payloadMiB));
  if (deliveries.includes('pull'))
    registry = await publishPayloads(payloads, join(scratch, 'registry'));
  let base = 30;
  for (const size of sizes) {
    for (const payload of payloads) {
      for (const delivery of deliveries) {
        for (const mode of modes) {
          for (const network of networks) {
            const run = await joinRun(size, payload, delivery, mode, network, base++);
            runs.push(run);
            console.error(
              `[bench] ${size} host(s), ${payload.name}, ${delivery}, ${mode}, ${network}: ${run.makespanS.toFixed(1)} s, SFTP ${run.sftpMiB.toFixed(1)} MiB, operator peak ${run.operatorPeakMiB.toFixed(0)} MiB`,
            );
          }
        }
      }
    }
  }
} finally {
  await registry?.stop();
  await rm(scratch, { recursive: true, force: true });
}

// ---- What the runs measured ----------------------------------------------------------------

type Key = Partial<Pick<Run, 'hosts' | 'payload' | 'delivery' | 'mode' | 'network'>>;
const find = (key: Key) =>
  runs.find((r) => Object.entries(key).every(([k, v]) => r[k as keyof Key] === v));
const keyOf = ({ hosts, payload, delivery, mode, network }: Run): Key => ({
  hosts,
  payload,
  delivery,
  mode,
  network,
});
const textColumns = new Set(['payload', 'delivery', 'mode', 'network']);
const fixed = (n: number | undefined, digits: number, unit = 'MiB') =>
  n === undefined || Number.isNaN(n) ? '–' : `${n.toFixed(digits)} ${unit}`;
const ratio = (a: Run | undefined, b: Run | undefined) =>
  a && b ? `${(a.makespanS / b.makespanS).toFixed(1)}×` : '–';

/** A table: each column as wide as its widest cell, text columns to the left. */
function printTable(title: string, columns: string[], rows: string[][]): void {
  console.log(`\n${title}\n`);
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [columns, ...rows]) {
    const cells = row.map((cell, i) =>
      textColumns.has(columns[i]!) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!),
    );
    console.log(`  ${cells.join('   ')}`);
  }
}
const labels = (r: Run) => [String(r.hosts), r.payload, r.delivery, r.mode, r.network];
const labelColumns = ['hosts', 'payload', 'delivery', 'mode', 'network'];

const modeColumn: Record<Mode, string> = {
  concurrent: `concurrency ${concurrency}`,
  'one-worker': '1 worker, all at once',
  'one-at-a-time': 'one at a time (WMCO)',
};
const wmco = modes.includes('concurrent') && modes.includes('one-at-a-time');
const vsOneHost = modes.includes('concurrent') && sizes.includes(1);
const groups = sizes.flatMap((hosts) =>
  payloads.flatMap(({ name: payload }) =>
    deliveries.flatMap((delivery) =>
      networks.map((network) => ({ hosts, payload, delivery, network })),
    ),
  ),
);
printTable(
  `Join makespan (WindowsHosts created → all Ready), loopback SSH, the operator ${shipped ? 'as shipped' : 'from source'}${nodeFlags ? ` with node flags ${nodeFlags.join(' ') || '(none)'}` : ''}; push: the operator sends the payload over SFTP, pull: the hosts pull it from a docker-registry:`,
  [
    'hosts',
    'payload',
    'delivery',
    'network',
    ...modes.map((m) => modeColumn[m]),
    ...(wmco ? ['speed-up vs WMCO'] : []),
    ...(vsOneHost ? ["vs one host's time"] : []),
  ],
  groups.map((g) => {
    const fast = find({ ...g, mode: 'concurrent' });
    return [
      String(g.hosts),
      g.payload,
      g.delivery,
      g.network,
      ...modes.map((mode) => fixed(find({ ...g, mode })?.makespanS, 1, 's')),
      ...(wmco ? [ratio(find({ ...g, mode: 'one-at-a-time' }), fast)] : []),
      ...(vsOneHost ? [ratio(fast, find({ ...g, hosts: 1, mode: 'concurrent' }))] : []),
    ];
  }),
);

const smallest = Math.min(...sizes);
printTable(
  'Resident memory of the operator and of the simulated-hosts process: peak over the run (VmHWM), once every host is Ready (VmRSS)' +
    `${settleSeconds > 0 ? `, the operator's after ${settleSeconds} s more` : ''}; per host: the hosts process's growth over the ${smallest}-host run:`,
  [
    ...labelColumns,
    'operator peak',
    'operator all Ready',
    ...(settleSeconds > 0 ? [`after ${settleSeconds} s more`] : []),
    'hosts peak',
    'hosts all Ready',
    'per host',
  ],
  runs.map((r) => {
    const one = find({ ...keyOf(r), hosts: smallest });
    const perHost =
      one && r.hosts > one.hosts ? (r.hostsMiB - one.hostsMiB) / (r.hosts - one.hosts) : undefined;
    return [
      ...labels(r),
      fixed(r.operatorPeakMiB, 0),
      fixed(r.operatorMiB, 0),
      ...(settleSeconds > 0 ? [fixed(r.settledMiB, 0)] : []),
      fixed(r.hostsPeakMiB, 0),
      fixed(r.hostsMiB, 0),
      fixed(perHost, 1),
    ];
  }),
);

printTable(
  'What the operator wrote: to hosts over SFTP (winfleet_host_bytes_sent_total), per host and of it the agent and its shim (pull), and in all to sockets and files (/proc/<pid>/io wchar: SFTP, API, logs, its cache):',
  [...labelColumns, 'SFTP sent', 'per host', 'agent+shim per host', 'written in all'],
  runs.map((r) => [
    ...labels(r),
    fixed(r.sftpMiB, 1),
    fixed(r.sftpMiB / r.hosts, 2),
    r.delivery === 'pull' ? fixed(r.ownMiB, 2) : '–',
    fixed(r.operatorWrittenMiB, 1),
  ]),
);

const comparisons: string[] = [];
for (const r of runs) {
  const at = `${String(r.hosts).padStart(3)} hosts, ${r.mode}`;
  const standIn = r.payload === 'stand-in' ? undefined : find({ ...keyOf(r), payload: 'stand-in' });
  if (standIn) {
    const change = (r.operatorPeakMiB / standIn.operatorPeakMiB - 1) * 100;
    comparisons.push(
      `${at}, ${r.delivery}: operator peak RSS ${r.operatorPeakMiB.toFixed(0)} MiB (${r.payload}) vs ${standIn.operatorPeakMiB.toFixed(0)} MiB (stand-in): ${change >= 0 ? '+' : ''}${change.toFixed(1)} % (issue 17: within 10 %)`,
    );
  }
  const routed = r.network !== 'routed' ? find({ ...keyOf(r), network: 'routed' }) : undefined;
  if (routed) {
    const change = (r.makespanS / routed.makespanS - 1) * 100;
    comparisons.push(
      `${at}, ${r.payload}, ${r.delivery}: ${r.network}'s makespan ${r.makespanS.toFixed(1)} s vs routed's ${routed.makespanS.toFixed(1)} s: ${change >= 0 ? '+' : ''}${change.toFixed(1)} % (issue 31: within 10 %)`,
    );
  }
  const push = r.delivery === 'pull' ? find({ ...keyOf(r), delivery: 'push' }) : undefined;
  if (push)
    comparisons.push(
      `${at}, ${r.payload}: pull's makespan ${(r.makespanS / push.makespanS).toFixed(2)}× push's, SFTP bytes ${(r.sftpMiB / push.sftpMiB).toFixed(3)}× push's`,
    );
}
if (comparisons.length > 0) {
  console.log('\nAgainst the baselines of this run (the stand-in payload; push; routed):\n');
  for (const line of comparisons) console.log(`  ${line}`);
}

console.log(
  "\nWhere the time went, per run: when every host's Node was Ready in the API server (the rest is the operator seeing it and writing the WindowsHosts), and the CPU each process used during the join, as a share of one core:\n",
);
for (const r of runs) {
  const nodes =
    r.nodesReadyS === undefined
      ? 'Nodes Ready: –'
      : `Nodes Ready at ${r.nodesReadyS.toFixed(1)} s of ${r.makespanS.toFixed(1)} s`;
  console.log(`  ${labels(r).join(', ')}: ${nodes}`);
  console.log(`    CPU: ${formatCpu(r.cpu)}`);
}

const probed = runs.filter((r) => r.leftovers);
if (probed.length > 0) {
  console.log(
    '\nWhat the joins left in the operator (after a full collection; before the hosts were created → after settling):\n',
  );
  for (const r of probed) {
    const [memory, handles] = describeLeftovers(r.leftovers!.before, r.leftovers!.after);
    console.log(`  ${r.hosts} host(s), ${r.payload}, ${r.delivery}: ${memory}`);
    console.log(`    ${handles}`);
  }
}
