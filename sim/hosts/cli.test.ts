import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { remoteCommand } from '../../src/hostaccess/remote-scripts.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import type { SimulatedHostDescription } from './fleet.ts';
import { connect, exec, generateTestKey } from './ssh-test-client.ts';

const cli = fileURLToPath(new URL('./cli.ts', import.meta.url));

test('the CLI starts hosts, prints one JSON line each, and cleans up on Ctrl-C', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'simhost-cli-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const key = generateTestKey();
  const keyFile = join(dir, 'id.pub');
  await writeFile(keyFile, `${key.publicKey}\n`);
  const child = spawn(
    process.execPath,
    [
      cli,
      '--count',
      '2',
      '--releases',
      '2019,2025',
      '--authorized-key',
      keyFile,
      '--base-address',
      '127.0.0.120',
      '--port',
      '0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const drives = await waitFor(() => /drives in (\S+);/.exec(stderr)?.[1], {
    description: `the CLI to start (stderr: ${stderr})`,
    timeoutMs: 20_000,
  });
  const hosts = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as SimulatedHostDescription);
  assert.deepEqual(
    hosts.map((h) => [h.name, h.address, h.release, h.build]),
    [
      ['simwin-120', '127.0.0.120', '2019', '10.0.17763'],
      ['simwin-121', '127.0.0.121', '2025', '10.0.26100'],
    ],
  );
  const { client, hostKeyFingerprint } = await connect(hosts[1]!, { key });
  assert.equal(hostKeyFingerprint, hosts[1]!.hostKeyFingerprint);
  assert.equal((await exec(client, remoteCommand('host-facts', {}))).code, 0);
  client.end();
  assert.ok(existsSync(drives));

  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGINT');
  const code = await Promise.race([
    exited,
    new Promise((resolve) => setTimeout(() => resolve('timeout'), 10_000).unref()),
  ]);
  assert.equal(code, 0);
  assert.equal(existsSync(drives), false, 'the drives were removed');
});

test('the CLI refuses bad arguments with a message naming the flag', async () => {
  const child = spawn(
    process.execPath,
    [cli, '--count', '0', '--authorized-key', '/nonexistent.pub'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.notEqual(code, 0);
  assert.match(stderr, /--count must be a whole number from 1/);
});

test('with --userdata the CLI starts hosts without SSH that run it once', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'simhost-cli-userdata-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'userdata.txt');
  // Not a join script: the host refuses it, as a host fails a script it cannot run.
  await writeFile(file, '<powershell>Write-Host hello</powershell>\n');
  const child = spawn(
    process.execPath,
    [cli, '--userdata', file, '--base-address', '127.0.0.125'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  await waitFor(() => /user data ended with exit code 1/.test(stderr), {
    description: `the user data to end (stderr: ${stderr})`,
    timeoutMs: 20_000,
  });
  assert.deepEqual(JSON.parse(stdout.trim()), {
    name: 'simwin-125',
    address: '127.0.0.125',
    release: '2022',
    build: '10.0.20348',
    ssh: false,
  });
  assert.match(stderr, /the simulated host cannot run this user data/);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGINT');
  assert.equal(await exited, 0);
});
