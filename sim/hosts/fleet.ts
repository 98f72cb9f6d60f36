/**
 * Starts simulated Windows hosts for tests and the lab: each one a machine (its drive C: in a
 * temp directory) with an SSH server on its own loopback address (127.0.0.N, counting up from
 * the base address). `startSimulatedHosts` returns a handle per host (what the operator needs
 * to reach it, plus the machine and fault knobs for tests) and a `stop()` that shuts them all
 * down and removes their files.
 *
 * @example
 * const fleet = await startSimulatedHosts({ count: 3, releases: ['2019', '2022', '2022'], authorizedKeys: [publicKey] });
 * // fleet.hosts[0].address, .port, .hostKeyFingerprint; fleet.hosts[0].faults.reboot()
 * await fleet.stop();
 */
import { join } from 'node:path';
import { createOwnedTempDir, removeOwnedTempDir } from '../cluster/owned-temp-dir.ts';
import type { SimDomain } from './active-directory.ts';
import type { HostFaults } from './faults.ts';
import {
  checkLoopbackAddress,
  SimMachine,
  type SimMachineOptions,
  type SimMachineTimings,
  type SimulatedReleaseName,
  simulatedReleases,
} from './machine.ts';
import type { ProgramRegistry } from './programs.ts';
import { SimHostOS } from './sim-host-os.ts';
import { type HostKeyType, SimSshServer } from './ssh-server.ts';

export interface StartSimulatedHostsOptions {
  /** How many hosts. */
  count: number;
  /** Windows Server release per host ("2019", "2022", "2025"), cycled. Default ["2022"]. */
  releases?: readonly string[];
  /** Address of the first host; the others count up. Default 127.0.0.10. */
  baseAddress?: string;
  /** SSH port of every host (each has its own address); 0 (default) picks a free one each. */
  port?: number;
  /** OpenSSH public key lines allowed to log in. */
  authorizedKeys: readonly (string | Buffer)[];
  /** Hostnames (NetBIOS, ≤ 15 characters); default simwin-<last octet(s)>. */
  names?: readonly string[];
  /** Accounts that may log in. Default: Administrator. */
  users?: readonly string[];
  hostKeyType?: HostKeyType;
  /** Directory holding the hosts' drives; a temp dir (removed by stop) by default. */
  dir?: string;
  /** Machine sizing, features (e.g. a stock cloud image's, without Containers) and timings. */
  machine?: Pick<
    SimMachineOptions,
    | 'cpus'
    | 'memoryBytes'
    | 'diskSizeBytes'
    | 'freeDiskBytes'
    | 'ubr'
    | 'windowsUpdates'
    | 'features'
    | 'containerdImages'
    | 'virtualization'
  > & { timings?: SimMachineTimings };
  /** The programs each host runs (default: defaultPrograms()); called once per host. */
  programs?: () => ProgramRegistry;
  /** The fake Active Directory domain every host reaches (active-directory.ts); default none. */
  activeDirectory?: SimDomain;
}

/** One running simulated host. */
export interface SimulatedHost {
  name: string;
  address: string;
  port: number;
  release: SimulatedReleaseName;
  /** major.minor.build, e.g. "10.0.20348". */
  build: string;
  /** SHA256 fingerprint of the host key it presents now (changes with faults.changeHostKey). */
  readonly hostKeyFingerprint: string;
  /** The host key as an OpenSSH public key line. */
  readonly hostPublicKey: string;
  machine: SimMachine;
  faults: HostFaults;
  ssh: SimSshServer;
  /** A HostOS over this machine (for tests that drive it without SSH). */
  hostOS(): SimHostOS;
  /** What the CLI prints for the host. */
  describe(): SimulatedHostDescription;
  stop(): Promise<void>;
}

export interface SimulatedHostDescription {
  name: string;
  address: string;
  port: number;
  release: string;
  build: string;
  hostKeyFingerprint: string;
}

export interface SimulatedHosts {
  hosts: SimulatedHost[];
  /** Where the hosts' drives are. */
  dir: string;
  /** Stops every host and removes the directory (when it was a temp dir). */
  stop(): Promise<void>;
}

