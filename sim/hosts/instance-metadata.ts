/**
 * A simulated EC2 instance metadata service (IMDS) for a machine: the instance identity document
 * and its base64 signature, behind IMDSv2's session tokens, answering as EC2 does
 * (docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-identity-documents.html,
 * configuring-instance-metadata-service.html, instance-metadata-v2-how-it-works.html):
 *
 * - PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds (1 to 21600) answers 200
 *   with a token; without the header, or out of range, 400;
 * - a GET with a valid X-aws-ec2-metadata-token answers; with an invalid one, 401; with none,
 *   401 when the instance requires IMDSv2 (HttpTokens=required), else it answers (IMDSv1);
 * - /latest/dynamic/instance-identity/document: the JSON document, pretty-printed as EC2 serves
 *   it; /latest/dynamic/instance-identity/signature: the RSA SHA-256 signature of exactly those
 *   bytes, base64 in 64-character lines; anything else 404.
 *
 * The "Region's AWS RSA certificate" is a per-test self-signed RSA certificate
 * (`createAwsIdentitySigner`), which the test hands to winfleet-config as an admin would.
 */
import 'reflect-metadata';
import { randomBytes, sign, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { ImdsRequest, ImdsResponse } from '../../src/pki/instance-identity.ts';

/** A Region's signing key and its RSA certificate (PEM). */
export interface AwsIdentitySigner {
  certificatePem: string;
  sign(document: string): string;
}

/** A fresh RSA key and self-signed certificate standing for a Region's AWS certificate. */
export async function createAwsIdentitySigner(): Promise<AwsIdentitySigner> {
  const algorithm = {
    name: 'RSASSA-PKCS1-v1_5',
    hash: 'SHA-256',
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'C=US, ST=Washington State, L=Seattle, O=Amazon Web Services LLC',
    keys,
    signingAlgorithm: algorithm,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3650 * 86_400_000),
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return {
    certificatePem: cert.toString('pem'),
    sign: (document) =>
      sign('sha256', Buffer.from(document, 'utf8'), { key: pkcs8, format: 'der', type: 'pkcs8' })
        .toString('base64')
        .replace(/(.{64})/g, '$1\n')
        .trimEnd(),
  };
}

export interface SimInstanceOptions {
  instanceId: string;
  accountId: string;
  region: string;
  privateIp: string;
  signer: AwsIdentitySigner;
  /** HttpTokens: 'required' (IMDSv2 only, the default here) or 'optional'. */
  httpTokens?: 'required' | 'optional';
}

/** The document as EC2 serves it: its fields in EC2's order, " : " separators, 2-space indent. */
export function identityDocument(options: SimInstanceOptions): string {
  const fields: [string, unknown][] = [
    ['accountId', options.accountId],
    ['architecture', 'x86_64'],
    ['availabilityZone', `${options.region}a`],
    ['billingProducts', null],
    ['devpayProductCodes', null],
    ['marketplaceProductCodes', null],
    ['imageId', 'ami-0123456789abcdef0'],
    ['instanceId', options.instanceId],
    ['instanceType', 'm5.large'],
    ['kernelId', null],
    ['pendingTime', '2026-11-28T10:00:00Z'],
    ['privateIp', options.privateIp],
    ['ramdiskId', null],
    ['region', options.region],
    ['version', '2017-09-30'],
  ];
  const lines = fields.map(([k, v]) => `  ${JSON.stringify(k)} : ${JSON.stringify(v)}`);
  return `{\n${lines.join(',\n')}\n}`;
}

export class SimInstanceMetadata {
  readonly #options: SimInstanceOptions;
  readonly #document: string;
  readonly #tokens = new Map<string, number>();
  /** Requests answered so far (method and path), for tests. */
  readonly requests: string[] = [];

  constructor(options: SimInstanceOptions) {
    this.#options = options;
    this.#document = identityDocument(options);
  }

  answer(request: ImdsRequest): ImdsResponse {
    this.requests.push(`${request.method} ${request.path}`);
    const header = (name: string) =>
      Object.entries(request.headers).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
    if (request.path === '/latest/api/token') {
      if (request.method !== 'PUT') return { status: 405, body: '' };
      const ttl = Number(header('X-aws-ec2-metadata-token-ttl-seconds'));
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21600) return { status: 400, body: '' };
      const token = randomBytes(32).toString('base64');
      this.#tokens.set(token, Date.now() + ttl * 1000);
      return { status: 200, body: token };
    }
    if (request.method !== 'GET') return { status: 405, body: '' };
    const token = header('X-aws-ec2-metadata-token');
    if (token !== undefined) {
      const expires = this.#tokens.get(token);
      if (expires === undefined || expires < Date.now()) return { status: 401, body: '' };
    } else if ((this.#options.httpTokens ?? 'required') === 'required') {
      return { status: 401, body: '' };
    }
    if (request.path === '/latest/dynamic/instance-identity/document') {
      return { status: 200, body: this.#document };
    }
    if (request.path === '/latest/dynamic/instance-identity/signature') {
      return { status: 200, body: this.#options.signer.sign(this.#document) };
    }
    return { status: 404, body: '' };
  }
}
