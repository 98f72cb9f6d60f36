/**
 * `winfleet-agent cleanup`: undoes everything winfleet did to this host — stops the agent's
 * own service first (its run loop would bring the others back), stops and deletes the node's
 * services (dependents first), removes the kubelet's firewall rule, the HNS networks of its
 * CNI, the environment variables and files it wrote and the directories it created. Only
 * winfleet's own directory stays (a running program cannot delete itself on Windows); the
 * operator removes it next. Idempotent: the operator runs it again when the SSH session drops
 * mid-way (removing an HNS network resets the host's adapter).
 *
 * Its steps are shared with a Pull-mode host's agent deconfiguring itself (deconfigure-self.ts),
 * which keeps the node's credentials until it has reported on its Node.
 */

import { hasCode } from '../errors/catalog.ts';
import { cniNetworkName } from '../servicesmanifest/host-paths.ts';
import {
  defaultNodeNetwork,
  podNetworkName,
  winfleetOwnsNetwork,
} from '../servicesmanifest/node-network.ts';
import {
  parseServicesManifest,
  type ServicesManifest,
  startOrder,
} from '../servicesmanifest/services-manifest.ts';
import { kubeDir, paths, winfleetDir } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { type AgentState, readState } from './agent-state.ts';
import { agentServiceName } from './converge.ts';
import type { HostOS } from './host-os.ts';
import { removeHostSettings } from './host-settings.ts';
import { kubeProxyPendingKeyPath } from './kube-proxy-credentials.ts';
import { encapsulationFirewallRuleName, kubeletFirewallRule } from './kubelet-firewall.ts';
import { removeStaleCopies } from './replace-executable.ts';

/**
 * Where the host-local IPAM plugin records the pod addresses of winfleet's network: its data
 * directory (/var/lib/cni/networks, on drive C:) and the network's name.
 */
const hostLocalNetworkDir = `C:\\var\\lib\\cni\\networks\\${cniNetworkName}`;

/** What winfleet put on the host, as its state and last manifest record it. */
export interface CleanupPlan {
  state: AgentState;
  manifest?: ServicesManifest;
  /** The node's services (not the agent's own), dependents first: the order to stop them. */
  services: string[];
}

/** @package */
export async function readCleanupPlan(host: HostOS): Promise<CleanupPlan> {
  const state = await readState(host);
  const manifestData = await host.readFile(paths.servicesManifest);
  const manifest = manifestData ? parseServicesManifest(manifestData.toString('utf8')) : undefined;
  const ordered = manifest ? startOrder(manifest).map((s) => s.name) : [];
  const services = [
    ...new Set([...ordered, ...state.services.filter((s) => s !== agentServiceName)]),
  ].reverse();
  return { state, ...(manifest ? { manifest } : {}), services };
}

/** Stops every service in `names`, then deletes them; returns those deleted. */
export async function removeServices(host: HostOS, names: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const name of names) await host.stopService(name);
  for (const name of names) {
    if (await host.queryService(name)) {
      await host.deleteService(name);
      removed.push(name);
    }
  }
  return removed;
}

/**
 * Removes the firewall rule, HNS networks, environment variables, files and created
 * directories — everything but winfleet's own directory and C:\k, and, with `keepCredentials`,
 * the node's credentials (its kubeconfig and certificates), which removeCredentials then takes.
 * Returns the HNS networks removed.
 * @package
 */
