/**
 * The simulated hosts of `npm run bench:upgrade`, in their own process (as bench:join runs
 * them, through sim/hosts/cli.ts), but with the machine timings spelled out here so the bench
 * can print what it ran with. Prints one JSON line per host (SimulatedHostDescription) on
 * stdout, then keeps them up until SIGTERM/SIGINT, stops them and removes their drives.
 *
 *   node bench/upgrade-hosts.ts --count 31 --authorized-key key.pub --base-address 127.0.40.10
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSimulatedHosts } from '../sim/hosts/fleet.ts';
import type { SimMachineTimings } from '../sim/hosts/machine.ts';
import { runUntilSignal } from '../src/process/run-until-signal.ts';

/**
 * The simulated machines' timings, every one given explicitly. They are the simulator's own
 * defaults (sim/hosts/machine.ts, service-control-manager.ts), which bench:join and the lab
 * use too: a reboot is 0.5 s from shutdown.exe to going down plus 1 s down (a real Windows
 * Server reboot takes minutes), services get 2 s to stop at shutdown. The SCM's handshake
 * timeout stays Windows' 30 s (ServicesPipeTimeout): every stand-in program connects to the
 * dispatcher at once, so it only shows in a makespan when a service fails to start.
 */
export const benchHostTimings: Required<SimMachineTimings> = {
  startPendingMs: 20,
  stopTimeoutMs: 20_000,
  serviceStartTimeoutMs: 30_000,
  delayedAutoStartMs: 2_000,
  shutdownTimeoutMs: 2_000,
  rebootDowntimeMs: 1_000,
  rebootDelayMs: 500,
  // Long operations (sim/hosts/long-operations.ts): simulated minutes, 1000 times faster.
  longOperationScale: 1000,
  updateSearchMs: 90_000,
  cumulativeUpdateInstallMs: 20 * 60_000,
  updateInstallMs: 60_000,
  msuExtractMs: 60_000,
  dismAddPackageMs: 15 * 60_000,
  featureInstallMs: 2 * 60_000,
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      count: { type: 'string' },
      'authorized-key': { type: 'string' },
      'base-address': { type: 'string', default: '127.0.40.10' },
    },
    strict: true,
  });
  const count = Number(values.count);
  if (!Number.isInteger(count) || count < 1 || count > 1000) {
    throw new Error(`--count must be a whole number from 1 to 1000, not "${values.count}"`);
  }
  if (!values['authorized-key']) throw new Error('--authorized-key <file.pub> is required');
  const key = readFileSync(values['authorized-key'], 'utf8').trim();
  const fleet = await startSimulatedHosts({
    count,
    // One release: the bench's Deployment runs a ltsc2022 image on every host.
    releases: ['2022'],
    authorizedKeys: [key],
    baseAddress: values['base-address'],
    machine: { timings: benchHostTimings },
  });
  for (const host of fleet.hosts) console.log(JSON.stringify(host.describe()));
  process.stderr.write(`[upgrade-hosts] ${fleet.hosts.length} simulated host(s) up\n`);
  await runUntilSignal(() => fleet.stop());
}

// Only when run as a program (bench/upgrade.ts imports the timings).
if (import.meta.main) {
  main().catch((error: unknown) => {
    process.stderr.write(`[upgrade-hosts] failed: ${(error as Error).message}\n`);
    process.exit(1);
  });
}
