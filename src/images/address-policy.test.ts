// The address policy from the attacker's side: a pod creator names images (and a registry it
// controls answers with redirects and token realms) aiming at loopback, link-local, private and
// cluster addresses. 127.0.0.77 stands in for 169.254.169.254 and cluster Services: a loopback
// address no configuration names, where a listener counts the connections it receives.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { type AddressPolicy, createAddressPolicy } from './address-policy.ts';
import { createImagePlatformResolver } from './image-platforms.ts';
import { RegistryClient } from './registry-client.ts';

const closers: (() => void)[] = [];
after(() => {
  for (const close of closers) close();
});

/** An HTTP(S) server on `host` that counts connections and answers with `handler`. */
async function listener(
  host: string,
  handler: RequestListener = (_req, res) => {
    res.writeHead(404);
    res.end();
  },
  tls?: { key: string; cert: string },
): Promise<{ origin: string; port: number; connections: () => number }> {
  const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  let connections = 0;
  server.on(tls ? 'secureConnection' : 'connection', () => connections++);
  server.listen(0, host);
  await once(server, 'listening');
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `${tls ? 'https' : 'http'}://${host}:${port}`,
    port,
    connections: () => connections,
  };
}

test('forbidden ranges are recognised in every form an address can be written', () => {
  const policy = createAddressPolicy({ blockedCidrs: ['10.96.0.0/12', '10.244.0.0/16'] });
  const forbidden = [
    '127.0.0.1',
    '127.0.0.77',
    '169.254.169.254',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '0:0:0:0:0:ffff:169.254.169.254',
    '::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '2002:a9fe:a9fe::1',
  ];
  for (const address of forbidden)
    assert.ok(policy.forbiddenAddress(address), `${address} should be forbidden`);
  for (const address of [
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
  ])
    assert.equal(policy.forbiddenAddress(address), undefined, `${address} should be allowed`);
  // The service CIDR from the configuration is in the default 10/8 anyway; a public one is not.
  const custom = createAddressPolicy({ blockedCidrs: ['203.0.113.0/24'] });
  assert.match(custom.forbiddenAddress('203.0.113.9') ?? '', /cluster range 203\.0\.113\.0\/24/);
  assert.throws(() => createAddressPolicy({ blockedCidrs: ['10.96.0.0'] }), /Cannot parse CIDR/);
});

test('URL hosts in decimal, octal, hex and IPv6 forms normalise to the address they reach', () => {
  const policy = createAddressPolicy();
  for (const url of [
    'http://2130706433/',
    'http://0x7f.1/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://0xa9fea9fe/',
  ]) {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    assert.ok(policy.forbiddenAddress(host), `${url} (host ${host}) should be forbidden`);
  }
});

test('trust: configured origins exactly; realms and redirects only on a configured host, reached from a trusted URL', () => {
  const policy = createAddressPolicy({ trustedOrigins: ['http://127.0.0.1:5000'] });
  assert.equal(policy.isTrusted(new URL('http://127.0.0.1:5000/v2/'), false), true);
  // The same host on another port is not a configured registry...
  assert.equal(policy.isTrusted(new URL('http://127.0.0.1:6000/v2/'), false), false);
  assert.equal(policy.isTrusted(new URL('https://127.0.0.1:5000/v2/'), false), false);
  // ...but it may serve the configured registry's token realm.
  assert.equal(policy.isTrusted(new URL('http://127.0.0.1:6000/token'), true), true);
  assert.equal(policy.isTrusted(new URL('http://169.254.169.254/token'), true), false);
});

test('a pod naming an image on an unconfigured loopback address causes no connection', async () => {
  const target = await listener('127.0.0.77');
  const configured = await listener('127.0.0.1');
  // Only the mirror is configured; the same host on another port is not.
  const open = createImagePlatformResolver({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: configured.origin, insecure: true }] },
  });
  closers.push(() => open.close());
  for (const image of [
    `127.0.0.77:${target.port}/app:v1`,
    `2130706509:${target.port}/app:v1`,
    `localhost:${configured.port}/app:v1`,
  ]) {
    const result = await open.resolveImagePlatforms(image);
    assert.equal(result.status, 'unknown', image);
    assert.ok(result.status === 'unknown');
    assert.equal(result.reason, 'blocked-address', `${image}: ${result.message}`);
    assert.match(
      result.message,
      image.startsWith('localhost') ? /resolves to/ : /is not contacted/,
    );
  }
  assert.equal(target.connections(), 0);
  assert.equal(configured.connections(), 0);
});

test('a configured registry may redirect only within configured hosts; never to a private one', async () => {
  const target = await listener('127.0.0.77');
  const mirror = await listener('127.0.0.1', (_req, res) => {
    res.writeHead(302, { location: `http://127.0.0.77:${target.port}/v2/app/manifests/v1` });
    res.end();
  });
  const resolver = createImagePlatformResolver({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: mirror.origin, insecure: true }] },
    fallbackToUpstream: false,
  });
  closers.push(() => resolver.close());
  const result = await resolver.resolveImagePlatforms('mcr.microsoft.com/app:v1');
  assert.ok(result.status === 'unknown');
  assert.equal(result.reason, 'blocked-address', result.message);
  assert.equal(mirror.connections() > 0, true);
  assert.equal(target.connections(), 0);
});

