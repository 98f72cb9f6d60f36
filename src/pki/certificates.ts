/**
 * X.509 certificates and keys for the clusters, webhooks and kubelets winfleet creates.
 * Keys are ECDSA P-256 (fast to generate, accepted by every Kubernetes component); everything
 * is returned as PEM so it can be written to files or Secrets unchanged.
 */
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata
// polyfill loaded first.
import 'reflect-metadata';
import { createPublicKey, webcrypto } from 'node:crypto';
import { CertificationRequest } from '@peculiar/asn1-csr';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Extensions, id_ce_subjectAltName } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { WinfleetError } from '../errors/catalog.ts';
import { goNameDer, type NameAttribute, nameAttributes, sameBytes } from './distinguished-name.ts';

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

/** Imports a PKCS#8 PEM ECDSA P-256 private key with its public key (for a CSR). */
export async function keyPairFromPem(pem: string): Promise<CryptoKeyPair> {
  const spki = createPublicKey(pem).export({ type: 'spki', format: 'der' });
  const publicKey = await webcrypto.subtle.importKey('spki', spki, keyAlgorithm, true, ['verify']);
  return { privateKey: await privateKeyFromPem(pem), publicKey };
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

/**
 * Creates a PEM PKCS#10 CSR signed by `keys`, as a kubelet or a client would send it: the
 * subject is written exactly as Go's x509 writes it (O before CN, PrintableString where Go
 * uses it), because winfleet only approves kubelet subjects in that exact form.
 */
export async function createCsrPem(subject: CsrSubject, keys: CryptoKeyPair): Promise<string> {
  const names: x509.JsonGeneralName[] = [
    ...(subject.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(subject.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: new x509.Name(goNameDer(subject)),
    keys,
    signingAlgorithm,
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return csr.toString('pem');
}

/** What a CSR asks for. */
export interface ParsedCsr {
  /**
   * The subject's DER exactly as sent. Decide on these bytes (compare them with the expected
   * name's), never on a field read out of them: readers disagree on repeated attributes.
   */
  subjectDer: Uint8Array;
  /** The subject's RDNs in the order sent, for messages. */
  subject: NameAttribute[][];
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
  /** Subject alternative names of other kinds (directory names, other names…), as type:value. */
  otherNames: string[];
  /** Object identifiers of requested attributes and extensions other than subjectAltName. */
  otherRequests: string[];
  /**
   * The requested key: its type as node:crypto names it ("ec", "rsa", "ed25519", …) with the
   * curve or modulus size; undefined when node:crypto cannot read it.
   */
  publicKey?: { type: string; namedCurve?: string; modulusBits?: number };
}

/** What publicKey says of a SubjectPublicKeyInfo (DER). */
function publicKeyOf(spki: Uint8Array): ParsedCsr['publicKey'] {
  try {
    const key = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
    const details = key.asymmetricKeyDetails ?? {};
    return {
      type: key.asymmetricKeyType ?? 'unknown',
      ...(details.namedCurve ? { namedCurve: details.namedCurve } : {}),
      ...(details.modulusLength ? { modulusBits: details.modulusLength } : {}),
    };
  } catch {
    return undefined;
  }
}

const pkcs9ExtensionRequest = '1.2.840.113549.1.9.14';

function invalidCsr(message: string, cause?: unknown): WinfleetError {
  return new WinfleetError('WF_CSR_INVALID', message, cause ? { cause } : undefined);
}

/**
 * Reads a PEM PKCS#10 CSR strictly; throws WF_CSR_INVALID if it is not one, is not in
 * canonical DER (every Go client writes canonical DER; anything else is crafted), or asks for
 * extensions in a way two readers could read differently: more than one extension request,
 * an extension twice (older Go keeps the last subjectAltName, @peculiar/x509 the first).
 */
export function parseCsrPem(pem: string): ParsedCsr {
  const [block] = x509.PemConverter.decodeWithHeaders(pem);
  if (block?.type !== 'CERTIFICATE REQUEST') {
    throw invalidCsr(
      `The request is not a PEM "CERTIFICATE REQUEST" block (found ${block ? `"${block.type}"` : 'none'})`,
    );
  }
  const der = new Uint8Array(block.rawData);
  let csr: CertificationRequest;
  try {
    csr = AsnConvert.parse(der, CertificationRequest);
  } catch (error) {
    throw invalidCsr(`The request is not a PKCS#10 CSR: ${(error as Error).message}`, error);
  }
  if (!sameBytes(new Uint8Array(AsnConvert.serialize(csr)), der)) {
    throw invalidCsr('The CSR is not in canonical DER: it does not re-encode to the bytes sent');
  }
  const info = csr.certificationRequestInfo;
  const attributes = [...info.attributes];
  const otherRequests = attributes
    .filter((a) => a.type !== pkcs9ExtensionRequest)
    .map((a) => a.type);
  const requests = attributes.filter((a) => a.type === pkcs9ExtensionRequest);
  if (requests.length > 1 || (requests[0] && requests[0].values.length !== 1)) {
    throw invalidCsr(
      `The CSR has ${requests.length} extension requests holding ${requests.reduce((n, a) => n + a.values.length, 0)} values; a CSR asks for its extensions in one`,
    );
  }
  const extensions = requests[0] ? [...AsnConvert.parse(requests[0].values[0]!, Extensions)] : [];
  const ids = extensions.map((e) => e.extnID);
  const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (repeated.length > 0) {
    throw invalidCsr(`The CSR asks for extension ${repeated[0]} more than once`);
  }
  otherRequests.push(...ids.filter((id) => id !== id_ce_subjectAltName));
  const sanExtension = extensions.find((e) => e.extnID === id_ce_subjectAltName);
  const names: x509.JsonGeneralName[] = sanExtension
    ? new x509.SubjectAlternativeNameExtension(AsnConvert.serialize(sanExtension)).names.toJSON()
    : [];
  const of = (type: string) => names.filter((n) => n.type === type).map((n) => n.value);
  const known = new Set(['dns', 'ip', 'email', 'url']);
  return {
    subjectDer: new Uint8Array(AsnConvert.serialize(info.subject)),
    subject: nameAttributes(info.subject),
    dnsNames: of('dns'),
    ipAddresses: of('ip'),
    emailAddresses: of('email'),
    uris: of('url'),
    otherNames: names.filter((n) => !known.has(n.type)).map((n) => `${n.type}:${n.value}`),
    otherRequests,
    publicKey: publicKeyOf(new Uint8Array(AsnConvert.serialize(info.subjectPKInfo))),
  };
}
