import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { InvalidArgumentError } from 'commander';
import type { WindowsHost } from '../api/windows-host.ts';
import { cliExitCode, ExitCode } from './exit-codes.ts';
import { isHostAddress } from './fleet/host-spec.ts';
import {
  addressTargets,
  checkHostFlags,
  parseHostAddress,
  pullHostNote,
  windowsHostTargets,
} from './host-targets.ts';

const fp = `SHA256:${'B'.repeat(43)}`;

test('--host takes exactly the addresses spec.address takes (the CRD pattern), and a port 1-65535', () => {
  for (const address of [
    '10.0.0.5',
    'win-01.example.com',
    'a',
    '1.2.3.999', // all digits, not an IPv4 address: the CRD wants a letter in the last label
    '256.1.1.1',
    'host.123',
    '-win.example.com',
    'win_01',
    `${'a'.repeat(64)}.example.com`,
  ]) {
    let accepted = true;
    try {
      parseHostAddress(address);
    } catch (error) {
      assert.ok(error instanceof InvalidArgumentError);
      accepted = false;
    }
    assert.equal(accepted, isHostAddress(address), address);
  }
  assert.deepEqual(parseHostAddress('win1.example.com:2222'), {
    host: 'win1.example.com',
    port: 2222,
  });
  assert.deepEqual(parseHostAddress('10.0.0.5'), { host: '10.0.0.5', port: 22 });
  for (const bad of ['10.0.0.5:0', '10.0.0.5:65536', '10.0.0.5:022', '10.0.0.5:', 'a:b:22'])
    assert.throws(() => parseHostAddress(bad), InvalidArgumentError, bad);
});

test('checkHostFlags: key, user and host key only with --host; one --host-key for one --host', () => {
  const usage = (flags: Parameters<typeof checkHostFlags>[0], pattern: RegExp) =>
    assert.throws(
      () => checkHostFlags(flags),
      (error: unknown) =>
        cliExitCode(error) === ExitCode.usage && pattern.test((error as Error).message),
    );
  usage({ sshKey: 'id' }, /^--ssh-key: only with --host ADDRESS/);
  usage({ sshUser: 'me', hostKey: fp }, /^--ssh-user, --host-key: only with --host/);
  usage(
    { host: ['a', 'b'], sshKey: 'id', hostKey: fp },
    /^--host-key: one fingerprint for 2 hosts/,
  );
  checkHostFlags({});
  checkHostFlags({ host: ['a'], sshKey: 'id', hostKey: fp, sshUser: 'me' });
});

test('addressTargets returns the key it read (read once), pins --host-key; WindowsHost targets carry their pin', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-targets-'));
  try {
    const file = join(dir, 'id');
    const key = generateKeyPairSync('ed25519')
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    await writeFile(file, key, { mode: 0o600 });
    const { targets, privateKey } = await addressTargets({
      host: ['10.0.0.5:2222'],
      sshKey: file,
      hostKey: fp,
    });
    assert.equal(privateKey, key);
    assert.deepEqual(
      targets.map((t) => [t.name, t.address, t.pin]),
      [['10.0.0.5:2222', '10.0.0.5:2222', { fingerprint: fp, source: '--host-key' }]],
    );
    assert.deepEqual(await addressTargets({}), { targets: [] });
    await assert.rejects(
      addressTargets({ host: ['10.0.0.5'], sshKey: join(dir, 'missing') }),
      (error: unknown) =>
        cliExitCode(error) === ExitCode.usage &&
        /^--ssh-key: cannot read .*missing/.test((error as Error).message),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const host = (annotations: Record<string, string>, pinned?: string): WindowsHost =>
    ({
      apiVersion: 'winfleet.io/v1alpha1',
      kind: 'WindowsHost',
      metadata: { name: 'w', namespace: 'ns', annotations },
      spec: { address: '10.0.0.7', username: 'Administrator', sshKeySecretRef: { name: 's' } },
      ...(pinned ? { status: { hostKeyFingerprint: pinned } } : {}),
    }) as WindowsHost;
  const other = `SHA256:${'C'.repeat(43)}`;
  const [pinned, trusted, fresh] = windowsHostTargets(new k8s.KubeConfig(), [
    host({}, fp),
    host({ 'winfleet.io/trust-host-key': other }, fp),
    host({}),
  ]);
  assert.deepEqual(pinned!.pin, {
    fingerprint: fp,
    source: 'the key the operator pinned in status.hostKeyFingerprint',
  });
  assert.equal(trusted!.pin!.fingerprint, other);
  assert.equal(fresh!.pin, undefined);
});

test('Pull-mode WindowsHosts are never targets: winfleet does not reach them over SSH, and says so', () => {
  const pull = {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'web-1', namespace: 'ns' },
    spec: { mode: 'Pull', nodeName: 'web-1', pool: 'web' },
  } as WindowsHost;
  const ssh = {
    ...pull,
    metadata: { name: 'w', namespace: 'ns' },
    spec: { address: '10.0.0.7', username: 'Administrator', sshKeySecretRef: { name: 's' } },
  } as WindowsHost;
  const targets = windowsHostTargets(new k8s.KubeConfig(), [pull, ssh]);
  assert.deepEqual(
    targets.map((t) => t.name),
    ['ns/w'],
  );
  assert.match(
    pullHostNote(pull),
    /^WindowsHost ns\/web-1 is in Pull mode: not reached over SSH .*kubectl describe node web-1.*C:\\k\\winfleet\\join-status\.json/,
  );
});
