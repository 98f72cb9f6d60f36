/**
 * Builds winfleet-service.exe, the Go program that runs the agent as a real Windows service
 * (windows/service, its own module), for Windows x86-64. `go build` with the flags every
 * payload binary gets (static, -trimpath, no VCS stamp, stripped), so the same sources and Go
 * give the same bytes; Go's build cache makes an unchanged rebuild take about a second.
 *
 * `make agent` and `make payload` (hack/build-payload.sh) build it; it ships with the agent.
 *
 * Usage: `node scripts/build-service-shim.ts [<out dir>]`; prints the executable's path on
 * stdout. Default out dir: `<repo>/.cache/agent`.
 */
import { execFile } from 'node:child_process';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** The shim's Go module. */
export const serviceShimModule = join(repoRoot, 'windows', 'service');

export interface GoBuildOptions {
  /** Where the executable goes. Default: `<repo>/.cache/agent`. */
  outDir?: string;
  /** Receives one line per step. Default: written to stderr as `[service] …`. */
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
}

/**
 * Builds `pkg` (a package of the shim's module, e.g. "." or "./internal/standin") for
 * Windows x86-64 into `<outDir>/<name>` and returns its path.
 */
export async function goBuildForWindows(
  pkg: string,
  name: string,
  options: GoBuildOptions = {},
): Promise<string> {
  const progress =
    options.onProgress ?? ((message: string) => console.error(`[service] ${message}`));
  const outDir = options.outDir ?? join(repoRoot, '.cache', 'agent');
  const target = join(outDir, name);
  await mkdir(outDir, { recursive: true });
  const started = performance.now();
  const temporary = `${target}.tmp`;
  try {
    await run('go', ['build', '-ldflags', '-s -w', '-o', temporary, pkg], {
      cwd: serviceShimModule,
      signal: options.signal,
      env: {
        ...process.env,
        CGO_ENABLED: '0',
        GOOS: 'windows',
        GOARCH: 'amd64',
        GOFLAGS: '-trimpath -buildvcs=false',
      },
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    await rm(temporary, { force: true });
    if (options.signal?.aborted) throw error;
    const e = error as { code?: number | string; stderr?: string };
    throw new Error(
      `Cannot build ${name} (go build ${pkg} in windows/service ${typeof e.code === 'number' ? `exited with code ${e.code}` : `failed: ${e.code}`})${e.stderr ? `:\n${e.stderr.trim()}` : ''}; check that Go is installed (make packages) and the module builds (cd windows/service && go vet ./...)`,
    );
  }
  await rename(temporary, target);
  const size = (await stat(target)).size;
  progress(
    `built: ${target} (${(size / 1024 / 1024).toFixed(1)} MiB, ${Math.round(performance.now() - started)} ms)`,
  );
  return target;
}

/** Builds winfleet-service.exe into `options.outDir` and returns its path. */
export function buildServiceShim(options: GoBuildOptions = {}): Promise<string> {
  return goBuildForWindows('.', 'winfleet-service.exe', options);
}

if (import.meta.main) {
  const [outDir, ...extra] = process.argv.slice(2);
  if (extra.length > 0) {
    console.error('usage: node scripts/build-service-shim.ts [<out dir>]');
    process.exitCode = 2;
  } else {
    try {
      console.log(await buildServiceShim(outDir ? { outDir: resolve(outDir) } : {}));
    } catch (error) {
      console.error(`[service] ${error instanceof Error ? error.message : String(error)}`);
      process.exitCode = 1;
    }
  }
}
