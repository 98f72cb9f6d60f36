/**
 * `winfleet-agent cleanup`: undoes everything winfleet did to this host — stops and deletes
 * its services (dependents first), removes the HNS networks of its CNI, the environment
 * variables and files it wrote and the directories it created. Only winfleet's own directory
 * stays (a running program cannot delete itself on Windows); the operator removes it next.
 */

import { parseServicesManifest, startOrder } from '../servicesmanifest/services-manifest.ts';
import { kubeDir, paths, winfleetDir } from './agent-config.ts';
import { readState } from './agent-state.ts';
import { agentServiceName } from './converge.ts';
import type { AgentContext } from './run-agent.ts';

export async function cleanup(context: AgentContext): Promise<Record<string, unknown>> {
  const host = context.hostOS;
  const state = await readState(host);
  const manifestData = await host.readFile(`${winfleetDir}\\services.json`);
  const manifest = manifestData ? parseServicesManifest(manifestData.toString('utf8')) : undefined;
  const ordered = manifest ? startOrder(manifest).map((s) => s.name) : [];
  const services = [
    ...new Set([...ordered, ...state.services.filter((s) => s !== agentServiceName)]),
  ].reverse();
  const removed: string[] = [];
  for (const name of services) {
    await host.stopService(name);
  }
  for (const name of services) {
    if (await host.queryService(name)) {
      await host.deleteService(name);
      removed.push(name);
    }
  }
  // The agent's own service last: this process may be it.
  if (await host.queryService(agentServiceName)) {
    await host.stopService(agentServiceName);
    await host.deleteService(agentServiceName);
    removed.push(agentServiceName);
  }
  const networks: string[] = [];
  for (const network of await host.listHnsNetworks()) {
    if (network.name.toLowerCase().startsWith('winfleet')) {
      await host.removeHnsNetwork(network.id);
      networks.push(network.name);
    }
  }
  for (const name of state.env) await host.setMachineEnv(name, undefined);
  for (const file of new Set([...state.files, ...(manifest?.files.map((f) => f.path) ?? [])]))
    await host.removePath(file);
  for (const file of [
    paths.kubeconfig,
    paths.bootstrapKubeconfig,
    paths.kubeletConfig,
    paths.containerdConfig,
    paths.cniConfig,
  ]) {
    await host.removePath(file);
  }
  await host.removePath(paths.certDir);
  // Directories winfleet created, deepest first, except its own (removed by the operator).
  const dirs = state.createdDirectories
    .filter((d) => !d.toLowerCase().startsWith(winfleetDir.toLowerCase()))
    .sort((a, b) => b.length - a.length);
  for (const dir of dirs) {
    if (dir.toLowerCase() === kubeDir.toLowerCase()) continue;
    await host.removePath(dir);
  }
  for (const entry of (await host.listDirectory(winfleetDir)) ?? []) {
    if (entry.toLowerCase() !== 'winfleet-agent.exe')
      await host.removePath(`${winfleetDir}\\${entry}`);
  }
  const createdKubeDir = state.createdDirectories.some(
    (d) => d.toLowerCase() === kubeDir.toLowerCase(),
  );
  return {
    removedServices: removed,
    removedNetworks: networks,
    removedEnv: state.env,
    // What the operator removes after this process exits.
    removeAfter: createdKubeDir ? [winfleetDir, kubeDir] : [winfleetDir],
  };
}
