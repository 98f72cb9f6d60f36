/**
 * npm run bench:cluster — how long the launcher takes to a healthy cluster and how much memory
 * the idle cluster holds. Baseline in the same run: etcd alone, started and probed the same way.
 *
 *   npm run bench:cluster [-- --runs N --idle-seconds S]
 */

import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBinaries } from '../sim/cluster/binaries.ts';
import { ComponentProcess } from '../sim/cluster/component-process.ts';
import { freePorts } from '../sim/cluster/free-port.ts';
import { waitHealthy } from '../sim/cluster/health.ts';
import { startCluster } from '../sim/cluster/start-cluster.ts';
import { createLinuxNode } from '../sim/testkit/nodes.ts';
import { loadKubeConfig } from '../src/kube/client.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'idle-seconds': { type: 'string', default: '20' },
  },
});
const runs = Math.max(1, Number(values.runs));
const idleSeconds = Math.max(0, Number(values['idle-seconds']));
const binDir = ensureBinaries();

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function etcdAloneMs(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-bench-etcd-'));
  const [client, peer] = (await freePorts(2)) as [number, number];
  const started = Date.now();
  const etcd = new ComponentProcess({
    name: 'etcd',
    binary: join(binDir, 'etcd'),
    logFile: join(dir, 'etcd.log'),
    args: [
      `--data-dir=${join(dir, 'data')}`,
      `--listen-client-urls=http://127.0.0.1:${client}`,
      `--advertise-client-urls=http://127.0.0.1:${client}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=default=http://127.0.0.1:${peer}`,
      '--unsafe-no-fsync',
    ],
  });
  await waitHealthy(etcd, `http://127.0.0.1:${client}/health`, undefined, Date.now() + 30_000);
  const ms = Date.now() - started;
  await etcd.stop();
  await rm(dir, { recursive: true, force: true });
  return ms;
}

const clusterMs: number[] = [];
const etcdMs: number[] = [];
for (let i = 0; i < runs; i++) {
  etcdMs.push(await etcdAloneMs());
  const cluster = await startCluster({ binDir });
  clusterMs.push(cluster.startupMs);
  if (i < runs - 1) {
    await cluster.stop();
    continue;
  }
  // The last cluster stays up idle, with one kwok Linux node, for the memory reading.
  await createLinuxNode(loadKubeConfig(cluster.kubeconfigPath), { name: 'bench-linux-1' });
  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  console.log(`\nIdle cluster resident memory after ${idleSeconds}s (VmRSS):`);
  let total = 0;
  for (const c of cluster.components) {
    const mib = rssMiB(c.pid);
    total += mib;
    console.log(`  ${c.name.padEnd(24)} ${mib.toFixed(0).padStart(5)} MiB`);
  }
  console.log(`  ${'total'.padEnd(24)} ${total.toFixed(0).padStart(5)} MiB`);
  await cluster.stop();
}

const clusterMedian = median(clusterMs);
const etcdMedian = median(etcdMs);
console.log(`\nStart to healthy over ${runs} run(s), median:`);
console.log(`  whole cluster (5 components)  ${clusterMedian} ms   runs: ${clusterMs.join(', ')}`);
console.log(`  baseline: etcd alone          ${etcdMedian} ms   runs: ${etcdMs.join(', ')}`);
console.log(`  ratio cluster / etcd alone    ${(clusterMedian / etcdMedian).toFixed(1)}x`);
