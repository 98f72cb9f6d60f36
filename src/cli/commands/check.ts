/**
 * winfleet check: preflight. Cluster-side checks through the kubeconfig, and host-side checks
 * over SSH for each --host (or, without --host, for the WindowsHosts of the namespace). Each
 * check says pass, warn or fail, what it saw and the fix; -o json|yaml prints the same data.
 * Exit 0 when nothing failed, 1 when a check failed, 3 when the cluster could not be reached
 * (the --host checks still run, with the clock compared to this machine's).
 */
import * as k8s from '@kubernetes/client-node';
import { type Command, Option } from 'commander';
import { Listr } from 'listr2';
import { type ConfiguredNetworkMode, networkModes } from '../../api/network-mode.ts';
import { defaultOperatorNamespace } from '../../api/operator-namespace.ts';
import { ConditionType } from '../../api/reasons.ts';
import { isPullHost, type WindowsHost } from '../../api/windows-host.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import { isNotFound, isUnauthorized } from '../../kube/client.ts';
import { loadPayload } from '../../payload/payload.ts';
import {
  type CheckReport,
  type CheckResult,
  exitCodeFor,
  fail,
  formatReport,
  type HostReport,
  summarize,
} from '../check/check-report.ts';
import {
  type ClusterCheckOptions,
  type ClusterState,
  clusterChecks,
  runClusterCheck,
} from '../check/cluster-checks.ts';
import {
  type ClockReading,
  type ClusterNetwork,
  hostChecks,
  hostKeyCheck,
} from '../check/host-checks.ts';
import { kubeRequest } from '../check/kube-request.ts';
import { networkWithoutCluster } from '../check/network-check.ts';
import { readHostBasics, readHyperVFacts, readPreflightFacts } from '../check/preflight-facts.ts';
import { cliExit, ExitCode, unreachableReason } from '../exit-codes.ts';
import {
  addressTargets,
  type HostFlags,
  type HostTarget,
  pullHostNote,
  windowsHostTargets,
  withHostFlags,
} from '../host-targets.ts';
import {
  type KubeFlags,
  kubeConfigFrom,
  namespaceFrom,
  namespaceName,
  withKubeFlags,
} from '../kube-flags.ts';
import { formatData, outputOption } from '../output.ts';

interface CheckFlags extends KubeFlags, HostFlags {
  output: 'table' | 'json' | 'yaml';
  skipCluster?: boolean;
  skipHosts?: boolean;
  domainJoin?: boolean;
  hyperv?: boolean;
  payload?: string;
  probeNamespace: string;
  operatorNamespace: string;
  networkMode?: ConfiguredNetworkMode;
}

/** Hosts checked at once. */
const hostConcurrency = 4;

export function registerCheck(program: Command): void {
  const command = program
    .command('check')
    .description(
      'preflight: check the cluster and Windows hosts (--host, or the WindowsHosts of the namespace) before joining',
    )
    .addOption(outputOption(['table', 'json', 'yaml']))
    .option(
      '--skip-cluster',
      'only the host-side checks (needs --host); the clock is compared to this machine',
    )
    .option('--skip-hosts', 'only the cluster-side checks')
    .option(
      '--domain-join',
      'the hosts will be joined to an Active Directory domain (their hostnames must fit 15 characters)',
    )
    .option(
      '--hyperv',
      'the hosts will be in a pool with spec.isolation.hyperV: check the Hyper-V role and, on VMs, nested virtualization',
    )
    .option(
      '--payload <dir>',
      'a payload directory: check its kubelet (payload.json) against the skew policy',
    )
    .option(
      '--probe-namespace <name>',
      'namespace the webhook probe pod is dry-run created in (nothing is stored)',
      namespaceName,
      'default',
    )
    .option(
      '--operator-namespace <name>',
      "the operator's namespace: the network configuration is read from its ConfigMap winfleet-config",
      namespaceName,
      defaultOperatorNamespace,
    )
    .addOption(
      new Option(
        '--network-mode <mode>',
        "check the cluster against this network.mode instead of the operator's (with --skip-cluster: judge patch levels by it)",
      ).choices(['auto', ...networkModes]),
    );
  withKubeFlags(command);
  withHostFlags(command);
  command.action(async (flags: CheckFlags) => {
    const report = await runCheck(flags);
    process.stdout.write(
      flags.output === 'table' ? formatReport(report) : formatData(flags.output, report),
    );
    process.exitCode = exitCodeFor(report);
  });
}

