import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { joinKubeConfig, joinReadError, readJoinMaterials } from './join-reads.ts';

const token = { id: 'abcdef', secret: '0123456789abcdef' };

/**
 * The API server here is an impostor: after discovery pinned the cluster CA, a server with a
 * certificate from another CA must get no request from the join (not even its token).
 */
test('attacker: the token-authenticated reads trust only the pinned CA', async (t) => {
  const pinned = await createCertificateAuthority('cluster-ca');
  const other = await createCertificateAuthority('impostor-ca');
  const serving = await issueCertificate(other, {
    commonName: 'kube-apiserver',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  let requests = 0;
  const server = createServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{}}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await assert.rejects(
    readJoinMaterials(joinKubeConfig(url, pinned.certPem, token), 'winfleet-system'),
    (error) => {
      assert.ok(hasCode(error, 'WF_JOIN_REFUSED'), String(error));
      assert.match((error as Error).message, /not vouched for by the pinned cluster CA/);
      assert.ok(!(error as Error).message.includes(token.secret));
      return true;
    },
  );
  assert.equal(requests, 0, 'no request reached the impostor');
});

test('failed reads say whether waiting helps and what to fix', () => {
  const status = (code: number) => joinReadError('ConfigMap ns/winfleet-join', { code });
  assert.ok(hasCode(status(401), 'WF_TERMINAL'));
  assert.match(
    status(401).message,
    /does not accept the join token \(401\): it expired, was used up or revoked/,
  );
  assert.match(status(403).message, /system:bootstrappers:winfleet/);
  assert.ok(hasCode(status(404), 'WF_JOIN_DISCOVERY_PENDING'));
  assert.ok(hasCode(status(503), 'WF_CLUSTER_UNREACHABLE'));
});
