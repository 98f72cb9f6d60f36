/**
 * What the builds of shipped Node programs share (scripts/build-agent.ts for the Windows agent,
 * scripts/build-image.ts for the operator image):
 *
 * - the pinned Node (devDependency `node`) and its version;
 * - that version's official binary for another platform, from the npm package
 *   node-<platform> (`npm pack` checks the registry's integrity), cached outside the repo;
 * - the esbuild bundle of an entry point into one CommonJS script with no dependencies left to
 *   install;
 * - running a tool so that a failure names the step, and the small formatting helpers.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type BuildOptions, build, formatMessages, type Message } from 'esbuild';

const run = promisify(execFile);

/** The repository root (this file's parent directory). */
export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/**
 * Optional dependencies that cannot be bundled: native addons (*.node) and the packages that
 * only wrap one. Their importers load them inside try/catch (ssh2: cpu-features and its own
 * sshcrypto.node; ws: bufferutil, utf-8-validate) and fall back to JavaScript, which is what
 * happens in a bundle, which ships without node_modules.
 */
export const optionalNativeModules = ['*.node', 'cpu-features', 'bufferutil', 'utf-8-validate'];

export interface NodeBundle {
  /** The bundled program, one CommonJS script. */
  code: string;
  /** Modules the bundle requires at run time that are neither built-ins nor bundled. */
  unbundled: string[];
  /** esbuild's warnings, formatted. */
  warnings: string[];
}

export interface NodeBundleSettings {
  /**
   * 'ascii' escapes every character above 0x7F (\uXXXX in strings, regular expressions,
   * identifiers and the comments esbuild keeps), which changes no behaviour. V8 keeps a
   * script's source in memory as long as its functions live: a pure Latin-1 source is a
   * one-byte string, while one character above 0xFF makes the whole source two bytes a
   * character. Default: 'utf8' (esbuild's default).
   */
  charset?: 'ascii' | 'utf8';
}

/**
 * Bundles `entry` (relative to the repository root) and everything it imports into one
 * CommonJS script for Node 24. Deterministic: the same sources give the same code, whatever the
 * working directory. Only what the entry imports is bundled, so dev dependencies stay out
 * unless product code imports them.
 */
export async function bundleNodeProgram(
  entry: string,
  settings: NodeBundleSettings = {},
): Promise<NodeBundle> {
  const options = {
    absWorkingDir: repoRoot,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    target: 'node24',
    // CommonJS because a Node 24 single executable application (the agent) runs only a
    // CommonJS main script; the operator image uses the same bundle format.
    format: 'cjs',
    keepNames: true, // readable stack traces from the field
    external: optionalNativeModules,
    logLevel: 'silent',
    charset: settings.charset ?? 'utf8',
    // CommonJS has no import.meta: esbuild would leave it an empty object. __filename and
    // __dirname are the bundle's (or, in a SEA, the executable's) path and directory, which is
    // as close as a one-file program gets (createRequire works, files resolved next to "this
    // module" are looked up next to the bundle). Other import.meta properties still produce
    // esbuild's "empty-import-meta" warning, which the builds print.
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
  const text = result.outputFiles[0]?.text;
  if (text === undefined) throw new Error(`esbuild produced no output for "${entry}"`);
  // esbuild escapes strings, regular expressions and identifiers, and leaves the comments it
  // keeps as they are; \uXXXX means the same character in all of them (a comment just shows it).
  const code = settings.charset === 'ascii' ? escapeNonAscii(text) : text;

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

/** Every UTF-16 code unit above 0x7F as \uXXXX. */
function escapeNonAscii(code: string): string {
  return code.replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${(c.charCodeAt(0) ?? 0).toString(16).padStart(4, '0')}`,
  );
}

async function formatWarnings(messages: Message[]): Promise<string[]> {
  if (messages.length === 0) return [];
  return formatMessages(messages, { kind: 'warning', color: false });
}

/** The repository's Node (devDependency `node`). */
export function pinnedNode(): string {
  return join(repoRoot, 'node_modules', '.bin', 'node');
}

/** The pinned Node's version, asked of the binary itself, so other builds always match it. */
export async function pinnedNodeVersion(signal?: AbortSignal): Promise<string> {
  const { stdout } = await runTool('ask the pinned Node its version', pinnedNode(), ['--version'], {
    signal,
  });
  const version = stdout.trim().replace(/^v/, '');
  if (!/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`Cannot parse the pinned Node's version "${stdout.trim()}"`);
  }
  return version;
}

/**
 * winfleet's download cache, outside the repository: `$WINFLEET_CACHE`, else
 * `${XDG_CACHE_HOME:-~/.cache}/winfleet` (the same directory hack/build-tools.sh uses).
 */
export function winfleetCacheDir(): string {
  if (process.env.WINFLEET_CACHE) return process.env.WINFLEET_CACHE;
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'winfleet');
}

