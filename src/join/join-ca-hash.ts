/**
 * The CA hash a join command pins (kubeadm's --discovery-token-ca-cert-hash, ca-pin.ts). It is
 * the hash of the CA the person making the command trusts: their kubeconfig's, over which they
 * just talked to the cluster. A joining host reads the CA from kube-public/cluster-info before it
 * trusts anything, so that CA must be the same: a cluster-info whose CA the kubeconfig does not
 * trust is refused here (a host would refuse it too, or — were it the kubeconfig that is wrong —
 * trust the wrong cluster). Without a CA in the kubeconfig (the system's roots), cluster-info's
 * CA is pinned, as read over that trusted connection, and the caller says so.
 *
 * A kubeconfig that skips TLS verification (insecure-skip-tls-verify) proves nothing about who
 * answered: whoever sits in between would see the new token and could serve a cluster-info
 * signed with it and naming its own CA, which every host running the script would then trust.
 * So the command first makes its connection one it can verify (verifiedJoinAccess): with a CA
 * the admin gives (--ca-file), the kubeconfig's own CA, or the CA of cluster-info whose public
 * key has the hash the admin gives (--ca-cert-hash, kubeadm's format); with none of these it
 * refuses before it sends anything.
 */
import type { X509Certificate } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import { isNotFound } from '../kube/client.ts';
import { clusterAccess } from '../kube/cluster-access.ts';
import { caPublicKeyPin, parseCertificateBundle, pinnedCertificates } from './ca-pin.ts';
import { clusterInfoKubeconfigKey, clusterInfoName, clusterInfoNamespace } from './cluster-info.ts';

export type JoinCaHash =
  | { hash: string; server: string; from: 'kubeconfig' | 'cluster-info' }
  | { problem: string };

const where = `ConfigMap ${clusterInfoNamespace}/${clusterInfoName}`;

/** cluster-info's server and CA bundle, or why it cannot be read. */
function readClusterInfo(
  data: Record<string, string> | undefined,
): { server: string; bundle: X509Certificate[] } | { problem: string } {
  const document = parseDocument(data?.[clusterInfoKubeconfigKey] ?? '', { uniqueKeys: true });
  if (document.errors.length > 0) return { problem: `${where}: its kubeconfig is not YAML` };
  const value = document.toJS({ maxAliasCount: 0 }) as {
    clusters?: { cluster?: { server?: unknown; 'certificate-authority-data'?: unknown } }[];
  } | null;
  const cluster =
    Array.isArray(value?.clusters) && value.clusters.length === 1
      ? value.clusters[0]?.cluster
      : undefined;
  const server = cluster?.server;
  const caData = cluster?.['certificate-authority-data'];
  if (typeof server !== 'string' || typeof caData !== 'string') {
    return {
      problem: `${where}: its kubeconfig does not name exactly one cluster with a server and certificate-authority-data`,
    };
  }
  try {
    return {
      server,
      bundle: parseCertificateBundle(Buffer.from(caData, 'base64').toString('utf8')),
    };
  } catch (error) {
    return { problem: `${where}: its certificate-authority-data ${(error as Error).message}` };
  }
}

/** The kubeconfig's CA bundle, or undefined when it names none. */
function kubeconfigBundle(kc: k8s.KubeConfig): X509Certificate[] | undefined {
  let pem: string;
  try {
    pem = clusterAccess(kc).caCertificate;
  } catch {
    return undefined;
  }
  return parseCertificateBundle(pem);
}

/** The hash to pin, from the kubeconfig's CA checked against cluster-info's (module comment). */
export async function joinCaHash(kc: k8s.KubeConfig): Promise<JoinCaHash> {
  let configMap: k8s.V1ConfigMap;
  try {
    configMap = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ name: clusterInfoName, namespace: clusterInfoNamespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    return {
      problem: `${where} does not exist, and joining hosts discover the cluster from it: the winfleet operator creates it when it runs with a payload (kubeadm clusters have one); check that the operator runs`,
    };
  }
  const info = readClusterInfo(configMap.data);
  if ('problem' in info) return info;
  const trusted = kubeconfigBundle(kc);
  if (!trusted)
    return { hash: caPublicKeyPin(info.bundle[0]!), server: info.server, from: 'cluster-info' };
  const hash = caPublicKeyPin(trusted[0]!);
  if (pinnedCertificates(info.bundle, hash).length === 0) {
    return {
      problem: `${where} names a CA (${info.bundle.map(caPublicKeyPin).join(', ')}) other than the one your kubeconfig trusts (${hash}); a joining host would refuse it. If winfleet made cluster-info, its operator runs with another CA; otherwise fix cluster-info`,
    };
  }
  return { hash, server: info.server, from: 'kubeconfig' };
}

