/**
 * Exit codes and messages of the command line without a cluster: the CLI is run as a child
 * process (real exit codes) against a kubeconfig whose server is a closed loopback port.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../sim/cluster/free-port.ts';
import { ExitCode } from './exit-codes.ts';
import { exitFor } from './program.ts';

const main = fileURLToPath(new URL('./main.ts', import.meta.url));

function winfleet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [main, ...args],
      { timeout: 60_000, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

let dir: string;
let kubeconfig: string;
let keyFile: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'winfleet-cli-'));
  const port = await freePort();
  kubeconfig = join(dir, 'closed.kubeconfig');
  await writeFile(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters:
- name: closed
  cluster:
    server: https://127.0.0.1:${port}
contexts:
- name: closed
  context: {cluster: closed, user: someone}
current-context: closed
users:
- name: someone
  user: {token: not-a-real-token}
`,
  );
  keyFile = join(dir, 'id_test');
  const { privateKey } = generateKeyPairSync('ed25519');
  await writeFile(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
});
after(() => rm(dir, { recursive: true, force: true }));

test('exitFor: a fetch error whose cause is ECONNREFUSED is an unreachable cluster (exit 3), naming --kubeconfig and --context', () => {
  const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), {
    code: 'ECONNREFUSED',
  });
  const fetchError = new TypeError('fetch failed', { cause });
  const { code, message } = exitFor(fetchError);
  assert.equal(code, ExitCode.cluster);
  assert.match(message!, /^cannot reach the API server \(connect ECONNREFUSED 127\.0\.0\.1:6443\)/);
  assert.match(message!, /--kubeconfig/);
  assert.match(message!, /--context/);
  // DNS failures too (EAI_AGAIN: the resolver did not answer), on the error or its cause.
  assert.equal(
    exitFor(
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('x'), { code: 'EAI_AGAIN' }),
      }),
    ).code,
    ExitCode.cluster,
  );
  // Anything else is a problem (1), its message as is.
  assert.deepEqual(exitFor(new TypeError('fetch failed', { cause: new Error('bad port') })), {
    code: ExitCode.problem,
    message: 'fetch failed',
  });
});

test('winfleet status against a closed port exits 3 and says the API server cannot be reached', async () => {
  const run = await winfleet(['status', '--kubeconfig', kubeconfig]);
  assert.equal(run.code, 3, run.stderr);
  assert.match(
    run.stderr,
    /^error: cannot reach the API server \(connect ECONNREFUSED 127\.0\.0\.1:\d+\);.*--kubeconfig FILE or --context NAME\n$/,
  );
});

test('check --payload: a bad payload is a usage error (exit 2) before any API call', async () => {
  const missing = await winfleet([
    'check',
    '--skip-hosts',
    '--kubeconfig',
    kubeconfig,
    '--payload',
    join(dir, 'nowhere'),
  ]);
  // Exit 2, not 3: the payload was read before the (closed) API server was asked anything.
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(
    missing.stderr,
    /^error: --payload .*nowhere: Cannot read .*nowhere\/payload\.json: ENOENT.*point --payload at a payload\n$/,
  );
  const payloadDir = join(dir, 'payload');
  await mkdir(payloadDir);
  await writeFile(join(payloadDir, 'payload.json'), JSON.stringify({ version: '1', files: [] }));
  const invalid = await winfleet([
    'check',
    '--skip-hosts',
    '--kubeconfig',
    kubeconfig,
    '--payload',
    payloadDir,
  ]);
  assert.equal(invalid.code, 2, invalid.stderr);
  assert.match(invalid.stderr, /--payload .*payload: Invalid .*payload\.json/);
  assert.match(invalid.stderr, /missing required field "kubernetesVersion"/);
  const skipped = await winfleet([
    'check',
    '--skip-cluster',
    '--host',
    '10.0.0.5',
    '--ssh-key',
    keyFile,
    '--payload',
    payloadDir,
  ]);
  assert.equal(skipped.code, 2, skipped.stderr);
  assert.match(skipped.stderr, /--payload: .*--skip-cluster/);
});

test('check --probe-namespace takes only a namespace name (it goes into a URL path)', async () => {
  const run = await winfleet([
    'check',
    '--skip-hosts',
    '--kubeconfig',
    kubeconfig,
    '--probe-namespace',
    '../nodes',
  ]);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /--probe-namespace.*"\.\.\/nodes" is not a namespace name/);
});

test('check --network-mode takes only a mode, --operator-namespace only a namespace name', async () => {
  const mode = await winfleet([
    'check',
    '--skip-hosts',
    '--kubeconfig',
    kubeconfig,
    '--network-mode',
    'flannel',
  ]);
  assert.equal(mode.code, 2, mode.stderr);
  assert.match(
    mode.stderr,
    /--network-mode <mode>' argument 'flannel' is invalid\. Allowed choices are auto, flannel-vxlan, flannel-host-gw, external, ovn-hybrid, routed/,
  );
  const ns = await winfleet([
    'check',
    '--skip-hosts',
    '--kubeconfig',
    kubeconfig,
    '--operator-namespace',
    'A_B',
  ]);
  assert.equal(ns.code, 2, ns.stderr);
  assert.match(ns.stderr, /--operator-namespace.*"A_B" is not a namespace name/);
});

test('--ssh-key, --ssh-user, --host-key without --host are usage errors (exit 2) naming the flag, in check and diagnose', async () => {
  for (const command of ['check', 'diagnose']) {
    const key = await winfleet([
      command,
      '--kubeconfig',
      kubeconfig,
      '--ssh-key',
      join(dir, 'no-such-key'),
    ]);
    assert.equal(key.code, 2, `${command}: ${key.stderr}`);
    assert.match(
      key.stderr,
      /^error: --ssh-key: only with --host ADDRESS.*add --host or drop it\n$/,
    );
    assert.doesNotMatch(key.stderr, /ENOENT/);
    const user = await winfleet([
      command,
      '--kubeconfig',
      kubeconfig,
      '--ssh-user',
      'admin',
      '--host-key',
      `SHA256:${'A'.repeat(43)}`,
    ]);
    assert.equal(user.code, 2, `${command}: ${user.stderr}`);
    assert.match(user.stderr, /^error: --ssh-user, --host-key: only with --host ADDRESS/);
    const twoHosts = await winfleet([
      command,
      '--kubeconfig',
      kubeconfig,
      '--host',
      '10.0.0.5',
      '--host',
      '10.0.0.6',
      '--ssh-key',
      keyFile,
      '--host-key',
      `SHA256:${'A'.repeat(43)}`,
    ]);
    assert.equal(twoHosts.code, 2, `${command}: ${twoHosts.stderr}`);
    assert.match(
      twoHosts.stderr,
      /^error: --host-key: one fingerprint for 2 hosts \(10\.0\.0\.5, 10\.0\.0\.6\)/,
    );
  }
});
