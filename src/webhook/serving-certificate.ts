/**
 * The webhook's own PKI, kept in one Secret: a CA, the serving certificate it signs, and the
 * CA bundle the API server trusts. winfleet creates it and renews it before expiry, so
 * cert-manager is not needed. A new CA is added to the bundle next to the old one before any
 * certificate it signs is served, so the API server trusts the webhook at every moment.
 */
import { X509Certificate } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../kube/client.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../pki/certificates.ts';

export interface ServingCertificateOptions {
  namespace: string;
  secretName: string;
  dnsNames: string[];
  ipAddresses: string[];
  /** Validity of the CA (default 10 years) and of the serving certificate (default 1 year). */
  caValidityMs?: number;
  certValidityMs?: number;
  /** Renew when less than this fraction of the validity is left (default 1/3). */
  renewFraction?: number;
  now?: () => Date;
}

export interface ServingCertificate {
  certPem: string;
  keyPem: string;
  /** PEM bundle for the webhook configurations' caBundle (current CA, plus the previous one during a CA change). */
  caBundle: string;
  /** When this certificate should be renewed. */
  renewAt: Date;
  /** What changed in this call. */
  changed: 'created' | 'renewed-certificate' | 'renewed-ca' | 'unchanged';
}

const dayMs = 86_400_000;

function decode(secret: k8s.V1Secret | undefined, key: string): string | undefined {
  const value = secret?.data?.[key];
  return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

function renewTime(pem: string, fraction: number): Date {
  const cert = new X509Certificate(pem);
  const from = new Date(cert.validFrom).getTime();
  const to = new Date(cert.validTo).getTime();
  return new Date(to - (to - from) * fraction);
}

function coversNames(pem: string, dnsNames: string[], ipAddresses: string[]): boolean {
  const cert = new X509Certificate(pem);
  const sans = cert.subjectAltName ?? '';
  return (
    dnsNames.every((d) => sans.includes(`DNS:${d}`)) &&
    ipAddresses.every((ip) => sans.includes(`IP Address:${ip}`))
  );
}

function splitPems(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** Creates or renews the webhook PKI Secret; returns what to serve and what to trust. */
export async function ensureServingCertificate(
  kc: k8s.KubeConfig,
  options: ServingCertificateOptions,
): Promise<ServingCertificate> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const now = options.now?.() ?? new Date();
  const fraction = options.renewFraction ?? 1 / 3;
  let secret: k8s.V1Secret | undefined;
  try {
    secret = await core.readNamespacedSecret({
      name: options.secretName,
      namespace: options.namespace,
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const caCert = decode(secret, 'ca.crt');
  const caKey = decode(secret, 'ca.key');
  const tlsCert = decode(secret, 'tls.crt');
  const tlsKey = decode(secret, 'tls.key');
  const bundle = decode(secret, 'ca-bundle.crt');

  let ca: CertificateAuthority;
  let changed: ServingCertificate['changed'] = 'unchanged';
  let caBundlePems: string[];
  if (!caCert || !caKey) {
    ca = await createCertificateAuthority(
      'winfleet-webhook-ca',
      (options.caValidityMs ?? 3650 * dayMs) / dayMs,
    );
    caBundlePems = [ca.certPem];
    changed = 'created';
  } else if (renewTime(caCert, fraction) <= now) {
    ca = await createCertificateAuthority(
      'winfleet-webhook-ca',
      (options.caValidityMs ?? 3650 * dayMs) / dayMs,
    );
    // Trust both until the old CA expires; drop CAs that already expired.
    caBundlePems = [
      ca.certPem,
      ...splitPems(bundle ?? caCert).filter((p) => new Date(new X509Certificate(p).validTo) > now),
    ];
    changed = 'renewed-ca';
  } else {
    ca = await loadCertificateAuthority({ certPem: caCert, keyPem: caKey });
    caBundlePems = splitPems(bundle ?? caCert).filter(
      (p) => new Date(new X509Certificate(p).validTo) > now,
    );
    if (caBundlePems.length === 0) caBundlePems = [caCert];
  }

  let certPem = tlsCert;
  let keyPem = tlsKey;
  const stale =
    changed !== 'unchanged' ||
    !certPem ||
    !keyPem ||
    renewTime(certPem, fraction) <= now ||
    !coversNames(certPem, options.dnsNames, options.ipAddresses) ||
    !new X509Certificate(certPem).checkIssued(new X509Certificate(ca.certPem));
  if (stale) {
    const certDays = (options.certValidityMs ?? 365 * dayMs) / dayMs;
    const issued = await issueCertificate(ca, {
      commonName: options.dnsNames[0] ?? 'winfleet-webhook',
      dnsNames: options.dnsNames,
      ipAddresses: options.ipAddresses,
      usage: 'server',
      days: certDays,
    });
    certPem = issued.certPem;
    keyPem = issued.keyPem;
    if (changed === 'unchanged') changed = 'renewed-certificate';
  }
  const caBundle = caBundlePems.join('\n');
  if (changed !== 'unchanged') {
    const data = {
      'ca.crt': ca.certPem,
      'ca.key': ca.keyPem,
      'ca-bundle.crt': caBundle,
      'tls.crt': certPem!,
      'tls.key': keyPem!,
    };
    const body: k8s.V1Secret = {
      metadata: {
        name: options.secretName,
        namespace: options.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
        resourceVersion: secret?.metadata?.resourceVersion,
      },
      type: 'Opaque',
      data: Object.fromEntries(
        Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
      ),
    };
    // A conflict means another replica renewed it first; the caller retries and reads theirs.
    if (secret)
      await core.replaceNamespacedSecret({
        name: options.secretName,
        namespace: options.namespace,
        body,
      });
    else await core.createNamespacedSecret({ namespace: options.namespace, body });
  }
  const renewAt = new Date(
    Math.min(renewTime(certPem!, fraction).getTime(), renewTime(ca.certPem, fraction).getTime()),
  );
  return { certPem: certPem!, keyPem: keyPem!, caBundle, renewAt, changed };
}
