import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import {
  createImagePlatformResolver,
  windowsOsVersions,
} from '../../src/images/image-platforms.ts';
import { labCatalog, mcrCatalog, osVersions } from './catalog.ts';
import { startMirrorRegistry } from './mirror-registry.ts';
import { startTestRegistry } from './registry-process.ts';
import { seedImages } from './seed-images.ts';
import { startTokenServer } from './token-server.ts';

async function getJson(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

test('a seeded registry lists every catalog repository and tag', async (t) => {
  const registry = await startTestRegistry();
  t.after(() => registry.stop());
  const seeded = await seedImages(registry, labCatalog);
  assert.equal(seeded.length, labCatalog.length);
  const catalog = await getJson(`${registry.url}/v2/_catalog`);
  const repositories = [...new Set(labCatalog.map((e) => e.repository))].sort();
  assert.deepEqual((catalog.body as { repositories: string[] }).repositories, repositories);
  const tags = await getJson(`${registry.url}/v2/windows/servercore/tags/list`);
  assert.deepEqual(
    (tags.body as { tags: string[] }).tags.sort(),
    mcrCatalog
      .filter((e) => e.repository === 'windows/servercore')
      .map((e) => e.tag)
      .sort(),
  );
  // Seeding is idempotent: the same content gives the same digests.
  const again = await seedImages(registry, labCatalog);
  assert.deepEqual(
    again.map((s) => s.digest),
    seeded.map((s) => s.digest),
  );
});

test('an htpasswd registry refuses anonymous clients and accepts its user', async (t) => {
  const registry = await startTestRegistry({ auth: 'htpasswd' });
  t.after(() => registry.stop());
  assert.equal((await getJson(`${registry.url}/v2/`)).status, 401);
  const { username, password } = registry.credentials!;
  const basic = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  assert.equal((await getJson(`${registry.url}/v2/`, { authorization: basic })).status, 200);
  await seedImages(registry, mcrCatalog.slice(0, 1));
});

test('a token registry accepts tokens signed by the token server only', async (t) => {
  const tokens = await startTokenServer({ users: { bob: 'pw' } });
  const registry = await startTestRegistry({ auth: { token: tokens } });
  t.after(async () => {
    await registry.stop();
    await tokens.stop();
  });
  const challenge = await fetch(`${registry.url}/v2/`);
  assert.equal(challenge.status, 401);
  assert.match(
    challenge.headers.get('www-authenticate') ?? '',
    new RegExp(`^Bearer realm="${tokens.realm}",service="${tokens.service}"`),
  );
  const token = await getJson(`${tokens.realm}?service=${tokens.service}&scope=registry:catalog:*`);
  assert.equal(token.status, 200);
  const { token: jwt } = token.body as { token: string };
  assert.equal(
    (await getJson(`${registry.url}/v2/`, { authorization: `Bearer ${jwt}` })).status,
    200,
  );
  const [header, claims, signature] = jwt.split('.') as [string, string, string];
  const forged = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(claims, 'base64url').toString()), sub: 'mallory' })).toString('base64url')}.${signature}`;
  assert.equal(
    (await getJson(`${registry.url}/v2/`, { authorization: `Bearer ${forged}` })).status,
    401,
  );
  assert.equal(
    (
      await getJson(`${tokens.realm}?service=${tokens.service}`, {
        authorization: `Basic ${Buffer.from('bob:bad').toString('base64')}`,
      })
    ).status,
    401,
  );
  await seedImages(
    { ...registry, credentials: { username: 'bob', password: 'pw' } },
    mcrCatalog.slice(0, 1),
  );
});

test('stop ends the process group and removes the temp dir', async () => {
  const registry = await startTestRegistry();
  const pid = registry.component.pid!;
  await registry.stop();
  assert.equal(registry.component.exited, true);
  assert.throws(() => process.kill(-pid, 0), { code: 'ESRCH' });
  assert.equal(existsSync(registry.dir), false);
});

test('a missing binary fails with the hint to install the package', async () => {
  await assert.rejects(startTestRegistry({ binary: 'winfleet-no-such-registry' }), {
    name: 'ComponentStartError',
    message:
      /docker-registry did not become healthy: exited with code 127; the docker-registry command is missing: run hack\/ensure-packages\.sh/,
  });
});

test('the mirror registry stands in for mcr.microsoft.com and Docker Hub', async (t) => {
  const lab = await startMirrorRegistry();
  t.after(() => lab.stop());
  assert.deepEqual(Object.keys(lab.mirrors).sort(), ['docker.io', 'mcr.microsoft.com']);
  assert.deepEqual(lab.mirrors['mcr.microsoft.com'], [
    { endpoint: lab.registry.url, insecure: true },
  ]);
  const resolver = createImagePlatformResolver({ mirrors: lab.mirrors });
  t.after(() => resolver.close());
  const iis = await resolver.resolveImagePlatforms(
    'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019',
  );
  assert.equal(iis.status, 'resolved');
  assert.deepEqual(iis.status === 'resolved' && windowsOsVersions(iis.platforms), [
    osVersions.ltsc2019,
  ]);
});
