/**
 * Starts simulated Windows hosts from the command line and keeps them up until Ctrl-C
 * (SIGINT) or SIGTERM, then stops them and removes their files. Prints one JSON line per host
 * (name, address, port, release, build, hostKeyFingerprint) on stdout; progress goes to stderr.
 *
 *   node sim/hosts/cli.ts --count 3 --releases 2019,2022,2022 \
 *     --authorized-key ~/.ssh/id_ed25519.pub --base-address 127.0.0.10 --port 0
 *
 * With `--userdata FILE` the hosts instead boot with that user data (the join script
 * `winfleet join-command` prints, any format), run it once as EC2Launch v2 would, and run no
 * SSH server (userdata-hosts.ts); the script's output goes to stderr as it runs.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { runUntilSignal } from '../../src/process/run-until-signal.ts';
import { startSimulatedHosts } from './fleet.ts';
import { startUserDataHosts } from './userdata-hosts.ts';

function integer(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    }
    return n;
  };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

async function main(): Promise<void> {
  const program = new Command('simhosts')
    .description('Start simulated Windows hosts (SSH on loopback) until Ctrl-C')
    .option('--count <n>', 'how many hosts', integer('--count', 1, 1000), 1)
    .option(
      '--releases <list>',
      'Windows Server release per host, cycled (2019, 2022, 2025)',
      '2022',
    )
    .option(
      '--authorized-key <file.pub>',
      'OpenSSH public key allowed to log in (repeatable; required without --userdata)',
      collect,
      [] as string[],
    )
    .option(
      '--userdata <file>',
      'boot the hosts with this user data (a winfleet join script) and no SSH server',
    )
    .option('--base-address <ipv4>', 'address of the first host (127.0.0.0/8)', '127.0.0.10')
    .option(
      '--port <port>',
      'SSH port of every host; 0 picks a free one each',
      integer('--port', 0, 65535),
      0,
    )
    .option(
      '--user <name>',
      'account that may log in (repeatable; default Administrator)',
      collect,
      [] as string[],
    )
    .option('--host-key-type <type>', 'ed25519 or rsa', 'ed25519')
    .parse();
  const options = program.opts<{
    count: number;
    releases: string;
    authorizedKey: string[];
    baseAddress: string;
    port: number;
    user: string[];
    hostKeyType: string;
    userdata?: string;
  }>();
  const releases = options.releases
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  if (options.userdata !== undefined) {
    let userData: string;
    try {
      userData = readFileSync(options.userdata, 'utf8');
    } catch (error) {
      throw new Error(`Cannot read --userdata ${options.userdata}: ${(error as Error).message}`);
    }
    const fleet = await startUserDataHosts({
      count: options.count,
      releases,
      baseAddress: options.baseAddress,
      userData,
    });
    for (const host of fleet.hosts) {
      console.log(JSON.stringify(host.describe()));
      void host.userData.done.then((result) =>
        process.stderr.write(
          `[simhosts] ${host.name}: user data ended with exit code ${result.exitCode}\n${result.output}`,
        ),
      );
    }
    process.stderr.write(
      `[simhosts] ${fleet.hosts.length} simulated Windows host(s) booting with user data (no SSH), drives in ${fleet.dir}; Ctrl-C stops them\n`,
    );
    await runUntilSignal(() => fleet.stop());
    return;
  }
  if (options.authorizedKey.length === 0) {
    throw new Error('--authorized-key is required (or give --userdata for hosts without SSH)');
  }
  if (options.hostKeyType !== 'ed25519' && options.hostKeyType !== 'rsa') {
    throw new Error(`--host-key-type must be ed25519 or rsa, not "${options.hostKeyType}"`);
  }
  const authorizedKeys = options.authorizedKey.map((file) => {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new Error(`Cannot read --authorized-key ${file}: ${(error as Error).message}`);
    }
  });
  const fleet = await startSimulatedHosts({
    count: options.count,
    releases,
    authorizedKeys,
    baseAddress: options.baseAddress,
    port: options.port,
    ...(options.user.length > 0 ? { users: options.user } : {}),
    hostKeyType: options.hostKeyType,
  });
  for (const host of fleet.hosts) console.log(JSON.stringify(host.describe()));
  process.stderr.write(
    `[simhosts] ${fleet.hosts.length} simulated Windows host(s) up, drives in ${fleet.dir}; Ctrl-C stops them\n`,
  );
  await runUntilSignal(() => fleet.stop());
}

main().catch((error: unknown) => {
  process.stderr.write(`[simhosts] failed: ${(error as Error).message}\n`);
  process.exit(1);
});
