/**
 * The two values a join command carries besides the API server: the bootstrap token
 * ("<id>.<secret>", kubeadm's format, k8s.io/cluster-bootstrap token/api) and the hash that pins
 * the cluster CA ("sha256:<hex>", kubeadm's --discovery-token-ca-cert-hash, pubkeypin.go). Both
 * are checked by shape before anything is sent anywhere; problems name the value's role and
 * never echo the token (its secret half is a credential).
 */

/** A bootstrap token split into its public id and its secret. */
export interface JoinToken {
  /** 6 characters [a-z0-9]: names the Secret bootstrap-token-<id> and the JWS key id. */
  id: string;
  /** 16 characters [a-z0-9]: the credential, and the HMAC key of cluster-info's signature. */
  secret: string;
}

const tokenPattern = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const caCertHashPattern = /^sha256:([0-9a-fA-F]{64})$/;

/** Why `text` is not a bootstrap token, or undefined when it is one. Never quotes `text`. */
export function joinTokenProblem(text: string): string | undefined {
  return tokenPattern.test(text)
    ? undefined
    : 'is not a bootstrap token: it must be 6 characters a-z0-9, a dot, then 16 characters a-z0-9 (as `winfleet join-command` prints it)';
}

/** The token's id and secret; undefined when `text` is not a token. */
export function parseJoinToken(text: string): JoinToken | undefined {
  const match = tokenPattern.exec(text);
  return match ? { id: match[1]!, secret: match[2]! } : undefined;
}

/**
 * The pin in canonical form ("sha256:" and 64 lower-case hex digits), or undefined when `text`
 * is not one. kubeadm accepts upper-case hex too (pubkeypin.go lower-cases it), and so does this.
 */
export function parseCaCertHash(text: string): string | undefined {
  const match = caCertHashPattern.exec(text);
  return match ? `sha256:${match[1]!.toLowerCase()}` : undefined;
}

/** Why `text` is not a CA certificate hash, or undefined when it is one. */
export function caCertHashProblem(text: string): string | undefined {
  return parseCaCertHash(text) !== undefined
    ? undefined
    : `is ${JSON.stringify(text.slice(0, 80))}, not "sha256:" and the 64 hex digits of the SHA-256 of the cluster CA's public key (SubjectPublicKeyInfo), as kubeadm's --discovery-token-ca-cert-hash`;
}
