/**
 * Pinning the cluster CA by the hash of its public key, as kubeadm does
 * (cmd/kubeadm/app/util/pubkeypin/pubkeypin.go): "sha256:" and the lower-case hex SHA-256 of the
 * certificate's SubjectPublicKeyInfo in DER. The same value `openssl x509 -pubkey -in ca.crt |
 * openssl pkey -pubin -outform der | sha256sum` prints, so a user can check a join command
 * against the CA on a control-plane node.
 *
 * A bundle may hold several certificates (a CA being rotated); only those whose key matches the
 * pin are trusted afterwards, never the bundle as a whole (kubeadm trusts the whole bundle when
 * one matches, so a signed bundle with an extra CA would be trusted too).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { WinfleetError } from '../errors/catalog.ts';

/** The pin of a certificate's public key: "sha256:<64 hex>". */
export function caPublicKeyPin(certificate: X509Certificate): string {
  const spki = certificate.publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

const pemBlock = /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/g;

/**
 * The certificates of a PEM bundle. Throws a WinfleetError naming the problem when the text holds
 * anything but certificate blocks and blank space, no certificate, or one that does not parse.
 */
export function parseCertificateBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(pemBlock) ?? [];
  if (pem.replace(pemBlock, '').trim() !== '') {
    throw new WinfleetError('WF_JOIN_REFUSED', 'holds text other than PEM CERTIFICATE blocks');
  }
  if (blocks.length === 0) throw new WinfleetError('WF_JOIN_REFUSED', 'holds no PEM certificate');
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new WinfleetError(
        'WF_JOIN_REFUSED',
        `certificate ${index + 1} does not parse: ${(error as Error).message}`,
      );
    }
  });
}

/** The certificates of `bundle` whose public key has the pin `pin` (canonical form). */
export function pinnedCertificates(bundle: X509Certificate[], pin: string): X509Certificate[] {
  return bundle.filter((certificate) => caPublicKeyPin(certificate) === pin);
}
