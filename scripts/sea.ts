/**
 * A Node single executable application (SEA) from a bundle, as Node 24 documents it: the blob
 * from `node --experimental-sea-config`, injected into a copy of an official node binary by
 * postject, which also flips the SEA fuse. The agent (Windows, build-agent.ts) and the CLI
 * (Linux, build-cli.ts) are built through here.
 *
 * The blob carries no V8 startup snapshot and no code cache: both are V8 artifacts of the
 * platform that prepares the blob (Linux here), which a Windows node.exe cannot load, and they
 * would tie the CLI to one exact V8 build. The bundle is named relative to the build directory:
 * the blob records the main script's path as given, and a temporary directory's name would make
 * every build different.
 */
import { stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pinnedNode, runTool } from './node-build.ts';

const require = createRequire(import.meta.url);

/** The fuse Node's SEA support looks for; postject flips its trailing ":0" to ":1". */
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** The resource (PE RT_RCDATA, ELF note) Node reads the blob from. */
export const SEA_RESOURCE = 'NODE_SEA_BLOB';
/** First four bytes of every SEA blob (kMagic in Node's src/node_sea.h), little-endian. */
export const SEA_BLOB_MAGIC = 0x143da20;

/** The SEA settings every build uses (part of a build's cache key). */
export const seaSettings = {
  disableExperimentalSEAWarning: true,
  useSnapshot: false,
  useCodeCache: false,
} as const;

/**
 * Writes `<work>/<name>` (the executable): `node` with the blob of `code` injected. `<name>.cjs`
 * stays in `work` beside it. Returns the blob's size.
 */
export async function makeSeaExecutable(options: {
  work: string;
  name: string;
  code: string;
  /** The node binary to inject into, as it should be before injection. */
  node: Uint8Array;
  signal?: AbortSignal;
}): Promise<{ executable: string; bundle: string; blobBytes: number }> {
  const { work, name, signal } = options;
  const bundle = join(work, `${name}.cjs`);
  await writeFile(bundle, options.code);
  await writeFile(
    join(work, 'sea-config.json'),
    JSON.stringify({ main: `${name}.cjs`, output: `${name}.blob`, ...seaSettings }, null, 2),
  );
  signal?.throwIfAborted();
  await runTool(
    'prepare the SEA blob',
    pinnedNode(),
    ['--experimental-sea-config', 'sea-config.json'],
    {
      cwd: work,
      signal,
    },
  );
  const executable = join(work, name);
  await writeFile(executable, options.node, { mode: 0o755 });
  await runTool(
    'inject the SEA blob',
    pinnedNode(),
    [
      require.resolve('postject/dist/cli.js'),
      name,
      SEA_RESOURCE,
      `${name}.blob`,
      '--sentinel-fuse',
      SEA_FUSE,
    ],
    { cwd: work, signal },
  );
  return { executable, bundle, blobBytes: (await stat(join(work, `${name}.blob`))).size };
}