const tempPrefix = 'winfleet-simhosts-';
/** The address `offset` after `base` in 127.0.0.0/8. */
export function addressAt(base: string, offset: number): string {
  checkLoopbackAddress(base);
  const value = base.split('.').reduce((n, octet) => n * 256 + Number(octet), 0) + offset;
  if (value > 0x7ffffffe) {
    throw new RangeError(
      `Cannot place ${offset + 1} hosts from ${base}: they would leave 127.0.0.0/8; use a lower base address`,
    );
  }
  const address = [24, 16, 8, 0].map((shift) => (value >>> shift) & 255).join('.');
  checkLoopbackAddress(address);
  return address;
}

/** The default host name for `address`: simwin-<last octet(s)>. */
export function defaultName(address: string): string {
  const [, , third, fourth] = address.split('.');
  return third === '0' ? `simwin-${fourth}` : `simwin-${third}-${fourth}`;
}

/** Starts `count` simulated hosts. */
export async function startSimulatedHosts(
  options: StartSimulatedHostsOptions,
): Promise<SimulatedHosts> {
  if (!Number.isInteger(options.count) || options.count < 1) {
    throw new RangeError(
      `Cannot start ${options.count} simulated hosts; give a count of 1 or more`,
    );
  }
  const releases = options.releases?.length ? options.releases : ['2022'];
  for (const release of releases) {
    if (!(release in simulatedReleases)) {
      throw new RangeError(
        `Cannot simulate Windows Server "${release}"; use one of ${Object.keys(simulatedReleases).join(', ')}`,
      );
    }
  }
  if (options.names && options.names.length < options.count) {
    throw new RangeError(
      `Cannot name ${options.count} hosts with ${options.names.length} names; give one name per host or none`,
    );
  }
  const baseAddress = options.baseAddress ?? '127.0.0.10';
  const addresses = Array.from({ length: options.count }, (_, i) => addressAt(baseAddress, i));
  const names = addresses.map((address, i) => options.names?.[i] ?? defaultName(address));
  const lowerNames = names.map((n) => n.toLowerCase());
  if (new Set(lowerNames).size !== names.length) {
    throw new RangeError(
      `Cannot start hosts with duplicate names (${names.join(', ')}); give distinct names`,
    );
  }
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? (await createOwnedTempDir(tempPrefix));
  const started = await Promise.allSettled(
    addresses.map((address, i) =>
      startHost({
        name: names[i]!,
        address,
        release: releases[i % releases.length]!,
        root: join(dir, names[i]!),
        options,
      }),
    ),
  );
  const hosts = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(hosts.map((h) => h.stop()));
    if (ownDir) await removeOwnedTempDir(dir);
  };
  const failure = started.find((s) => s.status === 'rejected');
  if (failure) {
    await stop();
    throw (failure as PromiseRejectedResult).reason;
  }
  return { hosts, dir, stop };
}

async function startHost(spec: {
  name: string;
  address: string;
  release: string;
  root: string;
  options: StartSimulatedHostsOptions;
}): Promise<SimulatedHost> {
  const { options } = spec;
  const machineOptions: SimMachineOptions = {
    hostname: spec.name,
    release: spec.release,
    address: spec.address,
    rootDir: spec.root,
    ...options.machine,
    ...(options.activeDirectory ? { activeDirectory: options.activeDirectory } : {}),
  };
  if (options.programs) machineOptions.programs = options.programs();
  const machine = await SimMachine.create(machineOptions);
  const ssh = await SimSshServer.start({
    machine,
    port: options.port ?? 0,
    authorizedKeys: options.authorizedKeys,
    ...(options.users ? { users: options.users } : {}),
    ...(options.hostKeyType ? { hostKeyType: options.hostKeyType } : {}),
  }).catch(async (error: unknown) => {
    await machine.powerOff();
    throw error;
  });
  const v = machine.osVersion;
  const build = `${v.major}.${v.minor}.${v.build}`;
  let stopped: Promise<void> | undefined;
  const host: SimulatedHost = {
    name: spec.name,
    address: spec.address,
    port: ssh.port,
    release: machine.release,
    build,
    get hostKeyFingerprint() {
      return ssh.hostKeyFingerprint;
    },
    get hostPublicKey() {
      return ssh.hostPublicKey;
    },
    machine,
    faults: ssh.faults,
    ssh,
    hostOS: () => new SimHostOS(machine),
    describe: () => ({
      name: spec.name,
      address: spec.address,
      port: ssh.port,
      release: machine.release,
      build,
      hostKeyFingerprint: ssh.hostKeyFingerprint,
    }),
    stop: () => {
      stopped ??= (async () => {
        await ssh.stop();
        await machine.powerOff();
      })();
      return stopped;
    },
  };
  return host;
}
