/**
 * The cluster-wide proxy for Windows nodes (winfleet-config `hosts.proxy`), in the two forms
 * Windows programs read it:
 * - Go programs (containerd, the kubelet, kube-proxy, csi-proxy) read HTTP_PROXY, HTTPS_PROXY
 *   and NO_PROXY (golang.org/x/net/http/httpproxy): NO_PROXY is a comma-separated list of
 *   host names (`corp.example` matches it and its subdomains, `.corp.example` only the
 *   subdomains), IP addresses, CIDRs and `*`;
 * - WinHTTP (Windows Update, which the agent drives, and other system components) takes a
 *   semicolon-separated bypass list (`netsh winhttp set proxy ... bypass-list=`) of host
 *   patterns with `*` wildcards and `<local>` (names without a dot); it has no CIDRs.
 *
 * One input gives both, so neither is written by hand (WMCO users saw their commas turned into
 * semicolons). The cluster's service and pod CIDRs, the API server's host and loopback are
 * always bypassed: node components must never reach the cluster through a proxy.
 */

import { WinfleetError } from '../errors/catalog.ts';
import { formatIpv4, type Ipv4Cidr, parseIpv4, parseIpv4Cidr } from './ipv4-cidr.ts';

/** winfleet-config `hosts.proxy`. */
export interface ProxyConfig {
  /** Proxy for http:// requests, e.g. "http://proxy.corp.example:3128". */
  httpProxy?: string;
  /** Proxy for https:// requests (usually the same URL). */
  httpsProxy?: string;
  /** Destinations reached directly: a YAML list, or one comma-separated string. */
  noProxy?: string[] | string;
}

/** One bypass entry, classified. */
export type NoProxyEntry =
  | { kind: 'any' }
  | { kind: 'local' }
  | { kind: 'domain'; name: string; subdomainsOnly: boolean }
  | { kind: 'ip'; address: number }
  | { kind: 'cidr'; cidr: Ipv4Cidr }
  /** Only the API server's own address, never user input (winfleet's networks are IPv4). */
  | { kind: 'ipv6'; address: string };

/** The cluster facts always in the bypass list. */
export interface ClusterAddresses {
  serviceCIDR: string;
  podCIDR: string;
  /** The API server URL the hosts use, e.g. "https://10.0.0.1:6443". */
  apiServer: string;
}

/** What the nodes get: the environment for Go programs and WinHTTP's proxy setting. */
export interface NodeProxy {
  /** HTTP_PROXY, HTTPS_PROXY and NO_PROXY (commas), as set. */
  env: Record<string, string>;
  /** `netsh winhttp set proxy proxy-server=<proxyServer> bypass-list=<bypassList>`. */
  winHttp: { proxyServer: string; bypassList: string };
}

const label = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A DNS name as NO_PROXY takes it: lowercase labels, at most 253 characters. */
function isDnsName(name: string): boolean {
  return name.length <= 253 && name.split('.').every((part) => label.test(part));
}

/**
 * Classifies one entry; throws a WinfleetError naming `field` for what neither list can say: a
 * port (WinHTTP's bypass list matches hosts only), IPv6, a semicolon, a wildcard other than a
 * leading `*.`, or a URL.
 */
export function parseNoProxyEntry(text: string, field: string): NoProxyEntry {
  const entry = text.trim().toLowerCase();
  const refuse = (why: string) =>
    new WinfleetError('WF_CONFIG_INVALID', `${field}: "${text}" ${why}`);
  if (entry === '') throw refuse('is empty; remove it');
  if (entry === '*') return { kind: 'any' };
  if (entry === '<local>') return { kind: 'local' };
  if (entry.includes(';'))
    throw refuse(
      'contains ";"; list entries with commas or as a YAML list (winfleet writes the semicolon form for WinHTTP itself)',
    );
  if (entry.includes('://') || (entry.includes('/') && !parseIpv4Cidr(entry)))
    throw refuse(
      'is not a host name, IPv4 address or IPv4 CIDR; write e.g. ".corp.example" or "10.0.0.0/8"',
    );
  const cidr = parseIpv4Cidr(entry);
  if (cidr) return { kind: 'cidr', cidr };
  const address = parseIpv4(entry);
  if (address !== undefined) return { kind: 'ip', address };
  if (entry.includes(':'))
    throw refuse(
      'has a port or is IPv6; give the host alone (a bypassed host is bypassed on every port)',
    );
  const subdomainsOnly = entry.startsWith('.') || entry.startsWith('*.');
  const name = entry.replace(/^\*?\./, '');
  if (!isDnsName(name))
    throw refuse('is not a host name; write e.g. "registry.corp.example" or ".corp.example"');
  return { kind: 'domain', name, subdomainsOnly };
}

