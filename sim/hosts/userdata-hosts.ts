/**
 * Simulated hosts that join on their own: each machine boots with user data (the join script
 * `winfleet join-command` prints) and runs no SSH server at all, so SSH to it is refused the
 * whole time, as on a fleet without OpenSSH Server. Addresses and names are given as the SSH
 * fleet's (fleet.ts).
 *
 * With `countSshAttempts`, port 22 of each host's address counts the connections made to it and
 * resets each at once (no SSH server ever answers): how a test proves nothing tried to reach a
 * Pull-mode host over SSH. Faults that need no SSH server (a crashing service, a reboot) are
 * the SSH fleet's (faults.ts).
 */
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { JoinTuning } from '../../src/agent/agent-context.ts';
import { createOwnedTempDir, removeOwnedTempDir } from '../cluster/owned-temp-dir.ts';
import { HostFaults } from './faults.ts';
import { addressAt, defaultName, type StartSimulatedHostsOptions } from './fleet.ts';
import type { SimInstanceMetadata } from './instance-metadata.ts';
import { SimMachine, type SimulatedReleaseName } from './machine.ts';
import { SimHostOS } from './sim-host-os.ts';
import type { UserDataRun } from './userdata.ts';

export interface StartUserDataHostsOptions
  extends Pick<
    StartSimulatedHostsOptions,
    'count' | 'releases' | 'baseAddress' | 'names' | 'dir' | 'machine' | 'programs'
  > {
  /** The user data every host boots with. */
  userData: string;
  /** Shorter waits for the agent's join (tests). */
  joinTuning?: JoinTuning;
  /** Count (and reset) every connection to port 22 of each host (sshAttempts). */
  countSshAttempts?: boolean;
  /** Each host's instance metadata service (host index → IMDS), as on EC2. */
  instanceMetadata?: (index: number, address: string) => SimInstanceMetadata | undefined;
}

/** One running host that joins from its user data. */
export interface UserDataHost {
  name: string;
  address: string;
  release: SimulatedReleaseName;
  build: string;
  machine: SimMachine;
  /** Its user data's run: `done` resolves with the script's exit code and output. */
  userData: UserDataRun;
  /** Faults of the machine (faults.ts); those of an SSH server do nothing here. */
  faults: HostFaults;
  /** Connections made to port 22 so far (with countSshAttempts; else always 0). */
  sshAttempts(): number;
  hostOS(): SimHostOS;
  describe(): { name: string; address: string; release: string; build: string; ssh: false };
  stop(): Promise<void>;
}

export interface UserDataHosts {
  hosts: UserDataHost[];
  dir: string;
  stop(): Promise<void>;
}

/** Starts `count` hosts that boot with `userData` and run no SSH server. */
export async function startUserDataHosts(
  options: StartUserDataHostsOptions,
): Promise<UserDataHosts> {
  if (!Number.isInteger(options.count) || options.count < 1) {
    throw new RangeError(`Cannot start ${options.count} hosts; give a count of 1 or more`);
  }
  const releases = options.releases?.length ? options.releases : ['2022'];
  const base = options.baseAddress ?? '127.0.0.10';
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? (await createOwnedTempDir('winfleet-userdata-hosts-'));
  const hosts: UserDataHost[] = [];
  try {
    for (let i = 0; i < options.count; i++) {
      const address = addressAt(base, i);
      const name = options.names?.[i] ?? defaultName(address);
      const imds = options.instanceMetadata?.(i, address);
      const machine = await SimMachine.create({
        hostname: name,
        release: releases[i % releases.length]!,
        address,
        rootDir: join(dir, name),
        ...options.machine,
        ...(options.programs ? { programs: options.programs() } : {}),
        userData: options.userData,
        ...(options.joinTuning ? { joinTuning: options.joinTuning } : {}),
        ...(imds ? { instanceMetadata: imds } : {}),
      });
      const v = machine.osVersion;
      const build = `${v.major}.${v.minor}.${v.build}`;
      const probe = options.countSshAttempts ? await sshProbe(address) : undefined;
      const faults = new HostFaults({
        machine,
        dropConnections: () => {},
        changeHostKey: () => {
          throw new RangeError(`${name} runs no SSH server: it has no host key to change`);
        },
        updateListening: async () => {},
      });
      hosts.push({
        name,
        address,
        release: machine.release,
        build,
        machine,
        userData: machine.userData!,
        faults,
        sshAttempts: () => probe?.attempts ?? 0,
        hostOS: () => new SimHostOS(machine),
        describe: () => ({ name, address, release: machine.release, build, ssh: false }),
        stop: async () => {
          faults.clear();
          await machine.powerOff();
          await probe?.close();
        },
      });
    }
  } catch (error) {
    await Promise.all(hosts.map((h) => h.stop()));
    if (ownDir) await removeOwnedTempDir(dir);
    throw error;
  }
  return {
    hosts,
    dir,
    stop: async () => {
      await Promise.all(hosts.map((h) => h.stop()));
      if (ownDir) await removeOwnedTempDir(dir);
    },
  };
}

/** Port 22 of `address`: each connection counted and reset at once. */
async function sshProbe(address: string): Promise<{ attempts: number; close(): Promise<void> }> {
  const probe = { attempts: 0, close: async () => {} };
  const server: Server = createServer((socket) => {
    probe.attempts++;
    socket.resetAndDestroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(22, address, () => resolve());
  });
  probe.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return probe;
}
