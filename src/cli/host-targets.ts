/**
 * The hosts a host-side command (check, diagnose) reaches over SSH: existing WindowsHosts,
 * through the same Secret, address and pinned host key the operator uses; or addresses given
 * with --host, for hosts not yet in the cluster (or when the cluster side is down), with a key
 * file and, optionally, the host key fingerprint to insist on.
 */
import { readFile } from 'node:fs/promises';
import type * as k8s from '@kubernetes/client-node';
import { type Command, InvalidArgumentError } from 'commander';
import type { WindowsHost } from '../api/windows-host.ts';
import { defaultConfig } from '../config/winfleet-config.ts';
import { openRemoteHost } from '../hostaccess/host-session.ts';
import { RemoteHost } from '../hostaccess/remote-host.ts';
import { SshSession } from '../hostaccess/ssh-session.ts';
import { CliExit, ExitCode } from './exit-codes.ts';

/** One host to reach; `open` connects (and the caller closes `session`). */
export interface HostTarget {
  /** The WindowsHost's namespace/name, or the address given with --host. */
  name: string;
  /** host:port. */
  address: string;
  /** The WindowsHost, when the target is one. */
  windowsHost?: WindowsHost;
  open(): Promise<RemoteHost>;
}

export interface HostFlags {
  host?: string[];
  sshKey?: string;
  sshUser: string;
  hostKey?: string;
}

const dnsName =
  /^(?=.{1,253}$)[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$/;
const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** `address[:port]` as --host takes it. */
export function parseHostAddress(value: string): { host: string; port: number } {
  const match = /^([^:]+)(?::(\d{1,5}))?$/.exec(value);
  const port = match?.[2] === undefined ? 22 : Number(match[2]);
  if (!match || !(ipv4.test(match[1]!) || dnsName.test(match[1]!)) || port < 1 || port > 65535)
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
  if (!/^SHA256:[A-Za-z0-9+/]{43}$/.test(value))
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
    .option('--ssh-user <name>', 'account to log in as on --host', 'Administrator')
    .option(
      '--host-key <fingerprint>',
      "the --host's SSH host key fingerprint to insist on (SHA256:…); without it the key is reported, not checked",
      fingerprint,
    );
}

const connectTimeoutMs = 15_000;
const commandTimeoutMs = 120_000;

/** The --host targets, or none; refuses --host without --ssh-key. */
export async function addressTargets(flags: HostFlags): Promise<HostTarget[]> {
  if (!flags.host?.length) return [];
  if (!flags.sshKey)
    throw new CliExit(
      ExitCode.usage,
      '--host needs --ssh-key <file>: the private key of an administrator account on the host',
    );
  let privateKey: string;
  try {
    privateKey = await readFile(flags.sshKey, 'utf8');
  } catch (error) {
    throw new CliExit(
      ExitCode.usage,
      `--ssh-key: cannot read ${flags.sshKey}: ${(error as Error).message}`,
    );
  }
  return flags.host.map((value) => {
    const { host, port } = parseHostAddress(value);
    return {
      name: value,
      address: `${host}:${port}`,
      open: async () => {
        const session = await SshSession.connect({
          host,
          port,
          username: flags.sshUser,
          privateKey,
          pinnedFingerprint: flags.hostKey,
          connectTimeoutMs,
        });
        return new RemoteHost(session, commandTimeoutMs);
      },
    };
  });
}

/** Targets for WindowsHosts, connecting as the operator does. */
export function windowsHostTargets(kc: k8s.KubeConfig, hosts: WindowsHost[]): HostTarget[] {
  const config = defaultConfig();
  return hosts.map((host) => ({
    name: `${host.metadata.namespace}/${host.metadata.name}`,
    address: `${host.spec.address}:${host.spec.port ?? 22}`,
    windowsHost: host,
    open: () => openRemoteHost(kc, config, host),
  }));
}
