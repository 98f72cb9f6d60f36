import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
} from '../pki/certificates.ts';
import { caPublicKeyPin, parseCertificateBundle } from './ca-pin.ts';
import { discoverCluster } from './discovery.ts';

/**
 * The API server here is the attacker's: a bare HTTPS server whose certificate and answers each
 * test sets, to show what the joining host accepts and refuses. The real API server and its
 * bootstrapsigner are in join.e2e.test.ts.
 */
const token = { id: 'abcdef', secret: '0123456789abcdef' };
let caA: CertificateAuthority;
let caB: CertificateAuthority;
let serving: { a: { certPem: string; keyPem: string }; b: { certPem: string; keyPem: string } };

function kubeconfigFor(ca: CertificateAuthority, server: string): string {
  return [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${Buffer.from(ca.certPem).toString('base64')}`,
    `    server: ${server}`,
    '  name: ""',
    'kind: Config',
    '',
  ].join('\n');
}

function sign(kubeconfig: string, secret = token.secret): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', kid: token.id })).toString('base64url');
  const mac = createHmac('sha256', secret)
    .update(`${header}.${Buffer.from(kubeconfig).toString('base64url')}`)
    .digest('base64url');
  return `${header}..${mac}`;
}

interface Attacker {
  url: string;
  /** The ConfigMap data to answer with, per request (0-based), or a status code. */
  answer: (index: number) => Record<string, string> | number;
  /** The certificate presented for connections after request `index`. */
  requests: number;
  server: Server;
  close(): Promise<void>;
}

async function startServer(answer: Attacker['answer'], switchToB?: number): Promise<Attacker> {
  const attacker = { answer, requests: 0 } as Attacker;
  const server = createServer({ cert: serving.a.certPem, key: serving.a.keyPem }, (req, res) => {
    const index = attacker.requests++;
    if (switchToB !== undefined && index + 1 >= switchToB) {
      server.setSecureContext({ cert: serving.b.certPem, key: serving.b.keyPem });
    }
    if (req.url !== '/api/v1/namespaces/kube-public/configmaps/cluster-info') {
      res.writeHead(404).end();
      return;
    }
    const result = attacker.answer(index);
    if (typeof result === 'number') {
      res.writeHead(result).end('{}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', data: result }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  attacker.server = server;
  attacker.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  attacker.close = () => new Promise((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  return attacker;
}

before(async () => {
  caA = await createCertificateAuthority('cluster-ca-a');
  caB = await createCertificateAuthority('attacker-ca-b');
  const request = {
    commonName: 'kube-apiserver',
    ipAddresses: ['127.0.0.1'],
    usage: 'server' as const,
  };
  serving = { a: await issueCertificate(caA, request), b: await issueCertificate(caB, request) };
});

const servers: Attacker[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(answer: Attacker['answer'], switchToB?: number): Promise<Attacker> {
  const attacker = await startServer(answer, switchToB);
  servers.push(attacker);
  return attacker;
}

const pinOf = (ca: CertificateAuthority) => caPublicKeyPin(parseCertificateBundle(ca.certPem)[0]!);
const fast = { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 5 };

test('an honest cluster-info is read twice and its CA pinned', async () => {
  const kubeconfig = kubeconfigFor(caA, 'https://127.0.0.1:6443');
  const attacker = await serve(() => ({ kubeconfig, 'jws-kubeconfig-abcdef': sign(kubeconfig) }));
  const trusted = await discoverCluster({ apiServer: attacker.url, token, caCertHash: pinOf(caA) });
  assert.equal(trusted.caPem.trim(), caA.certPem.trim());
  assert.equal(trusted.server, 'https://127.0.0.1:6443');
  assert.equal(attacker.requests, 2, 'the first read without trust, the second through the pin');
});

test('attacker: after pinning, a server presenting another CA’s certificate is refused', async () => {
  const kubeconfig = kubeconfigFor(caA, 'https://127.0.0.1:6443');
  // The first answer is honest; every later connection gets the attacker's certificate.
  const attacker = await serve(
    () => ({ kubeconfig, 'jws-kubeconfig-abcdef': sign(kubeconfig) }),
    1,
  );
  await assert.rejects(
    discoverCluster({ apiServer: attacker.url, token, caCertHash: pinOf(caA), backoff: fast }),
    (error) => {
      assert.ok(hasCode(error, 'WF_JOIN_REFUSED'), String(error));
      assert.match((error as Error).message, /not vouched for by the pinned cluster CA/);
      return true;
    },
  );
});

test('attacker: a second read with another kubeconfig (also signed) is refused', async () => {
  const first = kubeconfigFor(caA, 'https://127.0.0.1:6443');
  const second = kubeconfigFor(caA, 'https://127.0.0.99:6443');
  const attacker = await serve((i) => {
    const kubeconfig = i === 0 ? first : second;
    return { kubeconfig, 'jws-kubeconfig-abcdef': sign(kubeconfig) };
  });
  await assert.rejects(
    discoverCluster({ apiServer: attacker.url, token, caCertHash: pinOf(caA), backoff: fast }),
    /read over the pinned CA differs from the first read/,
  );
});

test('attacker: the server’s own CA, signed with a leaked token, fails the pin at once', async () => {
  const kubeconfig = kubeconfigFor(caB, 'https://127.0.0.1:6443');
  const attacker = await serve(() => ({ kubeconfig, 'jws-kubeconfig-abcdef': sign(kubeconfig) }));
  await assert.rejects(
    discoverCluster({ apiServer: attacker.url, token, caCertHash: pinOf(caA), backoff: fast }),
    (error) =>
      hasCode(error, 'WF_JOIN_REFUSED') && /does not match --ca-cert-hash/.test(String(error)),
  );
  assert.equal(attacker.requests, 1, 'a refusal is not retried');
});

test('waits while cluster-info is missing or unsigned, saying why, then pins', async () => {
  const kubeconfig = kubeconfigFor(caA, 'https://127.0.0.1:6443');
  const attacker = await serve((i): Record<string, string> | number =>
    i === 0
      ? 404
      : i === 1
        ? { kubeconfig }
        : { kubeconfig, 'jws-kubeconfig-abcdef': sign(kubeconfig) },
  );
  const reasons: string[] = [];
  const trusted = await discoverCluster({
    apiServer: attacker.url,
    token,
    caCertHash: pinOf(caA),
    backoff: fast,
    onRetry: ({ error }) => {
      reasons.push((error as Error).message);
    },
  });
  assert.equal(trusted.caPem.trim(), caA.certPem.trim());
  assert.equal(reasons.length, 2);
  assert.match(reasons[0]!, /answered 404: the cluster has no kube-public\/cluster-info/);
  assert.match(reasons[1]!, /has no signature for token id "abcdef"/);
  for (const reason of reasons) assert.ok(!reason.includes(token.secret));
});

test('gives up after its bounds, and an abort ends the wait at once', async () => {
  const attacker = await serve(() => 403);
  await assert.rejects(
    discoverCluster({ apiServer: attacker.url, token, caCertHash: pinOf(caA), backoff: fast }),
    (error) => hasCode(error, 'WF_JOIN_DISCOVERY_PENDING') && /answered 403/.test(String(error)),
  );
  assert.equal(attacker.requests, 5);
  const controller = new AbortController();
  const started = Date.now();
  const pending = discoverCluster({
    apiServer: attacker.url,
    token,
    caCertHash: pinOf(caA),
    signal: controller.signal,
    backoff: { initialDelayMs: 60_000, maxAttempts: 5 },
  });
  setTimeout(() => controller.abort(new Error('stop')), 100);
  await assert.rejects(pending, /stop/);
  assert.ok(Date.now() - started < 10_000);
});

test('an unreachable API server is retried, then reported as unreachable', async () => {
  const attacker = await serve(() => 500);
  const url = attacker.url;
  await attacker.close();
  servers.splice(servers.indexOf(attacker), 1);
  await assert.rejects(
    discoverCluster({
      apiServer: url,
      token,
      caCertHash: pinOf(caA),
      backoff: { ...fast, maxAttempts: 2 },
    }),
    (error) => hasCode(error, 'WF_CLUSTER_UNREACHABLE') && /ECONNREFUSED/.test(String(error)),
  );
});