/** Progress: listr2 on a terminal (and only for the table), else plain lines on stderr. */
interface Step {
  title: string;
  run(): Promise<string>;
}

async function runSteps(
  steps: Step[],
  concurrent: boolean | number,
  fancy: boolean,
): Promise<void> {
  if (fancy) {
    await new Listr(
      steps.map((step) => ({
        title: step.title,
        task: async (_ctx: unknown, task: { title: string }) => {
          task.title = `${step.title}: ${await step.run()}`;
        },
      })),
      { concurrent, exitOnError: false, rendererOptions: { collapseErrors: false } },
    ).run();
    return;
  }
  const limit = concurrent === true ? steps.length : concurrent === false ? 1 : concurrent;
  const queue = [...steps];
  await Promise.all(
    Array.from({ length: Math.min(limit, queue.length) }, async () => {
      for (let step = queue.shift(); step; step = queue.shift()) {
        const outcome = await step.run();
        process.stderr.write(`winfleet check: ${step.title}: ${outcome}\n`);
      }
    }),
  );
}

/** Why the cluster could not be asked anything (unreachable, or the credentials refused). */
function unreachable(error: unknown, server: string): string | undefined {
  if (isUnauthorized(error))
    return `the API server ${server} refused the kubeconfig credentials (401); pass --kubeconfig or --context with credentials for this cluster`;
  return unreachableReason(error, server);
}

/** The API server's clock against this machine's, from its Date header. */
async function apiServerClock(
  kc: k8s.KubeConfig,
): Promise<{ offsetMs: number; uncertaintyMs: number } | undefined> {
  const before = Date.now();
  const response = await kubeRequest(kc, 'GET', '/version', { timeoutMs: 10_000 }).catch(
    () => undefined,
  );
  const after = Date.now();
  const date = Date.parse(response?.date ?? '');
  if (Number.isNaN(date)) return undefined;
  // Date has whole seconds: the server's time was in [date, date + 1 s).
  return { offsetMs: date + 500 - (before + after) / 2, uncertaintyMs: 500 + (after - before) / 2 };
}

/** Flag combinations that leave nothing to check, or flags that would not be used. */
function checkFlagCombinations(flags: CheckFlags): void {
  if (flags.skipCluster && flags.skipHosts)
    throw cliExit(
      ExitCode.usage,
      '--skip-cluster and --skip-hosts leave nothing to check; drop one',
    );
  if (flags.skipCluster && !flags.host?.length)
    throw cliExit(
      ExitCode.usage,
      '--skip-cluster needs --host ADDRESS (without the cluster there are no WindowsHosts to find)',
    );
  if (flags.skipHosts && (flags.host?.length || flags.sshKey || flags.hostKey || flags.sshUser))
    throw cliExit(
      ExitCode.usage,
      '--skip-hosts: the --host, --ssh-key, --ssh-user and --host-key flags would not be used; drop them or --skip-hosts',
    );
  if (flags.skipCluster && flags.payload)
    throw cliExit(
      ExitCode.usage,
      "--payload: the payload's kubelet is checked against the cluster, which --skip-cluster skips; drop one",
    );
}

/** --payload's kubelet version, read before the first API call (a usage error otherwise). */
async function payloadToCheck(flags: CheckFlags): Promise<ClusterCheckOptions['payload']> {
  if (!flags.payload) return undefined;
  try {
    const loaded = await loadPayload(flags.payload, '--payload');
    return {
      kubernetesVersion: loaded.kubernetesVersion,
      source: `--payload ${flags.payload} kubernetesVersion`,
    };
  } catch (error) {
    throw cliExit(ExitCode.usage, `--payload ${flags.payload}: ${(error as Error).message}`);
  }
}

/** What the cluster side found, for the host checks and the report. */
interface ClusterSide {
  /** Undefined when the cluster was skipped or could not be reached. */
  kc?: k8s.KubeConfig;
  cluster: CheckReport['cluster'];
  clusterUnreachable: boolean;
  clock?: { offsetMs: number; uncertaintyMs: number };
  network: ClusterNetwork;
}

