/**
 * Runs the Windows binaries of a payload directory (hack/build-payload.sh's output) under Wine
 * and checks that each says the version payload.json gives it: proof that they are Windows
 * executables that start, built with their version stamped in. hack/build-payload.sh runs it
 * before it writes payload.json; by hand:
 *
 *   node scripts/payload-wine-check.ts <payload dir> [payload.json]
 *
 * Prints one line per file it ran (what the program printed) and exits 1 if any printed
 * something else. Files with no version probe (kube-log-runner.exe, csi-proxy.exe, which has
 * no version flag, and winfleet's own two, tested by their own builds) are named as not run.
 * Without wine64 it says so and exits 0: the payload is built all the same.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createWinePrefix, hasWine, runWine, wine64 } from './wine-prefix.ts';

/** How to make a payload file print its version, and what it must print for `version`. */
export interface VersionProbe {
  args: string[];
  env?: Record<string, string>;
  /** The text (stdout then stderr) the program must print for the payload's version. */
  expect(version: string): string;
}

const cniPlugin = (name: string): VersionProbe => ({
  args: [],
  // A CNI plugin without CNI_COMMAND prints its "about" line (skel's PluginMain).
  expect: (version) => `CNI ${name} plugin ${version}`,
});

export const versionProbes: Record<string, VersionProbe[]> = {
  'kubelet.exe': [{ args: ['--version'], expect: (v) => `Kubernetes ${v}` }],
  'kube-proxy.exe': [{ args: ['--version'], expect: (v) => `Kubernetes ${v}` }],
  'containerd.exe': [
    { args: ['--version'], expect: (v) => `containerd github.com/containerd/containerd/v2 ${v}` },
  ],
  // cmd/ctr/app/main.go's VersionPrinter: the command's name, version.Package, version.Version.
  'ctr.exe': [
    { args: ['--version'], expect: (v) => `ctr github.com/containerd/containerd/v2 ${v}` },
  ],
  'containerd-shim-runhcs-v1.exe': [
    { args: ['--version'], expect: (v) => `containerd-shim-runhcs-v1 version ${v}` },
  ],
  'win-bridge.exe': [cniPlugin('win-bridge')],
  'win-overlay.exe': [cniPlugin('win-overlay')],
  'host-local.exe': [cniPlugin('host-local')],
  // windows-container-networking stamps no version: its about line names the plugin only.
  'sdnbridge.exe': [{ args: [], expect: () => 'CNI plugin WinCni' }],
  'sdnoverlay.exe': [{ args: [], expect: () => 'CNI plugin WinCni' }],
  // pkg/version.Version, printed alone by --version.
  'flanneld.exe': [{ args: ['--version'], expect: (v) => v }],
  'flannel.exe': [
    cniPlugin('flannel'),
    // The CNI spec versions it takes: winfleet's flannel config is 0.4.0 (node-files.ts).
    {
      args: [],
      env: { CNI_COMMAND: 'VERSION' },
      expect: () =>
        '{"cniVersion":"0.4.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0"]}',
    },
  ],
  'windows_exporter.exe': [
    { args: ['--version'], expect: (v) => `windows_exporter, version ${v.replace(/^v/, '')} ` },
  ],
};

/** Whether a probe's output says what it must: the expected text at the start of a line. */
export function probeMatches(output: string, expected: string): boolean {
  return output.split(/\r?\n/).some((line) => line.startsWith(expected));
}

function winePath(path: string): string {
  return `Z:${path.replaceAll('/', '\\')}`;
}

async function main(): Promise<void> {
  const [dir, manifestPath] = process.argv.slice(2);
  if (!dir) {
    process.stderr.write(
      'usage: node scripts/payload-wine-check.ts <payload dir> [payload.json]\n',
    );
    process.exit(2);
  }
  const manifest = JSON.parse(
    await readFile(manifestPath ?? join(dir, 'payload.json'), 'utf8'),
  ) as { files: { name: string; version: string }[] };
  if (!(await hasWine())) {
    process.stderr.write(
      `      ${wine64} is missing, so the payload's binaries were not run: install Debian's wine64 package (bash hack/ensure-packages.sh)\n`,
    );
    return;
  }
  const { prefix, remove } = await createWinePrefix((m) =>
    process.stderr.write(`      [wine] ${m}\n`),
  );
  const failed: string[] = [];
  const notRun: string[] = [];
  try {
    for (const file of manifest.files) {
      const probes = versionProbes[file.name];
      if (!probes) {
        notRun.push(file.name);
        continue;
      }
      for (const probe of probes) {
        const shown = [
          ...Object.entries(probe.env ?? {}).map(([k, v]) => `${k}=${v}`),
          file.name,
          ...probe.args,
        ].join(' ');
        const result = await runWine(prefix, [winePath(join(dir, file.name)), ...probe.args], {
          timeoutMs: 60_000,
          ...(probe.env ? { env: probe.env } : {}),
        });
        const output = `${result.stdout}${result.stderr}`.trim();
        const expected = probe.expect(file.version);
        const ok = result.code === 0 && probeMatches(output, expected);
        if (!ok) failed.push(file.name);
        process.stderr.write(
          `      ${ok ? 'ok  ' : 'FAIL'} ${shown}: ${output.split(/\r?\n/)[0]}${ok ? '' : ` (exit ${result.code}; wanted a line starting ${JSON.stringify(expected)})`}\n`,
        );
      }
    }
  } finally {
    await remove();
  }
  if (notRun.length > 0)
    process.stderr.write(`      not run (no version probe): ${notRun.join(', ')}\n`);
  if (failed.length > 0) {
    process.stderr.write(
      `payload under Wine: ${[...new Set(failed)].join(', ')} did not say their version\n`,
    );
    process.exit(1);
  }
}

if (import.meta.main) await main();
