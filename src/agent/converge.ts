/**
 * Bringing a host to a services manifest: payload files in place (verified by SHA-256, and
 * only the changed ones rewritten, with their services stopped first and the old files moved
 * aside, since Windows locks running executables — also those no service runs, like
 * containerd's per-pod shims), every service registered with the right command line,
 * environment, dependencies and recovery actions, and running.
 */
import { createHash } from 'node:crypto';
import { WinfleetError } from '../errors/catalog.ts';
import { serviceShimFileName } from '../payload/payload.ts';
import {
  expandArgument,
  type ManifestService,
  type NodeVariable,
  type ServicesManifest,
  serviceCommand,
  serviceExecutables,
  startOrder,
} from '../servicesmanifest/services-manifest.ts';
import { paths } from './agent-config.ts';
import type { AgentState } from './agent-state.ts';
import type { HostOS, ServiceConfig } from './host-os.ts';
import { replaceExecutable } from './replace-executable.ts';
import { serviceCommandLine } from './windows/command-line.ts';
import { serviceShimArgs } from './windows/service-shim.ts';

/** Restart after 5 s, 5 s, then 10 s; forget failures after a day (sc.exe failure). */
export const defaultRecovery = { restartDelaysMs: [5000, 5000, 10000], resetPeriodSeconds: 86400 };

export const agentServiceName = 'winfleet-agent';

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * The registration of a manifest service. Its environment is the manifest's machine-level
 * `env` with the service's own `env` on top: a machine variable reaches a service only after
 * a reboot, so the service gets the manifest's through its own environment at once.
 */
export function serviceConfig(
  service: ManifestService,
  values: Record<NodeVariable, string>,
  machineEnv: Readonly<Record<string, string>> = {},
): ServiceConfig {
  const environment = Object.fromEntries(
    Object.entries({ ...machineEnv, ...service.env }).map(([name, value]) => [
      name,
      expandArgument(value, values),
    ]),
  );
  const config: ServiceConfig = {
    name: service.name,
    displayName: service.displayName,
    description: service.description,
    // The program itself, or kube-log-runner.exe running it (services-manifest.ts).
    ...serviceCommand(
      service,
      service.args.map((a) => expandArgument(a, values)),
    ),
    dependencies: service.dependencies,
    startType: service.startType ?? 'auto',
    recovery: defaultRecovery,
  };
  if (Object.keys(environment).length > 0) config.environment = environment;
  return config;
}

/**
 * The agent's own service: `winfleet-agent.exe run` under winfleet-service.exe, which talks to
 * the SCM for it (a bare Node executable would be killed with 1053), keeps its output in a
 * rotated log and exits with its code, so the recovery actions restart a failed agent.
 * `environment`: its own (the proxy: node-host-settings.ts agentEnvironment).
 */
export function agentServiceConfig(environment: Record<string, string> = {}): ServiceConfig {
  return {
    ...(Object.keys(environment).length > 0 ? { environment } : {}),
    name: agentServiceName,
    displayName: 'winfleet agent',
    description:
      'Keeps the Kubernetes node services of this host configured and running (winfleet)',
    binaryPath: paths.serviceExe,
    args: serviceShimArgs({ logDir: paths.agentLogs }, paths.agentExe, ['run']),
    dependencies: [],
    startType: 'auto',
    recovery: defaultRecovery,
  };
}

/**
 * Installs payload files whose content differs; returns the paths written. Every file is
 * hashed and copied as a stream: the agent never holds a payload file in memory.
 * @package
 */
