import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  parseHostsToml,
  pullUrls,
  resolveRegistryHosts,
} from '../../sim/hosts/containerd-registry-hosts.ts';
import { SimFileSystem } from '../../sim/hosts/file-system.ts';
import {
  containerdHostDirectory,
  containerdRegistryHost,
  containerdRegistryHosts,
} from './containerd-hosts.ts';
import { parseImageReference } from './image-reference.ts';
import {
  compileRegistryRouting,
  lookupTargets,
  registryRoutingProblems,
} from './registry-mirrors.ts';

const certsD = 'C:\\k\\containerd\\certs.d';

async function simFs(t: { after(fn: () => Promise<void>): void }): Promise<SimFileSystem> {
  const root = await mkdtemp(join(tmpdir(), 'winfleet-certsd-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  return SimFileSystem.create({ root });
}

/** Writes each registry directory as the agent does, and returns what containerd makes of it. */
async function written(fs: SimFileSystem, routing: ReturnType<typeof compileRegistryRouting>) {
  for (const dir of containerdRegistryHosts(routing)) {
    await fs.mkdir(`${certsD}\\${dir.directory}`, { recursive: true });
    for (const [name, content] of Object.entries(dir.files))
      await fs.writeFileAtomic(`${certsD}\\${dir.directory}\\${name}`, content);
  }
}

/** The URLs the webhook looks `image` up at, as containerd URLs are written. */
function webhookUrls(image: string, routing: ReturnType<typeof compileRegistryRouting>) {
  const ref = parseImageReference(image);
  return lookupTargets(ref, routing).map((t) => `${t.endpoint.origin}/v2/${t.repository}`);
}

test('a node pulls from the mirrors the webhook looks up, in the same order', async (t) => {
  const fs = await simFs(t);
  const routing = compileRegistryRouting({
    mirrors: {
      'mcr.microsoft.com': [
        { endpoint: 'http://127.0.0.1:5000', insecure: true },
        { endpoint: 'https://mirror.corp.example', pathPrefix: 'mcr' },
      ],
      'docker.io': [{ endpoint: 'https://hub-cache.corp.example', insecure: true }],
    },
    fallbackToUpstream: true,
  });
  await written(fs, routing);
  for (const image of [
    'mcr.microsoft.com/windows/nanoserver:ltsc2022',
    'docker.io/library/busybox:1.36',
  ]) {
    const ref = parseImageReference(image);
    const node = await resolveRegistryHosts(fs, certsD, ref.registry);
    assert.equal(node.decodeError, undefined);
    assert.deepEqual(pullUrls(node, ref.repository), webhookUrls(image, routing), image);
  }
  const mcr = await resolveRegistryHosts(fs, certsD, 'mcr.microsoft.com');
  assert.deepEqual(pullUrls(mcr, 'windows/nanoserver'), [
    'http://127.0.0.1:5000/v2/windows/nanoserver',
    'https://mirror.corp.example/v2/mcr/windows/nanoserver',
    'https://mcr.microsoft.com/v2/windows/nanoserver',
  ]);
  const hub = await resolveRegistryHosts(fs, certsD, 'docker.io');
  assert.equal(hub.hosts[0]?.skipVerify, true, 'insecure https mirror: skip_verify');
});

test('without fallback to the registry, containerd never pulls from it either', async (t) => {
  const fs = await simFs(t);
  const routing = compileRegistryRouting({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: 'https://mirror.corp.example' }] },
    fallbackToUpstream: false,
  });
  await written(fs, routing);
  const node = await resolveRegistryHosts(fs, certsD, 'mcr.microsoft.com');
  assert.deepEqual(pullUrls(node, 'windows/servercore'), [
    'https://mirror.corp.example/v2/windows/servercore',
  ]);
  assert.deepEqual(
    pullUrls(node, 'windows/servercore'),
    webhookUrls('mcr.microsoft.com/windows/servercore:ltsc2022', routing),
  );
});

test("a mirror's own CA is written beside hosts.toml and named by ca", async (t) => {
  const fs = await simFs(t);
  const pem = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
  const routing = compileRegistryRouting({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: 'https://mirror.corp.example', caBundle: pem }] },
  });
  const dir = containerdRegistryHost('mcr.microsoft.com', routing);
  assert.equal(dir.files['mirror-0-ca.crt'], pem);
  await written(fs, routing);
  const node = await resolveRegistryHosts(fs, certsD, 'mcr.microsoft.com');
  assert.deepEqual(node.hosts[0]?.caCerts, [`${certsD}\\mcr.microsoft.com\\mirror-0-ca.crt`]);
});

test('a registry with a port gets containerd\'s "host_port_" directory', () => {
  assert.equal(containerdHostDirectory('127.0.0.1:5000'), '127.0.0.1_5000_');
  assert.equal(containerdHostDirectory('mcr.microsoft.com'), 'mcr.microsoft.com');
});

test('attacker side: a crafted registry host cannot name a directory outside certs.d', () => {
  for (const host of [
    '..',
    '../../windows',
    '..\\..\\Windows\\System32',
    'c:',
    'a/b',
    'x..y',
    '',
  ]) {
    assert.throws(() => containerdHostDirectory(host), /is not a registry host/, host);
  }
  const problems = registryRoutingProblems(
    { mirrors: { '..\\..\\Windows': [{ endpoint: 'https://m.example' }] } },
    'images.',
  );
  assert.equal(problems.length, 1);
  assert.match(
    problems[0]!,
    /^images\.mirrors\["\.\.\\\.\.\\Windows"\]: .* is not a registry host/,
  );
});

test('the simulated containerd ignores a malformed hosts.toml and goes to the registry, as containerd does', async (t) => {
  const fs = await simFs(t);
  const dir = `${certsD}\\mcr.microsoft.com`;
  await fs.mkdir(dir, { recursive: true });
  for (const bad of [
    'server = "https://mcr.microsoft.com"\n[host."http://m:5000"\n',
    '[host."http://m:5000"]\n  capabilities = ["pull", "fly"]\n',
    '[host."http://m:5000"]\n  skip_verify = "yes"\n',
    '[host."http://m:5000"]\n  ca = 42\n',
  ]) {
    await fs.writeFileAtomic(`${dir}\\hosts.toml`, bad);
    const node = await resolveRegistryHosts(fs, certsD, 'mcr.microsoft.com');
    assert.match(node.decodeError ?? '', /failed to decode .*hosts\.toml/, bad);
    assert.deepEqual(pullUrls(node, 'windows/nanoserver'), [
      'https://mcr.microsoft.com/v2/windows/nanoserver',
    ]);
  }
  assert.throws(
    () => parseHostsToml('[host."x"]\ncapabilities = ["fly"]\n', dir),
    /unknown capability fly/,
  );
});
