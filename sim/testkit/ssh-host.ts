/**
 * One simulated host with an operator-side SSH session to it, for unit tests of what the
 * operator does over SSH (scripts, file copies); both are stopped when the test ends.
 */

import { RemoteHost } from '../../src/hostaccess/remote-host.ts';
import { SshSession } from '../../src/hostaccess/ssh-session.ts';
import type { SimDomain } from '../hosts/active-directory.ts';
import { type SimulatedHost, startSimulatedHosts } from '../hosts/fleet.ts';
import type { ProgramRegistry } from '../hosts/programs.ts';
import { generateTestKey } from '../hosts/ssh-test-client.ts';

export interface ConnectedSimHost {
  host: SimulatedHost;
  session: SshSession;
  remote: RemoteHost;
}

/** Starts a host at `address` and connects to it as Administrator. */
export async function connectedSimHost(
  t: { after(fn: () => unknown): void },
  options: {
    address: string;
    programs?: () => ProgramRegistry;
    commandTimeoutMs?: number;
    /** The fake domain the host reaches (active-directory.ts); default none. */
    activeDirectory?: SimDomain;
  },
): Promise<ConnectedSimHost> {
  const key = generateTestKey();
  const fleet = await startSimulatedHosts({
    count: 1,
    baseAddress: options.address,
    authorizedKeys: [key.publicKey],
    programs: options.programs,
    ...(options.activeDirectory ? { activeDirectory: options.activeDirectory } : {}),
  });
  t.after(() => fleet.stop());
  const host = fleet.hosts[0]!;
  const session = await SshSession.connect({
    host: host.address,
    port: host.port,
    username: 'Administrator',
    privateKey: key.privateKey,
  });
  t.after(() => session.close());
  return { host, session, remote: new RemoteHost(session, options.commandTimeoutMs ?? 30_000) };
}
