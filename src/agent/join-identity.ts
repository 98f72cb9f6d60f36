/**
 * `winfleet-agent join --instance-identity aws`: reads this EC2 instance's identity document and
 * signature from IMDS (IMDSv2) and hands them to the approver on a CSR of the signer
 * winfleet.io/instance-identity, created with the join token before the kubelet asks for its
 * certificate (pki/instance-identity.ts says what the approver checks). The carrier's key is
 * thrown away: nothing ever signs that CSR.
 */
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import { createCsrPem, generateKeyPair } from '../pki/certificates.ts';
import {
  type AwsIdentityFacts,
  type AwsInstanceIdentity,
  identityDocumentAnnotation,
  identityNodeAnnotation,
  identitySignatureAnnotation,
  instanceIdentitySigner,
  parseAwsIdentityDocument,
  readAwsIdentity,
} from '../pki/instance-identity.ts';
import type { HostOS } from './host-os.ts';

/** The instance's identity, read and parsed (the approver verifies the signature). */
export async function readInstanceIdentity(
  host: HostOS,
): Promise<{ identity: AwsInstanceIdentity; facts: AwsIdentityFacts }> {
  let identity: AwsInstanceIdentity;
  try {
    identity = await readAwsIdentity((request) => host.instanceMetadata(request));
  } catch (error) {
    throw new WinfleetError(
      'WF_INSTANCE_IDENTITY',
      `cannot read this instance's identity from the instance metadata service (169.254.169.254): ${(error as Error).message}; the pool requires instance identity (spec.join.instanceIdentity), so join from an EC2 instance whose metadata service is on`,
    );
  }
  const parsed = parseAwsIdentityDocument(identity.document);
  if ('problem' in parsed) {
    throw new WinfleetError(
      'WF_INSTANCE_IDENTITY',
      `the instance metadata service served no identity document: ${parsed.problem}`,
    );
  }
  return { identity, facts: parsed.facts };
}

/** Files the carrier CSR with the join token's credentials (`kc`). */
export async function presentInstanceIdentity(
  kc: k8s.KubeConfig,
  nodeName: string,
  identity: AwsInstanceIdentity,
): Promise<string> {
  const request = await createCsrPem(
    { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] },
    await generateKeyPair(),
  );
  const created = await kc.makeApiClient(k8s.CertificatesV1Api).createCertificateSigningRequest({
    body: {
      metadata: {
        generateName: 'winfleet-instance-identity-',
        annotations: {
          [identityNodeAnnotation]: nodeName,
          [identityDocumentAnnotation]: identity.document,
          [identitySignatureAnnotation]: identity.signature,
        },
      },
      spec: {
        request: Buffer.from(request).toString('base64'),
        signerName: instanceIdentitySigner,
        usages: ['client auth'],
      },
    },
  });
  return created.metadata?.name ?? '';
}
