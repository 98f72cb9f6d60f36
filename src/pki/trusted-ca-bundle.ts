/**
 * The trusted CA bundle for Windows nodes: key `ca-bundle.crt` of the winfleet-config
 * ConfigMap (the key OpenShift's trusted CA ConfigMaps use). Each certificate goes into the
 * hosts' LocalMachine\Root store, where Windows and Go programs on Windows (containerd pulling
 * from a registry) find it, and is known there by its thumbprint: the SHA-1 of its DER
 * encoding, upper-case hex, as `Get-ChildItem Cert:\LocalMachine\Root` shows it.
 *
 * Parsed strictly, because it is trust granted to every node: only CERTIFICATE blocks, each a
 * certificate authority (basicConstraints cA true; keyCertSign when key usage is present) that
 * is valid now; between blocks only blank lines and `#` comments. A private key in the bundle is
 * refused without being quoted.
 */
import 'reflect-metadata';
import { createHash, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { WinfleetError } from '../errors/catalog.ts';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** The key of winfleet-config that holds the bundle. */
export const caBundleKey = 'ca-bundle.crt';

/** One CA of the bundle. */
export interface TrustedCertificate {
  /** SHA-1 of the DER, upper-case hex: the Windows thumbprint. */
  thumbprint: string;
  /** The certificate alone, PEM. */
  pem: string;
  /** Its subject, for messages. */
  subject: string;
}

/** Most certificates one bundle may hold. */
export const maxBundleCertificates = 200;

/** The Windows thumbprint of a DER certificate. */
export function certificateThumbprint(der: Uint8Array): string {
  return createHash('sha1').update(der).digest('hex').toUpperCase();
}

const block = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

/** Checks one certificate; returns it, or throws a WinfleetError saying what it is not. */
function checkCertificate(der: Buffer, now: Date | undefined): TrustedCertificate {
  let cert: x509.X509Certificate;
  try {
    cert = new x509.X509Certificate(der);
  } catch (error) {
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `is not an X.509 certificate (${(error as Error).message})`,
    );
  }
  const subject = cert.subject;
  const constraints = cert.getExtension(x509.BasicConstraintsExtension);
  if (!constraints?.ca)
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `"${subject}" is not a certificate authority (basicConstraints cA is not true); put only CA certificates in the bundle`,
    );
  const usage = cert.getExtension(x509.KeyUsagesExtension);
  if (usage && (usage.usages & x509.KeyUsageFlags.keyCertSign) === 0)
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `"${subject}" may not sign certificates (its key usage lacks keyCertSign); it cannot be a trusted CA`,
    );
  if (now && cert.notAfter.getTime() <= now.getTime())
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `"${subject}" expired on ${cert.notAfter.toISOString()}; remove it`,
    );
  if (now && cert.notBefore.getTime() > now.getTime())
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `"${subject}" is not valid before ${cert.notBefore.toISOString()}; check the clock or the certificate`,
    );
  const base64 = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return {
    thumbprint: certificateThumbprint(der),
    pem: `-----BEGIN CERTIFICATE-----\n${base64}-----END CERTIFICATE-----\n`,
    subject,
  };
}

/**
 * The certificates of a bundle, in order, duplicates (same thumbprint) once; or the problems,
 * each naming `field` and the block's place ("ca-bundle.crt block 2: …"). Validity is checked
 * against `now` unless it is undefined.
 */
export function parseCaBundle(
  text: string,
  field = caBundleKey,
  now: Date | undefined = new Date(),
): { certificates: TrustedCertificate[]; problems: string[] } {
  const certificates: TrustedCertificate[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  let rest = '';
  let last = 0;
  let index = 0;
  for (const match of text.matchAll(block)) {
    rest += text.slice(last, match.index);
    last = match.index + match[0].length;
    index++;
    const where = `${field} block ${index}`;
    const type = match[1]!;
    if (type !== 'CERTIFICATE') {
      problems.push(
        `${where}: is a "${type}" block, not a CERTIFICATE${/PRIVATE KEY/.test(type) ? ' (a private key: remove it from the ConfigMap now, and treat the key as exposed)' : ''}; the bundle holds CA certificates only`,
      );
      continue;
    }
    const body = match[2]!.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) {
      problems.push(`${where}: the certificate is not base64; copy the PEM again`);
      continue;
    }
    try {
      const cert = checkCertificate(Buffer.from(body, 'base64'), now);
      if (seen.has(cert.thumbprint)) continue;
      seen.add(cert.thumbprint);
      certificates.push(cert);
    } catch (error) {
      problems.push(`${where}: ${(error as Error).message}`);
    }
  }
  rest += text.slice(last);
  const stray = rest
    .split(/\r?\n/)
    .map((line) => line.trim())
    .find((line) => line !== '' && !line.startsWith('#'));
  if (stray !== undefined)
    problems.push(
      `${field}: has text outside PEM blocks${stray.startsWith('-----') ? ` ("${stray.slice(0, 40)}")` : ''}; keep only "-----BEGIN CERTIFICATE-----" blocks, blank lines and # comments`,
    );
  if (certificates.length > maxBundleCertificates)
    problems.push(
      `${field}: holds ${certificates.length} certificates, more than ${maxBundleCertificates}; trust only the CAs the nodes need`,
    );
  return problems.length > 0 ? { certificates: [], problems } : { certificates, problems };
}

/**
 * Re-checks a certificate from a manifest, as the agent does before trusting it: one CA
 * certificate whose thumbprint is the one given. Validity dates are not checked here: a CA
 * that expires after its manifest was published is still removed by thumbprint.
 */
export function trustedCertificateProblem(cert: {
  thumbprint: string;
  pem: string;
}): string | undefined {
  const { certificates, problems } = parseCaBundle(cert.pem, 'pem', undefined);
  if (problems.length > 0) return problems[0];
  if (certificates.length !== 1) return 'must hold exactly one certificate';
  if (certificates[0]!.thumbprint !== cert.thumbprint)
    return `the thumbprint ${cert.thumbprint} is not the certificate's (${certificates[0]!.thumbprint})`;
  return undefined;
}
