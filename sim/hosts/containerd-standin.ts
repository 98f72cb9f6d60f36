/**
 * containerd and its runhcs shims on a simulated host, as far as winfleet meets them:
 * - containerd.exe runs as a service (with --run-service) and idles. It starts without the
 *   Containers feature too, as the real one does: only its container operations need the Host
 *   Compute Service (vmcompute.dll), and those fail;
 * - every pod sandbox runs in its own containerd-shim-runhcs-v1.exe process, which containerd
 *   starts from beside its own executable (containerd's shim binary lookup falls back to the
 *   directory of containerd.exe). A shim belongs to no service: it keeps running when
 *   containerd stops (so its executable stays locked, and an upgrade must rename it aside), and
 *   dies only when its sandbox is stopped or the machine reboots;
 * - without the Containers feature a shim cannot create the sandbox's compute system and
 *   exits; the sandbox fails with hcsshim's error for a missing vmcompute.dll: ERROR_MOD_NOT_FOUND
 *   (126), "The specified module could not be found."
 * Whoever plays the kubelet's CRI calls (the kubelet stand-in) uses runPodSandbox and
 * stopPodSandbox; tests may call them directly.
 */

import { parse as parseToml } from 'smol-toml';
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import type { SimMachine } from './machine.ts';
import { idleProgram } from './programs.ts';
import { containerdConfigFlag } from './sim-cni.ts';
import type { SimProcess, SimProgram } from './sim-process.ts';
import { windowsBaseName } from './windows-path.ts';

export const containerdImageName = 'containerd.exe';
export const runhcsShimImageName = 'containerd-shim-runhcs-v1.exe';

/** The Windows feature containerd's shims need (the Host Compute Service). */
export const containersFeature = 'Containers';

/** hcsshim's text for ERROR_MOD_NOT_FOUND (126): vmcompute.dll is missing. */
export const moduleNotFound = 'The specified module could not be found.';

/**
 * containerd's error for a config file it cannot decode (containerd v2.4.2,
 * cmd/containerd/server/config/config.go loadConfigFile: "failed to unmarshal TOML at row %d
 * column %d: %w"), printed by its command as "containerd: <error>". The decoder's own text is
 * smol-toml's here, not go-toml v2's.
 */
export function containerdConfigError(row: number, column: number, detail: string): string {
  return `containerd: failed to unmarshal TOML at row ${row} column ${column}: toml: ${detail}`;
}

/**
 * containerd.exe: loads its --config file (a missing one is fine: the defaults), exits 1 with
 * containerd's error when it cannot decode it, else idles until stopped, whatever the Containers
 * feature (see the header).
 */
export const containerdProgram: SimProgram = async (context) => {
  const configFile = containerdConfigFlag(context.argv);
  const text = configFile ? await context.machine.fs.tryReadFile(configFile) : undefined;
  if (text !== undefined) {
    try {
      parseToml(text.toString('utf8'));
    } catch (error) {
      const e = error as { line?: number; column?: number; message: string };
      const detail = e.message.split('\n')[0] ?? '';
      context.stderr(`${containerdConfigError(e.line ?? 1, e.column ?? 1, detail)}\n`);
      return 1;
    }
  }
  return idleProgram(context);
};

/**
 * containerd-shim-runhcs-v1.exe serving one sandbox: fails at once without the Containers
 * feature (hcs::CreateComputeSystem), else runs until its sandbox is stopped.
 */
export const runhcsShimProgram: SimProgram = async (context) => {
  const id = context.argv[context.argv.indexOf('-id') + 1] ?? '';
  if (!context.machine.features.isInstalled(containersFeature)) {
    context.stderr(`hcs::CreateComputeSystem ${id}: ${moduleNotFound}\n`);
    return 1;
  }
  return idleProgram(context);
};

/** The running shim of each pod sandbox on a machine. */
function shims(machine: SimMachine): Map<string, SimProcess> {
  return machine.state('containerd-shims', () => new Map<string, SimProcess>());
}

/** The Windows feature (Server Manager's Get-WindowsFeature name) Hyper-V isolation needs. */
export const hyperVFeature = 'Hyper-V';

/**
 * HCS_E_HYPERV_NOT_INSTALLED (0x80370102, winerror.h): the Host Compute Service's text when a
 * utility VM cannot start, without the Hyper-V role or (on a VM) nested virtualization.
 */
export const hyperVNotInstalled =
  'The virtual machine could not be started because a required feature is not installed.';

/** The CRI runtime handler containerd uses when a pod names none (its Windows default). */
export const defaultRuntimeHandler = 'runhcs-wcow-process';

/**
 * The options of CRI runtime handler `handler` in containerd's config (plugins."io.containerd.
 * grpc.v1.cri".containerd.runtimes.<handler>), or undefined when it is not configured. The
 * default process handler is always there, as in containerd's Windows defaults.
 */
