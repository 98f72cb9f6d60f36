/**
 * The webhook's serving certificate from a Secret someone else issues and renews (cert-manager,
 * through the Helm chart's `webhook.certManager`): `tls.crt`, `tls.key` and `ca.crt` are read,
 * checked and served, and the Secret is never written. The operator looks at it again every
 * few minutes, so a renewed certificate is served without a restart.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import { isNotFound } from '../kube/client.ts';
import type { ServingCertificate } from './serving-certificate.ts';

/** How often the Secret is read again (cert-manager renews long before expiry). */
export const secretRecheckMs = 5 * 60_000;

const pems = (text: string) =>
  text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];

/**
 * Checks the PEM texts of a kubernetes.io/tls Secret and returns what to serve and trust; each
 * problem names the key and the fix. `where` names the Secret.
 */
export function servingCertificateFromPems(
  where: string,
  data: { 'tls.crt'?: string; 'tls.key'?: string; 'ca.crt'?: string },
  now = new Date(),
): ServingCertificate {
  const invalid = (what: string) =>
    new WinfleetError(
      'WF_WEBHOOK_CERTIFICATE_INVALID',
      `${where} ${what}; check its issuer (kubectl describe certificate -n <namespace>) or give --webhook-cert-secret the Secret that holds the webhook's certificate`,
    );
  const certPem = data['tls.crt'];
  const keyPem = data['tls.key'];
  if (!certPem || pems(certPem).length === 0) throw invalid('has no PEM certificate in tls.crt');
  if (!keyPem) throw invalid('has no tls.key');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pems(certPem)[0]!);
  } catch {
    throw invalid('holds a tls.crt that is not an X.509 certificate');
  }
  let matches = false;
  try {
    matches = cert.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    // Not a key at all: reported as not matching.
  }
  if (!matches) throw invalid('holds a tls.key that is not the key of tls.crt');
  if (new Date(cert.validTo) <= now)
    throw invalid(`holds a tls.crt that expired at ${cert.validTo}`);
  // cert-manager writes the issuing CA to ca.crt; a certificate without one trusts its own
  // chain's last certificate (a self-signed certificate trusts itself).
  const caPems = pems(data['ca.crt'] ?? '');
  const chain = pems(certPem);
  const caBundle = (caPems.length > 0 ? caPems : [chain.at(-1)!]).join('\n');
  return {
    certPem,
    keyPem,
    caBundle,
    renewAt: new Date(now.getTime() + secretRecheckMs),
    changed: 'unchanged',
  };
}

/** Reads and checks the certificate Secret `namespace/name`. */
export async function readServingCertificateSecret(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
): Promise<ServingCertificate> {
  const where = `Secret ${namespace}/${name}`;
  let secret: k8s.V1Secret;
  try {
    secret = await kc.makeApiClient(k8s.CoreV1Api).readNamespacedSecret({ name, namespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    throw new WinfleetError(
      'WF_WEBHOOK_CERTIFICATE_INVALID',
      `${where} does not exist (yet): cert-manager creates it from the chart's Certificate once its Issuer is ready; check kubectl describe certificate -n ${namespace}, or give --webhook-cert-secret the Secret that holds the webhook's certificate`,
      { cause: error },
    );
  }
  const decode = (key: string) => {
    const value = secret.data?.[key];
    return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
  };
  return servingCertificateFromPems(where, {
    'tls.crt': decode('tls.crt'),
    'tls.key': decode('tls.key'),
    'ca.crt': decode('ca.crt'),
  });
}
