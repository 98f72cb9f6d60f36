/**
 * The diagnostics bundle: a gzip-compressed tar (tar-stream, zlib) of one directory,
 * `winfleet-diagnose-<time>/`, holding index.html and one file per item. Entries are regular
 * files with mode 0600 under a directory 0700: a bundle is for support, not for everyone on the
 * machine that unpacks it.
 */
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { WinfleetError } from '../../errors/catalog.ts';

export interface BundleFile {
  /** Path inside the bundle's directory, with / separators (cluster/nodes.yaml). */
  path: string;
  content: Buffer;
}

/** The bundle's top directory for a run started at `time`: winfleet-diagnose-20261123T073158Z. */
export function bundleRoot(time: Date): string {
  return `winfleet-diagnose-${time
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}`;
}

/** Refuses a path that could leave the bundle's directory or is not plain. */
export function checkBundlePath(path: string): void {
  if (
    !/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(path) ||
    path.split('/').some((part) => part === '.' || part === '..')
  )
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot put "${path}" in a diagnostics bundle: paths are letters, digits, . _ - and / only, without . or .. parts`,
    );
}

/** Writes root/ and the files, as .tar.gz, to `out`; resolves when `out` has it all. */
export async function writeBundle(
  out: Writable,
  root: string,
  files: readonly BundleFile[],
  mtime = new Date(),
): Promise<void> {
  checkBundlePath(root);
  const pack = tar.pack();
  const done = pipeline(pack, createGzip(), out);
  const dirs = new Set<string>([root]);
  for (const file of files) {
    checkBundlePath(file.path);
    const parts = file.path.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) dirs.add(`${root}/${parts.slice(0, i).join('/')}`);
  }
  for (const dir of [...dirs].sort())
    pack.entry({ name: `${dir}/`, type: 'directory', mode: 0o700, mtime });
  for (const file of files)
    pack.entry({ name: `${root}/${file.path}`, mode: 0o600, mtime }, file.content);
  pack.finalize();
  await done;
}
