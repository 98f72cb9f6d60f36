/**
 * Instance identity for hosts joining by command (optional, per pool: spec.join.instanceIdentity):
 * a cloud-signed statement of which instance the joining host is, so that one join token
 * admits only the instance it was made for, and never a second machine replaying the same
 * user data.
 *
 * AWS: the instance identity document (IMDS /latest/dynamic/instance-identity/document) and its
 * base64-encoded signature (/latest/dynamic/instance-identity/signature), an RSA PKCS#1 v1.5
 * signature of the document's SHA-256, verified with the AWS RSA public certificate of the
 * instance's Region (docs.aws.amazon.com/AWSEC2/latest/UserGuide/verify-iid.html, "Option 2",
 * and regions-certs.html). The operator has no network path to AWS, so the certificate is the
 * admin's: hosts.instanceIdentity.aws.certificates in winfleet-config. Reads go through IMDSv2
 * (a PUT for a session token first, instance-metadata-v2-how-it-works.html), which also works
 * where IMDSv1 is turned off.
 *
 * The joining agent hands the document and signature to the approver on a CSR of its own
 * (signer winfleet.io/instance-identity, which nothing signs), created with the join token, so
 * the requester (system:bootstrap:<id>) is set by the API server and cannot be forged. The
 * approver then requires: a signature that verifies; an account in
 * hosts.instanceIdentity.aws.accountIds when that is set; the node name equal to the document's
 * instanceId (so a replayed document buys only a name its own instance already holds); and,
 * for a token made with `--instance-id`, that instance.
 *
 * Everything read here is parsed strictly; no problem text quotes a signature.
 */
import { verify, X509Certificate } from 'node:crypto';
import { WinfleetError } from '../errors/catalog.ts';
import { isOkStatus } from '../net/http-status.ts';

/** The signer of the carrier CSR: no signer signs it; it only carries the identity. */
export const instanceIdentitySigner = 'winfleet.io/instance-identity';
/** Carrier CSR annotations: the document (verbatim), its signature (base64), the node name. */
export const identityDocumentAnnotation = 'winfleet.io/instance-identity-document';
export const identitySignatureAnnotation = 'winfleet.io/instance-identity-signature';
export const identityNodeAnnotation = 'winfleet.io/instance-identity-node';

/** What a joining host presents. */
export interface AwsInstanceIdentity {
  /** The document exactly as IMDS served it (the signature covers these bytes). */
  document: string;
  /** The base64-encoded signature. */
  signature: string;
}

/** What the approver uses from a verified document. */
export interface AwsIdentityFacts {
  instanceId: string;
  accountId: string;
  region: string;
}

export const awsInstanceIdPattern = /^i-[0-9a-f]{8}([0-9a-f]{9})?$/;
const accountIdPattern = /^[0-9]{12}$/;
const regionPattern = /^[a-z]{2}(-[a-z0-9]+){1,3}-[0-9]{1,2}$/;
const maxDocumentBytes = 4096;
const maxSignatureChars = 2048;

/** Why `text` is not an EC2 instance id, or undefined. */
export function instanceIdProblem(text: string): string | undefined {
  return awsInstanceIdPattern.test(text)
    ? undefined
    : `${JSON.stringify(text.slice(0, 40))} is not an EC2 instance id (i- and 8 or 17 lower-case hex digits, e.g. i-0123456789abcdef0)`;
}

