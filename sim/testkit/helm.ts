/**
 * The pinned helm (v4, built from the Go module proxy by hack/build-tools.sh) for tests and
 * scripts: its path, and a runner that rejects with helm's own error text.
 */
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const buildTools = fileURLToPath(new URL('../../hack/build-tools.sh', import.meta.url));

let binary: Promise<string> | undefined;

/**
 * The helm binary, built on first use (the build prints progress on stderr and takes a few
 * minutes when cold; afterwards it is cached by go.sum).
 */
export function helmPath(): Promise<string> {
  binary ??= new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [buildTools, 'helm'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const dir = out.trim().split('\n').at(-1);
      if (code !== 0 || !dir) {
        reject(new Error(`bash hack/build-tools.sh helm failed (exit ${code}); run it to see why`));
        return;
      }
      resolve(join(dir, 'helm'));
    });
  }).catch((error: unknown) => {
    binary = undefined;
    throw error;
  });
  return binary;
}

/** An error from a helm run: the exit code and what helm printed. */
export class HelmError extends Error {
  readonly args: string[];
  readonly code: number | string | undefined;
  readonly stdout: string;
  readonly stderr: string;

  constructor(args: string[], code: number | string | undefined, stdout: string, stderr: string) {
    super(`helm ${args.join(' ')} failed (exit ${code}): ${stderr.trim() || stdout.trim()}`);
    this.name = 'HelmError';
    this.args = args;
    this.code = code;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}

/**
 * Runs `helm <args>` (with `input` on stdin, e.g. for `--values -`); resolves with what it
 * printed, rejects with a HelmError on a non-zero exit. At most 5 minutes.
 */
export async function runHelm(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<{ stdout: string; stderr: string }> {
  const helm = await helmPath();
  return new Promise((resolve, reject) => {
    const child = execFile(
      helm,
      args,
      { env: opts.env ?? process.env, maxBuffer: 64 << 20, timeout: 300_000 },
      (error, stdout, stderr) => {
        if (error) {
          const code = (error as { code?: number | string }).code;
          reject(new HelmError(args, code, stdout, stderr));
        } else resolve({ stdout, stderr });
      },
    );
    child.stdin?.end(opts.input ?? '');
  });
}