/** What the admin gave on the command line to trust the cluster by. */
export interface GivenCa {
  /** --ca-cert-hash: "sha256:<hex of the SHA-256 of the CA's SubjectPublicKeyInfo>". */
  caCertHash?: string;
  /** --ca-file: the cluster CA, PEM (its text). */
  caPem?: string;
}

/** How to get the hash on a control-plane node, for messages. */
export const caCertHashRecipe =
  'openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum';

/** `kc` with its current cluster verified against `caPem` (skipTLSVerify off). */
function withCa(kc: k8s.KubeConfig, caPem: string): k8s.KubeConfig {
  const current = kc.getCurrentCluster()!;
  const next = new k8s.KubeConfig();
  next.loadFromOptions({
    clusters: kc.clusters.map((c) =>
      c.name === current.name
        ? {
            name: c.name,
            server: c.server,
            caData: Buffer.from(caPem).toString('base64'),
            skipTLSVerify: false,
            ...(c.tlsServerName ? { tlsServerName: c.tlsServerName } : {}),
            ...(c.proxyUrl ? { proxyUrl: c.proxyUrl } : {}),
          }
        : c,
    ),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return next;
}

/**
 * A kubeconfig for the rest of join-command whose connection is verified (module comment), or
 * why there is none. Nothing is sent without one, but, with --ca-cert-hash, a read of
 * cluster-info, whose CA the hash then checks.
 */
export async function verifiedJoinAccess(
  kc: k8s.KubeConfig,
  given: GivenCa,
): Promise<{ kc: k8s.KubeConfig } | { problem: string }> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    return {
      problem: 'the kubeconfig has no current cluster; set current-context to one that names one',
    };
  }
  if (given.caPem !== undefined) {
    let bundle: X509Certificate[];
    try {
      bundle = parseCertificateBundle(given.caPem);
    } catch (error) {
      return { problem: `--ca-file ${(error as Error).message}` };
    }
    if (given.caCertHash && pinnedCertificates(bundle, given.caCertHash).length === 0) {
      return {
        problem: `--ca-file holds no CA with the --ca-cert-hash ${given.caCertHash} (it holds ${bundle.map(caPublicKeyPin).join(', ')}); give one of them, or the right file`,
      };
    }
    return { kc: withCa(kc, bundle.map((c) => c.toString()).join('\n')) };
  }
  if (given.caCertHash) {
    let configMap: k8s.V1ConfigMap;
    try {
      configMap = await kc
        .makeApiClient(k8s.CoreV1Api)
        .readNamespacedConfigMap({ name: clusterInfoName, namespace: clusterInfoNamespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return {
        problem: `${where} does not exist, so --ca-cert-hash has no CA to check: check that the operator runs, or give --ca-file`,
      };
    }
    const info = readClusterInfo(configMap.data);
    if ('problem' in info) return info;
    const pinned = pinnedCertificates(info.bundle, given.caCertHash);
    if (pinned.length === 0) {
      return {
        problem: `${where} names a CA (${info.bundle.map(caPublicKeyPin).join(', ')}) other than --ca-cert-hash ${given.caCertHash}: whoever answered at ${cluster.server} is not the cluster that hash is of (a man in the middle?), or the hash is wrong (on a control-plane node: ${caCertHashRecipe}). Nothing was created`,
      };
    }
    return { kc: withCa(kc, pinned.map((c) => c.toString()).join('\n')) };
  }
  const hasCa = Boolean(cluster.caData || cluster.caFile);
  if (cluster.skipTLSVerify && !hasCa) {
    return {
      problem: `your kubeconfig skips TLS verification for ${cluster.server} (insecure-skip-tls-verify) and names no CA, so nothing proves who answers: the script would pin whatever CA a man in the middle served, and every host running it would trust that server. Give the cluster CA: --ca-cert-hash sha256:<hash> (on a control-plane node: ${caCertHashRecipe}) or --ca-file <the CA's PEM file>. Nothing was created`,
    };
  }
  // The kubeconfig's own CA verifies from now on, even where it said to skip verification.
  if (cluster.skipTLSVerify) return { kc: withCa(kc, clusterAccess(kc).caCertificate) };
  return { kc };
}
