/**
 * Every name and address of the API server, which no kubelet serving certificate may carry:
 * kube-controller-manager signs kubelet-serving certificates with the cluster CA (kubeadm's
 * `--cluster-signing-cert-file` is `ca.crt`), the CA every kubeconfig and every pod trusts for
 * the API server, so a node holding a certificate for one of these names passes as the API
 * server to anyone it can reach on the network. None of them is a Node's address, so the
 * "held by another Node" rule of serving-addresses.ts does not catch them. Collected from:
 *
 * - the `server` of the operator's own kubeconfig (in a pod: the `kubernetes` Service's IP);
 * - `hosts.apiServer` of winfleet-config (what hosts are told to use);
 * - the `server` of kube-public/cluster-info (kubeadm writes its controlPlaneEndpoint there);
 * - the addresses of the `default/kubernetes` EndpointSlice (or Endpoints, where there is no
 *   slice): the API servers themselves, behind a load balancer or VIP;
 * - the DNS and IP SANs of the certificate the API server presents, read in a TLS handshake
 *   that verifies it against the CA the operator trusts (a certificate that does not verify
 *   adds nothing and fails the read): its load-balancer names, the VIP, `kubernetes.default…`.
 *   A wildcard SAN (`*.corp.example`) refuses every name it matches.
 *
 * The set is read again when it is older than `maxAgeMs` (a minute); concurrent readers share
 * one read. A read that fails throws, and the CSR waits: no serving certificate is decided
 * without knowing who the API server is. Only the handshake with the operator's own server is
 * required; the servers named elsewhere (cluster-info, hosts.apiServer) may be unreachable from
 * the operator's network, and their names are refused anyway.
 */
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { connect, type PeerCertificate } from 'node:tls';
import * as k8s from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import type { Informer } from '../../controller-runtime/informer.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { canonicalAddress } from '../../fleet/serving-addresses.ts';
import { clusterInfoKubeconfigKey, clusterInfoName } from '../../join/cluster-info.ts';
import { isNotFound } from '../../kube/client.ts';

/** The API server's names and addresses (canonical), each with where it was found. */
export interface ApiServerNames {
  /** Canonical name or address → where it was seen ("the server of kube-public/cluster-info"). */
  readonly exact: ReadonlyMap<string, string>;
  /** Wildcard DNS SANs of the API server's certificate, as "*.suffix" → where. */
  readonly wildcards: ReadonlyMap<string, string>;
}

/** Where `address` (canonical) is one of the API server's names, or undefined. */
export function apiServerNameSource(names: ApiServerNames, address: string): string | undefined {
  const exact = names.exact.get(address);
  if (exact) return exact;
  if (isIP(address)) return undefined;
  const dot = address.indexOf('.');
  if (dot < 0) return undefined;
  // A wildcard matches exactly one leftmost label (RFC 6125 6.4.3, as Go's crypto/x509 does).
  return names.wildcards.get(`*${address.slice(dot)}`);
}

/** The host of a URL, canonical (no brackets around IPv6), or undefined when it is no URL. */
export function urlHost(url: string): string | undefined {
  try {
    const host = new URL(url).hostname;
    if (!host) return undefined;
    return canonicalAddress(host.startsWith('[') ? host.slice(1, -1) : host);
  } catch {
    return undefined;
  }
}

/** The DNS and IP SANs of a peer certificate (Node's `subjectaltname` text). */
export function certificateSans(certificate: Pick<PeerCertificate, 'subjectaltname'>): string[] {
  const text = certificate.subjectaltname ?? '';
  const out: string[] = [];
  for (const entry of text.split(', ')) {
    const match = /^(DNS|IP Address):(.+)$/.exec(entry.trim());
    if (match) out.push(canonicalAddress(match[2]!));
  }
  return out;
}

/** The server named by a cluster-info kubeconfig, if it names one. */
export function clusterInfoServer(configMap: k8s.V1ConfigMap | undefined): string | undefined {
  const text = configMap?.data?.[clusterInfoKubeconfigKey];
  if (!text) return undefined;
  const document = parseDocument(text, { uniqueKeys: true });
  if (document.errors.length > 0) return undefined;
  const value = document.toJS({ maxAliasCount: 0 }) as {
    clusters?: { cluster?: { server?: unknown } }[];
  } | null;
  const servers = (Array.isArray(value?.clusters) ? value.clusters : [])
    .map((c) => c?.cluster?.server)
    .filter((s): s is string => typeof s === 'string');
  return servers[0];
}

/** How the certificate of the API server at `url` is read (tests replace it). */
export type PresentedSans = (url: string, ca: string | undefined) => Promise<string[]>;

/**
 * The SANs of the certificate the server at `url` presents, after a handshake that verifies it
 * against `ca` (the system's roots when undefined) and the URL's host, as a client would.
 * @package
 */
