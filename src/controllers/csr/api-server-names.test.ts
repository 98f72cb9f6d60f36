import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createServer } from 'node:tls';
import { createCertificateAuthority, issueCertificate } from '../../pki/certificates.ts';
import {
  apiServerNameSource,
  apiServerNamesOf,
  certificateSans,
  clusterInfoServer,
  presentedSans,
  urlHost,
} from './api-server-names.ts';

test('the hosts of API server URLs, canonical', () => {
  assert.equal(urlHost('https://K8s-API.Corp.Example:6443'), 'k8s-api.corp.example');
  assert.equal(urlHost('https://[2001:DB8::0:1]:6443/'), '2001:db8::1');
  assert.equal(urlHost('https://10.1.0.100'), '10.1.0.100');
  assert.equal(urlHost('not a url'), undefined);
});

test('cluster-info’s server, as kubeadm writes it', () => {
  const kubeconfig = [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    '    certificate-authority-data: AAAA',
    '    server: https://k8s-api.corp.example:6443',
    "  name: ''",
    'kind: Config',
  ].join('\n');
  assert.equal(clusterInfoServer({ data: { kubeconfig } }), 'https://k8s-api.corp.example:6443');
  assert.equal(clusterInfoServer({ data: { kubeconfig: ': not yaml: [' } }), undefined);
  assert.equal(clusterInfoServer(undefined), undefined);
});

test('SANs as Node prints them; a wildcard matches one label', () => {
  assert.deepEqual(
    certificateSans({
      subjectaltname:
        'DNS:Kubernetes, DNS:*.api.corp.example, IP Address:10.96.0.1, IP Address:2001:DB8:0:0:0:0:0:1, URI:spiffe://x',
    }),
    ['kubernetes', '*.api.corp.example', '10.96.0.1', '2001:db8::1'],
  );
  const names = apiServerNamesOf({ '*.api.corp.example': 'cert', '10.96.0.1': 'cert' });
  assert.equal(apiServerNameSource(names, 'east.api.corp.example'), 'cert');
  assert.equal(apiServerNameSource(names, 'a.east.api.corp.example'), undefined);
  assert.equal(apiServerNameSource(names, 'api.corp.example'), undefined);
  assert.equal(apiServerNameSource(names, '10.96.0.1'), 'cert');
});

test('the API server’s certificate is read in a verified handshake, and only then', async (t) => {
  const ca = await createCertificateAuthority('test-cluster-ca');
  const other = await createCertificateAuthority('someone-else');
  const serve = async (pair: { certPem: string; keyPem: string }) => {
    const server = createServer({ cert: pair.certPem, key: pair.keyPem }, (socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const apiserver = await serve(
    await issueCertificate(ca, {
      commonName: 'kube-apiserver',
      dnsNames: ['k8s-api.corp.example', 'kubernetes.default'],
      ipAddresses: ['127.0.0.1', '10.1.0.100'],
      usage: 'server',
    }),
  );
  assert.deepEqual(
    (await presentedSans(apiserver, ca.certPem)).sort(),
    ['10.1.0.100', '127.0.0.1', 'k8s-api.corp.example', 'kubernetes.default'].sort(),
  );
  // A server whose certificate the operator's CA did not sign tells nothing.
  const impostor = await serve(
    await issueCertificate(other, {
      commonName: 'kube-apiserver',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    }),
  );
  await assert.rejects(presentedSans(impostor, ca.certPem), (error: Error) => {
    assert.match(
      error.message,
      /^Cannot read the certificate the API server presents at https:\/\/127\.0\.0\.1:\d+: /,
    );
    return true;
  });
});