/** The entries of `noProxy` (a list, or a comma-separated string), or the problems. */
export function parseNoProxy(
  noProxy: string[] | string | undefined,
  field: string,
): { entries: NoProxyEntry[]; problems: string[] } {
  const list =
    noProxy === undefined ? [] : typeof noProxy === 'string' ? noProxy.split(',') : noProxy;
  const entries: NoProxyEntry[] = [];
  const problems: string[] = [];
  list.forEach((text, i) => {
    const at = typeof noProxy === 'string' ? field : `${field}.${i}`;
    if (typeof text !== 'string') {
      problems.push(`${at}: must be a string, e.g. ".corp.example"`);
      return;
    }
    try {
      entries.push(parseNoProxyEntry(text, at));
    } catch (error) {
      problems.push((error as Error).message);
    }
  });
  return { entries, problems };
}

/**
 * Problems with a proxy URL: http:// or https://, a host, an optional port, nothing else. No
 * credentials: winfleet-config is a ConfigMap, and the value lands in every node's service
 * registry keys, both readable far more widely than a password should be.
 */
export function proxyUrlProblems(value: string, field: string): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [`${field}: "${value}" is not a URL; write e.g. "http://proxy.corp.example:3128"`];
  }
  const shown = value.replace(/\/\/[^/@]*@/, '//***@');
  if (url.username || url.password)
    return [
      `${field}: "${shown}" carries credentials; winfleet does not write proxy passwords to hosts, so use a proxy that authenticates the hosts another way (by address, or Kerberos)`,
    ];
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return [`${field}: "${shown}" must start with http:// or https://`];
  if (!['', '/'].includes(url.pathname) || url.search || url.hash)
    return [`${field}: "${shown}" must be scheme://host[:port] with no path, query or fragment`];
  return [];
}

/** `host` of an https://host[:port] URL, brackets of IPv6 removed. */
function urlHost(url: string): string {
  return new URL(url).hostname.replace(/^\[|\]$/g, '');
}

/**
 * Entries for the cluster itself, always bypassed (see the header). An API server at an IPv6
 * address is bypassed by Go programs (NO_PROXY takes IPv6 literals); WinHTTP's list gets it
 * in brackets.
 */
export function clusterBypass(cluster: ClusterAddresses): NoProxyEntry[] {
  const apiHost = urlHost(cluster.apiServer);
  const api: NoProxyEntry = apiHost.includes(':')
    ? { kind: 'ipv6', address: apiHost }
    : parseNoProxyEntry(apiHost, 'hosts.apiServer');
  return [
    ...['127.0.0.1', 'localhost', cluster.serviceCIDR, cluster.podCIDR].map((text) =>
      parseNoProxyEntry(text, 'cluster address'),
    ),
    api,
  ];
}

function goEntry(entry: NoProxyEntry): string[] {
  switch (entry.kind) {
    case 'any':
      return ['*'];
    // Go has no `<local>`: a name without dots is bypassed only when listed.
    case 'local':
      return [];
    case 'domain':
      return [entry.subdomainsOnly ? `.${entry.name}` : entry.name];
    case 'ip':
      return [formatIpv4(entry.address)];
    case 'cidr':
      return [`${formatIpv4(entry.cidr.network)}/${entry.cidr.prefix}`];
    case 'ipv6':
      return [entry.address];
  }
}

/**
 * A CIDR as WinHTTP wildcards, which match whole octets only: the block is split at the next
 * octet boundary ("10.96.0.0/12" → "10.96.*" … "10.111.*", 16 patterns; at most 128).
 * @package
 */
