/**
 * Test support for the agent's unit tests: a simulated machine prepared as the operator
 * leaves it before `winfleet-agent bootstrap` (payload, bootstrap.json, the agent and its service shim,
 * the directories it created recorded), a small services manifest, and a HostOS that records
 * the service calls the agent makes, in order. Every program idles: no kubelet talks to an
 * API server, so the agent's cluster-facing parts stay quiet (no kubeconfig is ever written).
 */
import type { TestContext } from 'node:test';
import { paths } from '../../src/agent/agent-config.ts';
import type { AgentContext } from '../../src/agent/agent-context.ts';
import { sha256 } from '../../src/agent/converge.ts';
import type { HostOS } from '../../src/agent/host-os.ts';
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import type { ServicesManifest } from '../../src/servicesmanifest/services-manifest.ts';
import { defaultCertDir, parseKubeletFlags } from './kubelet-settings.ts';
import { kubeletClientCertificateFile } from './kubelet-standin.ts';
import type { SimMachine } from './machine.ts';
import { ProgramRegistry } from './programs.ts';
import { SimHostOS } from './sim-host-os.ts';
import { standInBinary } from './stand-in-binary.ts';
import { createTestMachine } from './test-machine.ts';

/** The payload binaries, by service name. */
const binaries = {
  containerd: standInBinary('containerd', 'v2.1.0'),
  kubelet: standInBinary('kubelet', 'v1.36.5'),
  'kube-proxy': standInBinary('kube-proxy', 'v1.36.5'),
  'csi-proxy': standInBinary('csi-proxy', 'v1.2.0'),
};
type ServiceName = keyof typeof binaries;

/**
 * containerd <- kubelet <- kube-proxy (bootstrap: containerd and kubelet), and csi-proxy on
 * its own, listed out of start order so that order comes from priorities.
 */
export function testManifest(version = '1.0.0'): ServicesManifest {
  const service = (name: ServiceName, priority: number, dependencies: string[]) => ({
    name,
    displayName: `${name} (test)`,
    binary: `C:\\k\\${name}.exe`,
    // The kubelet's --cert-dir as the payload gives it (node-services.ts).
    args:
      name === 'kubelet' ? ['--hostname-override={{nodeName}}', `--cert-dir=${paths.certDir}`] : [],
    dependencies,
    priority,
    bootstrap: name === 'containerd' || name === 'kubelet',
  });
  return {
    version,
    services: [
      service('csi-proxy', 40, []),
      service('kube-proxy', 30, ['kubelet']),
      service('kubelet', 20, ['containerd']),
      service('containerd', 10, []),
    ],
    files: Object.entries(binaries).map(([name, data]) => ({
      payload: `${name}.exe`,
      path: `C:\\k\\${name}.exe`,
      sha256: sha256(data),
    })),
    env: { KUBE_NETWORK: 'winfleet', CONTAINERD_LOG_LEVEL: 'info' },
  };
}

export const testNodeName = 'win-agent-test';

/** bootstrap.json as the operator writes it (nodes check every 0.1 s). */
export function testBootstrapConfig(manifest: ServicesManifest = testManifest()): string {
  return JSON.stringify({
    nodeName: testNodeName,
    nodeIP: '127.0.0.200',
    hostname: 'SIMTEST',
    apiServer: 'https://127.0.0.1:6443',
    clusterDNS: '10.96.0.10',
    clusterDomain: 'cluster.local',
    serviceCIDR: '10.96.0.0/12',
    podCIDR: '10.244.5.0/24',
    labels: { 'winfleet.io/pool': 'test' },
    taints: [{ key: 'os', value: 'windows', effect: 'NoSchedule' }],
    kubelet: {
      systemReserved: { memory: '2Gi' },
      priorityClass: 'ABOVE_NORMAL_PRIORITY_CLASS',
      maxPods: 110,
    },
    operatorNamespace: 'winfleet-system',
    checkIntervalSeconds: 0.1,
    caCertificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    bootstrapToken: 'abcdef.0123456789abcdef',
    manifest,
  });
}

