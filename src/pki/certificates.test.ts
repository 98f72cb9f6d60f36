// @peculiar/x509 needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as x509 from '@peculiar/x509';
import { hasCode } from '../errors/catalog.ts';
import { createCsrPem, generateKeyPair, parseCsrPem } from './certificates.ts';
import { formatName, goNameDer, quoteValue, readName, sameBytes } from './distinguished-name.ts';

/**
 * CSRs written by Go 1.26.8's `x509.CreateCertificateRequest` with the kubelet's templates
 * (`pkix.Name{Organization: ["system:nodes"], CommonName: "system:node:win-a"}`; the serving
 * one with DNS SAN win-a and IP SAN 127.0.0.11), ECDSA P-256 as the kubelet makes its keys.
 */
const goClientCsr = `-----BEGIN CERTIFICATE REQUEST-----
MIHuMIGVAgEAMDMxFTATBgNVBAoTDHN5c3RlbTpub2RlczEaMBgGA1UEAxMRc3lz
dGVtOm5vZGU6d2luLWEwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQ3brl6dI6C
dmCdUA2Eva0NE5ijvzc3EmyE2l80nzE/+YjhvaEz3rAPdkA/dWhlUe89LcmXnmPs
7GeNEje1rJIFoAAwCgYIKoZIzj0EAwIDSAAwRQIgbeF/eerf7JPe1s/e7R2B9WTn
QJ+O6rKtbQBGFN9DcgcCIQDeitJGDy/v0Q41cx9653FAG1v82XYEz1389p5s7i2r
CQ==
-----END CERTIFICATE REQUEST-----
`;
const goServingCsr = `-----BEGIN CERTIFICATE REQUEST-----
MIIBGDCBvgIBADAzMRUwEwYDVQQKEwxzeXN0ZW06bm9kZXMxGjAYBgNVBAMTEXN5
c3RlbTpub2RlOndpbi1hMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEN265enSO
gnZgnVANhL2tDROYo783NxJshNpfNJ8xP/mI4b2hM96wD3ZAP3VoZVHvPS3Jl55j
7OxnjRI3taySBaApMCcGCSqGSIb3DQEJDjEaMBgwFgYDVR0RBA8wDYIFd2luLWGH
BH8AAAswCgYIKoZIzj0EAwIDSQAwRgIhAOefuTXQGffMaL/P3XItWXKCFhs3MpkJ
vwxWFAb9YX1BAiEA60US1v7zc3q8Pc2RO2zL+nlPdnBT7xi8YztdfqSnI0k=
-----END CERTIFICATE REQUEST-----
`;
/** `asn1.Marshal(pkix.Name{…}.ToRDNSequence())` for the kubelet's name, from the same Go. */
const goKubeletName =
  '303331153013060355040a130c73797374656d3a6e6f646573311a30180603550403131173797374656d3a6e6f64653a77696e2d61';
const kubeletName = { organizations: ['system:nodes'], commonName: 'system:node:win-a' };

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

test('names are written byte for byte as Go writes them', () => {
  assert.equal(hex(goNameDer(kubeletName)), goKubeletName);
  // Outside Go's PrintableString set ('_', '*', non-ASCII) Go switches to UTF8String (0x0c).
  assert.equal(readName(goNameDer({ commonName: 'a_b' }))[0]![0]!.stringType, 'UTF8String');
  assert.equal(readName(goNameDer({ commonName: 'a*b' }))[0]![0]!.stringType, 'UTF8String');
  assert.equal(
    readName(goNameDer({ commonName: 'a-b.c:d' }))[0]![0]!.stringType,
    'PrintableString',
  );
});

test('a kubelet’s CSRs, as Go writes them, parse to the same subject bytes', () => {
  const client = parseCsrPem(goClientCsr);
  assert.equal(hex(client.subjectDer), goKubeletName);
  assert.equal(formatName(client.subject), 'O=system:nodes, CN=system:node:win-a');
  assert.deepEqual([client.dnsNames, client.ipAddresses, client.otherRequests], [[], [], []]);
  const serving = parseCsrPem(goServingCsr);
  assert.equal(hex(serving.subjectDer), goKubeletName);
  assert.deepEqual(serving.dnsNames, ['win-a']);
  assert.deepEqual(serving.ipAddresses, ['127.0.0.11']);
  assert.deepEqual([serving.otherNames, serving.otherRequests], [[], []]);
});