export async function installPayloadFiles(
  host: HostOS,
  manifest: ServicesManifest,
  state: AgentState,
): Promise<string[]> {
  const pending: { path: string; source: string }[] = [];
  for (const file of manifest.files) {
    let source = `${paths.payload}\\${file.payload}`;
    let actual = await host.fileSha256(source);
    // The service shim a manifest service runs under: the operator installs its copy in the
    // agent's own place (payload-sync.ts), a pulling agent stages it in the payload directory.
    if (actual === undefined && file.payload.toLowerCase() === serviceShimFileName) {
      source = paths.serviceExe;
      actual = await host.fileSha256(source);
    }
    if (actual === undefined)
      throw new WinfleetError(
        'WF_AGENT_FILE_MISSING',
        `Payload file ${source} is missing; the operator copies it, or the agent pulls it from the payload registry, before bootstrap`,
      );
    if (actual !== file.sha256) {
      throw new WinfleetError(
        'WF_PAYLOAD_INVALID',
        `Payload file ${source} has SHA-256 ${actual}, the manifest says ${file.sha256}; refusing to install it`,
      );
    }
    if ((await host.fileSha256(file.path)) === file.sha256) continue;
    pending.push({ path: file.path, source });
  }
  // The services that run a file being replaced stop first (their dependents before them),
  // to restart on the new one; processes no service owns keep the old one, moved aside.
  await stopWithDependents(
    host,
    manifest,
    servicesRunning(
      manifest,
      pending.map((f) => f.path),
    ),
  );
  for (const file of pending) {
    await replaceExecutable(host, file.path, (to) => host.copyFile(file.source, to));
    state.files.push(file.path);
  }
  return pending.map((f) => f.path);
}

/**
 * The services that run one of `paths` (case-insensitive): as their program, or as the
 * kube-log-runner.exe their program runs under. Replacing such a file restarts them.
 * @package
 */
export function servicesRunning(manifest: ServicesManifest, paths: readonly string[]): Set<string> {
  const lower = new Set(paths.map((p) => p.toLowerCase()));
  return new Set(
    manifest.services
      .filter((s) => serviceExecutables(s).some((exe) => lower.has(exe.toLowerCase())))
      .map((s) => s.name),
  );
}

/** `names` plus every service that depends on one of them, directly or not. */
export function withDependents(manifest: ServicesManifest, names: Set<string>): Set<string> {
  const all = new Set(names);
  let grew = true;
  while (grew) {
    grew = false;
    for (const service of manifest.services) {
      if (!all.has(service.name) && service.dependencies.some((d) => all.has(d))) {
        all.add(service.name);
        grew = true;
      }
    }
  }
  return all;
}

/**
 * Stops `names` and their dependents, dependents first — Windows refuses to stop a service
 * whose dependents run (error 1051). Returns the services that were running.
 */
export async function stopWithDependents(
  host: HostOS,
  manifest: ServicesManifest,
  names: Set<string>,
): Promise<Set<string>> {
  const stop = withDependents(manifest, names);
  const wasRunning = new Set<string>();
  for (const service of [...startOrder(manifest)].reverse()) {
    if (!stop.has(service.name)) continue;
    const status = await host.queryService(service.name);
    if (status?.state === 'running' || status?.state === 'start-pending') {
      wasRunning.add(service.name);
      await host.stopService(service.name);
    }
  }
  return wasRunning;
}

function sameRegistration(
  current: Awaited<ReturnType<HostOS['queryService']>>,
  desired: ServiceConfig,
): boolean {
  if (!current) return false;
  return (
    current.commandLine === serviceCommandLine(desired.binaryPath, desired.args) &&
    current.startType === desired.startType &&
    current.displayName === desired.displayName &&
    current.dependencies.join('/') === desired.dependencies.join('/')
  );
}

/** Whether two environments hold the same variables (names compared as Windows does). */
function sameEnvironment(
  current: Readonly<Record<string, string>> | undefined,
  desired: Readonly<Record<string, string>> | undefined,
): boolean {
  const normalized = (env: Readonly<Record<string, string>> | undefined) =>
    JSON.stringify(
      Object.entries(env ?? {})
        .map(([name, value]) => [name.toLowerCase(), value])
        .sort(([a], [b]) => a!.localeCompare(b!)),
    );
  return normalized(current) === normalized(desired);
}

/**
 * Registers (or re-registers) one service; returns true when its registration changed — its
 * environment included, which the service reads only when it starts.
 */
