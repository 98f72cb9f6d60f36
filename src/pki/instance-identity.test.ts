import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { createAwsIdentitySigner, SimInstanceMetadata } from '../../sim/hosts/instance-metadata.ts';
import { parseConfig } from '../config/winfleet-config.ts';
import {
  parseAwsIdentityDocument,
  readAwsIdentity,
  verifyAwsIdentity,
} from './instance-identity.ts';

test('the identity is read with IMDSv2 and verifies with the Region certificate', async () => {
  const signer = await createAwsIdentitySigner();
  const imds = new SimInstanceMetadata({
    instanceId: 'i-0123456789abcdef0',
    accountId: '123456789012',
    region: 'us-west-2',
    privateIp: '10.0.0.5',
    signer,
  });
  const identity = await readAwsIdentity(async (request) => imds.answer(request));
  assert.deepEqual(imds.requests, [
    'PUT /latest/api/token',
    'GET /latest/dynamic/instance-identity/document',
    'GET /latest/dynamic/instance-identity/signature',
  ]);
  // An IMDSv1 read (no session token) is refused where IMDSv2 is required.
  assert.equal(
    imds.answer({ method: 'GET', path: '/latest/dynamic/instance-identity/document', headers: {} })
      .status,
    401,
  );
  const verified = verifyAwsIdentity(identity, [new X509Certificate(signer.certificatePem)]);
  assert.deepEqual(verified, {
    facts: { instanceId: 'i-0123456789abcdef0', accountId: '123456789012', region: 'us-west-2' },
  });
  // A byte changed anywhere in the document breaks the signature.
  const changed = { ...identity, document: identity.document.replace('10.0.0.5', '10.0.0.6') };
  assert.match(
    (
      verifyAwsIdentity(changed, [new X509Certificate(signer.certificatePem)]) as {
        problem: string;
      }
    ).problem,
    /does not verify/,
  );
});

test('an instance whose metadata service refuses the session or the reads is WF_INSTANCE_IDENTITY', async () => {
  const imds = new SimInstanceMetadata({
    instanceId: 'i-0123456789abcdef0',
    accountId: '123456789012',
    region: 'us-west-2',
    privateIp: '10.0.0.5',
    signer: await createAwsIdentitySigner(),
  });
  // No session: a PUT the metadata service does not take (e.g. a proxy in the way answers 405).
  await assert.rejects(
    readAwsIdentity(async (request) =>
      request.method === 'PUT' ? { status: 405, body: '' } : imds.answer(request),
    ),
    {
      code: 'WF_INSTANCE_IDENTITY',
      message: /answered 405 to PUT \/latest\/api\/token: is this an EC2 instance/,
    },
  );
  // A session whose token does not reach the reads: the IMDSv2-only service answers 401.
  await assert.rejects(
    readAwsIdentity(async (request) =>
      imds.answer({ ...request, headers: request.method === 'PUT' ? request.headers : {} }),
    ),
    {
      code: 'WF_INSTANCE_IDENTITY',
      message: /answered 401 to GET \/latest\/dynamic\/instance-identity\/document/,
    },
  );
});

test('documents and signatures are read strictly', () => {
  for (const [text, problem] of [
    ['[]', /not a JSON object/],
    ['{', /not JSON/],
    ['{"instanceId":"i-1","accountId":"123456789012","region":"us-east-1"}', /instanceId is "i-1"/],
    ['{"instanceId":"i-0123456789abcdef0","accountId":"12","region":"us-east-1"}', /accountId/],
    [`{"pad":"${'x'.repeat(5000)}"}`, /over 4096 bytes/],
  ] as const) {
    assert.match((parseAwsIdentityDocument(text) as { problem: string }).problem, problem);
  }
  assert.match(
    (verifyAwsIdentity({ document: '{}', signature: 'not base64!' }, []) as { problem: string })
      .problem,
    /not base64/,
  );
});

test('the configured certificates are checked, naming the field', () => {
  const problem = (pem: string) => {
    try {
      parseConfig(
        `hosts:\n  instanceIdentity:\n    aws:\n      certificates: |\n${pem
          .split('\n')
          .map((l) => `        ${l}`)
          .join('\n')}\n`,
      );
      return '';
    } catch (error) {
      return (error as Error).message;
    }
  };
  assert.match(problem('junk'), /hosts\.instanceIdentity\.aws\.certificates: no PEM certificate/);
  assert.match(
    problem('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'),
    /hosts\.instanceIdentity\.aws\.certificates: certificate 1 does not parse/,
  );
});