export function cidrWildcards(cidr: Pick<Ipv4Cidr, 'network' | 'prefix'>): string[] {
  if (cidr.prefix === 0) return ['*'];
  const octets = Math.ceil(cidr.prefix / 8);
  const step = 2 ** (32 - octets * 8);
  const count = 2 ** (octets * 8 - cidr.prefix);
  const patterns: string[] = [];
  for (let i = 0; i < count; i++) {
    const parts = formatIpv4(cidr.network + i * step)
      .split('.')
      .slice(0, octets);
    patterns.push(octets === 4 ? parts.join('.') : `${parts.join('.')}.*`);
  }
  return patterns;
}

function winHttpEntry(entry: NoProxyEntry): string[] {
  switch (entry.kind) {
    case 'any':
      return ['*'];
    case 'local':
      return ['<local>'];
    case 'domain':
      return entry.subdomainsOnly ? [`*.${entry.name}`] : [entry.name, `*.${entry.name}`];
    case 'ip':
      return [formatIpv4(entry.address)];
    case 'cidr':
      return cidrWildcards(entry.cidr);
    case 'ipv6':
      return [`[${entry.address}]`];
  }
}

const unique = (items: string[]) => [...new Set(items)];

/** NO_PROXY for Go programs: comma-separated, no spaces (`<local>` has no Go form). */
export function goNoProxy(entries: readonly NoProxyEntry[]): string {
  return unique(entries.flatMap(goEntry)).join(',');
}

/** The WinHTTP bypass list: semicolon-separated patterns. */
export function winHttpBypassList(entries: readonly NoProxyEntry[]): string {
  return unique(entries.flatMap(winHttpEntry)).join(';');
}

/** WinHTTP's proxy-server value: per scheme when both are given ("http=a:1;https=b:2"). */
function winHttpProxyServer(proxy: ProxyConfig): string {
  const hostPort = (url: string) => {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
  };
  const parts: string[] = [];
  if (proxy.httpProxy) parts.push(`http=${hostPort(proxy.httpProxy)}`);
  if (proxy.httpsProxy) parts.push(`https=${hostPort(proxy.httpsProxy)}`);
  return parts.join(';');
}

/**
 * What the nodes get for `proxy`, or undefined when no proxy is set. `proxy` must have passed
 * `proxyProblems`.
 */
export function nodeProxy(
  proxy: ProxyConfig | undefined,
  cluster: ClusterAddresses,
): NodeProxy | undefined {
  if (!proxy?.httpProxy && !proxy?.httpsProxy) return undefined;
  const { entries } = parseNoProxy(proxy.noProxy, 'hosts.proxy.noProxy');
  const all = [...entries, ...clusterBypass(cluster)];
  const env: Record<string, string> = {};
  if (proxy.httpProxy) env.HTTP_PROXY = proxy.httpProxy;
  if (proxy.httpsProxy) env.HTTPS_PROXY = proxy.httpsProxy;
  env.NO_PROXY = goNoProxy(all);
  return {
    env,
    winHttp: { proxyServer: winHttpProxyServer(proxy), bypassList: winHttpBypassList(all) },
  };
}

/** Every problem of winfleet-config `hosts.proxy`, fields named under `prefix`. */
export function proxyProblems(proxy: ProxyConfig | undefined, prefix = 'hosts.proxy'): string[] {
  if (!proxy) return [];
  const problems: string[] = [];
  for (const key of ['httpProxy', 'httpsProxy'] as const) {
    const value = proxy[key];
    if (typeof value === 'string') problems.push(...proxyUrlProblems(value, `${prefix}.${key}`));
  }
  if (proxy.noProxy !== undefined && !proxy.httpProxy && !proxy.httpsProxy)
    problems.push(
      `${prefix}.noProxy: set without httpProxy or httpsProxy; add the proxy, or remove noProxy`,
    );
  if (typeof proxy.noProxy === 'string' || Array.isArray(proxy.noProxy))
    problems.push(...parseNoProxy(proxy.noProxy, `${prefix}.noProxy`).problems);
  return problems;
}
