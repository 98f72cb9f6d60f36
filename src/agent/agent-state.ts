/**
 * What the agent installed on this host (state.json): the manifest version, services, files,
 * environment variables and directories it created. `cleanup` reads it to leave the host as
 * it was before winfleet touched it.
 */

import { maxRememberedThreats } from '../node-health/detector.ts';
import { paths } from './agent-config.ts';
import type { HostOS } from './host-os.ts';
import { mergeWindowsUpdateState, type WindowsUpdateState } from './windows-update-state.ts';

/** @package */
export interface AgentState {
  version: string;
  services: string[];
  files: string[];
  env: string[];
  /** Directories that did not exist before winfleet created them. */
  createdDirectories: string[];
  /**
   * The environment winfleet registered for each service (its Environment registry value):
   * a service with a record is not asked for its environment again (a PowerShell launch on
   * Windows) on every pass. Optional: state files written before it have none.
   */
  serviceEnvironments?: Record<string, Record<string, string>>;
  /** Windows Update and reboot requests (windows-updates.ts). Optional: older files lack it. */
  windowsUpdates?: WindowsUpdateState;
  /** What host-settings.ts applied. Optional: older files lack it. */
  hostSettings?: HostSettingsState;
  /**
   * Defender detections already announced as Events (node-health.ts, defenderDetectionKey),
   * so that an agent restart does not announce them again. Optional: older files lack it.
   */
  reportedThreats?: string[];
}

/**
 * The host settings winfleet applied. The maps say, per key, whether winfleet holds it now
 * (false: it did and removed it), so that merging with the file on disk never brings back
 * something removed.
 * @package
 */
export interface HostSettingsState {
  /** Root certificates winfleet added (by thumbprint): only these are ever removed. */
  rootCertificates: Record<string, boolean>;
  /** Directories under containerd's certs.d winfleet wrote. */
  registryHostDirectories: Record<string, boolean>;
  /** The WinHTTP proxy winfleet set, as JSON; null: it reset it (or never set one). */
  winHttpProxy?: string | null;
}

export const emptyState = (): AgentState => ({
  version: '',
  services: [],
  files: [],
  env: [],
  createdDirectories: [],
  serviceEnvironments: {},
});

/** @package */
export async function readState(host: HostOS): Promise<AgentState> {
  const data = await host.readFile(paths.state);
  let state = emptyState();
  try {
    if (data) state = { ...state, ...(JSON.parse(data.toString('utf8')) as Partial<AgentState>) };
  } catch {
    // A damaged state file: start from what the operator recorded.
  }
  // Directories the operator created over SSH before the agent ran.
  const recorded = await host.readFile(paths.createdDirectories);
  const lines =
    recorded
      ?.toString('utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter(Boolean) ?? [];
  state.createdDirectories = [...new Set([...lines, ...state.createdDirectories])];
  return state;
}

/**
 * Writes the state, merged with what is on disk: another agent process (bootstrap and the run
 * loop) may have recorded things meanwhile, and nothing recorded may be forgotten.
 * @package
 */
export async function writeState(host: HostOS, state: AgentState): Promise<void> {
  const onDisk = await readState(host);
  const unique = (a: string[], b: string[]) => [...new Set([...a, ...b])];
  const clean: AgentState = {
    version: state.version || onDisk.version,
    services: unique(onDisk.services, state.services),
    files: unique(onDisk.files, state.files),
    env: unique(onDisk.env, state.env),
    createdDirectories: unique(onDisk.createdDirectories, state.createdDirectories),
    serviceEnvironments: { ...onDisk.serviceEnvironments, ...state.serviceEnvironments },
  };
  if (onDisk.hostSettings || state.hostSettings) {
    const merge = (key: 'rootCertificates' | 'registryHostDirectories') => ({
      ...onDisk.hostSettings?.[key],
      ...state.hostSettings?.[key],
    });
    const winHttpProxy =
      state.hostSettings?.winHttpProxy !== undefined
        ? state.hostSettings.winHttpProxy
        : onDisk.hostSettings?.winHttpProxy;
    clean.hostSettings = {
      rootCertificates: merge('rootCertificates'),
      registryHostDirectories: merge('registryHostDirectories'),
      ...(winHttpProxy !== undefined ? { winHttpProxy } : {}),
    };
  }
  const threats = unique(onDisk.reportedThreats ?? [], state.reportedThreats ?? []).slice(
    -maxRememberedThreats,
  );
  if (threats.length > 0) clean.reportedThreats = threats;
  const updates = mergeWindowsUpdateState(onDisk.windowsUpdates, state.windowsUpdates);
  if (updates) clean.windowsUpdates = updates;
  await host.writeFile(paths.state, `${JSON.stringify(clean, null, 2)}\n`);
}

/** Creates `path` (and parents) and records which of them winfleet created. */
export async function ensureDirectoryRecorded(
  host: HostOS,
  path: string,
  state: AgentState,
): Promise<void> {
  const parts = path.split('\\');
  for (let i = 2; i <= parts.length; i++) {
    const dir = parts.slice(0, i).join('\\');
    if ((await host.listDirectory(dir)) === undefined) {
      await host.ensureDirectory(dir);
      state.createdDirectories.push(dir);
    }
  }
}
