/**
 * `winfleet hosts` and `winfleet status` run as a child process (real exit codes, stdout not a
 * TTY) against a real control plane, the operator and a simulated Windows host: a host added
 * from a key file joins (its key stored, never printed), is listed and shown Ready in its pool,
 * survives a host key change through trust-key, and is removed with --wait. Attacker side:
 * key files that are not exactly one unencrypted private key, and names that are not object
 * names, are refused before any API call (a tripwire API server sees no connection).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import ssh2 from 'ssh2';
import { generateSshKeyPair } from '../../../sim/hosts/ssh-keys.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import {
  hostReady,
  readWindowsHost,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import { trustHostKeyAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';

const cli = join(import.meta.dirname, '..', 'main.ts');
/** Where the real output is saved for docs/cli.md. */
const artifacts = process.env.WINFLEET_CLI_ARTIFACTS;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `winfleet …` as a child process; bounded by `timeoutMs`. */
function winfleet(
  args: string[],
  options: {
    timeoutMs?: number;
    onStdout?: (text: string, child: ChildProcess) => void;
  } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.KUBECONFIG;
    delete env.FORCE_COLOR;
    const child = spawn(process.execPath, [cli, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      options.onStdout?.(stdout, child);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const show = (run: Run) => `exit ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;

/** An API server stand-in that only counts connections: nothing may reach it. */
async function tripwire(t: {
  after(fn: () => unknown): void;
}): Promise<{ kubeconfig: string; connections: () => number }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  const port = (server.address() as { port: number }).port;
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-tripwire-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{name: trip, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]
users: [{name: trip, user: {token: not-a-token}}]
contexts: [{name: trip, context: {cluster: trip, user: trip, namespace: winfleet-system}}]
current-context: trip
`,
  );
  return { kubeconfig, connections: () => connections };
}

test('hosts add refuses bad key files and names before any API call', async (t) => {
  const trip = await tripwire(t);
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-keys-'));
  const good = generateSshKeyPair('ed25519');
  const encrypted = ssh2.utils.generateKeyPairSync('ed25519', {
    passphrase: 'correct horse',
    cipher: 'aes256-cbc',
    rounds: 4,
  });
  const encryptedPem = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'pkcs1', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem', cipher: 'aes-128-cbc', passphrase: 'pw' },
  });
  const files: [string, string, RegExp][] = [
    ['public', good.public, /holds a public key, not a private key/],
    ['encrypted', encrypted.private, /encrypted private key/],
    ['encrypted-pem', encryptedPem.privateKey, /encrypted private key/],
    ['two', good.private + generateSshKeyPair('ed25519').private, /holds 2 PEM blocks/],
  ];
  for (const [name, content, expected] of files) {
    const file = join(dir, name);
    await writeFile(file, content, { mode: 0o600 });
    const run = await winfleet([
      'hosts',
      'add',
      'win-01',
      '--address',
      '10.1.42.7',
      '--ssh-key-file',
      file,
      '--kubeconfig',
      trip.kubeconfig,
    ]);
    assert.equal(run.code, 2, show(run));
    assert.match(run.stderr, /--ssh-key-file/);
    assert.match(run.stderr, expected, name);
    assert.equal(run.stdout, '');
  }
  const keyFile = join(dir, 'good');
  await writeFile(keyFile, good.private, { mode: 0o600 });
  for (const name of [
    'Win01',
    'win_01',
    'win-01-',
    'win.',
    'ümlaut',
    'a/b',
    `a${'b'.repeat(253)}`,
  ]) {
    const run = await winfleet([
      'hosts',
      'add',
      name,
      '--address',
      '10.1.42.7',
      '--ssh-key-file',
      keyFile,
      '--kubeconfig',
      trip.kubeconfig,
    ]);
    assert.equal(run.code, 2, show(run));
    assert.match(run.stderr, /NAME: .* is not a valid WindowsHost name/);
  }
  // --host-key / --host-key-from-file: checked before any API call.
  const hostPub = join(dir, 'ssh_host_ed25519_key.pub');
  await writeFile(hostPub, good.public);
  const twoKeys = join(dir, 'keyscan');
  await writeFile(
    twoKeys,
    `10.1.42.7 ${good.public}\n10.1.42.7 ${generateSshKeyPair('rsa').public}\n`,
  );
  const hostKeyCases: [string[], RegExp][] = [
    [
      ['--host-key', 'SHA256:short'],
      /--host-key: "SHA256:short" is not an OpenSSH SHA-256 fingerprint/,
    ],
    [['--host-key-from-file', keyFile], /--host-key-from-file .* is not a public key line/],
    [['--host-key-from-file', twoKeys], /holds 2 different keys/],
    [
      ['--host-key', `SHA256:${'A'.repeat(43)}`, '--host-key-from-file', hostPub],
      /give the host key once/,
    ],
  ];
  for (const [flags, expected] of hostKeyCases) {
    const run = await winfleet([
      'hosts',
      'add',
      'win-01',
      '--address',
      '10.1.42.7',
      '--ssh-key-secret',
      'k',
      ...flags,
      '--kubeconfig',
      trip.kubeconfig,
    ]);
    assert.equal(run.code, 2, show(run));
    assert.match(run.stderr, expected);
  }
  // A good public key file is pinned as ssh-keygen -lf prints its fingerprint.
  const blob = Buffer.from(good.public.split(' ')[1]!, 'base64');
  const fingerprint = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
  const pinned = await winfleet([
    'hosts',
    'add',
    'win-01',
    '--address',
    '10.1.42.7',
    '--ssh-key-file',
    keyFile,
    '--host-key-from-file',
    hostPub,
    '--dry-run',
    '-o',
    'json',
    '--kubeconfig',
    trip.kubeconfig,
    '-n',
    'default',
  ]);
  assert.equal(pinned.code, 0, show(pinned));
  assert.ok(pinned.stdout.includes(`"hostKey": "${fingerprint}"`), pinned.stdout);
  for (const args of [
    ['hosts', 'remove', 'Bad_Name', '--wait'],
    ['hosts', 'trust-key', 'win-01', 'SHA256:short'],
    ['hosts', 'trust-key', 'Win-01', `SHA256:${'A'.repeat(43)}`],
    ['hosts', 'add', 'win-01', '--address', '10.1.42.7:22', '--ssh-key-file', keyFile],
    [
      'hosts',
      'add',
      'win-01',
      '--address',
      '10.1.42.7',
      '--ssh-key-file',
      keyFile,
      '--label',
      'bad',
    ],
    ['hosts', 'list', '-o', 'xml'],
    ['status', '-w', '--watch-timeout', 'soon'],
  ]) {
    const run = await winfleet([...args, '--kubeconfig', trip.kubeconfig]);
    assert.equal(run.code, 2, `${args.join(' ')}: ${show(run)}`);
    assert.match(run.stderr, /error: /);
  }
  assert.equal(trip.connections(), 0, 'no refused command reached the API server');
});

