/**
 * The values a join command carries, checked by shape before anything is sent anywhere (by the
 * agent's flags and by the script generators alike): the API server URL, the namespace and node
 * name (RFC 1123 labels), the bootstrap token
 * ("<id>.<secret>", kubeadm's format, k8s.io/cluster-bootstrap token/api) and the hash that pins
 * the cluster CA ("sha256:<hex>", kubeadm's --discovery-token-ca-cert-hash, pubkeypin.go). Both
 * Problems say what is wrong without the value's role (the caller names the flag or field) and
 * never echo the token (its secret half is a credential).
 */

/**
 * The environment variable that carries the join token to `winfleet-agent join`: never a
 * command-line argument, which process listings (Win32_Process.CommandLine), process-creation
 * audit events (4688 with command-line logging) and Sysmon record for any reader of those.
 */
export const joinTokenEnv = 'WINFLEET_JOIN_TOKEN';

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

/** An RFC 1123 label: a namespace or a node name as winfleet uses them. */
export const rfc1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why `text` is not an RFC 1123 label of at most 63 characters, or undefined. */
export function labelProblem(text: string): string | undefined {
  return rfc1123Label.test(text) && text.length <= 63
    ? undefined
    : `is ${JSON.stringify(text.slice(0, 80))}, not an RFC 1123 label (1 to 63 lower-case letters, digits and hyphens, starting and ending with a letter or digit)`;
}

/**
 * The characters RFC 3986 allows in a URI. A URL made only of them holds no blank, no double
 * quote, no backtick and no angle bracket, so it survives a native command line and an XML-ish
 * user-data wrapper unchanged; single quotes, `$` and parentheses are allowed, and quoted.
 */
const uriCharacters = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/;

/** Why `text` is not an API server URL winfleet joins through, or undefined. */
export function apiServerProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL; give https://<host>:<port> of the API server';
  }
  if (url.protocol !== 'https:') return 'must be an https:// URL: the API server speaks TLS';
  if (url.username || url.password || url.search || url.hash || !uriCharacters.test(text)) {
    return 'must be https://<host>[:<port>][/<path>] without credentials, query, fragment or characters a URI does not have';
  }
  return undefined;
}

/** Whether `url`'s host is a loopback address (test registries, the lab). */
function isLoopback(url: URL): boolean {
  return (
    /^127\.\d+\.\d+\.\d+$/.test(url.hostname) ||
    url.hostname === 'localhost' ||
    url.hostname === '[::1]'
  );
}

/**
 * Why `text` is not a URL a host may download the agent from, or undefined: https, or plain
 * http to a loopback address (the lab's registry); RFC 3986 characters only; at most 2048.
 * The download is checked by its SHA-256 either way.
 */
export function downloadUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL';
  }
  if (text.length > 2048 || !uriCharacters.test(text)) {
    return "must be at most 2048 characters a URI has (RFC 3986: no blanks, quotes other than ', backticks or angle brackets; percent-encode them)";
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url))) return undefined;
  return 'must be an https:// URL (plain http only to a loopback address)';
}
