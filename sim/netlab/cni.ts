/**
 * Running a real CNI plugin by hand, as a container runtime would (the CNI spec's environment:
 * CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_PATH; the network configuration on
 * stdin), inside the node's namespace, and reading its ADD result strictly (CNI 1.0.0).
 */
import { CommandError, runInNetns, systemPath } from './command.ts';
import { netnsDir } from './netns.ts';

export interface CniInvocation {
  /** The namespace the plugin runs in: the node's. */
  nodeNetns: string;
  /** The pod's namespace (by name, under /run/netns). */
  podNetns: string;
  binDir: string;
  /** The plugin's binary name in binDir (bridge, loopback, …). */
  plugin: string;
  containerId: string;
  ifName: string;
  config: Record<string, unknown>;
}

export interface CniResult {
  interfaces: { name: string; mac?: string; sandbox?: string }[];
  ips: { address: string; gateway?: string; interface?: number }[];
  routes: { dst: string; gw?: string }[];
}

function env(o: CniInvocation, command: 'ADD' | 'DEL'): NodeJS.ProcessEnv {
  return {
    PATH: systemPath(),
    CNI_COMMAND: command,
    CNI_CONTAINERID: o.containerId,
    CNI_NETNS: `${netnsDir}/${o.podNetns}`,
    CNI_IFNAME: o.ifName,
    CNI_PATH: o.binDir,
  };
}

async function invoke(o: CniInvocation, command: 'ADD' | 'DEL'): Promise<string> {
  try {
    const { stdout } = await runInNetns(o.nodeNetns, `${o.binDir}/${o.plugin}`, [], {
      input: JSON.stringify(o.config),
      env: env(o, command),
      timeoutMs: 30_000,
    });
    return stdout;
  } catch (error) {
    // A plugin reports its error as JSON on stdout ({code, msg, details}).
    const said = error instanceof CommandError ? error.stdout.trim() : '';
    throw new Error(
      `CNI ${command} with ${o.plugin} for ${o.podNetns} (in ${o.nodeNetns}) failed: ${said || (error as Error).message}`,
    );
  }
}

function fail(what: string, detail: string, result: unknown): never {
  throw new Error(`${what}: ${detail} in ${JSON.stringify(result)}`);
}

/** Reads an ADD result, refusing one that is not shaped as the spec says. */
export function parseCniResult(stdout: string, what: string): CniResult {
  let r: unknown;
  try {
    r = JSON.parse(stdout);
  } catch {
    throw new Error(`${what}: the result is not JSON: ${stdout.slice(0, 300)}`);
  }
  const obj = r as Record<string, unknown>;
  if (typeof obj !== 'object' || obj === null) fail(what, 'not an object', r);
  const interfaces = (obj.interfaces ?? []) as unknown[];
  const ips = (obj.ips ?? []) as unknown[];
  const routes = (obj.routes ?? []) as unknown[];
  if (!Array.isArray(interfaces) || !Array.isArray(ips) || !Array.isArray(routes))
    fail(what, 'interfaces, ips and routes must be arrays', r);
  return {
    interfaces: interfaces.map((i) => {
      const e = i as Record<string, unknown>;
      if (typeof e?.name !== 'string') fail(what, 'an interface without a name', r);
      return {
        name: e.name,
        ...(typeof e.mac === 'string' ? { mac: e.mac } : {}),
        ...(typeof e.sandbox === 'string' ? { sandbox: e.sandbox } : {}),
      };
    }),
    ips: ips.map((i) => {
      const e = i as Record<string, unknown>;
      if (typeof e?.address !== 'string') fail(what, 'an IP without an address', r);
      return {
        address: e.address,
        ...(typeof e.gateway === 'string' ? { gateway: e.gateway } : {}),
        ...(typeof e.interface === 'number' ? { interface: e.interface } : {}),
      };
    }),
    routes: routes.map((i) => {
      const e = i as Record<string, unknown>;
      if (typeof e?.dst !== 'string') fail(what, 'a route without dst', r);
      return { dst: e.dst, ...(typeof e.gw === 'string' ? { gw: e.gw } : {}) };
    }),
  };
}

/** CNI ADD; resolves with the plugin's result. */
export async function cniAdd(o: CniInvocation): Promise<CniResult> {
  const stdout = await invoke(o, 'ADD');
  return parseCniResult(stdout, `CNI ADD with ${o.plugin} for ${o.podNetns}`);
}

/** CNI DEL. */
export async function cniDel(o: CniInvocation): Promise<void> {
  await invoke(o, 'DEL');
}
