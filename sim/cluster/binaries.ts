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

/**
 * A getter of a directory of built binaries: `env`'s value when set, else the directory the
 * build script `hack/<script>` prints last (it builds whatever is missing, with progress on
 * stderr); every one of `names` must be there. The answer is kept for the process.
 */
export function builtBinaries(options: {
  env: string;
  script: string;
  names: readonly string[];
}): () => string {
  const buildScript = fileURLToPath(new URL(`../../hack/${options.script}`, import.meta.url));
  let cached: string | undefined;
  return () => {
    if (cached) return cached;
    const fromEnv = process.env[options.env];
    const dir = fromEnv
      ? fromEnv
      : execFileSync('bash', [buildScript], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
        })
          .trim()
          .split('\n')
          .at(-1)!;
    const missing = options.names.filter((name) => !existsSync(`${dir}/${name}`));
    if (missing.length > 0) {
      throw new Error(
        `Missing ${missing.join(', ')} in ${dir}; run hack/${options.script}${fromEnv ? ` or unset ${options.env}` : ''}`,
      );
    }
    cached = dir;
    return dir;
  };
}

/** Returns the binaries directory, building whatever is missing (with progress on stderr). */
export const ensureBinaries = builtBinaries({
  env: 'WINFLEET_BIN_DIR',
  script: 'build-binaries.sh',
  names: componentBinaries,
});