async function runtimeHandlerOptions(
  machine: SimMachine,
  containerd: SimProcess,
  handler: string,
): Promise<Record<string, unknown> | undefined> {
  const configFile = containerdConfigFlag(splitServiceCommandLine(containerd.commandLine).args);
  const text = configFile ? await machine.fs.tryReadFile(configFile) : undefined;
  const toml = text ? (parseToml(text.toString('utf8')) as Record<string, unknown>) : {};
  const runtimes = dig(toml, ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes']);
  const runtime = dig(runtimes, [handler]);
  if (runtime) return dig(runtime, ['options']) ?? {};
  return handler === defaultRuntimeHandler ? {} : undefined;
}

function dig(value: unknown, keys: string[]): Record<string, unknown> | undefined {
  let at = value;
  for (const key of keys) {
    if (!at || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at && typeof at === 'object' ? (at as Record<string, unknown>) : undefined;
}

/** containerd's CRI error when it does not run (its named pipe is missing). */
function containerdNotRunning(): Error {
  return new Error(
    'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: open \\\\\\\\.\\\\pipe\\\\containerd-containerd: The system cannot find the file specified."',
  );
}

/**
 * Starts the shim of pod sandbox `id` (a RunPodSandbox): needs a running containerd, and the
 * shim executable beside it. Resolves with the shim's process once the sandbox runs; rejects
 * with the error the kubelet would report. A sandbox already running is returned as it is.
 */
export async function runPodSandbox(
  machine: SimMachine,
  id: string,
  handler = defaultRuntimeHandler,
): Promise<SimProcess> {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(id)) {
    throw new RangeError(
      `Cannot use "${id}" as a pod sandbox id; use 1 to 128 letters, digits, "_", "." or "-"`,
    );
  }
  const running = shims(machine).get(id);
  if (running?.alive) return running;
  const containerd = machine
    .processes()
    .find((p) => p.alive && p.imageName === containerdImageName);
  if (!containerd) throw containerdNotRunning();
  await checkRuntimeHandler(machine, containerd, id, handler);
  const directory = containerd.binaryPath.slice(
    0,
    containerd.binaryPath.length - windowsBaseName(containerd.binaryPath).length - 1,
  );
  const output: string[] = [];
  let shim: SimProcess;
  try {
    shim = await machine.spawn({
      binaryPath: `${directory}\\${runhcsShimImageName}`,
      args: ['-namespace', 'k8s.io', '-id', id, 'serve'],
      stdout: (text) => output.push(text),
      stderr: (text) => output.push(text),
    });
  } catch (error) {
    throw new Error(
      `failed to create containerd task: failed to start shim: start failed: ${(error as Error).message}: unknown`,
    );
  }
  // A shim that cannot create the compute system exits at once; one that runs stays.
  await new Promise((resolve) => setImmediate(resolve));
  if (!shim.alive) {
    const reason = output.join('').trim() || 'the shim exited';
    throw new Error(
      `failed to create containerd task: failed to create shim task: ${reason}: unknown`,
    );
  }
  shims(machine).set(id, shim);
  shim.exited.then(() => {
    if (shims(machine).get(id) === shim) shims(machine).delete(id);
  });
  return shim;
}

/**
 * containerd's checks of the pod's runtime handler (a RuntimeClass's handler): one its config
 * does not declare fails as containerd's getSandboxRuntime does ("no runtime for %q is
 * configured", wrapped by RunPodSandbox as "failed to get sandbox runtime"); one with
 * SandboxIsolation = 1 (hcsshim's HYPERVISOR) needs a utility VM, which the HCS cannot start
 * without the Hyper-V role.
 */
async function checkRuntimeHandler(
  machine: SimMachine,
  containerd: SimProcess,
  id: string,
  handler: string,
): Promise<void> {
  const options = await runtimeHandlerOptions(machine, containerd, handler);
  if (!options) {
    throw new Error(`failed to get sandbox runtime: no runtime for "${handler}" is configured`);
  }
  // The utility VM needs Hyper-V's hypervisor: the role, and virtualization extensions.
  const hypervisor =
    machine.features.isInstalled(hyperVFeature) && machine.virtualization.extensions;
  if (options.SandboxIsolation === 1 && !hypervisor) {
    throw new Error(
      `failed to create containerd task: failed to create shim task: hcs::CreateComputeSystem ${id}@vm: ${hyperVNotInstalled}: unknown`,
    );
  }
}

/** Stops pod sandbox `id` (its shim exits); a sandbox not running is not an error. */
export async function stopPodSandbox(machine: SimMachine, id: string): Promise<void> {
  const shim = shims(machine).get(id);
  if (!shim) return;
  shim.requestStop('sandbox stopped');
  await shim.exited;
}

/** The ids of the pod sandboxes whose shims run. */
export function podSandboxes(machine: SimMachine): string[] {
  return [...shims(machine)].filter(([, shim]) => shim.alive).map(([id]) => id);
}
