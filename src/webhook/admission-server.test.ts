import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { silentLogger } from '../log/logger.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { type AdmissionServer, createAdmissionServer } from './admission-server.ts';
import { createWebhookMetrics } from './metrics.ts';

let server: AdmissionServer;
let port: number;
let ca: string;
const metrics = createWebhookMetrics();

function post(
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  method = 'POST',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, ca, headers }, (res) => {
      let data = '';
      res.on('data', (c) => {
        data += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const review = (
  object: unknown = { metadata: { name: 'p' }, spec: {} },
  kind = { group: '', version: 'v1', kind: 'Pod' },
) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'u-1', kind, operation: 'CREATE', namespace: 'ns', object },
  });

before(async () => {
  const authority = await createCertificateAuthority('test-ca');
  ca = authority.certPem;
  const tls = await issueCertificate(authority, {
    commonName: 'webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  server = createAdmissionServer({
    ...{ cert: tls.certPem, key: tls.keyPem },
    log: silentLogger,
    metrics,
    routes: {
      '/mutate/pods': {
        name: 'mutate',
        handler: async () => ({ allowed: true, patch: [{ op: 'add', path: '/x', value: 1 }] }),
      },
      '/validate/pods': {
        name: 'validate',
        handler: async (r) => {
          if ((r.object as { metadata?: { name?: string } })?.metadata?.name === 'boom')
            throw new Error('bug');
          return { allowed: false, message: 'no', code: 422 };
        },
      },
    },
  });
  port = await server.listen(0);
});

after(() => server.close());

test('a well-formed review is answered with the patch, base64 JSONPatch', async () => {
  const res = await post('/mutate/pods', review());
  assert.equal(res.status, 200);
  const body = JSON.parse(res.body);
  assert.equal(body.response.uid, 'u-1');
  assert.equal(body.response.allowed, true);
  assert.equal(body.response.patchType, 'JSONPatch');
  assert.deepEqual(JSON.parse(Buffer.from(body.response.patch, 'base64').toString()), [
    { op: 'add', path: '/x', value: 1 },
  ]);
});

test('denials carry the code and message; a throwing handler allows with a warning', async () => {
  const denied = JSON.parse((await post('/validate/pods', review())).body).response;
  assert.equal(denied.allowed, false);
  assert.deepEqual(denied.status, { code: 422, reason: 'Forbidden', message: 'no' });
  const failed = JSON.parse(
    (await post('/validate/pods', review({ metadata: { name: 'boom' } }))).body,
  ).response;
  assert.equal(failed.allowed, true);
  assert.match(failed.warnings[0], /winfleet validate webhook error: bug/);
});

const hostile: [string, string | Buffer, number, RegExp][] = [
  ['truncated JSON', review().slice(0, 40), 400, /not JSON/],
  ['an array', '[]', 400, /must be a JSON object/],
  ['a string', '"AdmissionReview"', 400, /must be a JSON object/],
  [
    'the wrong kind',
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'Pod' }),
    400,
    /kind: expected "AdmissionReview", got "Pod"/,
  ],
  [
    'v1beta1',
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview' }),
    400,
    /apiVersion: expected "admission.k8s.io\/v1"/,
  ],
  [
    'no request',
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }),
    400,
    /request: missing/,
  ],
  [
    'no uid',
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { kind: {}, operation: 'CREATE' },
    }),
    400,
    /request\.uid/,
  ],
  ['a non-object pod', review('a pod'), 400, /request\.object: must be an object/],
  ['a huge body', Buffer.alloc(9 * 1024 * 1024, 0x20), 413, /over the .*-byte limit/],
];

for (const [name, body, status, message] of hostile) {
  test(`${name} gets HTTP ${status} and a clear error`, async () => {
    const res = await post('/mutate/pods', body);
    assert.equal(res.status, status);
    assert.match(JSON.parse(res.body).error, message);
  });
}

test('wrong content type, method and path are refused clearly', async () => {
  assert.equal(
    (await post('/mutate/pods', review(), { 'content-type': 'text/plain' })).status,
    415,
  );
  assert.equal((await post('/mutate/pods', '', {}, 'GET')).status, 405);
  assert.equal((await post('/nope', review())).status, 404);
});

test('a non-Pod kind reaches the handler untouched (handlers decide)', async () => {
  const res = await post(
    '/mutate/pods',
    review({ metadata: {} }, { group: 'apps', version: 'v1', kind: 'Deployment' }),
  );
  assert.equal(res.status, 200);
});

test('fuzz: random bodies never crash the server, which stays healthy', async (t) => {
  const seed = testSeed(t);
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.string({ maxLength: 200 }),
        fc.json({ maxDepth: 4 }),
        fc.json({ maxDepth: 3 }).map((j) => review(JSON.parse(j))),
        fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
        fc.constantFrom(
          review().replace('"CREATE"', '7'),
          review().replace('"u-1"', '""'),
          '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","kind":{"kind":1}}}',
        ),
      ),
      async (body) => {
        const res = await post('/validate/pods', body);
        assert.ok([200, 400].includes(res.status), `status ${res.status}`);
        if (res.status === 400) assert.ok(JSON.parse(res.body).error.length > 0);
      },
    ),
    { numRuns: 300, seed },
  );
  assert.equal((await post('/healthz', '', {}, 'GET')).body, 'ok');
  const text = await metrics.registry.metrics();
  assert.match(
    text,
    /winfleet_webhook_admissions_total\{webhook="validate",decision="bad_request"\} \d+/,
  );
});
