/**
 * Where the containerd of a simulated host pulls a registry's images from: its registry host
 * configuration (`config_path` in its config.toml, one hosts.toml per registry directory), read
 * as containerd v2 reads it (core/remotes/docker/config/hosts.go, config_windows.go):
 * - the config_path is `plugins."io.containerd.grpc.v1.cri".registry.config_path` (config
 *   version 2) or `plugins."io.containerd.cri.v1.images".registry.config_path` (version 3);
 *   without one, every registry is reached directly;
 * - the directory is the first that exists of hostDirectory(host) ("host:port" → "host_port_")
 *   and the host itself, each with ":" removed, then "_default" (hostPaths, Windows);
 * - hosts.toml is decoded by go-toml v2 into typed fields: a syntax error or a wrong type
 *   (capabilities not strings, skip_verify not a boolean, ca neither a string nor strings) or
 *   an unknown capability makes containerd log "failed to decode hosts.toml" and ignore the
 *   file, falling back to Docker-style certificate files: the registry itself, directly.
 *   Unknown keys are ignored, as go-toml's non-strict decoding does;
 * - `[host."<url>"]` tables in file order, then the root (`server`) always last; a root
 *   without `server` is the registry with every capability; a URL without a scheme is https;
 *   its path gets "/v2" unless it ends with it or override_path is true.
 * The TOML decoder is smol-toml here, not go-toml v2, so error texts differ.
 */
import { parse as parseToml, type TomlTable } from 'smol-toml';
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import type { SimFileSystem } from './file-system.ts';
import type { SimMachine } from './machine.ts';
import { containerdConfigFlag } from './sim-cni.ts';

export type HostCapability = 'pull' | 'resolve' | 'push';

/** One registry host containerd tries, in order. */
export interface ContainerdRegistryEndpoint {
  scheme: string;
  host: string;
  /** The API root path, e.g. "/v2" or "/v2/mcr". */
  path: string;
  capabilities: HostCapability[];
  /** CA files (absolute) trusted for this host, instead of the system roots. */
  caCerts?: string[];
  skipVerify?: boolean;
}

/** What containerd made of a registry's configuration. */
export interface RegistryHostsResolution {
  /** The directory it read, if any. */
  directory?: string;
  hosts: ContainerdRegistryEndpoint[];
  /** Why the hosts.toml was ignored (containerd logs it and carries on), if it was. */
  decodeError?: string;
}

const allCapabilities: HostCapability[] = ['pull', 'resolve', 'push'];

const isTable = (value: unknown): value is TomlTable =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);

/** containerd's config_path from its config.toml text; undefined when it has none. */
export function containerdConfigPath(toml: string | undefined): string | undefined {
  if (toml === undefined) return undefined;
  const config = parseToml(toml);
  const plugins = isTable(config.plugins) ? config.plugins : {};
  const version = config.version ?? 1;
  const images =
    version === 3 ? plugins['io.containerd.cri.v1.images'] : plugins['io.containerd.grpc.v1.cri'];
  const registry = isTable(images) && isTable(images.registry) ? images.registry : {};
  return typeof registry.config_path === 'string' && registry.config_path !== ''
    ? registry.config_path
    : undefined;
}

/** hostDirectory: "host:port" → "host_port_". */
function hostDirectory(host: string): string {
  const colon = host.lastIndexOf(':');
  return colon > 0 ? `${host.slice(0, colon)}_${host.slice(colon + 1)}_` : host;
}

/** hostPaths on Windows: the candidate directories, in order (hostSuffix is not modelled). */
export function candidateDirectories(root: string, host: string): string[] {
  const strip = (name: string) => `${root}\\${name.replaceAll(':', '')}`;
  const dirs: string[] = [];
  if (hostDirectory(host) !== host) dirs.push(strip(hostDirectory(host)));
  dirs.push(strip(host), `${root}\\_default`);
  return dirs;
}

function stringList(value: unknown, what: string): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  throw new TypeError(`invalid type for "${what}"`);
}

/** parseHostConfig: one `[host."…"]` table, or the root with `server`. */
function parseHostConfig(
  server: string,
  directory: string,
  config: TomlTable,
): ContainerdRegistryEndpoint {
  const overridePath = config.override_path;
  if (overridePath !== undefined && typeof overridePath !== 'boolean')
    throw new TypeError('toml: cannot decode override_path into a bool');
  const skipVerify = config.skip_verify;
  if (skipVerify !== undefined && typeof skipVerify !== 'boolean')
    throw new TypeError('toml: cannot decode skip_verify into a *bool');
  const endpoint: ContainerdRegistryEndpoint = {
    scheme: '',
    host: '',
    path: '',
    capabilities: [...allCapabilities],
  };
  if (server !== '') {
    const url = new URL(server.startsWith('http') ? server : `https://${server}`);
    endpoint.scheme = url.protocol.replace(/:$/, '');
    endpoint.host = url.host;
    let path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
    if (path.length > 0) {
      if (!path.endsWith('/v2') && !overridePath) path += '/v2';
    } else if (!overridePath) path = '/v2';
    endpoint.path = path;
  }
  if (config.capabilities !== undefined) {
    if (
      !Array.isArray(config.capabilities) ||
      !config.capabilities.every((c) => typeof c === 'string')
    )
      throw new TypeError('toml: cannot decode capabilities into a []string');
    if (config.capabilities.length > 0) {
      endpoint.capabilities = config.capabilities.map((c) => {
        const lower = (c as string).toLowerCase();
        if (!allCapabilities.includes(lower as HostCapability))
          throw new TypeError(`unknown capability ${c}`);
        return lower as HostCapability;
      });
    }
  }
  if (config.ca !== undefined) {
    endpoint.caCerts = stringList(config.ca, 'ca').map((p) =>
      /^[A-Za-z]:\\/.test(p) ? p : `${directory}\\${p}`,
    );
  }
  if (skipVerify !== undefined) endpoint.skipVerify = skipVerify;
  return endpoint;
}

