/**
 * Where lookups for a registry go. As with containerd's hosts.toml and OpenShift's
 * ImageDigestMirrorSet, a registry host (e.g. mcr.microsoft.com) maps to mirrors tried in order,
 * each with an optional repository prefix; the registry itself is tried after them only when
 * `fallbackToUpstream` is set. Registries without mirrors are reached directly, over HTTPS
 * unless an endpoint override says otherwise. Plain HTTP and unverified TLS both require
 * `insecure: true`, so neither happens by accident.
 */

import { WinfleetError } from '../errors/catalog.ts';
import { canonicalRegistry, type ImageReference, registryApiHost } from './image-reference.ts';
import type { RegistryEndpoint } from './registry-client.ts';

/** One mirror of a registry (the shape of winfleet's `images.mirrors` config entries). */
export interface RegistryMirror {
  /** Base URL, e.g. "https://mirror.example.com" or "http://127.0.0.1:5000". */
  endpoint: string;
  /** Path put before the repository on the mirror, e.g. "mcr" → mcr/windows/servercore. */
  pathPrefix?: string;
  /** Allow plain HTTP (http:// endpoints) or skip TLS verification (https:// endpoints). */
  insecure?: boolean;
  /** PEM CA certificates trusted for this endpoint, in addition to the system roots. */
  caBundle?: string;
}

/** How to reach a registry that is not mirrored (or is the fallback): an endpoint override. */
export interface RegistryHostSettings {
  /** Base URL; "https://<host>" by default. Use "http://127.0.0.1:5000" for a loopback registry. */
  endpoint?: string;
  insecure?: boolean;
  caBundle?: string;
}

/** @package */
export interface RegistryRouting {
  /** Registry host → mirrors, tried in order. Docker Hub may be keyed as docker.io. */
  mirrors?: Readonly<Record<string, readonly RegistryMirror[]>>;
  /** Try the registry itself after its mirrors failed (default false). */
  fallbackToUpstream?: boolean;
  /** Per-registry endpoint settings, keyed by host[:port]. */
  registries?: Readonly<Record<string, RegistryHostSettings>>;
}

/** One place to look an image up. */
export interface LookupTarget {
  endpoint: RegistryEndpoint;
  /** The host[:port] credentials are matched against. */
  credentialHost: string;
  /** The repository on that endpoint (with the mirror's prefix). */
  repository: string;
  /** True for a mirror, false for the registry itself. */
  mirror: boolean;
}

interface ResolvedEndpoint {
  endpoint: RegistryEndpoint;
  host: string;
}

/** Validated routing; build once with `compileRegistryRouting`. */
export interface CompiledRouting {
  mirrors: Map<string, { resolved: ResolvedEndpoint; pathPrefix: string }[]>;
  registries: Map<string, ResolvedEndpoint>;
  fallbackToUpstream: boolean;
}

const prefixPattern =
  /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;

/**
 * `text` with any user information (and any query) replaced by `***`, so credentials written
 * into an endpoint never reach a log, an Event or an error message: "https://u:p@host" →
 * "https://***@host".
 */
