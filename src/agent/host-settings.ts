/**
 * Bringing a host to its manifest's host settings (node-host-settings.ts), on every pass of the
 * agent and at bootstrap:
 * - the trusted CAs in LocalMachine\Root: those missing are added; those winfleet added and the
 *   manifest no longer lists are removed, by thumbprint. A CA that was there before winfleet
 *   (a domain's policy put it there, say) is never recorded, so never removed;
 * - containerd's registry host directories under certs.d (hosts.toml and CA files): written
 *   when they differ, stale files and directories winfleet wrote removed. containerd reads them
 *   at each pull, so nothing restarts; its config.toml names the directory (config_path), and a
 *   config.toml written before it did is rewritten and containerd restarted;
 * - the WinHTTP proxy (Windows Update goes through it): set when it changed, reset when the
 *   proxy went;
 * - the machine environment (the proxy variables, for what runs outside the services), when a
 *   manifest is new to the host: set, and what winfleet set that the manifest dropped removed. The services get the same variables
 *   through their own environment (converge.ts), which restarts them, so no reboot is needed;
 * - the agent's own service environment (host-settings' proxy, agentEnvironment), read when the
 *   agent next starts.
 */

import { WinfleetError } from '../errors/catalog.ts';
import { agentEnvironment } from '../hostsettings/node-host-settings.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { paths } from './agent-config.ts';
import type { AgentState, HostSettingsState } from './agent-state.ts';
import { agentServiceConfig, ensureService } from './converge.ts';
import type { HostOS } from './host-os.ts';
import { containerdConfig, declaresHyperV } from './node-files.ts';

function settingsState(state: AgentState): HostSettingsState {
  state.hostSettings ??= { rootCertificates: {}, registryHostDirectories: {} };
  return state.hostSettings;
}

/** Adds the manifest's CAs and removes the ones winfleet added that it no longer lists. */
export async function syncRootCertificates(
  host: HostOS,
  manifest: ServicesManifest,
  state: AgentState,
): Promise<{ added: string[]; removed: string[] }> {
  const recorded = settingsState(state).rootCertificates;
  const desired = manifest.hostSettings?.trustedCertificates ?? [];
  // Nothing to add or remove: no PowerShell launch on every pass.
  if (desired.length === 0 && !Object.values(recorded).some(Boolean))
    return { added: [], removed: [] };
  const present = new Set((await host.listRootCertificates()).map((c) => c.thumbprint));
  const added: string[] = [];
  for (const cert of desired) {
    if (present.has(cert.thumbprint)) continue;
    const thumbprint = await host.addRootCertificate(cert.pem);
    if (thumbprint !== cert.thumbprint) {
      await host.removeRootCertificate(thumbprint);
      throw new WinfleetError(
        'WF_HOST_SETTINGS_FAILED',
        `Windows gave the certificate the manifest calls ${cert.thumbprint} the thumbprint ${thumbprint}; it was removed again. The manifest is wrong: publish it again`,
      );
    }
    recorded[thumbprint] = true;
    added.push(thumbprint);
  }
  const wanted = new Set(desired.map((c) => c.thumbprint));
  const removed: string[] = [];
  for (const [thumbprint, held] of Object.entries(recorded)) {
    if (!held || wanted.has(thumbprint)) continue;
    await host.removeRootCertificate(thumbprint);
    recorded[thumbprint] = false;
    removed.push(thumbprint);
  }
  return { added, removed };
}

/** Writes the registry host directories; removes what winfleet wrote that is no longer listed. */
export async function syncRegistryHosts(
  host: HostOS,
  manifest: ServicesManifest,
  state: AgentState,
): Promise<string[]> {
  const recorded = settingsState(state).registryHostDirectories;
  const desired = manifest.hostSettings?.registryHosts ?? [];
  const written: string[] = [];
  for (const registry of desired) {
    const dir = `${paths.containerdCertsDir}\\${registry.directory}`;
    recorded[registry.directory] = true;
    for (const [name, content] of Object.entries(registry.files)) {
      const path = `${dir}\\${name}`;
      if ((await host.readFile(path))?.toString('utf8') === content) continue;
      await host.writeFile(path, content);
      written.push(path);
    }
    for (const name of (await host.listDirectory(dir)) ?? []) {
      if (!(name in registry.files)) await host.removePath(`${dir}\\${name}`);
    }
  }
  const wanted = new Set(desired.map((r) => r.directory));
  for (const [directory, held] of Object.entries(recorded)) {
    if (!held || wanted.has(directory)) continue;
    await host.removePath(`${paths.containerdCertsDir}\\${directory}`);
    recorded[directory] = false;
  }
  return written;
}

