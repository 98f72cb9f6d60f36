/**
 * What the agent installed on this host (state.json): the manifest version, services, files,
 * environment variables and directories it created. `cleanup` reads it to leave the host as
 * it was before winfleet touched it.
 */

import { paths } from './agent-config.ts';
import type { HostOS } from './host-os.ts';

export interface AgentState {
  version: string;
  services: string[];
  files: string[];
  env: string[];
  /** Directories that did not exist before winfleet created them. */
  createdDirectories: string[];
}

export const emptyState = (): AgentState => ({
  version: '',
  services: [],
  files: [],
  env: [],
  createdDirectories: [],
});

export async function readState(host: HostOS): Promise<AgentState> {
  const data = await host.readFile(paths.state);
  if (!data) return emptyState();
  try {
    return { ...emptyState(), ...(JSON.parse(data.toString('utf8')) as Partial<AgentState>) };
  } catch {
    return emptyState();
  }
}

export async function writeState(host: HostOS, state: AgentState): Promise<void> {
  const unique = (xs: string[]) => [...new Set(xs)];
  const clean: AgentState = {
    version: state.version,
    services: unique(state.services),
    files: unique(state.files),
    env: unique(state.env),
    createdDirectories: unique(state.createdDirectories),
  };
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