export function redactCredentials(text: string): string {
  return text
    .replace(/^([^:/?#]*:\/\/)?[^/?#]*@/, (_match, scheme: string | undefined) => {
      return `${scheme ?? ''}***@`;
    })
    .replace(/[?#].*$/, '?***');
}

function resolveEndpoint(
  settings: { endpoint?: string; insecure?: boolean; caBundle?: string },
  field: string,
  defaultHost: string,
): ResolvedEndpoint {
  const text = redactCredentials(settings.endpoint ?? `https://${registryApiHost(defaultHost)}`);
  let url: URL;
  try {
    url = new URL(settings.endpoint ?? text);
  } catch {
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `${field}.endpoint "${text}" is not a URL; write e.g. "https://mirror.example.com"`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `${field}.endpoint "${text}" must start with https:// or http://`,
    );
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `${field}.endpoint "${text}" must not carry credentials, a query or a fragment; put credentials in a pull secret`,
    );
  }
  if (!['', '/', '/v2', '/v2/'].includes(url.pathname)) {
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `${field}.endpoint "${text}" has the path "${url.pathname}"; registries serve their API at /v2/, so put a repository prefix in pathPrefix instead`,
    );
  }
  if (url.protocol === 'http:' && !settings.insecure) {
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `${field}.endpoint "${text}" uses plain HTTP; set insecure: true to allow it (loopback and lab registries only)`,
    );
  }
  if (
    settings.caBundle !== undefined &&
    !settings.caBundle.includes('-----BEGIN CERTIFICATE-----')
  ) {
    throw new WinfleetError(
      'WF_CONFIG_INVALID',
      `${field}.caBundle must hold PEM certificates ("-----BEGIN CERTIFICATE-----")`,
    );
  }
  const tls = {
    ...(settings.caBundle ? { caBundle: settings.caBundle } : {}),
    ...(url.protocol === 'https:' && settings.insecure ? { skipTlsVerify: true } : {}),
  };
  return {
    endpoint: { origin: url.origin, ...(Object.keys(tls).length > 0 ? { tls } : {}) },
    // Credentials are matched against the host as users write it in pull secrets.
    host: url.host,
  };
}

const hostLabel = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Problem with a registry host used as a directory name, or undefined: DNS labels or an IPv4
 * address, and an optional port. Nothing else may reach the path (no "..", no separators, no
 * drive letters), so a crafted registry name cannot write outside config_path.
 * @package
 */
export function registryHostProblem(registry: string): string | undefined {
  const match = /^([^:]+)(?::([0-9]{1,5}))?$/.exec(registry);
  const host = match?.[1];
  const port = match?.[2];
  const hostOk =
    host !== undefined &&
    host.length <= 253 &&
    host.split('.').every((part) => hostLabel.test(part));
  if (!hostOk || (port !== undefined && (Number(port) < 1 || Number(port) > 65535)))
    return `"${registry}" is not a registry host (a DNS name or IPv4 address, and an optional :port); write the host as in an image reference, e.g. "mcr.microsoft.com" or "127.0.0.1:5000"`;
  return undefined;
}

/**
 * Checks and normalises the routing configuration; throws a WinfleetError naming each bad field
 * (problems joined by "; ").
 */
export function compileRegistryRouting(routing: RegistryRouting = {}): CompiledRouting {
  const problems: string[] = [];
  const compiled = compileCollecting(routing, '', problems);
  if (problems.length > 0) throw new WinfleetError('WF_CONFIG_INVALID', problems.join('; '));
  return compiled;
}

/**
 * Every problem of the routing, one a line, each field named with `prefix` in front (e.g.
 * "images."), as the configuration parse reports them; empty when the routing compiles.
 */
export function registryRoutingProblems(routing: RegistryRouting, prefix = ''): string[] {
  const problems: string[] = [];
  compileCollecting(routing, prefix, problems);
  return problems;
}

