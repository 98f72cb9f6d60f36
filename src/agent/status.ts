/** `winfleet-agent status`: what is installed and running, and where a join stands, as JSON. */

import { paths } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { readState } from './agent-state.ts';
import { agentServiceName } from './converge.ts';
import { readJoinStatus } from './join-status.ts';

/** @package */
export async function status(context: AgentContext): Promise<Record<string, unknown>> {
  const host = context.hostOS;
  const state = await readState(host);
  const services = [];
  for (const name of [...new Set([...state.services, agentServiceName])]) {
    const s = await host.queryService(name);
    services.push({ name, state: s?.state ?? 'not-installed', pid: s?.pid });
  }
  return {
    version: state.version || undefined,
    services,
    kubeconfig: (await host.readFile(paths.kubeconfig)) !== undefined,
    os: await host.osVersion(),
    // Where a join by command stands (join-status.ts); absent on hosts joined over SSH.
    join: await readJoinStatus(host),
  };
}