/** Sets the WinHTTP proxy when it changed since winfleet last set it. */
export async function syncWinHttpProxy(
  host: HostOS,
  manifest: ServicesManifest,
  state: AgentState,
): Promise<boolean> {
  const settings = settingsState(state);
  const desired = manifest.hostSettings?.winHttpProxy;
  const text = desired ? JSON.stringify(desired) : null;
  // Never set by winfleet and not wanted: the host's own setting stays.
  if (text === null && (settings.winHttpProxy ?? null) === null) return false;
  if (settings.winHttpProxy === text) return false;
  await host.setWinHttpProxy(desired);
  settings.winHttpProxy = text;
  return true;
}

/** Sets the manifest's machine environment; removes what winfleet set that it dropped. */
export async function syncMachineEnvironment(
  host: HostOS,
  manifest: ServicesManifest,
  state: AgentState,
): Promise<void> {
  const env = manifest.env ?? {};
  for (const [name, value] of Object.entries(env)) {
    if ((await host.getMachineEnv(name)) !== value) await host.setMachineEnv(name, value);
    if (!state.env.includes(name)) state.env.push(name);
  }
  const wanted = new Set(Object.keys(env).map((n) => n.toLowerCase()));
  for (const name of state.env) {
    if (!wanted.has(name.toLowerCase()) && (await host.getMachineEnv(name)) !== undefined)
      await host.setMachineEnv(name, undefined);
  }
}

/**
 * Applies every host setting of `manifest` (see the header). Returns the services to restart:
 * containerd when its config.toml had to change.
 * @package
 */
export async function applyHostSettings(
  host: HostOS,
  manifest: ServicesManifest,
  state: AgentState,
  options: {
    /** Also bring the agent's own service environment in line (the run loop). */
    agentService?: boolean;
    /**
     * Also sync the machine environment: when a new manifest is applied (each variable is a
     * PowerShell launch on Windows, too many for every pass); bootstrap sets it itself.
     */
    machineEnvironment?: boolean;
    /**
     * containerd's Hyper-V handler wanted (the Node's label winfleet.io/hyperv-isolation=true)
     * or not; undefined (the Node not read): config.toml keeps what it declares.
     */
    hyperV?: boolean;
  } = {},
): Promise<{ restart: Set<string> }> {
  const restart = new Set<string>();
  await syncRootCertificates(host, manifest, state);
  await syncRegistryHosts(host, manifest, state);
  // A config.toml from before config_path was written gets it when there are registry hosts
  // to read (never otherwise: a containerd restart outside a rollout for nothing).
  const needsConfigPath = (manifest.hostSettings?.registryHosts?.length ?? 0) > 0;
  const config = (await host.readFile(paths.containerdConfig))?.toString('utf8');
  // The node's pod network names the CNI directories (the manifest's network mode).
  const hyperV = options.hyperV ?? declaresHyperV(config);
  const wanted = containerdConfig(manifest.network, { hyperV });
  // Also when the CNI directories changed (a new network mode, through the pool's rollout).
  const cniDirs = (text: string | undefined) =>
    (text ?? '')
      .split('\n')
      .filter((line) => /^\s*(bin_dir|conf_dir) =/.test(line))
      .join('\n');
  // Only a config that names its directories (winfleet's own always did) is compared on them.
  const dirsChanged = cniDirs(config) !== '' && cniDirs(config) !== cniDirs(wanted);
  // The pool's Hyper-V opt-in changed (config.toml of an existing host gains or loses the handler).
  const hyperVChanged = config !== undefined && declaresHyperV(config) !== hyperV;
  if (config !== wanted && (needsConfigPath || dirsChanged || hyperVChanged)) {
    await host.writeFile(paths.containerdConfig, wanted);
    if (manifest.services.some((s) => s.name === 'containerd')) restart.add('containerd');
  }
  await syncWinHttpProxy(host, manifest, state);
  if (options.machineEnvironment) await syncMachineEnvironment(host, manifest, state);
  if (options.agentService) {
    await ensureService(host, agentServiceConfig(agentEnvironment(manifest)), state);
  }
  return { restart };
}

/**
 * Undoes the host settings winfleet applied (deconfigure): the CAs it added, the registry host
 * directories it wrote, the WinHTTP proxy it set.
 * @package
 */
export async function removeHostSettings(host: HostOS, state: AgentState): Promise<void> {
  const settings = state.hostSettings;
  if (!settings) return;
  for (const [thumbprint, held] of Object.entries(settings.rootCertificates))
    if (held) await host.removeRootCertificate(thumbprint);
  for (const [directory, held] of Object.entries(settings.registryHostDirectories))
    if (held) await host.removePath(`${paths.containerdCertsDir}\\${directory}`);
  if (settings.winHttpProxy) await host.setWinHttpProxy(undefined);
}
