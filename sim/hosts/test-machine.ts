/**
 * Test support: a simulated machine in a temp directory (removed after the test) with short
 * SCM timings (not the service start timeout: that is Windows' 30 s unless a test that
 * exercises it shortens it), and small programs whose behaviour a test controls.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceConfig } from '../../src/agent/host-os.ts';
import { SimMachine, type SimMachineOptions } from './machine.ts';
import { defaultPrograms, idleProgram } from './programs.ts';
import { runRemoteCommand } from './remote-commands.ts';
import type { SimProgram } from './sim-process.ts';
import { standInBinary } from './stand-in-binary.ts';

/** A machine with fast timings; `configure` may register programs first. */
export async function createTestMachine(
  t: { after(fn: () => Promise<void>): void },
  options: Partial<SimMachineOptions> = {},
): Promise<SimMachine> {
  const rootDir = await mkdtemp(join(tmpdir(), 'simhost-machine-test-'));
  const machine = await SimMachine.create({
    hostname: 'SIMTEST',
    release: '2022',
    address: '127.0.0.200',
    rootDir,
    programs: defaultPrograms(),
    ...options,
    timings: {
      startPendingMs: 5,
      stopTimeoutMs: 500,
      // serviceStartTimeoutMs stays Windows' 30 s: a test that exercises 1053 shortens it.
      delayedAutoStartMs: 300,
      shutdownTimeoutMs: 300,
      rebootDowntimeMs: 100,
      rebootDelayMs: 50,
      ...options.timings,
    },
  });
  t.after(async () => {
    await machine.powerOff();
    await rm(rootDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });
  return machine;
}

/** A service definition with defaults a test overrides. */
export function serviceConfig(name: string, overrides: Partial<ServiceConfig> = {}): ServiceConfig {
  return {
    name,
    displayName: name,
    binaryPath: `C:\\k\\${name}.exe`,
    args: [],
    dependencies: [],
    startType: 'demand',
    recovery: { restartDelaysMs: [], resetPeriodSeconds: 86400 },
    ...overrides,
  };
}

/** Writes a stand-in executable for `name` (C:\k\<name>.exe by default). */
export async function installBinary(
  machine: SimMachine,
  name: string,
  path = `C:\\k\\${name}.exe`,
): Promise<void> {
  await machine.fs.writeFileAtomic(path, standInBinary(name, 'v1.0.0'));
}

/** A program that records its starts and exits with `code` after `ms` (or idles). */
export function recordingProgram(
  starts: number[],
  behaviour: { exitAfterMs?: number; code?: number } = {},
): SimProgram {
  return async (context) => {
    starts.push(Date.now());
    if (behaviour.exitAfterMs === undefined) return idleProgram(context);
    await new Promise((resolve) => setTimeout(resolve, behaviour.exitAfterMs));
    return behaviour.code ?? 0;
  };
}

/** Runs an SSH exec command line on the machine; its exit code and output. */
export async function runOnHost(machine: SimMachine, line: string, stdin = '') {
  let stdout = '';
  let stderr = '';
  const code = await runRemoteCommand(machine, line, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    signal: new AbortController().signal,
    // As an SSH client sends a string: UTF-8 bytes.
    stdin: async () => Buffer.from(stdin, 'utf8'),
  });
  return { code, stdout, stderr };
}
