/**
 * The webhook's own PKI, kept in one Secret: a CA, the serving certificate it signs, and the
 * CA bundle the API server trusts. winfleet creates it and renews it before expiry, so
 * cert-manager is not needed.
 *
 * The CA rotates in two steps, so that every replica of the operator (each publishes the
 * bundle it reads from the Secret) trusts a CA long before any certificate it signs is served:
 * 1. at the CA's renewal point the NEXT CA is created and added to the bundle (`next-ca.crt`,
 *    `next-ca.key`, and when in the annotation `winfleet.io/next-ca-since`), while the current
 *    CA keeps signing;
 * 2. once the next CA has been in the bundle for the promotion delay (`caPromotionDelayMs`),
 *    it becomes the signing CA and the serving certificate is re-issued.
 * The old CA stays in the bundle until it expires. A replica holding a stale view of the
 * Secret can then only briefly publish a bundle without a CA that no served certificate
 * depends on yet. Concurrent writers are serialised by the Secret's resourceVersion: the loser
 * of a conflict reads the winner's Secret and adopts it.
 *
 * The Secret format is a superset of the earlier one (ca.crt, ca.key, ca-bundle.crt, tls.crt,
 * tls.key), which loads as a Secret with no next CA.
 */
import { X509Certificate } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../kube/client.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../pki/certificates.ts';

/** @package */
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

/** @package */
export interface ServingCertificate {
  certPem: string;
  keyPem: string;
  /** PEM bundle for the webhook configurations' caBundle (current CA, next CA, unexpired older CAs). */
  caBundle: string;
  /** When to look again (a renewal, a CA promotion or an expired CA to drop is due). */
  renewAt: Date;
  /** What changed in this call. */
  changed:
    | 'created'
    | 'renewed-certificate'
    | 'prepared-ca'
    | 'renewed-ca'
    | 'updated-bundle'
    | 'unchanged';
  /**
   * How long a CA must have been in the published bundle before a certificate it signs is
   * served (the promotion delay of the signing CA); absent when winfleet does not keep the PKI.
   */
  trustDelayMs?: number;
}

/** The PKI as kept in the Secret. */
export interface StoredPki {
  caCert: string;
  caKey: string;
  nextCaCert?: string;
  nextCaKey?: string;
  /** When the next CA was added to the bundle. */
  nextCaSince?: Date;
  /** The trusted bundle (PEM certificates). */
  bundle: string[];
  tlsCert?: string;
  tlsKey?: string;
}

const dayMs = 86_400_000;
const caName = 'winfleet-webhook-ca';
/** @package */
export const nextCaSinceAnnotation = 'winfleet.io/next-ca-since';
/** The API server's informer lag on webhook configurations is well under a second; margin. */
export const minPromotionDelayMs = 3_000;
/** Beyond this a replica that restarted would hold back renewed certificates for too long. */
export const maxPromotionDelayMs = 60 * 60_000;

function validity(pem: string): { from: number; to: number } {
  const cert = new X509Certificate(pem);
  return { from: new Date(cert.validFrom).getTime(), to: new Date(cert.validTo).getTime() };
}

function renewTime(pem: string, fraction: number): number {
  const { from, to } = validity(pem);
  return to - (to - from) * fraction;
}

/**
 * How long a next CA stays in the bundle before it signs: a tenth of its validity, at least
 * 3 s (informer lag) and at most 1 h, and never more than half of the renewal window, so the
 * promotion always happens well before the current CA expires. A 10-year CA waits 1 h; the
 * 24 s CA of the rotation test waits 3 s.
 * @package
 */
export function caPromotionDelayMs(caPem: string, renewFraction = 1 / 3): number {
  const { from, to } = validity(caPem);
  const length = to - from;
  return Math.min(
    Math.max(minPromotionDelayMs, length / 10),
    maxPromotionDelayMs,
    (length * renewFraction) / 2,
  );
}

