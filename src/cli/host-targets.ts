/**
 * The hosts a host-side command (check, diagnose) reaches over SSH: existing WindowsHosts,
 * through the same Secret, address and pinned host key the operator uses; or addresses given
 * with --host, for hosts not yet in the cluster (or when the cluster side is down), with a key
 * file and, optionally, the host key fingerprint to insist on.
 */
import { readFile } from 'node:fs/promises';
import type * as k8s from '@kubernetes/client-node';
import { type Command, InvalidArgumentError } from 'commander';
import { isPullHost, trustHostKeyAnnotation, type WindowsHost } from '../api/windows-host.ts';
import { defaultConfig } from '../config/winfleet-config.ts';
import { openRemoteHost } from '../hostaccess/host-session.ts';
import { RemoteHost } from '../hostaccess/remote-host.ts';
import { SshSession } from '../hostaccess/ssh-session.ts';
import { cliExit, ExitCode } from './exit-codes.ts';
import { fingerprintPattern } from './fleet/host-key.ts';
import { isHostAddress } from './fleet/host-spec.ts';

/** One host to reach; `open` connects (and the caller closes `session`). */
export interface HostTarget {
  /** The WindowsHost's namespace/name, or the address given with --host. */
  name: string;
  /** host:port. */
  address: string;
  /** The WindowsHost, when the target is one. */
  windowsHost?: WindowsHost;
  /** The host key fingerprint the connection insists on, and where it comes from; none: any key. */
  pin?: { fingerprint: string; source: string };
  open(): Promise<RemoteHost>;
}

export interface HostFlags {
  host?: string[];
  sshKey?: string;
  /** --ssh-user; undefined when not given (then Administrator). */
  sshUser?: string;
  hostKey?: string;
}

export const defaultSshUser = 'Administrator';

/** `address[:port]` as --host takes it: the address as spec.address takes it (the CRD's pattern). */
export function parseHostAddress(value: string): { host: string; port: number } {
  const match = /^([^:]+)(?::([1-9]\d{0,4}))?$/.exec(value);
  const port = match?.[2] === undefined ? 22 : Number(match[2]);
  if (!match || !isHostAddress(match[1]!) || port > 65535)
    throw new InvalidArgumentError(
      `"${value}" is not ADDRESS[:PORT] (an IPv4 address or DNS name, port 1-65535), e.g. 10.0.0.5 or win1.example.com:2222`,
    );
  return { host: match[1]!, port };
}

const collectHost = (value: string, previous: string[] = []) => {
  parseHostAddress(value);
  return [...previous, value];
};

function fingerprint(value: string): string {
  if (!fingerprintPattern.test(value))
    throw new InvalidArgumentError(
      `"${value}" is not an OpenSSH SHA-256 fingerprint (SHA256: and 43 base64 characters, as ssh-keygen -lf prints)`,
    );
  return value;
}

/** Adds --host, --ssh-key, --ssh-user and --host-key. */
export function withHostFlags(command: Command): Command {
  return command
    .option(
      '--host <address[:port]>',
      'a host to reach over SSH by address (repeatable); needs --ssh-key',
      collectHost,
    )
    .option('--ssh-key <file>', 'private key file for --host')
    .option('--ssh-user <name>', `account to log in as on --host (default: ${defaultSshUser})`)
    .option(
      '--host-key <fingerprint>',
      "the --host's SSH host key fingerprint to insist on (SHA256:…, one --host only); without it the key is reported, not checked",
      fingerprint,
    );
}

const connectTimeoutMs = 15_000;
const commandTimeoutMs = 120_000;

/**
 * Refuses --ssh-key, --ssh-user and --host-key without --host (they are for --host only:
 * WindowsHosts are reached with their own Secret, account and pinned key), and --host-key
 * with more than one --host (one fingerprint cannot be every host's key).
 * @package
 */
