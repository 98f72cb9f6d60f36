/**
 * X.509 certificates and keys for the clusters, webhooks and kubelets winfleet creates.
 * Keys are ECDSA P-256 (fast to generate, accepted by every Kubernetes component); everything
 * is returned as PEM so it can be written to files or Secrets unchanged.
 */
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata
// polyfill loaded first.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' } as const;
const dayMs = 24 * 60 * 60 * 1000;

/** A certificate and its private key, both PEM. */
export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

/** A certificate authority that can issue further certificates. */
export interface CertificateAuthority extends KeyPairPem {
  cert: x509.X509Certificate;
  key: CryptoKey;
}

/** What a certificate is for. */
export type CertificateUsage = 'server' | 'client' | 'server-and-client';

/** Subject and subject alternative names of a certificate to issue. */
export interface CertificateRequest {
  commonName: string;
  /** Organizations (O=); Kubernetes reads them as groups. */
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: CertificateUsage;
  /** Validity in days, 365 by default. */
  days?: number;
  /** Start of validity; a minute ago by default (a tenth of the validity if shorter). */
  notBefore?: Date;
}

/** Generates an ECDSA P-256 key pair. */
export async function generateKeyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(keyAlgorithm, true, [
    'sign',
    'verify',
  ])) as CryptoKeyPair;
}

/** Exports a private key as PKCS#8 PEM ("PRIVATE KEY"). */
export async function privateKeyToPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** Exports a public key as SPKI PEM ("PUBLIC KEY"). */
export async function publicKeyToPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('spki', key);
  return x509.PemConverter.encode(der, 'PUBLIC KEY');
}

/** Imports a PKCS#8 PEM ECDSA P-256 private key. */
export async function privateKeyFromPem(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decodeFirst(pem);
  return webcrypto.subtle.importKey('pkcs8', der, keyAlgorithm, true, ['sign']);
}

function distinguishedName(commonName: string, organizations: string[] = []): string {
  const escapeRdn = (value: string) => value.replace(/([,+"\\<>;=])/g, '\\$1');
  return [`CN=${escapeRdn(commonName)}`, ...organizations.map((o) => `O=${escapeRdn(o)}`)].join(
    ', ',
  );
}

/**
 * Valid from a little before now (to absorb clock skew: a minute, or a tenth of a short
 * validity) until `days` from now.
 */
function validity(days: number, notBefore?: Date): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  const lengthMs = days * dayMs;
  const start = notBefore ?? new Date(now - Math.min(60_000, lengthMs / 10));
  return { notBefore: start, notAfter: new Date(now + lengthMs) };
}

/** Creates a self-signed certificate authority. */
export async function createCertificateAuthority(
  commonName: string,
  days = 3650,
): Promise<CertificateAuthority> {
  const keys = await generateKeyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: distinguishedName(commonName),
    keys,
    signingAlgorithm,
    ...validity(days),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    cert,
    key: keys.privateKey,
    certPem: cert.toString('pem'),
    keyPem: await privateKeyToPem(keys.privateKey),
  };
}

/** Loads a certificate authority from PEM. */
export async function loadCertificateAuthority(pair: KeyPairPem): Promise<CertificateAuthority> {
  return {
    ...pair,
    cert: new x509.X509Certificate(pair.certPem),
    key: await privateKeyFromPem(pair.keyPem),
  };
}

/** Issues a certificate signed by `ca` for a freshly generated key. */
export async function issueCertificate(
  ca: CertificateAuthority,
  request: CertificateRequest,
): Promise<KeyPairPem> {
  const keys = await generateKeyPair();
  const cert = await signPublicKey(ca, keys.publicKey, request);
  return { certPem: cert.toString('pem'), keyPem: await privateKeyToPem(keys.privateKey) };
}

/** Signs `publicKey` into a certificate; used where the key holder keeps its private key. */
export async function signPublicKey(
  ca: CertificateAuthority,
  publicKey: CryptoKey,
  request: CertificateRequest,
): Promise<x509.X509Certificate> {
  const usages: string[] = [];
  if (request.usage !== 'client') usages.push(x509.ExtendedKeyUsage.serverAuth);
  if (request.usage !== 'server') usages.push(x509.ExtendedKeyUsage.clientAuth);
  const names: x509.JsonGeneralName[] = [
    ...(request.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(request.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(usages),
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
  ];
  if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  return x509.X509CertificateGenerator.create({
    subject: distinguishedName(request.commonName, request.organizations),
    issuer: ca.cert.subject,
    publicKey,
    signingKey: ca.key,
    signingAlgorithm,
    ...validity(request.days ?? 365, request.notBefore),
    extensions,
  });
}

/** Subject and names for a PKCS#10 certificate signing request. */
export interface CsrSubject {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
}

/** Creates a PEM PKCS#10 CSR signed by `keys`, as a kubelet or a client would send it. */
export async function createCsrPem(subject: CsrSubject, keys: CryptoKeyPair): Promise<string> {
  const names: x509.JsonGeneralName[] = [
    ...(subject.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(subject.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: distinguishedName(subject.commonName, subject.organizations),
    keys,
    signingAlgorithm,
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return csr.toString('pem');
}

/** What a CSR asks for. */
export interface ParsedCsr {
  commonName: string | undefined;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
}

/** Reads the subject and subject alternative names of a PEM PKCS#10 CSR; throws if it is not one. */
export function parseCsrPem(pem: string): ParsedCsr {
  const csr = new x509.Pkcs10CertificateRequest(pem);
  const subject = csr.subjectName;
  const values = (type: string) => subject.getField(type);
  const san = csr.extensions.find((e) => e instanceof x509.SubjectAlternativeNameExtension) as
    | x509.SubjectAlternativeNameExtension
    | undefined;
  const names: x509.JsonGeneralName[] = san?.names.toJSON() ?? [];
  const of = (type: string) => names.filter((n) => n.type === type).map((n) => n.value);
  return {
    commonName: values('CN')[0],
    organizations: values('O'),
    dnsNames: of('dns'),
    ipAddresses: of('ip'),
    emailAddresses: of('email'),
    uris: of('url'),
  };
}