export async function ensureService(
  host: HostOS,
  desired: ServiceConfig,
  state: AgentState,
): Promise<boolean> {
  const current = await host.queryService(desired.name);
  state.services.push(desired.name);
  state.serviceEnvironments ??= {};
  const environments = state.serviceEnvironments;
  const written = { ...desired.environment };
  if (!current) {
    await host.createService(desired);
    environments[desired.name] = written;
    return true;
  }
  if (sameRegistration(current, desired)) {
    // What winfleet wrote last, read from the host only when there is no record of it.
    const environment =
      environments[desired.name] ?? (await host.queryServiceEnvironment(desired.name));
    environments[desired.name] = { ...environment };
    if (sameEnvironment(environment, desired.environment)) return false;
  }
  await host.configureService(desired);
  environments[desired.name] = written;
  return true;
}

export interface ConvergeOptions {
  /** Which services to start now: bootstrap ones only, or all. */
  start: 'bootstrap' | 'all';
  /** Services to restart because their files or registration changed. */
  restart?: Set<string>;
  /**
   * Services not to start yet, with their dependents (starting a dependent would start them):
   * they wait for something the agent has still to write (kube-proxy-credentials.ts).
   */
  holdBack?: ReadonlySet<string>;
  /**
   * Services in a restart loop (node-health.ts): not started again while stopped, nor their
   * dependents (starting one would start them) — winfleet stops restarting them blindly and
   * escalates by the FrequentServiceRestart condition. A service in `restart` (its files or
   * registration changed) still starts: the change may be the fix.
   */
  doNotRestart?: ReadonlySet<string>;
}

/**
 * Throws WF_SERVICE_BINARY_MISMATCH unless each executable of the service (its program, and
 * kube-log-runner.exe when it runs under one) has on disk the SHA-256 its manifest file entry
 * gives: a service runs as LocalSystem, so a binary changed on the host
 * since it was installed is never started.
 */
export async function verifyBinary(
  host: HostOS,
  manifest: ServicesManifest,
  service: ManifestService,
): Promise<void> {
  for (const binary of serviceExecutables(service)) {
    const file = manifest.files.find((f) => f.path.toLowerCase() === binary.toLowerCase());
    const actual = (await host.fileSha256(binary)) ?? 'none (the file is missing)';
    if (file && actual === file.sha256) continue;
    throw new WinfleetError(
      'WF_SERVICE_BINARY_MISMATCH',
      `Not starting service ${service.name}: ${binary} has SHA-256 ${actual}, its manifest ${manifest.version} says ${file?.sha256 ?? 'nothing (no file entry)'}; the file changed on the host since it was installed: investigate, then re-bootstrap the host to reinstall it`,
    );
  }
}

/** Registers every service of `manifest` and starts (or restarts) what `options` says. */
export async function convergeServices(
  host: HostOS,
  manifest: ServicesManifest,
  values: Record<NodeVariable, string>,
  state: AgentState,
  options: ConvergeOptions,
): Promise<{ changed: string[]; started: string[] }> {
  const changed: string[] = [];
  const started: string[] = [];
  const restart = options.restart ?? new Set<string>();
  for (const service of startOrder(manifest)) {
    if (await ensureService(host, serviceConfig(service, values, manifest.env), state)) {
      changed.push(service.name);
      restart.add(service.name);
    }
  }
  // A restart takes the service's dependents down first, and all come back up in start order.
  const wasRunning = await stopWithDependents(host, manifest, restart);
  const held = withDependents(manifest, new Set(options.holdBack ?? []));
  // A held service still running (e.g. kube-proxy from before a re-bootstrap removed its
  // kubeconfig) is stopped: it would run on what it waits for, or fail on its absence.
  await stopWithDependents(host, manifest, held);
  const looping = options.doNotRestart ?? new Set<string>();
  const blocked = new Set<string>();
  for (const service of startOrder(manifest)) {
    if (held.has(service.name)) continue;
    // During bootstrap, later services start only if they ran before this restart.
    if (options.start === 'bootstrap' && !service.bootstrap && !wasRunning.has(service.name))
      continue;
    const status = await host.queryService(service.name);
    if (status?.state !== 'running' && status?.state !== 'start-pending') {
      if (
        (looping.has(service.name) && !restart.has(service.name)) ||
        service.dependencies.some((d) => blocked.has(d))
      ) {
        blocked.add(service.name);
        continue;
      }
      await verifyBinary(host, manifest, service);
      await host.startService(service.name);
      started.push(service.name);
    }
  }
  return { changed, started };
}
