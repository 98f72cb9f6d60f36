/**
 * winfleet-config's host settings as the services manifest carries them to every node: the
 * proxy as the services' environment (and WinHTTP's setting), the CA bundle for the Root store,
 * and the registry mirrors as containerd hosts.toml directories. They are part of the manifest,
 * and give it its own version, so that a change rolls through the pools' rollout engine
 * (maxUnavailable at a time) like a new payload, and each WindowsHost's servicesVersion says
 * which settings it runs.
 */
import { createHash } from 'node:crypto';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { containerdRegistryHosts } from '../images/containerd-hosts.ts';
import { compileRegistryRouting } from '../images/registry-mirrors.ts';
import { nodeProxy } from '../net/proxy-settings.ts';
import type {
  ManifestHostSettings,
  ServicesManifest,
} from '../servicesmanifest/services-manifest.ts';

/** What a manifest gets from the configuration. */
export interface NodeHostSettings {
  /** Environment for every node service (the proxy variables). */
  env: Record<string, string>;
  hostSettings: ManifestHostSettings;
}

/**
 * The host settings of `config` for nodes that reach the API server at `apiServer`, or
 * undefined when there are none (no proxy, no CA bundle, no mirrors): the manifest is then the
 * payload's own, version included.
 */
export function nodeHostSettings(
  config: WinfleetConfig,
  apiServer: string,
): NodeHostSettings | undefined {
  const proxy = nodeProxy(config.hosts.proxy, {
    serviceCIDR: config.hosts.serviceCIDR,
    podCIDR: config.hosts.podCIDR,
    apiServer,
  });
  const routing = compileRegistryRouting({
    mirrors: config.images.mirrors,
    fallbackToUpstream: config.images.fallbackToUpstream,
  });
  const registryHosts = containerdRegistryHosts(routing);
  const hostSettings: ManifestHostSettings = {
    ...(config.trustedCAs.length > 0
      ? {
          trustedCertificates: config.trustedCAs.map((c) => ({
            thumbprint: c.thumbprint,
            pem: c.pem,
          })),
        }
      : {}),
    ...(registryHosts.length > 0 ? { registryHosts } : {}),
    ...(proxy ? { winHttpProxy: proxy.winHttp } : {}),
  };
  if (!proxy && Object.keys(hostSettings).length === 0) return undefined;
  return { env: proxy?.env ?? {}, hostSettings };
}

/**
 * `manifest` with `settings`: their environment on every service, the host settings, and a
 * version of its own ("<version>-h<10 hex of their SHA-256>"), so each set of settings is a
 * services version the rollout can carry and a host can report.
 */
export function withHostSettings(
  manifest: ServicesManifest,
  settings: NodeHostSettings | undefined,
): ServicesManifest {
  if (!settings) return manifest;
  const digest = createHash('sha256')
    .update(JSON.stringify({ env: settings.env, hostSettings: settings.hostSettings }))
    .digest('hex')
    .slice(0, 10);
  const env = { ...manifest.env, ...settings.env };
  return {
    ...manifest,
    version: `${manifest.version}-h${digest}`,
    ...(Object.keys(env).length > 0 ? { env } : {}),
    hostSettings: settings.hostSettings,
  };
}

/** The names of the proxy variables a manifest's `env` may carry. */
export const proxyVariables = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY'] as const;

/**
 * The agent's own service environment for `manifest`: its proxy variables, and
 * NODE_USE_ENV_PROXY=1, without which Node's http, https and fetch ignore them. The agent's
 * process reads them when it starts.
 */
export function agentEnvironment(manifest: ServicesManifest): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of proxyVariables) {
    const value = manifest.env?.[name];
    if (value !== undefined) env[name] = value;
  }
  if (Object.keys(env).length > 0) env.NODE_USE_ENV_PROXY = '1';
  return env;
}

/** The variables agentEnvironment may set: what the agent compares with its own at start. */
export const agentEnvironmentVariables = [...proxyVariables, 'NODE_USE_ENV_PROXY'] as const;