/** parseHostsFile: the `[host]` tables in file order, then the root. Throws what decoding does. */
export function parseHostsToml(text: string, directory: string): ContainerdRegistryEndpoint[] {
  const document = parseToml(text);
  if (document.server !== undefined && typeof document.server !== 'string')
    throw new TypeError('toml: cannot decode server into a string');
  const tables = document.host;
  if (tables !== undefined && !isTable(tables))
    throw new TypeError('toml: cannot decode host into a map[string]hostFileConfig');
  const hosts: ContainerdRegistryEndpoint[] = [];
  for (const [url, config] of Object.entries(tables ?? {})) {
    if (!isTable(config)) throw new TypeError(`toml: cannot decode host.${url} into a table`);
    hosts.push(parseHostConfig(url, directory, config));
  }
  hosts.push(parseHostConfig((document.server as string | undefined) ?? '', directory, document));
  return hosts;
}

/**
 * The registry itself, as ConfigureHosts fills in a root entry without a host: docker.io is
 * registry-1.docker.io; a loopback registry on a port other than 443 is tried over HTTP with
 * TLS unverified (docker.IsLocalhost); anything else is https.
 */
function defaultEndpoint(
  registry: string,
  base?: ContainerdRegistryEndpoint,
): ContainerdRegistryEndpoint {
  const endpoint: ContainerdRegistryEndpoint = {
    ...base,
    scheme: 'https',
    host: registry === 'docker.io' ? 'registry-1.docker.io' : registry,
    path: '/v2',
    capabilities: [...allCapabilities],
  };
  const match = /^(localhost|127(?:\.[0-9]{1,3}){3})(?::([0-9]+))?$/.exec(registry);
  if (match) {
    const port = match[2] ?? '';
    if (port !== '' && port !== '443') endpoint.scheme = 'http';
    if (port !== '80') endpoint.skipVerify = true;
  }
  return endpoint;
}

/** What containerd does for `registry` with config_path `root` on `fs` (see the header). */
export async function resolveRegistryHosts(
  fs: SimFileSystem,
  root: string | undefined,
  registry: string,
): Promise<RegistryHostsResolution> {
  if (root === undefined) return { hosts: [defaultEndpoint(registry)] };
  let directory: string | undefined;
  for (const candidate of candidateDirectories(root, registry)) {
    if ((await fs.stat(candidate))?.kind === 'directory') {
      directory = candidate;
      break;
    }
  }
  if (directory === undefined) return { hosts: [defaultEndpoint(registry)] };
  const text = (await fs.tryReadFile(`${directory}\\hosts.toml`))?.toString('utf8');
  let hosts: ContainerdRegistryEndpoint[] | undefined;
  let decodeError: string | undefined;
  if (text) {
    try {
      hosts = parseHostsToml(text, directory);
    } catch (error) {
      decodeError = `failed to decode ${directory}\\hosts.toml: ${(error as Error).message.split('\n')[0]}`;
    }
  }
  // loadCertFiles: the registry itself, with the directory's *.crt files as its CAs.
  if (hosts === undefined) {
    const crts = (await fs.list(directory))
      .filter((e) => e.kind === 'file' && e.name.endsWith('.crt'))
      .map((e) => `${directory}\\${e.name}`);
    hosts = [
      crts.length > 0 ? { ...defaultEndpoint(registry), caCerts: crts } : defaultEndpoint(registry),
    ];
  }
  const last = hosts[hosts.length - 1]!;
  if (last.host === '') hosts[hosts.length - 1] = defaultEndpoint(registry, last);
  return { directory, hosts, ...(decodeError ? { decodeError } : {}) };
}

/**
 * The registry hosts of the containerd service on `machine`: its --config file's config_path
 * (hostPaths.containerdConfig when the service has no --config), read now.
 */
export async function machineRegistryHosts(
  machine: SimMachine,
  registry: string,
): Promise<RegistryHostsResolution> {
  const service = machine.scm.query('containerd');
  const configFile =
    (service && containerdConfigFlag(splitServiceCommandLine(service.commandLine).args)) ??
    hostPaths.containerdConfig;
  const text = (await machine.fs.tryReadFile(configFile))?.toString('utf8');
  return resolveRegistryHosts(machine.fs, containerdConfigPath(text), registry);
}

/** The URLs a pull of `repository` tries, in order: hosts that can pull. */
export function pullUrls(resolution: RegistryHostsResolution, repository: string): string[] {
  return resolution.hosts
    .filter((h) => h.capabilities.includes('pull'))
    .map((h) => `${h.scheme}://${h.host}${h.path}/${repository}`);
}