/** One HostOS call: the method and the service or path it was about. */
export type HostCall = `${string} ${string}`;

/** `host`, with every call recorded in `calls` as "method subject". */
export function recordingHostOS(host: HostOS, calls: HostCall[]): HostOS {
  return new Proxy(host, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const [first] = args;
        const subject =
          typeof first === 'object' && first !== null ? (first as { name: string }).name : first;
        calls.push(`${String(property)} ${String(subject ?? '')}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

export interface AgentTestHost {
  machine: SimMachine;
  /** Service calls the agent made through `context.hostOS`, oldest first. */
  calls: HostCall[];
  context: AgentContext;
  stdout: string[];
  stderr: string[];
}

/** Writes what the operator copies over SSH before it runs `winfleet-agent bootstrap`. */
export async function prepareAsOperator(
  machine: SimMachine,
  manifest: ServicesManifest = testManifest(),
): Promise<void> {
  const created: string[] = [];
  for (const dir of [
    'C:\\k',
    paths.payload.slice(0, paths.payload.lastIndexOf('\\')),
    paths.payload,
  ]) {
    if (!(await machine.fs.stat(dir))) created.push(dir);
    await machine.fs.mkdir(dir, { recursive: true });
  }
  await machine.fs.writeFileAtomic(paths.createdDirectories, `${created.join('\r\n')}\r\n`);
  for (const [name, data] of Object.entries(binaries))
    await machine.fs.writeFileAtomic(`${paths.payload}\\${name}.exe`, data);
  await machine.fs.writeFileAtomic(paths.agentExe, standInBinary('winfleet-agent', 'v0.1.0'));
  await machine.fs.writeFileAtomic(paths.serviceExe, standInBinary('winfleet-service', 'v0.1.0'));
  await machine.fs.writeFileAtomic(paths.bootstrapConfig, testBootstrapConfig(manifest));
}

/**
 * A simulated machine on which every program idles (the agent service included: the tests
 * run the agent's commands themselves), with the agent's context over a recording HostOS.
 */
export async function createAgentTestHost(
  t: Pick<TestContext, 'after'>,
  options: { signal?: AbortSignal } = {},
): Promise<AgentTestHost> {
  const machine = await createTestMachine(t, { programs: new ProgramRegistry() });
  const calls: HostCall[] = [];
  const stdout: string[] = [];
  const stderr: string[] = [];
  const context: AgentContext = {
    hostOS: recordingHostOS(new SimHostOS(machine, { stopTimeoutMs: 2000 }), calls),
    stdout: (text) => stdout.push(text),
    stderr: (text) => stderr.push(text),
  };
  if (options.signal) context.signal = options.signal;
  return { machine, calls, context, stdout, stderr };
}

/** The calls of one method, by subject: e.g. callsOf(calls, 'startService'). */
export function callsOf(calls: HostCall[], method: keyof HostOS): string[] {
  return calls.filter((c) => c.startsWith(`${method} `)).map((c) => c.slice(method.length + 1));
}

/** The state each service of `names` is in. */
export function serviceStates(
  machine: SimMachine,
  names: readonly string[],
): Record<string, string | undefined> {
  return Object.fromEntries(names.map((n) => [n, machine.scm.query(n)?.state]));
}

/**
 * Where the kubelet installed on `machine` keeps its client certificate: read from its service
 * command line (its --cert-dir, or the kubelet's default) as the kubelet stand-in does.
 */
export function installedKubeletClientCertificate(machine: SimMachine): string {
  const service = machine.scm.query('kubelet');
  if (!service) throw new Error('no kubelet service is installed');
  const { args } = splitServiceCommandLine(service.commandLine);
  return kubeletClientCertificateFile(
    parseKubeletFlags(args).flags.get('cert-dir') ?? defaultCertDir,
  );
}
