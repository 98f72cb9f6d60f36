/**
 * Where the real Linux networking binaries are (flanneld; the bridge, host-local and loopback
 * CNI plugins; CoreDNS). hack/build-netlab.sh builds them from the Go module proxy into a cache keyed by
 * go.sum; `make test` passes that directory as WINFLEET_NETLAB_BIN, and a test run alone builds
 * them on demand (with progress on stderr), as sim/cluster/binaries.ts does for the control plane.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const netlabBinaries = ['flanneld', 'bridge', 'host-local', 'loopback', 'coredns'] as const;
export const netlabBinEnv = 'WINFLEET_NETLAB_BIN';

const buildScript = fileURLToPath(new URL('../../hack/build-netlab.sh', import.meta.url));
let cached: string | undefined;

/** The directory holding the binaries, building whatever is missing. */
export function ensureNetlabBinaries(): string {
  if (cached) return cached;
  const fromEnv = process.env[netlabBinEnv];
  const dir = fromEnv
    ? fromEnv
    : execFileSync('bash', [buildScript], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      })
        .trim()
        .split('\n')
        .at(-1)!;
  const missing = netlabBinaries.filter((name) => !existsSync(`${dir}/${name}`));
  if (missing.length > 0)
    throw new Error(
      `Missing ${missing.join(', ')} in ${dir}; run hack/build-netlab.sh${fromEnv ? ` or unset ${netlabBinEnv}` : ''}`,
    );
  cached = dir;
  return dir;
}
