/**
 * The lab's host that joins by itself, beside the SSH ones: `winfleet join-command --pool lab
 * --format aws` (the CLI, with the lab's admin kubeconfig, as the README shows it) prints
 * EC2Launch user data, and a simulated machine boots with it (sim/hosts/userdata-hosts.ts): no
 * SSH server, the agent downloaded from the lab registry and checked, then `winfleet-agent
 * join` — the operator approves its kubelet's CSR and creates its Pull-mode WindowsHost in the
 * pool.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type * as k8s from '@kubernetes/client-node';
import * as kube from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import {
  startUserDataHosts,
  type UserDataHost,
  type UserDataHosts,
} from '../hosts/userdata-hosts.ts';

const cliMain = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/** Where the lab's pull-joined host lives: after the SSH hosts (127.0.0.10 up). */
export const pullHostAddress = '127.0.0.20';

export interface PullJoinedHost {
  hosts: UserDataHosts;
  host: UserDataHost;
  /** Its node name (its hostname lower-cased). */
  nodeName: string;
  /** The join-command line as a person types it. */
  command: string;
  /** The join token's id (never its secret). */
  tokenId: string;
  /** The user data the machine booted with. */
  userDataFile: string;
}

/** Makes the join command for `pool` and boots a machine with it; see the module comment. */
export async function startPullJoinedHost(options: {
  dir: string;
  kubeconfig: string;
  pool: string;
}): Promise<PullJoinedHost> {
  const args = ['join-command', '--pool', options.pool, '--format', 'aws'];
  const { KUBECONFIG: _ignored, ...env } = process.env;
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [cliMain, ...args], {
    env: { ...env, KUBECONFIG: options.kubeconfig },
    timeout: 120_000,
  }).catch((error: { stderr?: string; message: string }) => {
    throw new Error(`winfleet ${args.join(' ')} failed: ${error.stderr?.trim() || error.message}`);
  });
  const tokenId = /join token ([a-z0-9]{6})/.exec(stderr)?.[1];
  if (!tokenId) throw new Error(`winfleet ${args.join(' ')} named no join token: ${stderr}`);
  const userDataFile = join(options.dir, 'user-data.txt');
  await writeFile(userDataFile, stdout, { mode: 0o600 });
  const hosts = await startUserDataHosts({
    count: 1,
    releases: ['2022'],
    baseAddress: pullHostAddress,
    userData: stdout,
    dir: join(options.dir, 'pull-hosts'),
    joinTuning: {
      discoveryBackoff: { initialDelayMs: 500, maxDelayMs: 2000, maxElapsedMs: 120_000 },
      payloadBackoff: { initialDelayMs: 500, maxDelayMs: 5000 },
    },
  });
  const host = hosts.hosts[0]!;
  return {
    hosts,
    host,
    nodeName: host.name.toLowerCase(),
    command: `winfleet ${args.join(' ')} > user-data.txt`,
    tokenId,
    userDataFile,
  };
}

/** Waits for the pull-joined host's Node to be Ready; rejects if its join script fails first. */
export async function waitForPullJoinedNode(
  kc: k8s.KubeConfig,
  pulled: PullJoinedHost,
  timeoutMs = 180_000,
): Promise<void> {
  const core = kc.makeApiClient(kube.CoreV1Api);
  const failed = new AbortController();
  void pulled.host.userData.done.then((result) => {
    if (result.exitCode !== 0)
      failed.abort(
        new Error(`the pull-joined host's user data failed: ${result.output.slice(-2000)}`),
      );
  });
  await waitFor(
    async () => {
      const node = await core.readNode({ name: pulled.nodeName }).catch(() => undefined);
      return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    },
    {
      description: `Node ${pulled.nodeName} (joined by command) Ready`,
      timeoutMs,
      intervalMs: 500,
      signal: failed.signal,
    },
  );
}