export async function removeHostChanges(
  host: HostOS,
  plan: CleanupPlan,
  options: { keepCredentials?: boolean } = {},
): Promise<string[]> {
  const { state, manifest } = plan;
  await host.removeFirewallRule(kubeletFirewallRule.name);
  await host.removeFirewallRule(encapsulationFirewallRuleName);
  const networks: string[] = [];
  // winfleet's own pod network: its L2Bridge network, or flanneld's (a CNI's is never touched).
  const nodeNetwork = manifest?.network ?? defaultNodeNetwork;
  const owned = winfleetOwnsNetwork(nodeNetwork)
    ? podNetworkName(nodeNetwork)?.toLowerCase()
    : undefined;
  for (const network of await hnsNetworksIfAny(host)) {
    const name = network.name.toLowerCase();
    if (name.startsWith('winfleet') || name === owned) {
      await host.removeHnsNetwork(network.id);
      networks.push(network.name);
    }
  }
  for (const name of state.env) await host.setMachineEnv(name, undefined);
  await removeHostSettings(host, state);
  for (const file of new Set([...state.files, ...(manifest?.files.map((f) => f.path) ?? [])])) {
    await host.removePath(file);
    // Copies an upgrade moved aside (replace-executable.ts); one still running stays, and
    // removing its directory then fails naming it.
    await removeStaleCopies(host, file);
  }
  for (const file of [paths.kubeletConfig, paths.containerdConfig, paths.cniConfig]) {
    await host.removePath(file);
  }
  if (!options.keepCredentials) await removeCredentials(host);
  // host-local's address records for winfleet's network. Its parents (C:\var\lib\cni\networks
  // up to C:\var) stay: host-local created them, not winfleet, and they may have been there
  // before winfleet came.
  await host.removePath(hostLocalNetworkDir);
  // Directories winfleet created, deepest first, except its own (removed by the operator, or
  // by a deconfiguring agent last) and, while they are kept, the credentials'.
  const kept = options.keepCredentials ? [paths.certDir.toLowerCase()] : [];
  const dirs = state.createdDirectories
    .filter((d) => !d.toLowerCase().startsWith(winfleetDir.toLowerCase()))
    .filter((d) => !kept.some((k) => k === d.toLowerCase() || k.startsWith(`${d.toLowerCase()}\\`)))
    .sort((a, b) => b.length - a.length);
  for (const dir of dirs) {
    if (dir.toLowerCase() === kubeDir.toLowerCase()) continue;
    await host.removePath(dir);
  }
  return networks;
}

/** The node's kubeconfigs, kube-proxy's pending key and the certificate directory. */
export async function removeCredentials(host: HostOS): Promise<void> {
  for (const file of [
    paths.kubeconfig,
    paths.kubeProxyKubeconfig,
    kubeProxyPendingKeyPath,
    paths.bootstrapKubeconfig,
  ]) {
    await host.removePath(file);
  }
  await host.removePath(paths.certDir);
}

/** @package */
export async function cleanup(context: AgentContext): Promise<Record<string, unknown>> {
  const host = context.hostOS;
  const plan = await readCleanupPlan(host);
  // The agent's service stops first: while its run loop runs it converges the services back,
  // starting (and re-creating) what this stops and deletes. It is deleted last.
  const agentInstalled = (await host.queryService(agentServiceName)) !== undefined;
  if (agentInstalled) await host.stopService(agentServiceName);
  const removed = await removeServices(host, plan.services);
  if (agentInstalled && (await host.queryService(agentServiceName))) {
    await host.deleteService(agentServiceName);
    removed.push(agentServiceName);
  }
  const networks = await removeHostChanges(host, plan);
  for (const entry of (await host.listDirectory(winfleetDir)) ?? []) {
    if (entry.toLowerCase() !== 'winfleet-agent.exe')
      await host.removePath(`${winfleetDir}\\${entry}`);
  }
  const createdKubeDir = plan.state.createdDirectories.some(
    (d) => d.toLowerCase() === kubeDir.toLowerCase(),
  );
  return {
    removedServices: removed,
    removedNetworks: networks,
    removedEnv: plan.state.env,
    // What the operator removes after this process exits.
    removeAfter: createdKubeDir ? [winfleetDir, kubeDir] : [winfleetDir],
  };
}

/**
 * The host's HNS networks; none when the HNS cmdlets are gone (WF_HNS_UNAVAILABLE: the
 * Containers feature was removed, and the Host Network Service, its networks included, with
 * it), so a cleanup of such a host goes on.
 */
async function hnsNetworksIfAny(
  host: HostOS,
): Promise<Awaited<ReturnType<HostOS['listHnsNetworks']>>> {
  try {
    return await host.listHnsNetworks();
  } catch (error) {
    if (hasCode(error, 'WF_HNS_UNAVAILABLE')) return [];
    throw error;
  }
}
