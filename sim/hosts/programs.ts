/**
 * What a process on a simulated host does, chosen by its executable's file name:
 * - winfleet-agent.exe runs the real agent (`runAgent`) in-process with the process's HostOS;
 * - kubelet.exe runs the kubelet stand-in (TLS bootstrap and Node registration against the
 *   real API server);
 * - kube-proxy.exe and flanneld.exe idle after creating the HNS network the node's pods use;
 * - anything else (containerd.exe, csi-proxy.exe, windows_exporter.exe, ...) idles until
 *   stopped or killed.
 * A program that only runs as a service when told so (kubelet and kube-proxy need
 * --windows-service, containerd --run-service) never reports to the SCM without its flag, so
 * the start times out with 1053 as on Windows. Tests can register their own programs.
 */
import { runAgent } from '../../src/agent/run-agent.ts';
import { kubeletStandIn } from './kubelet-standin.ts';
import type { ProgramContext, SimProgram } from './sim-process.ts';

export interface ProgramDefinition {
  run: SimProgram;
  /** The flag without which the program never reports to the SCM when run as a service. */
  serviceFlag?: string;
}

/** The HNS network kube-proxy and flannel create when none is named. */
export const defaultHnsNetworkName = 'winfleet';

/** Runs until asked to stop or killed. */
export const idleProgram: SimProgram = async ({ signal }) => {
  if (!signal.aborted) {
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }
  return 0;
};

/**
 * Creates the HNS network (named by --network-name, else the machine's KUBE_NETWORK, else
 * "winfleet"), then idles: what flannel does at start, and what kube-proxy waits for.
 */
export const networkProgram: SimProgram = async (context: ProgramContext) => {
  const flag = context.argv.find((a) => a.startsWith('--network-name='));
  const name =
    flag?.slice('--network-name='.length) ||
    context.machine.env.get('KUBE_NETWORK') ||
    defaultHnsNetworkName;
  context.machine.hns.ensure(name, 'Overlay');
  context.stdout(`HNS network "${name}" is ready\n`);
  return idleProgram(context);
};

/** The winfleet agent: the real code, with this process's HostOS. */
export const agentProgram: SimProgram = (context) =>
  runAgent(context.argv, {
    hostOS: context.hostOS,
    stdout: context.stdout,
    stderr: context.stderr,
    signal: context.signal,
  });

export class ProgramRegistry {
  readonly #programs = new Map<string, ProgramDefinition>();
  #fallback: ProgramDefinition = { run: idleProgram };

  /** Sets the program for executables named `imageName` (case-insensitive, e.g. "kubelet.exe"). */
  register(imageName: string, definition: ProgramDefinition): this {
    this.#programs.set(imageName.toLowerCase(), definition);
    return this;
  }

  /** Sets the program for executables nothing else matches (idle by default). */
  setFallback(definition: ProgramDefinition): this {
    this.#fallback = definition;
    return this;
  }

  lookup(imageName: string): ProgramDefinition {
    return this.#programs.get(imageName.toLowerCase()) ?? this.#fallback;
  }
}

/** The programs every simulated host knows. */
export function defaultPrograms(): ProgramRegistry {
  return new ProgramRegistry()
    .register('winfleet-agent.exe', { run: agentProgram })
    .register('kubelet.exe', { run: kubeletStandIn, serviceFlag: '--windows-service' })
    .register('kube-proxy.exe', { run: networkProgram, serviceFlag: '--windows-service' })
    .register('flanneld.exe', { run: networkProgram })
    .register('containerd.exe', { run: idleProgram, serviceFlag: '--run-service' });
}