function compileCollecting(
  routing: RegistryRouting,
  prefix: string,
  problems: string[],
): CompiledRouting {
  // Each entry is checked on its own, so one pass reports every bad field.
  const attempt = <T>(check: () => T): T | undefined => {
    try {
      return check();
    } catch (error) {
      problems.push(`${prefix}${(error as Error).message}`);
      return undefined;
    }
  };
  const mirrors = new Map<string, { resolved: ResolvedEndpoint; pathPrefix: string }[]>();
  for (const [host, list] of Object.entries(routing.mirrors ?? {})) {
    const key = canonicalRegistry(host);
    const field = `mirrors["${redactCredentials(host)}"]`;
    // The key names a directory on every node (containerd-hosts.ts): nothing but a host.
    const hostProblem = registryHostProblem(key);
    if (hostProblem) {
      problems.push(`${prefix}${field}: ${hostProblem}`);
      continue;
    }
    if (!Array.isArray(list) || list.length === 0) {
      problems.push(`${prefix}${field} must be a non-empty list of mirrors`);
      continue;
    }
    const entries = list.map((mirror, i) =>
      attempt(() => {
        if (typeof mirror !== 'object' || mirror === null)
          throw new WinfleetError(
            'WF_CONFIG_INVALID',
            `${field}[${i}] must be a mapping with an endpoint`,
          );
        const repositoryPrefix = (mirror.pathPrefix ?? '').replace(/^\/+|\/+$/g, '');
        if (repositoryPrefix !== '' && !prefixPattern.test(repositoryPrefix)) {
          throw new WinfleetError(
            'WF_CONFIG_INVALID',
            `${field}[${i}].pathPrefix "${mirror.pathPrefix}" must be lowercase repository path components, e.g. "mcr"`,
          );
        }
        if (!mirror.endpoint || typeof mirror.endpoint !== 'string')
          throw new WinfleetError(
            'WF_CONFIG_INVALID',
            `${field}[${i}].endpoint is missing; write e.g. "https://mirror.example.com"`,
          );
        return {
          resolved: resolveEndpoint(mirror, `${field}[${i}]`, key),
          pathPrefix: repositoryPrefix,
        };
      }),
    );
    mirrors.set(
      key,
      entries.filter((e) => e !== undefined),
    );
  }
  const registries = new Map<string, ResolvedEndpoint>();
  for (const [host, settings] of Object.entries(routing.registries ?? {})) {
    const key = canonicalRegistry(host);
    const resolved = attempt(() =>
      resolveEndpoint(settings, `registries["${redactCredentials(host)}"]`, key),
    );
    if (resolved) registries.set(key, resolved);
  }
  return { mirrors, registries, fallbackToUpstream: routing.fallbackToUpstream ?? false };
}

/** The origins of every configured mirror and registry endpoint: the trusted ones. */
export function configuredOrigins(routing: CompiledRouting): string[] {
  const mirrors = [...routing.mirrors.values()].flat().map((m) => m.resolved.endpoint.origin);
  const registries = [...routing.registries.values()].map((r) => r.endpoint.origin);
  return [...new Set([...mirrors, ...registries])];
}

/**
 * Where a registry's content comes from, in order: its mirrors, then (if allowed) the registry
 * itself. The one routing both the webhook's lookups (lookupTargets) and the nodes' containerd
 * (containerd-hosts.ts) follow, so that a lookup and a pull go to the same places.
 * @package
 */
export interface RegistryRoute {
  endpoint: RegistryEndpoint;
  /** The host[:port] credentials are matched against. */
  credentialHost: string;
  /** Path put before the repository on this endpoint ("" for none). */
  pathPrefix: string;
  /** True for a mirror, false for the registry itself. */
  mirror: boolean;
}

/** The routes of `registry` (canonical, e.g. "mcr.microsoft.com" or "docker.io"). */
export function registryRoutes(registry: string, routing: CompiledRouting): RegistryRoute[] {
  const routes: RegistryRoute[] = [];
  const mirrors = routing.mirrors.get(registry);
  for (const { resolved, pathPrefix } of mirrors ?? []) {
    routes.push({
      endpoint: resolved.endpoint,
      credentialHost: resolved.host,
      pathPrefix,
      mirror: true,
    });
  }
  if (!mirrors || routing.fallbackToUpstream) {
    const upstream = routing.registries.get(registry) ?? resolveEndpoint({}, 'registry', registry);
    routes.push({
      endpoint: upstream.endpoint,
      credentialHost: registry,
      pathPrefix: '',
      mirror: false,
    });
  }
  return routes;
}

/** The places to look `ref` up, in order: its mirrors, then (if allowed) the registry. */
export function lookupTargets(ref: ImageReference, routing: CompiledRouting): LookupTarget[] {
  return registryRoutes(ref.registry, routing).map((route) => ({
    endpoint: route.endpoint,
    credentialHost: route.credentialHost,
    repository: route.pathPrefix ? `${route.pathPrefix}/${ref.repository}` : ref.repository,
    mirror: route.mirror,
  }));
}
