/**
 * Trusting a cluster from `kube-public/cluster-info`, read before anything about the server is
 * known, as kubeadm's token discovery does (cmd/kubeadm/app/discovery/token/token.go):
 * 1. the ConfigMap's `kubeconfig` must carry the detached JWS `jws-kubeconfig-<token id>` that
 *    the controller manager's bootstrapsigner adds for each token with usage-bootstrap-signing
 *    (k8s.io/cluster-bootstrap token/jws): compact form `header..signature`, HS256 keyed by the
 *    token secret over `base64url(header) "." base64url(kubeconfig)`. Only someone who holds the
 *    token secret can make it;
 * 2. the kubeconfig must name exactly one cluster, with its CA as certificate-authority-data;
 * 3. that CA's public key must have the hash the join command pins (ca-pin.ts).
 * Any mismatch is a refusal (WF_JOIN_REFUSED) naming what did not match; the token secret is
 * never part of a message.
 *
 * The header must be exactly what the signer writes, `{"alg":"HS256","kid":"<id>"}`: kubeadm
 * recomputes the whole detached JWS and compares it, so it too accepts no other header (no
 * `alg: none`, no other key id, no extra members such as `b64`). The signature is compared in
 * constant time.
 */
import { createHmac, timingSafeEqual, type X509Certificate } from 'node:crypto';
import { parseDocument } from 'yaml';
import { WinfleetError } from '../errors/catalog.ts';
import { caPublicKeyPin, parseCertificateBundle, pinnedCertificates } from './ca-pin.ts';
import type { JoinToken } from './join-command-values.ts';

export const clusterInfoNamespace = 'kube-public';
export const clusterInfoName = 'cluster-info';
/** The ConfigMap key of the kubeconfig (bootstrapapi.KubeConfigKey). */
export const clusterInfoKubeconfigKey = 'kubeconfig';
/** The prefix of each token's signature key (bootstrapapi.JWSSignatureKeyPrefix). */
export const jwsKeyPrefix = 'jws-kubeconfig-';

/** What a verified cluster-info tells a joining host. */
export interface TrustedClusterInfo {
  /** The cluster's API server as cluster-info names it. */
  server: string;
  /** The pinned CA certificate(s), PEM: the only ones trusted from here on. */
  caPem: string;
  /** The kubeconfig text exactly as signed (the secure re-read must return the same). */
  kubeconfig: string;
}

function refuse(message: string): WinfleetError {
  return new WinfleetError('WF_JOIN_REFUSED', message);
}

const where = `ConfigMap ${clusterInfoNamespace}/${clusterInfoName}`;

function base64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