test('add from a key file, list, status, trust-key, remove --wait', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const kubeconfig = world.cluster.kubeconfigPath;
  const ns = world.namespace;
  const sim = world.fleet.hosts[0]!;
  const name = sim.name.toLowerCase();
  const core = world.kc.makeApiClient(k8s.CoreV1Api);
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-cli-'));
  const keyFile = join(dir, 'id_ed25519');
  await writeFile(keyFile, world.key.privateKey, { mode: 0o600 });
  const keyLines = world.key.privateKey.split('\n').filter((l) => l && !l.startsWith('-----'));
  const assertNoKey = (run: Run) => {
    for (const line of keyLines) {
      assert.ok(
        !run.stdout.includes(line) && !run.stderr.includes(line),
        'the key is never printed',
      );
      assert.ok(
        !(run.stdout + run.stderr).includes(
          Buffer.from(world.key.privateKey).toString('base64').slice(0, 40),
        ),
      );
    }
  };
  const k = ['--kubeconfig', kubeconfig, '-n', ns];
  const addArgs = [
    'hosts',
    'add',
    name,
    '--address',
    sim.address,
    '--port',
    String(sim.port),
    '--ssh-key-file',
    keyFile,
    '--host-label',
    'pool=web',
    '--label',
    'example.com/tier=front',
    ...k,
  ];

  await t.test(
    'add: --dry-run prints the objects, the key redacted, and creates nothing',
    async () => {
      const run = await winfleet([...addArgs, '--dry-run', '-o', 'yaml']);
      assert.equal(run.code, 0, show(run));
      assertNoKey(run);
      assert.match(
        run.stdout,
        /kind: Secret[\s\S]*ssh-privatekey: \(redacted\)[\s\S]*kind: WindowsHost/,
      );
      await assert.rejects(
        core.readNamespacedSecret({ name: `${name}-ssh-key`, namespace: ns }),
        isNotFound,
      );
    },
  );

  await createPool(world.kc, ns, 'web', { selector: { matchLabels: { pool: 'web' } } });

  await t.test(
    'add: creates the Secret and the host, which joins; a re-run changes nothing',
    async () => {
      const run = await winfleet(addArgs);
      assert.equal(run.code, 0, show(run));
      if (artifacts)
        await writeFile(
          join(artifacts, 'hosts-add.txt'),
          `$ winfleet hosts add ${name} --address ${sim.address} --port ${sim.port} --ssh-key-file id_ed25519 --host-label pool=web\n${run.stdout}`,
        );
      assertNoKey(run);
      assert.match(
        run.stdout,
        new RegExp(`^secret/${name}-ssh-key created\nwindowshost.winfleet.io/${name} created\n`),
      );
      const secret = await core.readNamespacedSecret({ name: `${name}-ssh-key`, namespace: ns });
      assert.equal(secret.type, 'kubernetes.io/ssh-auth');
      assert.equal(
        Buffer.from(secret.data!['ssh-privatekey']!, 'base64').toString(),
        world.key.privateKey.replace(/\s+$/, '\n'),
      );
      const host = await readWindowsHost(world.kc, ns, name);
      assert.deepEqual(host.spec.sshKeySecretRef, {
        name: `${name}-ssh-key`,
        key: 'ssh-privatekey',
      });
      assert.deepEqual(host.spec.labels, { 'example.com/tier': 'front' });
      assert.deepEqual(host.metadata.labels, { pool: 'web' });

      const again = await winfleet(addArgs);
      assert.equal(again.code, 0, show(again));
      assert.match(again.stdout, /secret\/\S+ unchanged\nwindowshost\.winfleet\.io\/\S+ unchanged/);

      const otherKey = join(dir, 'other');
      await writeFile(otherKey, generateSshKeyPair('ed25519').private, { mode: 0o600 });
      const different = await winfleet(addArgs.map((a) => (a === keyFile ? otherKey : a)));
      assert.equal(different.code, 1, show(different));
      assert.match(
        different.stderr,
        /already exists with a different key; pass --overwrite-secret/,
      );
      const kept = await core.readNamespacedSecret({ name: `${name}-ssh-key`, namespace: ns });
      assert.deepEqual(kept.data, secret.data, 'the Secret is not changed');

      const moved = await winfleet(addArgs.map((a) => (a === sim.address ? '10.1.42.99' : a)));
      assert.equal(moved.code, 1, show(moved));
      assert.match(moved.stderr, /already exists with a different spec\.address; remove it first/);

      await waitForReadyHosts(world.kc, ns, 1);
    },
  );

  await t.test('list: table and -o json', async () => {
    const table = await winfleet(['hosts', 'list', ...k]);
    assert.equal(table.code, 0, show(table));
    const [header, row, ...rest] = table.stdout.trimEnd().split('\n');
    assert.deepEqual(header!.split(/\s{2,}/), [
      'NAME',
      'ADDRESS',
      'NODE',
      'POOL',
      'WINDOWS',
      'SERVICES',
      'STATE',
      'AGE',
    ]);
    assert.equal(rest.length, 0);
    const cells = row!.split(/\s{2,}/);
    assert.deepEqual(cells.slice(0, 4), [name, `${sim.address}:${sim.port}`, name, 'web']);
    assert.match(cells[4]!, /^10\.0\.20348\.\d+$/);
    assert.equal(cells[6], 'Ready');
    assert.ok(!table.stdout.includes('\u001b['), 'no colour off a TTY');
    const wide = await winfleet(['hosts', 'list', '-o', 'wide', ...k]);
    assert.match(wide.stdout, /CONDITIONS +LAST ERROR\n/);
    assert.match(wide.stdout, /Ready=True/);
    const json = await winfleet(['hosts', 'list', '-o', 'json', ...k]);
    assert.equal(json.code, 0, show(json));
    const list = JSON.parse(json.stdout) as { kind: string; items: WindowsHost[] };
    assert.equal(list.kind, 'List');
    assert.equal(list.items.length, 1);
    assert.equal(list.items[0]!.metadata.name, name);
    assert.equal(list.items[0]!.metadata.managedFields, undefined);
    assert.ok(hostReady(list.items[0]!));
    if (artifacts)
      await writeFile(
        join(artifacts, 'hosts-list.txt'),
        `$ winfleet hosts list\n${table.stdout}\n$ winfleet hosts list -o wide\n${wide.stdout}`,
      );
  });

  await t.test(
    'status: the host Ready in its pool; -o json; -w reprints and ends by itself',
    async () => {
      const run = await winfleet(['status', ...k]);
      assert.equal(run.code, 0, show(run));
      const lines = run.stdout.split('\n');
      assert.match(
        lines[0]!,
        /^Hosts: 1\/1 Ready {3}Windows nodes: 1\/1 Ready \(builds: 10\.0\.20348 ×1\)/,
      );
      assert.match(
        run.stdout,
        new RegExp(`\\n${name} +${name} +web +10\\.0\\.20348\\.\\d+ +\\S+ +Ready +True +OK\\n`),
      );
      assert.match(
        run.stdout,
        /\nPOOL +HOSTS +READY +UPDATED +UNAVAILABLE +ROLLOUT +IN PROGRESS +REMEDIATION\nweb +1 +1 +1 +0 /,
      );
      const json = await winfleet(['status', '-o', 'json', ...k]);
      const status = JSON.parse(json.stdout) as {
        summary: { hosts: unknown };
        pools: { name: string; hosts: number }[];
      };
      assert.deepEqual(status.summary.hosts, { total: 1, ready: 1 });
      assert.deepEqual(
        status.pools.map((p) => [p.name, p.hosts]),
        [['web', 1]],
      );
      if (artifacts)
        await writeFile(join(artifacts, 'status.txt'), `$ winfleet status\n${run.stdout}`);

      let paused = false;
      const custom = world.kc.makeApiClient(k8s.CustomObjectsApi);
      const watch = await winfleet(['status', '-w', '--watch-timeout', '10s', ...k], {
        timeoutMs: 60_000,
        onStdout: (text) => {
          if (paused || !text.includes('\nweb ')) return;
          paused = true;
          void custom.patchNamespacedCustomObject(
            {
              group: 'winfleet.io',
              version: 'v1alpha1',
              namespace: ns,
              plural: 'windowsnodepools',
              name: 'web',
              body: { spec: { paused: true } },
            },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          );
        },
      });
      assert.equal(watch.code, 0, show(watch));
      if (artifacts)
        await writeFile(
          join(artifacts, 'status-watch.txt'),
          `$ winfleet status -w --watch-timeout 10s\n${watch.stdout}`,
        );
      const prints = watch.stdout.split(/\n--- \S+\n/);
      assert.ok(prints.length >= 2, `printed again after the change: ${show(watch)}`);
      assert.doesNotMatch(prints[0]!, /paused|Paused/);
      assert.match(prints.at(-1)!, /\nweb +1 +1 +1 +0 +\S*(Paused|\(paused\))/);

      // Without --watch-timeout it runs until Ctrl-C, and ends cleanly on it.
      let interrupted = false;
      const untilSigint = await winfleet(['status', '-w', ...k], {
        timeoutMs: 60_000,
        onStdout: (text, child) => {
          if (interrupted || !text.includes('RUNTIMECLASS')) return;
          interrupted = true;
          child.kill('SIGINT');
        },
      });
      assert.equal(untilSigint.code, 0, show(untilSigint));
      assert.ok(interrupted);
    },
  );

  await t.test(
    'trust-key: shows the presented key, refuses a malformed one, sets the annotation',
    async () => {
      const none = await winfleet(['hosts', 'trust-key', name, ...k]);
      assert.equal(none.code, 1, show(none));
      assert.match(none.stderr, /no host key mismatch recorded/);

      const before = await readWindowsHost(world.kc, ns, name);
      const pinned = before.status!.hostKeyFingerprint!;
      const fresh = sim.faults.changeHostKey();
      // Without its Node the operator bootstraps the host again, over SSH: it meets the new key.
      await core.deleteNode({ name: before.status!.nodeName! });
      await waitFor(
        async () =>
          (await readWindowsHost(world.kc, ns, name)).status?.conditions?.some(
            (c) => c.type === ConditionType.Degraded && c.reason === ConditionReason.HostKeyChanged,
          ),
        { description: 'Degraded HostKeyChanged', timeoutMs: 60_000 },
      );
      const shown = await winfleet(['hosts', 'trust-key', name, ...k]);
      const degraded = await winfleet(['status', '-o', 'wide', ...k]);
      assert.match(degraded.stdout, /^Hosts: 0\/1 Ready/);
      assert.match(degraded.stdout, /Degraded \(HostKeyChanged\)/);
      if (artifacts)
        await writeFile(
          join(artifacts, 'status-degraded.txt'),
          `$ winfleet status -o wide\n${degraded.stdout}`,
        );
      assert.equal(shown.code, 1, show(shown));
      assert.match(
        shown.stdout,
        new RegExp(
          `^pinned: +${pinned.replaceAll('+', '\\+')}\npresented: ${fresh.replaceAll('+', '\\+')}\n`,
        ),
      );
      assert.ok(
        shown.stderr.includes(`winfleet hosts trust-key ${name} ${fresh}`),
        'it says what to run',
      );

      for (const bad of [
        fresh.slice(0, -1),
        `${fresh}=`,
        fresh.replace('SHA256:', 'sha256:'),
        `${fresh}\nx`,
      ]) {
        const refused = await winfleet(['hosts', 'trust-key', name, bad, ...k]);
        assert.equal(refused.code, 2, show(refused));
        assert.match(refused.stderr, /FINGERPRINT .* is not an OpenSSH SHA-256 fingerprint/);
      }
      assert.equal(
        (await readWindowsHost(world.kc, ns, name)).metadata.annotations?.[trustHostKeyAnnotation],
        undefined,
      );

      const trusted = await winfleet(['hosts', 'trust-key', name, fresh, ...k]);
      assert.equal(trusted.code, 0, show(trusted));
      if (artifacts)
        await writeFile(
          join(artifacts, 'trust-key.txt'),
          `$ winfleet hosts trust-key ${name}\n${shown.stdout}${shown.stderr}(exit ${shown.code})\n\n$ winfleet hosts trust-key ${name} ${fresh}\n${trusted.stdout}`,
        );
      assert.match(trusted.stdout, /annotated winfleet\.io\/trust-host-key=SHA256:/);
      await waitFor(
        async () => {
          const h = await readWindowsHost(world.kc, ns, name);
          return hostReady(h) && h.status?.hostKeyFingerprint === fresh;
        },
        { description: 'the host Ready again with the new key pinned', timeoutMs: 90_000 },
      );
    },
  );

  await t.test(
    'remove --wait: a stuck removal ends at --timeout with its condition message',
    async () => {
      // A host outside the operator's namespace, held by someone else's finalizer, with the
      // condition the operator writes when removal is blocked.
      const other = 'cli-stuck';
      await core.createNamespace({ body: { metadata: { name: other } } });
      const custom = world.kc.makeApiClient(k8s.CustomObjectsApi);
      const ref = {
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace: other,
        plural: 'windowshosts',
      };
      await custom.createNamespacedCustomObject({
        ...ref,
        body: {
          apiVersion: 'winfleet.io/v1alpha1',
          kind: 'WindowsHost',
          metadata: { name: 'stuck', finalizers: ['example.com/hold'] },
          spec: {
            address: '10.1.42.7',
            username: 'Administrator',
            sshKeySecretRef: { name: 'none' },
          },
        },
      });
      const blocked =
        'Could not deconfigure the host for 600s: annotate winfleet.io/skip-deconfigure=true to finish';
      await custom.patchNamespacedCustomObjectStatus(
        {
          ...ref,
          name: 'stuck',
          body: {
            status: {
              conditions: [
                {
                  type: 'Ready',
                  status: 'False',
                  reason: 'RemovalBlocked',
                  message: blocked,
                  lastTransitionTime: new Date().toISOString(),
                },
              ],
            },
          },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const run = await winfleet([
        'hosts',
        'remove',
        'stuck',
        '--wait',
        '--timeout',
        '3s',
        '--kubeconfig',
        kubeconfig,
        '-n',
        other,
      ]);
      assert.equal(run.code, 1, show(run));
      assert.ok(
        run.stderr.includes(`stuck is not removed yet: RemovalBlocked: ${blocked}`),
        show(run),
      );
      assert.match(run.stderr, /wait longer with --timeout/);
      await custom.patchNamespacedCustomObject(
        { ...ref, name: 'stuck', body: { metadata: { finalizers: null } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
  );

  await t.test('remove --wait: ends with the host and its Node gone', async () => {
    const nodeName = (await readWindowsHost(world.kc, ns, name)).status!.nodeName!;
    const run = await winfleet(['hosts', 'remove', name, '--wait', '--timeout', '2m', ...k], {
      timeoutMs: 180_000,
    });
    assert.equal(run.code, 0, show(run));
    if (artifacts)
      await writeFile(
        join(artifacts, 'hosts-remove.txt'),
        `$ winfleet hosts remove ${name} --wait\n${run.stdout}${run.stderr}`,
      );
    assert.match(run.stdout, new RegExp(`windowshost.winfleet.io/${name} deleted`));
    assert.match(run.stdout, new RegExp(`${name}: removed`));
    await assert.rejects(readWindowsHost(world.kc, ns, name), isNotFound);
    await assert.rejects(core.readNode({ name: nodeName }), isNotFound);
    const again = await winfleet(['hosts', 'remove', name, ...k]);
    assert.equal(again.code, 1, show(again));
    assert.match(again.stderr, /not found in namespace/);
    const ignored = await winfleet(['hosts', 'remove', name, '--ignore-not-found', ...k]);
    assert.equal(ignored.code, 0, show(ignored));
    const empty = await winfleet(['hosts', 'list', ...k]);
    assert.equal(empty.code, 0);
    assert.match(empty.stderr, /No WindowsHosts found in namespace/);
  });
});
