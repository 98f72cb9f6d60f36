/**
 * `winfleet-agent bootstrap`: configures this host from bootstrap.json — CA, bootstrap
 * kubeconfig, kubelet and containerd configuration (the CNI config waits for the Node's pod
 * CIDR: run-loop.ts), environment, host settings (trusted CAs, registry hosts, WinHTTP proxy:
 * host-settings.ts), payload binaries, the kubelet's firewall rule, every
 * service of the manifest registered with recovery actions, the bootstrap services (containerd,
 * kubelet) started, and the agent itself installed as a service. Idempotent: running it again
 * converges to the same state.
 */

import { hasCode, WinfleetError } from '../errors/catalog.ts';
import { agentEnvironment } from '../hostsettings/node-host-settings.ts';
import {
  agentConfigFrom,
  type BootstrapConfig,
  kubeDir,
  parseBootstrapConfig,
  paths,
  winfleetDir,
} from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { type AgentState, ensureDirectoryRecorded, readState, writeState } from './agent-state.ts';
import {
  agentServiceConfig,
  convergeServices,
  ensureService,
  installPayloadFiles,
  servicesRunning,
} from './converge.ts';
import { applyHostSettings } from './host-settings.ts';
import { kubeProxyCredentialUsers } from './kube-proxy-credentials.ts';
import { kubeletFirewallRule, syncEncapsulationRule } from './kubelet-firewall.ts';
import {
  bootstrapKubeconfig,
  containerdConfig,
  hyperVLabelled,
  kubeletConfiguration,
  nodeVariableValues,
} from './node-files.ts';

/** What a WF_AGENT_STEP_FAILED error carries: where it failed, for status.lastError.step. */
export interface StepFailure {
  readonly step: string;
}

/** The step a bootstrap failure happened in, if it says. */
export function failedStep(error: unknown): string | undefined {
  return hasCode(error, 'WF_AGENT_STEP_FAILED')
    ? (error as WinfleetError<StepFailure>).details?.step
    : undefined;
}

/** Runs `work` as the named step: a failure becomes WF_AGENT_STEP_FAILED naming it. */
export async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (failedStep(error) !== undefined) throw error;
    throw new WinfleetError<StepFailure>(
      'WF_AGENT_STEP_FAILED',
      `${name}: ${(error as Error).message ?? error}`,
      { cause: error, details: { step: name } },
    );
  }
}

/** Runs the bootstrap from bootstrap.json; resolves with the version, node and services changed. */
export async function bootstrap(context: AgentContext): Promise<Record<string, unknown>> {
  const host = context.hostOS;
  const config = await readBootstrapConfig(host);
  const state = await readState(host);
  const manifest = config.manifest;

  await step('write-files', () => writeBootstrapFiles(host, config, state));
  await step('set-environment', async () => {
    for (const [name, value] of Object.entries(manifest.env ?? {})) {
      if ((await host.getMachineEnv(name)) !== value) await host.setMachineEnv(name, value);
      state.env.push(name);
    }
  });
  const restart = await installSettingsAndPayload(host, manifest, state);
  // Before the kubelet starts: the API server reaches it on this port (kubelet-firewall.ts).
  await step('open-kubelet-port', () => host.ensureInboundFirewallRule(kubeletFirewallRule));
  // And other nodes' VXLAN packets, on an overlay pod network.
  await step('open-pod-network-port', () => syncEncapsulationRule(host, manifest.network));
  // kube-proxy's kubeconfig is the run loop's to write (kube-proxy-credentials.ts): until it
  // exists, the services that name it wait, and one still running is stopped.
  const holdBack = new Set<string>(
    (await host.readFile(paths.kubeProxyKubeconfig)) === undefined
      ? kubeProxyCredentialUsers(manifest)
      : [],
  );
  const result = await step('start-services', () =>
    convergeServices(host, manifest, nodeVariableValues(config), state, {
      start: 'bootstrap',
      restart,
      holdBack,
    }),
  );
  // The state is on disk before the agent service starts: its run loop reads and extends it.
  state.version = manifest.version;
  await step('write-state', () => writeState(host, state));
  await step('install-agent-service', async () => {
    await ensureService(host, agentServiceConfig(agentEnvironment(manifest)), state);
    const agent = await host.queryService(agentServiceConfig().name);
    if (agent?.state !== 'running') await host.startService(agentServiceConfig().name);
  });
  state.version = manifest.version;
  await step('write-state', () => writeState(host, state));
  return {
    version: manifest.version,
    nodeName: config.nodeName,
    changed: result.changed,
    started: result.started,
  };
}

