/**
 * Runs the flag-list generators hack/build-flag-lists.sh built (Windows programs: the Windows
 * flags and collectors exist only in a GOOS=windows build) under Wine, checks what they print
 * and writes one flag-lists.json, which the simulated hosts read (sim/hosts/flag-lists.ts):
 *
 *   node scripts/flag-lists.ts <out.json> <windows_exporter module dir> \
 *     <kubelet-flags.exe> <kube-proxy-flags.exe> <exporter-flags.exe>
 *
 * Output is checked strictly: a generator that prints something else fails the run with its
 * name, its exit code and its standard error, so no half-made list is ever written.
 */
import { rename, writeFile } from 'node:fs/promises';
import type { KingpinFlag, PflagFlag } from '../sim/hosts/flag-lists.ts';
import { createWinePrefix, hasWine, runWine, wine64 } from './wine-prefix.ts';

function fail(message: string): never {
  process.stderr.write(`flag lists: ${message}\n`);
  process.exit(1);
}

/** The Windows form of a Linux path under Wine's Z: drive (the root file system). */
function winePath(path: string): string {
  return `Z:${path.replaceAll('/', '\\')}`;
}

function checkFlags(program: string, list: unknown, syntax: string): void {
  const value = list as { program?: unknown; syntax?: unknown; version?: unknown; flags?: unknown };
  if (value?.program !== program || value.syntax !== syntax || typeof value.version !== 'string')
    fail(`${program}: the generator printed no ${syntax} flag list for ${program}`);
  if (!Array.isArray(value.flags) || value.flags.length < 5)
    fail(`${program}: the generator listed ${String((value.flags as unknown[])?.length)} flags`);
  for (const flag of value.flags as (PflagFlag | KingpinFlag)[]) {
    if (typeof flag?.name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(flag.name))
      fail(`${program}: a flag without a valid name: ${JSON.stringify(flag)}`);
  }
}

async function main(): Promise<void> {
  const [out, exporterDir, kubeletExe, kubeProxyExe, exporterExe] = process.argv.slice(2);
  if (!out || !exporterDir || !kubeletExe || !kubeProxyExe || !exporterExe)
    fail(
      'usage: node scripts/flag-lists.ts <out.json> <windows_exporter module dir> <kubelet-flags.exe> <kube-proxy-flags.exe> <exporter-flags.exe>',
    );
  if (!(await hasWine()))
    fail(`${wine64} is missing: install Debian's wine64 package (bash hack/ensure-packages.sh)`);
  const { prefix, remove } = await createWinePrefix((m) =>
    process.stderr.write(`      [wine] ${m}\n`),
  );
  try {
    const run = async (name: string, args: string[]): Promise<unknown> => {
      process.stderr.write(`      running ${name} under Wine\n`);
      const result = await runWine(prefix, args, { timeoutMs: 120_000 });
      if (result.code !== 0)
        fail(`${name} exited with ${result.code} under Wine: ${result.stderr.trim().slice(-2000)}`);
      try {
        return JSON.parse(result.stdout);
      } catch (error) {
        return fail(
          `${name} printed no JSON (${(error as Error).message}): ${result.stdout.slice(0, 500)}`,
        );
      }
    };
    const kubelet = await run('kubelet-flags.exe', [kubeletExe]);
    const kubeProxy = await run('kube-proxy-flags.exe', [kubeProxyExe]);
    const exporter = await run('exporter-flags.exe', [exporterExe, winePath(exporterDir)]);
    checkFlags('kubelet', kubelet, 'pflag');
    checkFlags('kube-proxy', kubeProxy, 'pflag');
    checkFlags('windows_exporter', exporter, 'kingpin');
    const collectors = (exporter as { collectors?: unknown }).collectors;
    if (!Array.isArray(collectors) || collectors.length < 5 || !collectors.includes('cpu'))
      fail('windows_exporter: the generator listed no collectors');
    const lists = { kubelet, 'kube-proxy': kubeProxy, windows_exporter: exporter };
    await writeFile(`${out}.tmp`, `${JSON.stringify(lists, null, 2)}\n`);
    await rename(`${out}.tmp`, out);
  } finally {
    await remove();
  }
}

await main();