test('createCsrPem writes the subject as a Go kubelet does', async () => {
  const pem = await createCsrPem(kubeletName, await generateKeyPair());
  assert.ok(sameBytes(parseCsrPem(pem).subjectDer, goNameDer(kubeletName)));
});

function derOf(pem: string): Buffer {
  return Buffer.from(x509.PemConverter.decodeFirst(pem));
}
const asPem = (der: Uint8Array) => x509.PemConverter.encode(der, 'CERTIFICATE REQUEST');

test('a CSR not in canonical DER, or with bytes after it, is refused', () => {
  const der = derOf(goClientCsr);
  assert.equal(der[1], 0x81); // length 238 in its one minimal length byte
  const longLength = Buffer.concat([Buffer.from([0x30, 0x82, 0x00]), der.subarray(2)]);
  const trailing = Buffer.concat([der, Buffer.from([0, 0])]);
  for (const bad of [longLength, trailing]) {
    assert.throws(
      () => parseCsrPem(asPem(bad)),
      (e) => hasCode(e, 'WF_CSR_INVALID'),
    );
  }
  assert.throws(
    () => parseCsrPem(x509.PemConverter.encode(der, 'CERTIFICATE')),
    (e) => hasCode(e, 'WF_CSR_INVALID') && /not a PEM "CERTIFICATE REQUEST" block/.test(String(e)),
  );
});

test('extensions two readers could read differently are refused', async () => {
  const keys = await generateKeyPair();
  const san = (value: string) => new x509.SubjectAlternativeNameExtension([{ type: 'dns', value }]);
  const create = async (params: { extensions?: x509.Extension[]; attributes?: x509.Attribute[] }) =>
    (
      await x509.Pkcs10CertificateRequestGenerator.create({
        name: new x509.Name(goNameDer(kubeletName)),
        keys,
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
        ...params,
      })
    ).toString('pem');
  // Older Go keeps the last subjectAltName, @peculiar/x509 the first.
  const twice = await create({ extensions: [san('win-a'), san('kubernetes.default.svc')] });
  assert.throws(
    () => parseCsrPem(twice),
    (e) => hasCode(e, 'WF_CSR_INVALID') && /extension 2\.5\.29\.17 more than once/.test(String(e)),
  );
  const twoRequests = await create({
    extensions: [san('win-a')],
    attributes: [new x509.ExtensionsAttribute([san('kubernetes.default.svc')])],
  });
  assert.throws(
    () => parseCsrPem(twoRequests),
    (e) => hasCode(e, 'WF_CSR_INVALID') && /2 extension requests/.test(String(e)),
  );
  const extra = parseCsrPem(
    await create({
      extensions: [new x509.BasicConstraintsExtension(true)],
      attributes: [new x509.ChallengePasswordAttribute('x')],
    }),
  );
  assert.deepEqual(extra.otherRequests.toSorted(), ['1.2.840.113549.1.9.7', '2.5.29.19']);
  const dirName = parseCsrPem(
    await create({
      extensions: [
        new x509.SubjectAlternativeNameExtension([{ type: 'dn', value: 'CN=system:node:other' }]),
      ],
    }),
  );
  assert.equal(dirName.otherNames.length, 1);
});

test('messages show look-alike letters, NULs and odd string types', () => {
  assert.equal(quoteValue('system:nodеs\u0000 '), '"system:nod\\u{435}s\\u{0} "');
  assert.equal(
    formatName([
      [{ type: '2.5.4.3', label: 'CN', stringType: 'BMPString', value: 'system:node：a' }],
    ]),
    'CN=BMPString:"system:node\\u{ff1a}a"',
  );
});