/** bootstrap.json read (steps read-config, validate-config). */
async function readBootstrapConfig(host: AgentContext['hostOS']): Promise<BootstrapConfig> {
  const text = await step('read-config', async () => {
    const data = await host.readFile(paths.bootstrapConfig);
    if (!data) {
      throw new WinfleetError(
        'WF_AGENT_FILE_MISSING',
        `${paths.bootstrapConfig} does not exist; the operator writes it before it runs bootstrap`,
      );
    }
    return data.toString('utf8');
  });
  return step('validate-config', async () => parseBootstrapConfig(text));
}

/** The directories, the CA, the kubeconfig, kubelet, containerd and agent configs, the manifest. */
async function writeBootstrapFiles(
  host: AgentContext['hostOS'],
  config: BootstrapConfig,
  state: AgentState,
): Promise<void> {
  for (const dir of [
    kubeDir,
    winfleetDir,
    paths.certDir,
    `${kubeDir}\\logs`,
    `${kubeDir}\\containerd`,
    `${kubeDir}\\cni\\config`,
    `${kubeDir}\\cni\\bin`,
  ]) {
    await ensureDirectoryRecorded(host, dir, state);
  }
  await host.writeFile(paths.caCert, config.caCertificate);
  await host.writeFile(paths.bootstrapKubeconfig, bootstrapKubeconfig(config));
  await host.writeFile(paths.kubeletConfig, kubeletConfiguration(config));
  await host.writeFile(
    paths.containerdConfig,
    containerdConfig(config.manifest.network, { hyperV: hyperVLabelled(config.labels) }),
  );
  // No CNI config yet: it needs this node's pod CIDR, which only its registered Node has; the
  // run loop writes it then (cni-config.ts). One left from an earlier join may name a subnet
  // the cluster has since given another node, so it goes until then.
  await host.removePath(paths.cniConfig);
  await host.writeFile(paths.agentConfig, `${JSON.stringify(agentConfigFrom(config), null, 2)}\n`);
  await host.writeFile(
    `${winfleetDir}\\services.json`,
    `${JSON.stringify(config.manifest, null, 2)}\n`,
  );
  state.files.push(
    paths.caCert,
    paths.bootstrapKubeconfig,
    paths.kubeletConfig,
    paths.containerdConfig,
  );
}

/**
 * Host settings and the payload files (steps apply-host-settings, install-payload); returns
 * the services to restart: the bootstrap ones and those the settings or new files touch.
 */
async function installSettingsAndPayload(
  host: AgentContext['hostOS'],
  manifest: BootstrapConfig['manifest'],
  state: AgentState,
): Promise<Set<string>> {
  // Trusted CAs, containerd's registry hosts, the WinHTTP proxy (host-settings.ts): before
  // containerd starts, so its first pull already goes through the mirrors.
  const settings = await step('apply-host-settings', () =>
    applyHostSettings(host, manifest, state, { machineEnvironment: true }),
  );
  // A (re)bootstrap restarts the bootstrap services: a kubelet whose Node was deleted only
  // registers it again when it starts.
  const restart = new Set<string>([
    ...manifest.services.filter((s) => s.bootstrap).map((s) => s.name),
    ...settings.restart,
  ]);
  await step('install-payload', async () => {
    const changed = await installPayloadFiles(host, manifest, state);
    for (const name of servicesRunning(manifest, changed)) restart.add(name);
  });
  return restart;
}
