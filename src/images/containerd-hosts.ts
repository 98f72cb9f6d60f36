/**
 * The registry routing (registry-mirrors.ts) as containerd's registry host configuration: one
 * directory per mirrored registry under containerd's `config_path` (C:\k\containerd\certs.d),
 * holding a hosts.toml and the mirrors' CA files. Written from the same `registryRoutes` the
 * webhook's lookups follow, so a pull on a node and a lookup in the webhook go to the same
 * mirrors in the same order.
 *
 * How containerd reads it (containerd v2, core/remotes/docker/config/hosts.go and
 * config_windows.go):
 * - the directory of "host:port" is "host_port_"; a bare host is its own name;
 * - `[host."<url>"]` tables are tried in file order, then `server`, always last: containerd
 *   appends the root entry whatever the file says, so "no fallback to the registry" is a root
 *   entry limited to `capabilities = ["push"]`, which pulls and resolves skip;
 * - a host URL's path gets "/v2" appended unless it ends with it or `override_path = true`,
 *   which is how a repository prefix on a mirror is written ("https://m/v2/mcr");
 * - `ca` names CA files (relative to the directory); on Windows containerd then trusts only
 *   those for that host (its rootSystemPool is empty), so `ca` is written only for a mirror
 *   with its own caBundle, and the others verify against the machine's Root store;
 * - `skip_verify = true` turns TLS verification off (insecure: true on an https mirror).
 */

import { WinfleetError } from '../errors/catalog.ts';
import { registryApiHost } from './image-reference.ts';
import {
  type CompiledRouting,
  type RegistryRoute,
  registryHostProblem,
  registryRoutes,
} from './registry-mirrors.ts';

/** One registry's directory under config_path: its name and the files in it. */
export interface ContainerdRegistryHost {
  /** The registry host, canonical ("mcr.microsoft.com", "docker.io", "127.0.0.1:5000"). */
  registry: string;
  /** The directory's name under config_path ("127.0.0.1_5000_" for a port). */
  directory: string;
  /** File name → content: hosts.toml and any CA files it names. */
  files: Record<string, string>;
}

/** containerd's directory name for a registry host (hostDirectory: ":port" → "_port_"). */
export function containerdHostDirectory(registry: string): string {
  const problem = registryHostProblem(registry);
  if (problem) throw new WinfleetError('WF_CONFIG_INVALID', problem);
  const colon = registry.lastIndexOf(':');
  return colon > 0 ? `${registry.slice(0, colon)}_${registry.slice(colon + 1)}_` : registry;
}

/** A TOML basic string. */
function tomlString(value: string): string {
  return JSON.stringify(value).replace(/[\u007f-\u009f]/g, (c) => {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/** The URL containerd is given for a route: origin, plus /v2/<prefix> when there is a prefix. */
export function containerdHostUrl(route: RegistryRoute): string {
  return route.pathPrefix
    ? `${route.endpoint.origin}/v2/${route.pathPrefix}`
    : route.endpoint.origin;
}

/** The directory of one registry: hosts.toml and its mirrors' CA files. */
export function containerdRegistryHost(
  registry: string,
  routing: CompiledRouting,
): ContainerdRegistryHost {
  const directory = containerdHostDirectory(registry);
  const routes = registryRoutes(registry, routing);
  const upstream = routes.find((r) => !r.mirror);
  const files: Record<string, string> = {};
  const lines = [
    '# Written by winfleet from winfleet-config images.mirrors; changes are overwritten.',
    // The registry itself: always containerd's last host (see the header).
    `server = ${tomlString(upstream?.endpoint.origin ?? `https://${registryApiHost(registry)}`)}`,
  ];
  if (!upstream) lines.push('capabilities = ["push"]');
  routes
    .filter((r) => r.mirror)
    .forEach((route, i) => {
      lines.push('', `[host.${tomlString(containerdHostUrl(route))}]`);
      lines.push('  capabilities = ["pull", "resolve"]');
      if (route.pathPrefix) lines.push('  override_path = true');
      if (route.endpoint.tls?.caBundle) {
        const name = `mirror-${i}-ca.crt`;
        files[name] = route.endpoint.tls.caBundle;
        lines.push(`  ca = ${tomlString(name)}`);
      }
      if (route.endpoint.tls?.skipTlsVerify) lines.push('  skip_verify = true');
    });
  files['hosts.toml'] = `${lines.join('\n')}\n`;
  return { registry, directory, files };
}

/** Every mirrored registry's directory, sorted by registry. */
export function containerdRegistryHosts(routing: CompiledRouting): ContainerdRegistryHost[] {
  return [...routing.mirrors.keys()].sort().map((registry) => {
    return containerdRegistryHost(registry, routing);
  });
}
