/**
 * npm run bench:idle-memory — what an idle operator with one joined Windows host keeps in
 * memory, run from source (`node src/operator/main.ts`, TypeScript stripped at load) and as the
 * image ships it (the esbuild bundle, pure ASCII, with the image's Node flags and environment),
 * plus the steps in between, measured in the same run against the same cluster and host:
 *
 *   source          node src/operator/main.ts
 *   bundle-utf8     the bundle as esbuild writes it by default (a few characters above 0xFF)
 *   bundle          the shipped bundle (charset ascii), no flags
 *   bundle+flags    … with IMAGE_NODE_FLAGS
 *   shipped         … with IMAGE_NODE_FLAGS and IMAGE_ENV: what the image runs
 *   shipped+try     … plus the Node flags given with --try-flags (only when asked for)
 *
 *   npm run bench:idle-memory -- --load-only   (no cluster: each variant loaded, before it runs)
 *   npm run bench:idle-memory [-- --idle-seconds 60 --variants source,shipped --heap-snapshot DIR
 *     --try-flags=--optimize-for-size]
 *
 * One control plane and one simulated host for the whole run; a first operator (from source,
 * not measured) joins the host. Then each variant starts, finds the host Ready, and is left
 * alone for the idle window; then bench/memory-probe.cjs (loaded with --require in every
 * variant) writes what the memory is made of: RSS (anonymous and file-backed), the V8 heap by
 * space, code and bytecode, external memory, and the modules loaded. The machine is shared:
 * the load average is printed with the figures.
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { IMAGE_ENV, IMAGE_NODE_FLAGS, OPERATOR_ENTRY } from '../scripts/build-image.ts';
import { bundleNodeProgram } from '../scripts/node-build.ts';
import { startCluster } from '../sim/cluster/start-cluster.ts';
import { startSimulatedHosts } from '../sim/hosts/fleet.ts';
import { generateTestKey } from '../sim/hosts/ssh-test-client.ts';
import {
  buildOperatorBundle,
  operatorBundlePath,
  spawnOperator,
  stopProcess,
} from '../sim/testkit/operator-process.ts';
import { writeStandInPayload } from '../sim/testkit/payload.ts';
import { writeOperatorConfig } from '../sim/testkit/test-operator.ts';
import {
  waitForReadyHosts,
  windowsHostFor,
  writeSshKeySecret,
} from '../sim/testkit/windows-hosts.ts';
import { installCrds } from '../src/api/install-crds.ts';
import { loadKubeConfig } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';

const allVariants = [
  'source',
  'bundle-utf8',
  'bundle',
  'bundle+flags',
  'shipped',
  'shipped+try',
] as const;
type Variant = (typeof allVariants)[number];

const { values } = parseArgs({
  options: {
    'idle-seconds': { type: 'string', default: '60' },
    variants: { type: 'string', default: allVariants.slice(0, 5).join(',') },
    'heap-snapshot': { type: 'string' },
    /** No cluster: the memory of each variant once loaded, before it runs. */
    'load-only': { type: 'boolean', default: false },
    /** Node flags to try on top of the shipped ones, as the variant shipped+try. */
    'try-flags': { type: 'string', default: '' },
  },
});
const idleMs = Number(values['idle-seconds']) * 1000;
const variants = values.variants.split(',') as Variant[];
for (const v of variants) {
  if (!allVariants.includes(v)) throw new Error(`No variant "${v}"; use ${allVariants.join(',')}`);
}
const probe = fileURLToPath(new URL('./memory-probe.cjs', import.meta.url));
const operatorMain = fileURLToPath(new URL('../src/operator/main.ts', import.meta.url));
const namespace = 'winfleet-system';
const MiB = 1024 * 1024;

interface Sample {
  proc: { rss: number; rssAnon: number; rssFile: number; threads: number };
  memoryUsage: NodeJS.MemoryUsage;
  heapSpaces: Record<string, { used: number; size: number; physical: number }>;
  heapCode: {
    code_and_metadata_size: number;
    bytecode_and_metadata_size: number;
    external_script_source_size: number;
  };
  modules: { loaded: number; requireCache: number };
  byPackage: Record<string, { modules: number; sourceBytes: number }>;
}