test('a token realm on a forbidden address is refused without connecting', async () => {
  const target = await listener('127.0.0.77');
  for (const realm of [`http://127.0.0.77:${target.port}/token`, 'http://169.254.169.254/token']) {
    const registry = await listener('127.0.0.1', (_req, res) => {
      res.writeHead(401, { 'www-authenticate': `Bearer realm="${realm}",service="x"` });
      res.end();
    });
    const resolver = createImagePlatformResolver({
      mirrors: { 'mcr.microsoft.com': [{ endpoint: registry.origin, insecure: true }] },
      fallbackToUpstream: false,
      lookupTimeoutMs: 4000,
    });
    closers.push(() => resolver.close());
    const result = await resolver.resolveImagePlatforms('mcr.microsoft.com/app:v1');
    assert.ok(result.status === 'unknown');
    assert.equal(result.reason, 'blocked-address', result.message);
    assert.equal(registry.connections() > 0, true);
  }
  assert.equal(target.connections(), 0);
});

// A policy where 127.0.0.1 counts as a public address, so an unconfigured "attacker registry"
// can be reached at all; 127.0.0.77 is the forbidden stand-in.
const attackerIsPublic: AddressPolicy = {
  forbiddenAddress: (a) => (a === '127.0.0.77' ? 'a forbidden stand-in' : undefined),
  isTrusted: () => false,
};

test('an unconfigured registry cannot send the lookup to a forbidden token realm or redirect', async () => {
  const target = await listener('127.0.0.77');
  const attacker = await listener('127.0.0.1', (req, res) => {
    if (req.url?.startsWith('/v2/realm/')) {
      res.writeHead(401, {
        'www-authenticate': `Bearer realm="http://127.0.0.77:${target.port}/token"`,
      });
    } else {
      res.writeHead(307, { location: `http://127.0.0.77:${target.port}/v2/` });
    }
    res.end();
  });
  const client = new RegistryClient({ addressPolicy: attackerIsPublic });
  closers.push(() => client.close());
  for (const repository of ['realm/app', 'redirect/app']) {
    await assert.rejects(
      client.fetchManifest({ endpoint: { origin: attacker.origin }, repository }, 'v1'),
      { code: 'WF_REGISTRY_LOOKUP', details: { reason: 'blocked-address' } },
    );
  }
  assert.equal(attacker.connections() > 0, true);
  assert.equal(target.connections(), 0);
});

test('HTTPS never redirects to plain HTTP; redirects are capped at 5', async () => {
  const ca = await createCertificateAuthority('winfleet test CA');
  const serving = await issueCertificate(ca, {
    commonName: 'test',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const plain = await listener('127.0.0.1');
  let hops = 0;
  const secure = await listener(
    '127.0.0.1',
    (req, res) => {
      if (req.url?.startsWith('/v2/down/')) {
        res.writeHead(302, { location: `${plain.origin}/v2/down/manifests/v1` });
      } else {
        hops++;
        res.writeHead(302, { location: `/v2/loop/manifests/v${hops}` });
      }
      res.end();
    },
    { key: serving.keyPem, cert: serving.certPem },
  );
  const client = new RegistryClient({ addressPolicy: attackerIsPublic });
  closers.push(() => client.close());
  const endpoint = { origin: secure.origin, tls: { caBundle: ca.certPem } };
  await assert.rejects(client.fetchManifest({ endpoint, repository: 'down' }, 'v1'), {
    details: { reason: 'registry-error' },
    message: /redirected from HTTPS to plain HTTP/,
  });
  assert.equal(plain.connections(), 0);
  await assert.rejects(client.fetchManifest({ endpoint, repository: 'loop' }, 'v1'), {
    message: /redirected more than 5 times/,
  });
  assert.equal(hops, 6);
});

test('error bodies never reach the lookup message (admission warnings quote it)', async () => {
  const secret = 'internal-metadata-token-0123456789';
  const registry = await listener('127.0.0.1', (req, res) => {
    const status = req.url?.includes('forbidden') ? 403 : req.url?.includes('boom') ? 500 : 404;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ errors: [{ code: 'DENIED', message: secret }], secret }));
  });
  const resolver = createImagePlatformResolver({
    mirrors: { 'mcr.microsoft.com': [{ endpoint: registry.origin, insecure: true }] },
    fallbackToUpstream: false,
  });
  closers.push(() => resolver.close());
  for (const image of ['missing', 'forbidden', 'boom']) {
    const result = await resolver.resolveImagePlatforms(`mcr.microsoft.com/${image}:v1`);
    assert.ok(result.status === 'unknown');
    assert.match(result.message, /HTTP (404|403|500)/);
    assert.ok(!result.message.includes(secret), result.message);
    assert.ok(!result.message.includes('DENIED'), result.message);
  }
});
