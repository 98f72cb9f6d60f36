/**
 * Where the control-plane binaries are. They are built from Go modules by
 * hack/build-binaries.sh into a cache keyed by version; WINFLEET_BIN_DIR overrides.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const componentBinaries = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
] as const;

const buildScript = fileURLToPath(new URL('../../hack/build-binaries.sh', import.meta.url));
let cached: string | undefined;

/** Returns the binaries directory, building whatever is missing (with progress on stderr). */
export function ensureBinaries(): string {
  if (cached) return cached;
  const fromEnv = process.env.WINFLEET_BIN_DIR;
  const dir = fromEnv
    ? fromEnv
    : execFileSync('bash', [buildScript], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      })
        .trim()
        .split('\n')
        .at(-1)!;
  const missing = componentBinaries.filter((name) => !existsSync(`${dir}/${name}`));
  if (missing.length > 0) {
    throw new Error(
      `Missing ${missing.join(', ')} in ${dir}; run hack/build-binaries.sh${fromEnv ? ' or unset WINFLEET_BIN_DIR' : ''}`,
    );
  }
  cached = dir;
  return dir;
}