export const presentedSans: PresentedSans = (url, ca) =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    const socket = connect({
      host,
      port: Number(port || 443),
      ...(isIP(host) ? {} : { servername: host }),
      ...(ca ? { ca } : {}),
      rejectUnauthorized: true,
      ALPNProtocols: ['http/1.1'],
    });
    socket.setTimeout(5000, () =>
      socket.destroy(new WinfleetError('WF_TIMEOUT', `no TLS handshake with ${url} within 5 s`)),
    );
    socket.once('error', (error) =>
      reject(
        new WinfleetError(
          'WF_CLUSTER_UNREACHABLE',
          `Cannot read the certificate the API server presents at ${url}: ${error.message}`,
          { cause: error },
        ),
      ),
    );
    socket.once('secureConnect', () => {
      const sans = certificateSans(socket.getPeerCertificate());
      socket.end();
      resolve(sans);
    });
  });

export interface ApiServerNamesDeps {
  kc: k8s.KubeConfig;
  /** kube-public/cluster-info alone (the operator's informer). */
  clusterInfo?: Informer<k8s.V1ConfigMap>;
  /** winfleet-config's hosts.apiServer, if set. */
  hostsApiServer: () => string | undefined;
  /** The handshake (presentedSans by default). */
  sans?: PresentedSans;
  maxAgeMs?: number;
  now?: () => number;
}

/** A reader of the API server's names, cached for `maxAgeMs` (module comment). */
export function apiServerNamesReader(deps: ApiServerNamesDeps): () => Promise<ApiServerNames> {
  const maxAgeMs = deps.maxAgeMs ?? 60_000;
  const now = deps.now ?? Date.now;
  const sans = deps.sans ?? presentedSans;
  let cached: { at: number; names: Promise<ApiServerNames> } | undefined;
  return () => {
    if (cached && now() - cached.at < maxAgeMs) return cached.names;
    const names = readApiServerNames(deps, sans);
    cached = { at: now(), names };
    // A failed read is not kept: the next CSR asks again.
    names.catch(() => {
      if (cached?.names === names) cached = undefined;
    });
    return names;
  };
}

/** The operator's CA, PEM, or undefined for the system's roots. */
function operatorCa(cluster: k8s.Cluster): string | undefined {
  if (cluster.caData) return Buffer.from(cluster.caData, 'base64').toString('utf8');
  return undefined;
}

async function readApiServerNames(
  deps: ApiServerNamesDeps,
  sans: PresentedSans,
): Promise<ApiServerNames> {
  const exact = new Map<string, string>();
  const wildcards = new Map<string, string>();
  const add = (address: string | undefined, where: string) => {
    if (!address) return;
    if (address.startsWith('*.')) {
      if (!wildcards.has(address)) wildcards.set(address, where);
    } else if (!exact.has(address)) exact.set(address, where);
  };
  const cluster = deps.kc.getCurrentCluster();
  if (!cluster) {
    throw new WinfleetError(
      'WF_KUBECONFIG_INVALID',
      'The kubeconfig has no current cluster; set current-context to a context that names one',
    );
  }
  const ca = cluster.caFile
    ? readFile(cluster.caFile, 'utf8')
    : Promise.resolve(operatorCa(cluster));
  const servers: [string, string, boolean][] = [
    [cluster.server, 'the server of the operator’s kubeconfig', true],
  ];
  const configured = deps.hostsApiServer();
  if (configured) servers.push([configured, 'hosts.apiServer of winfleet-config', false]);
  const fromClusterInfo = clusterInfoServer(
    deps.clusterInfo?.list().find((c) => c.metadata?.name === clusterInfoName),
  );
  if (fromClusterInfo)
    servers.push([fromClusterInfo, 'the server of kube-public/cluster-info', false]);
  for (const [url, where] of servers) add(urlHost(url), where);
  for (const address of await kubernetesEndpoints(deps.kc)) {
    add(canonicalAddress(address), 'an address of the default/kubernetes endpoints');
  }
  const trusted = await ca;
  const seen = new Set<string>();
  await Promise.all(
    servers.map(async ([url, where, required]) => {
      const origin = new URL(url).origin;
      if (seen.has(origin)) return;
      seen.add(origin);
      try {
        for (const san of await sans(url, trusted)) {
          add(san, `a name in the certificate the API server presents (at ${where})`);
        }
      } catch (error) {
        if (required) throw error;
      }
    }),
  );
  return { exact, wildcards };
}

/** The addresses of the `kubernetes` Service's endpoints: its EndpointSlice, else Endpoints. */
async function kubernetesEndpoints(kc: k8s.KubeConfig): Promise<string[]> {
  try {
    const slice = await kc
      .makeApiClient(k8s.DiscoveryV1Api)
      .readNamespacedEndpointSlice({ name: 'kubernetes', namespace: 'default' });
    return (slice.endpoints ?? []).flatMap((e) => e.addresses ?? []);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  try {
    const endpoints = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedEndpoints({ name: 'kubernetes', namespace: 'default' });
    return (endpoints.subsets ?? []).flatMap((s) =>
      [...(s.addresses ?? []), ...(s.notReadyAddresses ?? [])].map((a) => a.ip),
    );
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

/** Names from a plain record (address → where), wildcards ("*.x") included. */
export function apiServerNamesOf(entries: Record<string, string> = {}): ApiServerNames {
  const exact = new Map<string, string>();
  const wildcards = new Map<string, string>();
  for (const [address, where] of Object.entries(entries)) {
    const canonical = canonicalAddress(address);
    (canonical.startsWith('*.') ? wildcards : exact).set(canonical, where);
  }
  return { exact, wildcards };
}