/** The official Node builds winfleet ships, by npm package suffix. */
export type NodePlatform = 'win-x64' | 'linux-x64';

/** Where each package holds the binary, and the other files a build ships beside it. */
const nodePackageFiles: Record<NodePlatform, { binary: string; extras: string[] }> = {
  'win-x64': { binary: 'bin/node.exe', extras: [] },
  'linux-x64': { binary: 'bin/node', extras: ['LICENSE'] },
};

export interface NodeBinary {
  /** The cached binary. */
  path: string;
  /** Other files of the package kept beside it, by their path in the package. */
  extras: Record<string, string>;
  /** npm's integrity string of the node-<platform> tarball it came from. */
  integrity: string;
}

interface NpmPackResult {
  filename: string;
  integrity: string;
  files: { path: string; size: number }[];
}

/**
 * Returns the cached Node binary of that version and platform, fetching it first if needed,
 * into `<cacheDir>/<version>/`. The node-<platform> packages declare their os and cpu, so npm
 * will not install a foreign one; `npm pack` fetches the tarball (checking it against the
 * registry's integrity) without installing it. Files a build ships beside the binary (the
 * Linux package's LICENSE) are kept with it.
 */
export async function ensureNodeBinary(
  platform: NodePlatform,
  version: string,
  context: { cacheDir: string; progress: (message: string) => void; signal?: AbortSignal },
): Promise<NodeBinary> {
  const { binary: binaryInPackage, extras: extrasInPackage } = nodePackageFiles[platform];
  const dir = join(context.cacheDir, version);
  const binary = join(dir, binaryInPackage.split('/').pop() as string);
  const extras = Object.fromEntries(extrasInPackage.map((p) => [p, join(dir, p)]));
  const recordPath = join(dir, `node-${platform}.json`);
  const spec = `node-${platform}@${version}`;
  if (existsSync(binary) && existsSync(recordPath)) {
    const record = JSON.parse(await readFile(recordPath, 'utf8')) as { integrity: string };
    if (Object.values(extras).every((p) => existsSync(p))) {
      context.progress(`download: ${spec} (cached in ${dir})`);
      return { path: binary, extras, integrity: record.integrity };
    }
  }

  const started = performance.now();
  context.progress(`download: ${spec} ...`);
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, '.download-'));
  try {
    const { stdout } = await runTool(
      `fetch ${spec} with npm pack`,
      'npm',
      ['pack', spec, '--json', '--pack-destination', work, '--loglevel=error'],
      { cwd: work, signal: context.signal },
    );
    const [packed] = JSON.parse(stdout) as NpmPackResult[];
    if (!packed) throw new Error(`npm pack "${spec}" reported no tarball`);
    const wanted = [binaryInPackage, ...extrasInPackage];
    for (const path of wanted) {
      if (!packed.files.some((f) => f.path === path)) {
        throw new Error(
          `Cannot find ${path} in ${packed.filename}; it holds: ${packed.files.map((f) => f.path).join(', ')}`,
        );
      }
    }
    await runTool(
      `extract ${wanted.join(', ')} from ${packed.filename}`,
      'tar',
      ['-xzf', join(work, packed.filename), '-C', work, ...wanted.map((p) => `package/${p}`)],
      { signal: context.signal },
    );
    for (const path of wanted) {
      const extracted = join(work, 'package', path);
      const size = (await stat(extracted)).size;
      const listed = packed.files.find((f) => f.path === path)?.size;
      if (size !== listed) {
        throw new Error(`Extracted ${path} is ${size} bytes; ${packed.filename} lists ${listed}`);
      }
    }
    // The record goes last: a binary without one is an interrupted download, fetched again.
    for (const path of extrasInPackage) {
      await rename(join(work, 'package', path), extras[path] as string);
    }
    await rename(join(work, 'package', binaryInPackage), binary);
    const size = (await stat(binary)).size;
    await writeFile(
      recordPath,
      `${JSON.stringify({ spec, integrity: packed.integrity, size }, null, 2)}\n`,
    );
    context.progress(
      `download: ${spec} -> ${binary} (${formatSize(size)}, ${packed.integrity.slice(0, 20)}…, ${elapsed(started)})`,
    );
    return { path: binary, extras, integrity: packed.integrity };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Runs a program; on failure, the error says which step failed and carries its output. */
export async function runTool(
  step: string,
  file: string,
  args: string[],
  options: { cwd?: string; signal?: AbortSignal; env?: NodeJS.ProcessEnv },
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

export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export function formatSize(bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

export function elapsed(since: number): string {
  const ms = performance.now() - since;
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