export function checkHostFlags(flags: HostFlags): void {
  const given = [
    flags.sshKey !== undefined ? '--ssh-key' : '',
    flags.sshUser !== undefined ? '--ssh-user' : '',
    flags.hostKey !== undefined ? '--host-key' : '',
  ].filter(Boolean);
  if (!flags.host?.length && given.length > 0)
    throw cliExit(
      ExitCode.usage,
      `${given.join(', ')}: only with --host ADDRESS (WindowsHosts are reached with their own key Secret, username and pinned host key); add --host or drop ${given.length > 1 ? 'them' : 'it'}`,
    );
  if (flags.hostKey !== undefined && (flags.host?.length ?? 0) > 1)
    throw cliExit(
      ExitCode.usage,
      `--host-key: one fingerprint for ${flags.host!.length} hosts (${flags.host!.join(', ')}); each host has its own key: run once per --host with its --host-key, or drop --host-key`,
    );
}

/**
 * The --host targets (none without --host) and the private key read from --ssh-key, after
 * checkHostFlags; refuses --host without --ssh-key, and a key file that cannot be read.
 */
export async function addressTargets(
  flags: HostFlags,
): Promise<{ targets: HostTarget[]; privateKey?: string }> {
  checkHostFlags(flags);
  if (!flags.host?.length) return { targets: [] };
  if (!flags.sshKey)
    throw cliExit(
      ExitCode.usage,
      '--host needs --ssh-key <file>: the private key of an administrator account on the host',
    );
  let privateKey: string;
  try {
    privateKey = await readFile(flags.sshKey, 'utf8');
  } catch (error) {
    throw cliExit(
      ExitCode.usage,
      `--ssh-key: cannot read ${flags.sshKey}: ${(error as Error).message}; give the private key file`,
    );
  }
  const username = flags.sshUser ?? defaultSshUser;
  const pin = flags.hostKey ? { fingerprint: flags.hostKey, source: '--host-key' } : undefined;
  const targets = flags.host.map((value): HostTarget => {
    const { host, port } = parseHostAddress(value);
    return {
      name: value,
      address: `${host}:${port}`,
      ...(pin ? { pin } : {}),
      open: async () => {
        const session = await SshSession.connect({
          host,
          port,
          username,
          privateKey,
          pinnedFingerprint: flags.hostKey,
          connectTimeoutMs,
        });
        return new RemoteHost(session, commandTimeoutMs);
      },
    };
  });
  return { targets, privateKey };
}

/** The fingerprint openHostSession insists on for a WindowsHost, and where it comes from. */
function windowsHostPin(host: WindowsHost): HostTarget['pin'] {
  if (host.spec.hostKey)
    return { fingerprint: host.spec.hostKey, source: 'spec.hostKey, the key an admin pinned' };
  const trusted = host.metadata.annotations?.[trustHostKeyAnnotation];
  if (trusted) return { fingerprint: trusted, source: `its ${trustHostKeyAnnotation} annotation` };
  const pinned = host.status?.hostKeyFingerprint;
  return pinned
    ? { fingerprint: pinned, source: 'the key the operator pinned in status.hostKeyFingerprint' }
    : undefined;
}

/**
 * Why a Pull-mode WindowsHost is not visited: winfleet never connects to such a host (it joined
 * by itself and may run no SSH server), and neither do its commands.
 */
export function pullHostNote(host: WindowsHost): string {
  return `WindowsHost ${host.metadata.namespace}/${host.metadata.name} is in Pull mode: not reached over SSH (winfleet never connects to a host that joined by itself); its Node (kubectl describe node ${host.spec.nodeName}) and, on the machine, C:\\k\\winfleet\\join-status.json and C:\\k\\winfleet\\logs tell its state`;
}

/**
 * Targets for WindowsHosts, connecting as the operator does; Pull-mode hosts are left out
 * (pullHostNote says why).
 */
export function windowsHostTargets(kc: k8s.KubeConfig, hosts: WindowsHost[]): HostTarget[] {
  const config = defaultConfig();
  return hosts
    .filter((host) => !isPullHost(host))
    .map((host) => {
      const pin = windowsHostPin(host);
      return {
        name: `${host.metadata.namespace}/${host.metadata.name}`,
        address: `${host.spec.address}:${host.spec.port ?? 22}`,
        windowsHost: host,
        ...(pin ? { pin } : {}),
        open: () => openRemoteHost(kc, config, host),
      };
    });
}