/** Whether `certPem` was signed by the CA `caPem` (names and signature; all CAs share a name). */
export function issuedBy(certPem: string, caPem: string): boolean {
  try {
    const cert = new X509Certificate(certPem);
    const ca = new X509Certificate(caPem);
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
}

function coversNames(pem: string, dnsNames: string[], ipAddresses: string[]): boolean {
  const cert = new X509Certificate(pem);
  const sans = cert.subjectAltName ?? '';
  return (
    dnsNames.every((d) => sans.includes(`DNS:${d}`)) &&
    ipAddresses.every((ip) => sans.includes(`IP Address:${ip}`))
  );
}

/** The certificates of a PEM bundle that parse; anything else is dropped. */
export function splitPems(bundle: string): string[] {
  const pems = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return pems.filter((pem) => {
    try {
      new X509Certificate(pem);
      return true;
    } catch {
      return false;
    }
  });
}

function fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

function decode(secret: k8s.V1Secret, key: string): string | undefined {
  const value = secret.data?.[key];
  return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

/** Reads the PKI from the Secret; undefined when it has no CA yet. */
export function readStoredPki(secret: k8s.V1Secret | undefined): StoredPki | undefined {
  if (!secret) return undefined;
  const caCert = decode(secret, 'ca.crt');
  const caKey = decode(secret, 'ca.key');
  if (!caCert || !caKey) return undefined;
  const since = secret.metadata?.annotations?.[nextCaSinceAnnotation];
  // Strict: only the exact ISO form this code writes; anything else restarts the delay.
  const sinceDate =
    since && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(since) ? new Date(since) : undefined;
  return {
    caCert,
    caKey,
    nextCaCert: decode(secret, 'next-ca.crt'),
    nextCaKey: decode(secret, 'next-ca.key'),
    nextCaSince: sinceDate && !Number.isNaN(sinceDate.getTime()) ? sinceDate : undefined,
    bundle: splitPems(decode(secret, 'ca-bundle.crt') ?? caCert),
    tlsCert: decode(secret, 'tls.crt'),
    tlsKey: decode(secret, 'tls.key'),
  };
}

/** The Secret's data and annotations for a PKI. */
export function storedPkiSecret(
  pki: StoredPki,
  options: Pick<ServingCertificateOptions, 'namespace' | 'secretName'>,
  resourceVersion?: string,
): k8s.V1Secret {
  const data: Record<string, string | undefined> = {
    'ca.crt': pki.caCert,
    'ca.key': pki.caKey,
    'ca-bundle.crt': pki.bundle.join('\n'),
    'tls.crt': pki.tlsCert,
    'tls.key': pki.tlsKey,
    'next-ca.crt': pki.nextCaCert,
    'next-ca.key': pki.nextCaKey,
  };
  return {
    metadata: {
      name: options.secretName,
      namespace: options.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
      ...(pki.nextCaSince
        ? { annotations: { [nextCaSinceAnnotation]: pki.nextCaSince.toISOString() } }
        : {}),
      resourceVersion,
    },
    type: 'Opaque',
    data: Object.fromEntries(
      Object.entries(data)
        .filter((entry): entry is [string, string] => entry[1] !== undefined)
        .map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
  };
}

export interface ServingCertificatePlan {
  pki: StoredPki;
  result: ServingCertificate;
  /** Whether the Secret must be written. */
  write: boolean;
}

/** A CA's certificate and key, PEM. */
interface CaPair {
  cert: string;
  key: string;
}

/** The CAs a plan decided on: the one that signs, the one being trusted before it signs, older ones. */
interface CaPlan {
  current: CaPair;
  next: (CaPair & { since: Date }) | undefined;
  older: string[];
  changed: ServingCertificate['changed'];
  write: boolean;
}

/** Decides the next state of the PKI at `now` (no API calls; new keys are generated here). */
export async function planServingCertificate(
  stored: StoredPki | undefined,
  options: Omit<ServingCertificateOptions, 'namespace' | 'secretName'>,
): Promise<ServingCertificatePlan> {
  const now = (options.now?.() ?? new Date()).getTime();
  const fraction = options.renewFraction ?? 1 / 3;
  const caDays = (options.caValidityMs ?? 3650 * dayMs) / dayMs;
  const cas = await planCas(stored, now, fraction, caDays);
  const { current, next } = cas;
  let { changed, write } = cas;
  const bundle = caBundle(current, next, cas.older, now);
  if (stored && changed === 'unchanged' && bundle.join('\n') !== stored.bundle.join('\n')) {
    changed = 'updated-bundle';
  }
  const serving = await servingPair(stored, current, changed, options, now, fraction);
  changed = serving.changed;
  const { certPem, keyPem } = serving;
  if (changed !== 'unchanged') write = true;

  // Look again at the first of: certificate renewal, CA renewal or promotion, a CA expiring.
  const due = [renewTime(certPem, fraction)];
  if (next) due.push(next.since.getTime() + caPromotionDelayMs(next.cert, fraction));
  else due.push(renewTime(current.cert, fraction));
  for (const pem of bundle) if (pem !== current.cert) due.push(validity(pem).to);
  const pki: StoredPki = {
    caCert: current.cert,
    caKey: current.key,
    nextCaCert: next?.cert,
    nextCaKey: next?.key,
    nextCaSince: next?.since,
    bundle,
    tlsCert: certPem,
    tlsKey: keyPem,
  };
  return {
    pki,
    write,
    result: {
      certPem,
      keyPem,
      caBundle: bundle.join('\n'),
      renewAt: new Date(Math.min(...due)),
      changed,
      trustDelayMs: caPromotionDelayMs(current.cert, fraction),
    },
  };
}

/** Whether the certificate in `pem` is still valid at `now`. */
function unexpiredAt(pem: string, now: number): boolean {
  return validity(pem).to > now;
}

/** A new self-signed CA of `caDays`. */
async function newCa(caDays: number): Promise<CaPair> {
  const ca = await createCertificateAuthority(caName, caDays);
  return { cert: ca.certPem, key: ca.keyPem };
}

/**
 * The CAs at `now`: created when none is stored; an expired current CA replaced, a next CA
 * promoted once trusted long enough, or one prepared when the current is due for renewal.
 */
async function planCas(
  stored: StoredPki | undefined,
  now: number,
  fraction: number,
  caDays: number,
): Promise<CaPlan> {
  if (!stored)
    return {
      current: await newCa(caDays),
      next: undefined,
      older: [],
      changed: 'created',
      write: false,
    };
  let changed: ServingCertificate['changed'] = 'unchanged';
  let write = false;
  let current: CaPair = { cert: stored.caCert, key: stored.caKey };
  let next: CaPlan['next'];
  const older = [...stored.bundle];
  if (stored.nextCaCert && stored.nextCaKey && splitPems(stored.nextCaCert).length === 1) {
    if (!stored.nextCaSince) write = true; // restart the delay from now
    next = {
      cert: stored.nextCaCert,
      key: stored.nextCaKey,
      since: stored.nextCaSince ?? new Date(now),
    };
    if (!unexpiredAt(next.cert, now)) next = undefined;
  } else if (stored.nextCaCert || stored.nextCaKey) {
    write = true; // half a next CA: prepared again below when due
  }
  if (!unexpiredAt(current.cert, now)) {
    // Expired: served certificates are already rejected, nothing is left to protect.
    current = next ? { cert: next.cert, key: next.key } : await newCa(caDays);
    next = undefined;
    changed = 'renewed-ca';
  } else if (next && next.since.getTime() + caPromotionDelayMs(next.cert, fraction) <= now) {
    older.unshift(current.cert);
    current = { cert: next.cert, key: next.key };
    next = undefined;
    changed = 'renewed-ca';
  } else if (!next && renewTime(current.cert, fraction) <= now) {
    const prepared = await newCa(caDays);
    next = { ...prepared, since: new Date(now) };
    changed = 'prepared-ca';
  }
  return { current, next, older, changed, write };
}

/** The bundle: current CA, next CA, then older CAs until they expire (each once). */
function caBundle(
  current: CaPair,
  next: CaPair | undefined,
  older: readonly string[],
  now: number,
): string[] {
  const seen = new Set<string>();
  return [current.cert, ...(next ? [next.cert] : []), ...older].filter((pem) => {
    const id = fingerprint(pem);
    if (seen.has(id) || (pem !== current.cert && !unexpiredAt(pem, now))) return false;
    seen.add(id);
    return true;
  });
}

/**
 * The serving certificate and key: the stored pair, or one issued by the current CA when the
 * stored one is missing, due, for other names, or from another CA.
 */
async function servingPair(
  stored: StoredPki | undefined,
  current: CaPair,
  changed: ServingCertificate['changed'],
  options: Omit<ServingCertificateOptions, 'namespace' | 'secretName'>,
  now: number,
  fraction: number,
): Promise<{ certPem: string; keyPem: string; changed: ServingCertificate['changed'] }> {
  const certPem = stored?.tlsCert;
  const keyPem = stored?.tlsKey;
  const stale =
    changed === 'created' ||
    changed === 'renewed-ca' ||
    !certPem ||
    !keyPem ||
    splitPems(certPem).length !== 1 ||
    renewTime(certPem, fraction) <= now ||
    !coversNames(certPem, options.dnsNames, options.ipAddresses) ||
    !issuedBy(certPem, current.cert);
  if (!stale) return { certPem, keyPem, changed };
  const ca: CertificateAuthority = await loadCertificateAuthority({
    certPem: current.cert,
    keyPem: current.key,
  });
  const issued = await issueCertificate(ca, {
    commonName: options.dnsNames[0] ?? 'winfleet-webhook',
    dnsNames: options.dnsNames,
    ipAddresses: options.ipAddresses,
    usage: 'server',
    days: (options.certValidityMs ?? 365 * dayMs) / dayMs,
  });
  return {
    certPem: issued.certPem,
    keyPem: issued.keyPem,
    changed:
      changed === 'unchanged' || changed === 'updated-bundle' ? 'renewed-certificate' : changed,
  };
}

/** Writers that lose a race re-read the Secret; this bounds how often. */
const maxAttempts = 5;

/** Creates or renews the webhook PKI Secret; returns what to serve and what to trust. */
export async function ensureServingCertificate(
  kc: k8s.KubeConfig,
  options: ServingCertificateOptions,
): Promise<ServingCertificate> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (let attempt = 1; ; attempt++) {
    let secret: k8s.V1Secret | undefined;
    try {
      secret = await core.readNamespacedSecret({
        name: options.secretName,
        namespace: options.namespace,
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    const plan = await planServingCertificate(readStoredPki(secret), options);
    if (!plan.write) return plan.result;
    const body = storedPkiSecret(plan.pki, options, secret?.metadata?.resourceVersion);
    try {
      if (secret)
        await core.replaceNamespacedSecret({
          name: options.secretName,
          namespace: options.namespace,
          body,
        });
      else await core.createNamespacedSecret({ namespace: options.namespace, body });
      return plan.result;
    } catch (error) {
      // 409: another replica wrote first (conflict, or created it): read theirs and adopt it.
      if (!isConflict(error) || attempt >= maxAttempts) throw error;
    }
  }
}
