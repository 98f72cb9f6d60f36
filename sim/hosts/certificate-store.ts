/**
 * A simulated machine's LocalMachine\Root certificate store, as X509Store and the Cert: drive
 * show it:
 * - a certificate is known by its thumbprint, the SHA-1 of its DER encoding in upper-case hex
 *   (X509Certificate2.Thumbprint), which the store computes itself: a caller cannot choose it;
 * - adding bytes that are not a DER certificate fails as the X509Certificate2 constructor does
 *   (CryptographicException "Cannot find the requested object.", CRYPT_E_NOT_FOUND 0x80092004,
 *   the text of a non-certificate blob); adding one already there changes nothing (X509Store.Add
 *   replaces a certificate with itself);
 * - removal is by thumbprint; the store outlives reboots (it is registry-backed).
 * A machine starts with an empty store, not with the roots Windows ships; a test that needs a
 * root winfleet did not add puts one there itself.
 */
import { X509Certificate } from 'node:crypto';
import { certificateThumbprint } from '../../src/pki/trusted-ca-bundle.ts';

/** One certificate in the store. */
export interface StoredRootCertificate {
  thumbprint: string;
  subject: string;
  der: Buffer;
}

/** X509Certificate2's error for bytes that are not a certificate. */
export const notACertificate = 'Cannot find the requested object.';

export class CertificateStore {
  readonly #certificates = new Map<string, StoredRootCertificate>();

  /** The certificates, in the order they were added. */
  list(): StoredRootCertificate[] {
    return [...this.#certificates.values()];
  }

  has(thumbprint: string): boolean {
    return this.#certificates.has(thumbprint.toUpperCase());
  }

  /** Adds a DER certificate; returns its thumbprint. Throws for anything else (see the header). */
  add(der: Buffer): string {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(der);
    } catch {
      throw new Error(notACertificate);
    }
    // Node's X509Certificate also takes PEM; X509Certificate2 over raw bytes does too, but the
    // agent sends DER, so PEM here means someone sent text.
    if (der.subarray(0, 5).toString('latin1') === '-----') throw new Error(notACertificate);
    const thumbprint = certificateThumbprint(der);
    this.#certificates.set(thumbprint, {
      thumbprint,
      subject: cert.subject.split('\n').reverse().join(', '),
      der: Buffer.from(der),
    });
    return thumbprint;
  }

  /** Removes a certificate by thumbprint; true when it was there. */
  remove(thumbprint: string): boolean {
    return this.#certificates.delete(thumbprint.toUpperCase());
  }
}
