/**
 * The CA hash a join command pins (kubeadm's --discovery-token-ca-cert-hash, ca-pin.ts). It is
 * the hash of the CA the person making the command trusts: their kubeconfig's, over which they
 * just talked to the cluster. A joining host reads the CA from kube-public/cluster-info before it
 * trusts anything, so that CA must be the same: a cluster-info whose CA the kubeconfig does not
 * trust is refused here (a host would refuse it too, or — were it the kubeconfig that is wrong —
 * trust the wrong cluster). Without a CA in the kubeconfig (the system's roots), cluster-info's
 * CA is pinned, as read over that trusted connection, and the caller says so.
 */
import type { X509Certificate } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import { isNotFound } from '../kube/client.ts';
import { clusterAccess } from '../operator/cluster-access.ts';
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