/** The facts of a document, or why it is not an instance identity document. */
export function parseAwsIdentityDocument(
  text: string,
): { facts: AwsIdentityFacts } | { problem: string } {
  if (Buffer.byteLength(text) > maxDocumentBytes) {
    return { problem: `the document is over ${maxDocumentBytes} bytes` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'the document is not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { problem: 'the document is not a JSON object' };
  }
  const fields = value as Record<string, unknown>;
  const checks: [keyof AwsIdentityFacts, RegExp][] = [
    ['instanceId', awsInstanceIdPattern],
    ['accountId', accountIdPattern],
    ['region', regionPattern],
  ];
  for (const [field, pattern] of checks) {
    const v = fields[field];
    if (typeof v !== 'string' || !pattern.test(v)) {
      return {
        problem: `the document's ${field} is ${typeof v === 'string' ? JSON.stringify(v.slice(0, 40)) : 'missing or not a string'}`,
      };
    }
  }
  return {
    facts: {
      instanceId: fields.instanceId as string,
      accountId: fields.accountId as string,
      region: fields.region as string,
    },
  };
}

/** The certificates of a PEM bundle, or the problem (for the configuration's check). */
export function parseIdentityCertificates(
  pem: string,
  field: string,
): { certificates: X509Certificate[]; problems: string[] } {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  const problems: string[] = [];
  const certificates: X509Certificate[] = [];
  if (blocks.length === 0) {
    problems.push(
      `${field}: no PEM certificate; paste the AWS RSA public certificate of each Region your instances run in (docs.aws.amazon.com/AWSEC2/latest/UserGuide/regions-certs.html, "RSA")`,
    );
  }
  blocks.forEach((block, i) => {
    try {
      const certificate = new X509Certificate(block);
      if (certificate.publicKey.asymmetricKeyType !== 'rsa') {
        problems.push(
          `${field}: certificate ${i + 1} has a ${certificate.publicKey.asymmetricKeyType} key; the base64 signature is verified with the Region's RSA certificate, not the DSA or RSA-2048 one`,
        );
      } else certificates.push(certificate);
    } catch (error) {
      problems.push(`${field}: certificate ${i + 1} does not parse (${(error as Error).message})`);
    }
  });
  return { certificates, problems };
}

/**
 * Verifies `identity` against `certificates` (any one may have signed it); the facts when it
 * verifies, else why not.
 */
export function verifyAwsIdentity(
  identity: AwsInstanceIdentity,
  certificates: readonly X509Certificate[],
): { facts: AwsIdentityFacts } | { problem: string } {
  const base64 = identity.signature.replace(/\s+/g, '');
  if (
    base64.length === 0 ||
    base64.length > maxSignatureChars ||
    !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)
  ) {
    return { problem: 'the signature is not base64' };
  }
  const signature = Buffer.from(base64, 'base64');
  const document = Buffer.from(identity.document, 'utf8');
  const signed = certificates.some((certificate) => {
    try {
      return verify('sha256', document, certificate.publicKey, signature);
    } catch {
      return false;
    }
  });
  if (!signed) {
    return {
      problem:
        "the document's signature does not verify with any certificate in hosts.instanceIdentity.aws.certificates: it was not signed by AWS for this Region (forged or altered), or the Region's RSA certificate is missing there",
    };
  }
  return parseAwsIdentityDocument(identity.document);
}

/** One request to the instance metadata service (169.254.169.254, port 80). */
export interface ImdsRequest {
  method: 'GET' | 'PUT';
  path: string;
  headers: Record<string, string>;
}
export interface ImdsResponse {
  status: number;
  body: string;
}
export type ImdsTransport = (request: ImdsRequest) => Promise<ImdsResponse>;

/** The IMDSv2 session token TTL the agent asks for: it needs it for two reads. */
const sessionTtlSeconds = 60;

/**
 * Reads the identity document and its signature with IMDSv2: PUT /latest/api/token with
 * X-aws-ec2-metadata-token-ttl-seconds, then GETs with X-aws-ec2-metadata-token.
 */
export async function readAwsIdentity(imds: ImdsTransport): Promise<AwsInstanceIdentity> {
  const session = await imds({
    method: 'PUT',
    path: '/latest/api/token',
    headers: { 'X-aws-ec2-metadata-token-ttl-seconds': String(sessionTtlSeconds) },
  });
  if (!isOkStatus(session.status) || session.body === '') {
    throw new WinfleetError(
      'WF_INSTANCE_IDENTITY',
      `the instance metadata service answered ${session.status} to PUT /latest/api/token: is this an EC2 instance with the metadata service on (http-endpoint enabled)?`,
    );
  }
  const read = async (path: string) => {
    const answer = await imds({
      method: 'GET',
      path,
      headers: { 'X-aws-ec2-metadata-token': session.body },
    });
    if (!isOkStatus(answer.status)) {
      throw new WinfleetError(
        'WF_INSTANCE_IDENTITY',
        `the instance metadata service answered ${answer.status} to GET ${path}`,
      );
    }
    return answer.body;
  };
  return {
    document: await read('/latest/dynamic/instance-identity/document'),
    signature: await read('/latest/dynamic/instance-identity/signature'),
  };
}