/** The API server's version, or a WF_CLUSTER_UNREACHABLE error after 15 s without an answer. */
async function firstRequest(kc: k8s.KubeConfig): Promise<void> {
  await Promise.race([
    kc.makeApiClient(k8s.VersionApi).getCode(),
    new Promise((_, reject) =>
      setTimeout(
        () =>
          reject(
            new WinfleetError('WF_CLUSTER_UNREACHABLE', 'no answer in 15 s', {
              cause: { code: 'ETIMEDOUT', message: 'no answer in 15 s' },
            }),
          ),
        15_000,
      ).unref(),
    ),
  ]);
}

/** Runs the cluster checks, when the cluster answers; says so in `notes` when it does not. */
async function checkClusterSide(
  flags: CheckFlags,
  payload: ClusterCheckOptions['payload'],
  hostsAddressed: boolean,
  notes: string[],
  fancy: boolean,
): Promise<ClusterSide> {
  const kc = kubeConfigFrom(flags);
  const server = kc.getCurrentCluster()!.server;
  const state: ClusterState = {
    options: {
      probeNamespace: flags.probeNamespace,
      operatorNamespace: flags.operatorNamespace,
      ...(flags.networkMode ? { networkMode: flags.networkMode } : {}),
      ...(payload ? { payload } : {}),
    } satisfies ClusterCheckOptions,
  };
  // The first request proves the cluster answers; nothing else is asked if it does not.
  try {
    await firstRequest(kc);
  } catch (error) {
    const why = unreachable(error, server);
    if (!why) throw error;
    notes.push(
      `${why}. The cluster-side checks did not run${hostsAddressed ? '; the --host checks ran, their clocks compared to this machine' : ''}`,
    );
    return {
      cluster: null,
      clusterUnreachable: true,
      network: networkWithoutCluster(
        flags.networkMode,
        'the cluster could not be reached to read its CNI',
      ),
    };
  }
  const results: CheckResult[] = [];
  await runSteps(
    clusterChecks.map((check, index) => ({
      title: `cluster: ${check.title}`,
      run: async () => {
        const result = await runClusterCheck(check, kc, state);
        results[index] = result;
        return result.status;
      },
    })),
    false,
    fancy,
  );
  const network =
    state.network ??
    networkWithoutCluster(flags.networkMode, "the cni check could not read the cluster's CNI");
  const clock = await apiServerClock(kc);
  return { kc, cluster: { server, checks: results }, clusterUnreachable: false, clock, network };
}

/** Checks each host over SSH against what the cluster side found. */
async function checkHosts(
  targets: HostTarget[],
  flags: CheckFlags,
  side: ClusterSide,
  fancy: boolean,
): Promise<HostReport[]> {
  const { kc, clock, network } = side;
  const hosts: HostReport[] = [];
  const reference: ClockReading['reference'] = clock ? 'the API server' : 'this machine';
  const apiServerHost = kc ? new URL(kc.getCurrentCluster()!.server).hostname : undefined;
  await runSteps(
    targets.map((target, index) => ({
      title: `host ${target.name}`,
      run: async () => {
        const report = await checkHost(target, {
          domainJoin: flags.domainJoin === true,
          hyperV: flags.hyperv === true,
          clock: clock ?? { offsetMs: 0, uncertaintyMs: 0 },
          reference,
          network,
          ...(apiServerHost ? { apiServerHost } : {}),
        });
        hosts[index] = report;
        const failed = report.checks.filter((c) => c.status === 'fail').length;
        return failed > 0 ? `${failed} failed` : 'ok';
      },
    })),
    hostConcurrency,
    fancy,
  );
  return hosts;
}

/** `winfleet check`: every flag checked first, then the cluster side, then the hosts. */
export async function runCheck(flags: CheckFlags): Promise<CheckReport> {
  const fancy = flags.output === 'table' && process.stdout.isTTY === true;
  const notes: string[] = [];
  checkFlagCombinations(flags);
  // Every flag is checked before the first API call or SSH connection.
  const payload = await payloadToCheck(flags);
  const { targets: addressed } = await addressTargets(flags);
  if (flags.skipCluster)
    notes.push(
      "--skip-cluster: no cluster-side checks; the hosts' clocks are compared to this machine's and their patch levels judged without the cluster's CNI",
    );
  const side: ClusterSide = flags.skipCluster
    ? {
        cluster: null,
        clusterUnreachable: false,
        network: networkWithoutCluster(
          flags.networkMode,
          "--skip-cluster: the cluster's CNI was not read",
        ),
      }
    : await checkClusterSide(flags, payload, addressed.length > 0, notes, fancy);

  let targets: HostTarget[] = addressed;
  if (!flags.skipHosts && !flags.host?.length && side.kc)
    targets = await existingHostTargets(side.kc, flags, notes);
  const hosts = await checkHosts(targets, flags, side, fancy);
  const { cluster, clusterUnreachable } = side;
  return { cluster, hosts, notes, summary: summarize(cluster, hosts), clusterUnreachable };
}