interface Measured {
  variant: Variant;
  sample: Sample;
  peakRss: number;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
console.error(`[bench] load average at start: ${load()} (${process.env.HOSTNAME ?? ''})`);

const dir = await mkdtemp(join(tmpdir(), 'winfleet-bench-idle-'));
// The variants that are bundles: the shipped one (the testkit's, scripts/build-image.ts) and
// esbuild's default charset, built with the same shared code.
await buildOperatorBundle();
const utf8Bundle = join(dir, 'winfleet-operator-utf8.cjs');
if (variants.includes('bundle-utf8')) {
  await writeFile(utf8Bundle, (await bundleNodeProgram(OPERATOR_ENTRY)).code);
}
const aboveLatin1 = (path: string) =>
  [...readFileSync(path, 'utf8')].filter((c) => (c.codePointAt(0) ?? 0) > 0xff).length;

/** How a variant runs: its script, Node flags and environment (besides the probe's). */
function variantSetup(variant: Variant, out: string) {
  const flags = ['bundle+flags', 'shipped', 'shipped+try'].includes(variant)
    ? IMAGE_NODE_FLAGS
    : [];
  const tried = variant === 'shipped+try' ? values['try-flags'].split(' ').filter(Boolean) : [];
  const env: Record<string, string> = {
    WINFLEET_MEMORY_PROBE: out,
    ...(variant.startsWith('shipped') ? IMAGE_ENV : {}),
  };
  if (values['heap-snapshot']) {
    env.WINFLEET_MEMORY_PROBE_SNAPSHOT = join(values['heap-snapshot'], `${variant}.heapsnapshot`);
  }
  const script =
    variant === 'source' ? undefined : variant === 'bundle-utf8' ? utf8Bundle : operatorBundlePath;
  return { script, nodeFlags: ['--require', probe, ...flags, ...tried], env };
}

async function readSample(out: string, variant: Variant): Promise<Sample> {
  const text = await waitFor(
    async () => {
      const t = await readFile(out, 'utf8').catch(() => '');
      return t.trim() ? t : undefined;
    },
    { description: `the probe of ${variant}`, timeoutMs: 120_000 },
  );
  return JSON.parse(text.trim().split('\n')[0]!) as Sample;
}

const measured: Measured[] = [];
if (values['heap-snapshot']) await mkdir(values['heap-snapshot'], { recursive: true });
if (values['load-only']) {
  // No cluster: each variant runs `--help`, held at its exit (the probe's
  // WINFLEET_MEMORY_PROBE_AT_EXIT), so every module is loaded and nothing has run.
  for (const variant of variants) {
    const out = join(dir, `${variant}.jsonl`);
    const setup = variantSetup(variant, out);
    const child = spawn(
      process.execPath,
      [...setup.nodeFlags, setup.script ?? operatorMain, '--help'],
      {
        stdio: 'ignore',
        env: { ...process.env, ...setup.env, WINFLEET_MEMORY_PROBE_AT_EXIT: '3000' },
      },
    );
    await once(child, 'exit');
    const sample = await readSample(out, variant);
    measured.push({ variant, sample, peakRss: Number.NaN });
  }
} else {
  await measureIdle();
}

async function measureIdle(): Promise<void> {
  const cluster = await startCluster();
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  const key = generateTestKey();
  const payloadDir = join(dir, 'payload');
  await writeStandInPayload(payloadDir);
  const fleet = await startSimulatedHosts({
    count: 1,
    releases: ['2022'],
    authorizedKeys: [key.publicKey],
    baseAddress: '127.0.29.10',
  });
  try {
    await installCrds(kc);
    await writeOperatorConfig(kc, namespace, {});
    await writeSshKeySecret(kc, namespace, key.privateKey);
    const host = fleet.hosts[0]!;
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    await objects.create(windowsHostFor(host, namespace));

    // The join itself, by an operator that is not measured.
    const joiner = spawnOperator({ kubeconfig: cluster.kubeconfigPath, namespace, payloadDir });
    await waitForReadyHosts(kc, namespace, 1, 10 * 60_000);
    await stopProcess(joiner);
    console.error('[bench] the host joined; measuring each variant');

    for (const variant of variants) {
      const out = join(dir, `${variant}.jsonl`);
      const setup = variantSetup(variant, out);
      const child = spawnOperator({
        kubeconfig: cluster.kubeconfigPath,
        namespace,
        payloadDir,
        shipped: variant !== 'source',
        ...(variant === 'bundle-utf8' ? { script: utf8Bundle } : {}),
        nodeFlags: setup.nodeFlags,
        env: setup.env,
        logFile: join(dir, `${variant}.log`),
      });
      await waitForReadyHosts(kc, namespace, 1, 5 * 60_000);
      await new Promise((r) => setTimeout(r, idleMs));
      child.kill('SIGUSR2');
      const sample = await readSample(out, variant);
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const peakRss = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
      measured.push({ variant, sample, peakRss });
      await stopProcess(child);
      console.error(`[bench] ${variant}: measured (load ${load()})`);
    }
  } finally {
    await fleet.stop();
    await cluster.stop();
  }
}

const mib = (bytes: number) => (bytes / MiB).toFixed(1);
const row = (label: string, pick: (m: Measured) => string) =>
  console.log(`  ${label.padEnd(34)}${measured.map((m) => pick(m).padStart(14)).join('')}`);
const space = (m: Measured, name: string) => m.sample.heapSpaces[name]?.physical ?? 0;
console.log(
  values['load-only']
    ? `\nOperator loaded, before it runs (--help held at exit; MiB; load average now ${load()}):\n`
    : `\nIdle operator, one joined host, after ${idleMs / 1000} s idle (MiB; load average now ${load()}):\n`,
);
row('', (m) => m.variant);
row('RSS (VmRSS)', (m) => mib(m.sample.proc.rss));
row('  anonymous (heap, malloc)', (m) => mib(m.sample.proc.rssAnon));
row('  file-backed (node binary, libs)', (m) => mib(m.sample.proc.rssFile));
if (!values['load-only']) row('peak RSS (VmHWM)', (m) => mib(m.peakRss));
row('V8 heap used', (m) => mib(m.sample.memoryUsage.heapUsed));
row('V8 heap total (spaces: resident)', (m) => mib(m.sample.memoryUsage.heapTotal));
for (const name of [
  'new_space',
  'old_space',
  'code_space',
  'large_object_space',
  'code_large_object_space',
  'trusted_space',
  'trusted_large_object_space',
  'shared_large_object_space',
]) {
  if (measured.some((m) => space(m, name) > 0)) row(`  ${name}`, (m) => mib(space(m, name)));
}
row('bytecode + metadata', (m) => mib(m.sample.heapCode.bytecode_and_metadata_size));
row('code + metadata', (m) => mib(m.sample.heapCode.code_and_metadata_size));
row('external (off-heap)', (m) => mib(m.sample.memoryUsage.external));
row('  arrayBuffers', (m) => mib(m.sample.memoryUsage.arrayBuffers));
row('modules loaded', (m) => String(m.sample.modules.loaded));
row('threads', (m) => String(m.sample.proc.threads));
const base = measured.find((m) => m.variant === 'source');
if (base) row('RSS / source', (m) => (m.sample.proc.rss / base.sample.proc.rss).toFixed(2));

console.log(
  `\nCharacters above 0xFF: shipped bundle ${aboveLatin1(operatorBundlePath)}${variants.includes('bundle-utf8') ? `, esbuild default ${aboveLatin1(utf8Bundle)}` : ''}`,
);
if (base) {
  console.log('\nFrom source, the modules loaded and their source by package (top 12):\n');
  const packages = Object.entries(base.sample.byPackage).sort(
    (a, b) => b[1].sourceBytes - a[1].sourceBytes,
  );
  for (const [name, p] of packages.slice(0, 12)) {
    console.log(
      `  ${name.padEnd(30)}${String(p.modules).padStart(6)} modules ${mib(p.sourceBytes).padStart(8)} MiB`,
    );
  }
}
if (values['heap-snapshot'])
  console.log(`\nHeap snapshots: ${values['heap-snapshot']}/<variant>.heapsnapshot`);
await rm(dir, { recursive: true, force: true });
