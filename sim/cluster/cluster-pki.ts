/**
 * The files a loopback cluster needs: a cluster CA, serving certificates for the API server,
 * controller manager and scheduler, an admin client certificate, the API server's client
 * certificate for kubelets and the service-account key.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createCertificateAuthority,
  generateKeyPair,
  issueCertificate,
  type KeyPairPem,
  privateKeyToPem,
  publicKeyToPem,
} from '../../src/pki/certificates.ts';

/** Paths of the PKI files inside the cluster directory. */
export interface ClusterPkiFiles {
  caCert: string;
  caKey: string;
  apiserverCert: string;
  apiserverKey: string;
  componentCert: string;
  componentKey: string;
  adminCert: string;
  adminKey: string;
  /** The API server's client certificate for kubelets (--kubelet-client-certificate). */
  kubeletClientCert: string;
  kubeletClientKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

/**
 * Who the API server is to kubelets (kubeadm's apiserver-kubelet-client certificate); kubeadm
 * binds this user to ClusterRole system:kubelet-api-admin (kubelet-api-access.ts).
 */
export const kubeletClientCommonName = 'kube-apiserver-kubelet-client';

/** The API server's in-cluster names; its first service IP is added by the caller. */
export const apiserverDnsNames = [
  'localhost',
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
];

async function writePair(dir: string, name: string, pair: KeyPairPem): Promise<[string, string]> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await writeFile(cert, pair.certPem);
  await writeFile(key, pair.keyPem, { mode: 0o600 });
  return [cert, key];
}

/** Creates the cluster PKI in `dir`. */
export async function createClusterPki(dir: string, serviceIp: string): Promise<ClusterPkiFiles> {
  const ca = await createCertificateAuthority('winfleet-cluster-ca');
  const [caCert, caKey] = await writePair(dir, 'ca', ca);
  const [apiserverCert, apiserverKey] = await writePair(
    dir,
    'apiserver',
    await issueCertificate(ca, {
      commonName: 'kube-apiserver',
      dnsNames: apiserverDnsNames,
      ipAddresses: ['127.0.0.1', serviceIp],
      usage: 'server',
    }),
  );
  // The controller manager and scheduler serve /healthz on loopback with this one.
  const [componentCert, componentKey] = await writePair(
    dir,
    'components',
    await issueCertificate(ca, {
      commonName: 'winfleet-control-plane',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    }),
  );
  const [adminCert, adminKey] = await writePair(
    dir,
    'admin',
    await issueCertificate(ca, {
      commonName: 'winfleet-admin',
      organizations: ['system:masters'],
      usage: 'client',
    }),
  );
  const [kubeletClientCert, kubeletClientKey] = await writePair(
    dir,
    'apiserver-kubelet-client',
    await issueCertificate(ca, { commonName: kubeletClientCommonName, usage: 'client' }),
  );
  const sa = await generateKeyPair();
  const serviceAccountKey = join(dir, 'sa.key');
  const serviceAccountPub = join(dir, 'sa.pub');
  await writeFile(serviceAccountKey, await privateKeyToPem(sa.privateKey), { mode: 0o600 });
  await writeFile(serviceAccountPub, await publicKeyToPem(sa.publicKey));
  return {
    caCert,
    caKey,
    apiserverCert,
    apiserverKey,
    componentCert,
    componentKey,
    adminCert,
    adminKey,
    kubeletClientCert,
    kubeletClientKey,
    serviceAccountKey,
    serviceAccountPub,
  };
}