async function existingHostTargets(
  kc: k8s.KubeConfig,
  flags: CheckFlags,
  notes: string[],
): Promise<HostTarget[]> {
  const namespace = namespaceFrom(flags, kc);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const where = { group: 'winfleet.io', version: 'v1alpha1', plural: 'windowshosts' };
  let items: WindowsHost[];
  try {
    const list = (
      namespace
        ? await custom.listNamespacedCustomObject({ ...where, namespace })
        : await custom.listClusterCustomObject(where)
    ) as { items: WindowsHost[] };
    items = list.items;
  } catch (error) {
    if (!isNotFound(error)) throw error;
    notes.push(
      'the cluster has no WindowsHost API (winfleet is not installed): no hosts checked; pass --host ADDRESS to check a host before joining',
    );
    return [];
  }
  if (items.length === 0)
    notes.push(
      `no WindowsHosts ${namespace ? `in namespace ${namespace}` : 'in any namespace'}: no hosts checked; pass --host ADDRESS (or -n/-A)`,
    );
  for (const host of items) if (isPullHost(host)) notes.push(pullHostNote(host));
  return windowsHostTargets(kc, items);
}

interface HostContext {
  domainJoin: boolean;
  hyperV: boolean;
  /** The API server's clock minus this machine's (zeros in host-only mode). */
  clock: { offsetMs: number; uncertaintyMs: number };
  reference: string;
  apiServerHost?: string;
  network: ClusterNetwork;
}

async function checkHost(target: HostTarget, ctx: HostContext): Promise<HostReport> {
  const report = (checks: CheckResult[]): HostReport => ({
    host: target.name,
    address: target.address,
    checks,
  });
  let remote: Awaited<ReturnType<HostTarget['open']>>;
  try {
    remote = await target.open();
  } catch (error) {
    const why = (error as Error).message;
    return report([
      fail(
        'ssh',
        // The SSH layer's own messages already name the address ("Cannot reach …").
        why.includes(target.address) ? why : `Cannot log in to ${target.address} over SSH: ${why}`,
        target.windowsHost
          ? "Check the WindowsHost's address, port, username, its SSH key Secret and pinned host key (kubectl describe windowshost)"
          : 'Check the address and port, that OpenSSH Server runs on the host, the account (--ssh-user), the key (--ssh-key) and --host-key',
      ),
    ]);
  }
  const hostKey = hostKeyCheck(
    target.address,
    remote.session.fingerprint,
    target.pin,
    target.windowsHost !== undefined,
  );
  try {
    const basics = readHostBasics(await remote.script('host-facts', {}));
    const before = Date.now();
    const raw = await remote.script('preflight-facts', {});
    const after = Date.now();
    const facts = readPreflightFacts(raw);
    const hyperV = ctx.hyperV
      ? readHyperVFacts(await remote.script('hyperv-facts', {}))
      : undefined;
    const hostOffset = Date.parse(facts.utcNow) - (before + after) / 2;
    return report([
      hostKey,
      ...hostChecks({
        basics,
        facts,
        domainJoin: ctx.domainJoin,
        ...(hyperV ? { hyperV } : {}),
        clock: {
          offsetMs: hostOffset - ctx.clock.offsetMs,
          uncertaintyMs: (after - before) / 2 + ctx.clock.uncertaintyMs,
          reference: ctx.reference,
        },
        ...(ctx.apiServerHost ? { apiServerHost: ctx.apiServerHost } : {}),
        network: ctx.network,
        joined:
          target.windowsHost?.status?.conditions?.some(
            (c) => c.type === ConditionType.NodeRegistered && c.status === 'True',
          ) ?? false,
      }),
    ]);
  } catch (error) {
    return report([
      hostKey,
      fail(
        'host-facts',
        `Cannot read the host's facts: ${(error as Error).message}`,
        'Check that the account runs Windows PowerShell 5.1 (powershell.exe) as the SSH default shell is cmd.exe, and that the host is Windows Server',
      ),
    ]);
  } finally {
    remote.close();
  }
}