/** Decodes canonical unpadded base64url; undefined for anything else. */
function decodeBase64url(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

/** The protected header the bootstrapsigner writes for token `id` (go-jose's member order). */
export function expectedJwsHeader(id: string): string {
  return JSON.stringify({ alg: 'HS256', kid: id });
}

/** Why the header is not the expected one, in words, without echoing large input. */
function headerProblem(header: Buffer | undefined, id: string): string {
  if (!header) return 'its header is not base64url';
  let value: unknown;
  try {
    value = JSON.parse(header.toString('utf8'));
  } catch {
    return 'its header is not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'its header is not a JSON object';
  }
  const fields = value as Record<string, unknown>;
  if (fields.alg !== 'HS256') {
    return `its header names algorithm ${JSON.stringify(fields.alg)?.slice(0, 40)}, not HS256`;
  }
  if (fields.kid !== id) {
    return `its header names key id ${JSON.stringify(fields.kid)?.slice(0, 40)}, not the token's id "${id}"`;
  }
  return `its header has members other than alg and kid (${Object.keys(fields).join(', ').slice(0, 80)})`;
}

/**
 * Checks the detached JWS `jws` over `content` for `token`; throws WF_JOIN_REFUSED saying what
 * did not match.
 * @package
 */
export function verifyDetachedJws(jws: string, content: string, token: JoinToken): void {
  const parts = jws.split('.');
  if (parts.length !== 3 || parts[1] !== '') {
    throw refuse(
      `${where} key ${jwsKeyPrefix}${token.id} is not a detached JWS (header..signature); refusing to trust this API server`,
    );
  }
  const [headerText, , signatureText] = parts as [string, string, string];
  if (headerText !== base64url(expectedJwsHeader(token.id))) {
    const problem = headerProblem(decodeBase64url(headerText), token.id);
    throw refuse(
      `${where} key ${jwsKeyPrefix}${token.id}: ${problem}; refusing to trust this API server`,
    );
  }
  const signature = decodeBase64url(signatureText);
  const expected = createHmac('sha256', token.secret)
    .update(`${headerText}.${base64url(content)}`)
    .digest();
  if (!signature || signature.length !== expected.length || !timingSafeEqual(signature, expected)) {
    throw refuse(
      `${where}: the signature ${jwsKeyPrefix}${token.id} does not match its kubeconfig for the join token: it was not signed with this token's secret, or the kubeconfig was changed; refusing to trust this API server`,
    );
  }
}

interface KubeconfigCluster {
  server: string;
  caData: string;
}

/** The one cluster of cluster-info's kubeconfig; refuses any other shape. */
function onlyCluster(kubeconfig: string): KubeconfigCluster {
  const document = parseDocument(kubeconfig, { uniqueKeys: true });
  if (document.errors.length > 0) {
    throw refuse(`${where}: its kubeconfig is not YAML (${document.errors[0]!.message})`);
  }
  let value: { clusters?: unknown } | null;
  try {
    // No aliases: a kubeconfig has none, and they are how YAML bombs expand.
    value = document.toJS({ maxAliasCount: 0 }) as { clusters?: unknown } | null;
  } catch (error) {
    throw refuse(`${where}: its kubeconfig is not plain YAML (${(error as Error).message})`);
  }
  const clusters = value?.clusters;
  if (!Array.isArray(clusters) || clusters.length !== 1) {
    throw refuse(
      `${where}: its kubeconfig names ${Array.isArray(clusters) ? clusters.length : 'no list of'} clusters; a cluster-info kubeconfig names exactly one`,
    );
  }
  const cluster = (clusters[0] as { cluster?: Record<string, unknown> } | null)?.cluster;
  const server = cluster?.server;
  const caData = cluster?.['certificate-authority-data'];
  if (typeof server !== 'string' || !/^https:\/\/\S+$/.test(server)) {
    throw refuse(`${where}: its kubeconfig's cluster has no https:// server`);
  }
  if (typeof caData !== 'string' || caData === '') {
    throw refuse(
      `${where}: its kubeconfig's cluster has no certificate-authority-data; the CA must be inline`,
    );
  }
  return { server, caData };
}

/**
 * Verifies an unauthenticated read of cluster-info's data for `token` and the pin `caCertHash`
 * (canonical "sha256:<hex>"). The caller has checked that the signature key is present.
 */
export function trustClusterInfo(
  data: Readonly<Record<string, string>>,
  token: JoinToken,
  caCertHash: string,
): TrustedClusterInfo {
  const kubeconfig = data[clusterInfoKubeconfigKey];
  const jws = data[`${jwsKeyPrefix}${token.id}`];
  if (!kubeconfig) throw refuse(`${where} has no ${clusterInfoKubeconfigKey}`);
  if (!jws) throw refuse(`${where} has no signature ${jwsKeyPrefix}${token.id}`);
  verifyDetachedJws(jws, kubeconfig, token);
  const cluster = onlyCluster(kubeconfig);
  let bundle: X509Certificate[];
  try {
    bundle = parseCertificateBundle(Buffer.from(cluster.caData, 'base64').toString('utf8'));
  } catch (error) {
    throw refuse(
      `${where}: its kubeconfig's certificate-authority-data ${(error as Error).message}`,
    );
  }
  const pinned = pinnedCertificates(bundle, caCertHash);
  if (pinned.length === 0) {
    throw refuse(
      `${where}: the cluster CA's public key does not match --ca-cert-hash ${caCertHash} (cluster-info's CA has ${bundle.map(caPublicKeyPin).join(', ')}); this is not the cluster the join command was made for, or its CA changed since: make a new join command`,
    );
  }
  return {
    server: cluster.server,
    caPem: pinned.map((c) => c.toString()).join(''),
    kubeconfig,
  };
}
