/**
 * The lab: everything winfleet needs, on loopback, started in order with progress — a real
 * control plane, a Linux worker, a registry standing in for mcr.microsoft.com and Docker Hub,
 * the payload (stand-in files unless one is given) pushed to that registry with `winfleet
 * payload push`, the Helm chart installed with `helm install`, the operator (its own process,
 * with the chart's args and the payload's reference, as the chart's ServiceAccount with a
 * TokenRequest token and nothing else, so the lab always runs under the shipped RBAC),
 * simulated Windows hosts joined as WindowsHosts over SSH (they pull the payload from the
 * registry), one more that joins by itself from `winfleet join-command`'s user data, and the
 * seed samples applied — and stopped in reverse order. The hosts reach a fake Active Directory
 * domain, and one more SSH host in the pool `corp` is renamed and joined to it (ad-host.ts).
 * `placementReport` says where the samples' pods landed. The pod network is Flannel VXLAN by
 * default, with real packets from a Windows pod to a Linux pod as root (lab-network.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../src/api/windows-host.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { applyManifests } from '../../src/kube/manifests.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { freePort } from '../cluster/free-port.ts';
import { type Cluster, startCluster } from '../cluster/start-cluster.ts';
import type { SimDomain } from '../hosts/active-directory.ts';
import { type SimulatedHosts, startSimulatedHosts } from '../hosts/fleet.ts';
import { generateTestKey, type TestKey } from '../hosts/ssh-test-client.ts';
import { type MirrorRegistry, startMirrorRegistry } from '../registry/mirror-registry.ts';
import {
  auditLogUpTo,
  describeAuditEvent,
  forbiddenRequests,
  requestsBy,
  serviceAccountsAuditPolicy,
} from '../testkit/audit-log.ts';
import {
  chartDir,
  chartServiceAccount,
  chartWebhookServiceAccount,
  helmInstall,
  releaseName,
  startChartOperator,
} from '../testkit/chart-install.ts';
import { loadFixture } from '../testkit/fixtures.ts';
import { helmPath } from '../testkit/helm.ts';
import { createLinuxNode } from '../testkit/nodes.ts';
import { stopProcess } from '../testkit/operator-process.ts';
import { writeStandInPayload } from '../testkit/payload.ts';
import { createPool, readPool } from '../testkit/pools.ts';
import { serviceAccountKubeconfig } from '../testkit/service-account.ts';
import { listWindowsHosts, windowsHostFor, writeSshKeySecret } from '../testkit/windows-hosts.ts';
import { createLabDomain, joinAdHost, type LabAdHost, startAdHost } from './ad-host.ts';
import {
  type FaultControlFile,
  faultControlFilePath,
  labFaultHosts,
  removeFaultControlFile,
  startFaultControl,
  writeFaultControlFile,
} from './fault-control.ts';
import {
  type LabNetworkMode,
  labLinuxNode,
  type PacketsDecision,
  packetsDecisionHere,
  showLabNetwork,
  startLabNetwork,
} from './lab-network.ts';
import { type PushedLabPayload, pushLabPayload, watchLabPayload } from './lab-payload.ts';
import {
  type PullJoinedHost,
  startPullJoinedHost,
  waitForPullJoinedNode,
} from './pull-joined-host.ts';

export const labNamespace = 'winfleet-system';
export const samplesNamespace = 'seed-samples';

/**
 * The seed samples the lab applies after the hosts joined, in order. (Seed 001's own
 * runtimeClasses.yml is applied before, as a user following that document would: winfleet
 * then leaves that user-created windows-2019 alone.)
 */
export const labSamples = [
  'seed-001-win-webserver.yaml',
  'seed-000-iis.yaml',
  'seed-001-iis-2019.yaml',
  'seed-003-runtimeclass-deployment.yaml',
];

export interface LabOptions {
  dir?: string;
  /** Windows releases of the simulated hosts (default 2019, 2022, 2022). */
  releases?: string[];
  /** A payload directory (make payload); stand-in files by default. */
  payloadDir?: string;
  /**
   * Where to write the fault control file (`npm run lab:fault` reads it); default
   * faultControlFilePath(dir).
   */
  faultControlFile?: string;
  /**
   * The pod network (lab-network.ts): flannel-vxlan (default: Flannel's objects, a flannel
   * lease on the Linux worker, real packets as root with the netlab binaries) or routed.
   */
  network?: LabNetworkMode;
  say: (line: string) => void;
}

export interface Lab {
  dir: string;
  cluster: Cluster;
  kc: k8s.KubeConfig;
  registry: MirrorRegistry;
  hosts: SimulatedHosts;
  /** The host that joined by itself from `winfleet join-command`'s user data. */
  pullHost: PullJoinedHost;
  /** The host of the pool `corp`, renamed and joined to the lab's fake domain. */
  adHost: LabAdHost;
  /** The operator's process now (a new payload restarts it with the new reference). */
  readonly operator: ChildProcess;
  operatorLog: string;
  /** Who the operator is to the API server: the chart's ServiceAccount. */
  operatorUser: string;
  /** Who the webhook's own process is: the chart's webhook ServiceAccount. */
  webhookUser: string;
  /** The operator's kubeconfig: the ServiceAccount's token and the cluster CA. */
  operatorKubeconfig: string;
  statusUrl: string;
  /** The dashboard's own loopback listener. */
  dashboardUrl: string;
  /** The pinned helm the chart was installed with. */
  helm: string;
  /**
   * The payload directory (`standIn` when the lab wrote it) and its push to the lab registry,
   * whose reference the operator runs with; a new payload in the directory is pushed again.
   */
  payload: { dir: string; standIn: boolean; readonly pushed: PushedLabPayload };
  /** The fault control channel (fault-control.ts) and the file that says where it is. */
  faultControl: { url: string; file: string };
  /** The hosts' SSH private key (0600), for `winfleet check --host` and `diagnose --host`. */
  sshKeyFile: string;
  /** The pod network's mode and what the lab shows of it (report lines). */
  network: { mode: LabNetworkMode; report: string[] };
  stop(): Promise<void>;
}

/** What every step shares: the lab's directory, its progress output and its stop steps. */
interface LabContext {
  dir: string;
  say: (line: string) => void;
  /** Seconds since the lab began, as shown in progress lines. */
  since: () => string;
  /** Each step that starts something pushes its stop; the lab stops them last-first. */
  stops: (() => Promise<void>)[];
  /** The winfleet-config network.mode the chart is installed with. */
  networkMode: LabNetworkMode;
  /** Whether the lab shows packets (then lab-network.ts registers lab-linux-1). */
  packets: PacketsDecision;
}

/**
 * Starts the lab's parts in order, reporting each as it comes up; if a step fails, what had
 * started is stopped before the error is thrown.
 */
export async function startLab(options: LabOptions): Promise<Lab> {
  const ctx = await createContext(options);
  const stopAll = async () => {
    for (const stop of ctx.stops.reverse()) await stop().catch(() => {});
  };
  try {
    // The registry and the payload's push need no cluster: they start beside it.
    const [{ cluster, kc }, { registry, payloadDir, pushed: firstPush }] = await both(
      startControlPlane(ctx),
      (async () => {
        const registry = await startRegistry(ctx);
        const payloadDir = await preparePayload(ctx, options.payloadDir);
        return { registry, payloadDir, pushed: await pushPayload(ctx, payloadDir, registry) };
      })(),
    );
    let pushed = firstPush;
    const key = generateTestKey();
    await writeSshKeySecret(kc, labNamespace, key.privateKey);
    const sshKeyFile = join(ctx.dir, 'ssh-key');
    await writeFile(sshKeyFile, key.privateKey, { mode: 0o600 });
    const ports = {
      webhook: await freePort(),
      status: await freePort(),
      dashboard: await freePort(),
      webhookStatus: await freePort(),
    };
    // Flannel's objects and the Linux worker's lease (a real flanneld in a netlab namespace
    // when the lab may show packets) while the chart installs.
    const [network, release] = await both(
      startLabNetwork(ctx, cluster, kc, ctx.networkMode, ctx.packets),
      installChart(ctx, cluster, registry, pushed.reference, ports),
    );
    let operator = await startOperatorProcess(ctx, cluster, kc, release, ports);
    ctx.stops.push(() => stopOperatorProcess(operator));
    // The pool first: the SSH hosts are in it as they join, and join-command needs it.
    await createPool(kc, labNamespace, labPoolName, labPoolSpec);
    const { domain, password } = createLabDomain();
    const hosts = await startHosts(ctx, options.releases ?? ['2019', '2022', '2022'], key, domain);
    const adMachine = await startAdHost(ctx, kc, labNamespace, key, domain, password);
    // The machine joining by command boots, and the AD host joins, while the SSH hosts join.
    const [[, pullHost], adHost] = await both(
      both(joinHosts(ctx, kc, hosts), startPullHost(ctx, cluster.kubeconfigPath)),
      joinAdHost(ctx, kc, labNamespace, adMachine, domain),
    );
    await waitForPullJoinedNode(kc, pullHost);
    ctx.say(`${pullHost.nodeName} joined by itself as a Ready node (${ctx.since()})`);
    await waitForLabPool(ctx, kc, hosts.hosts.length + 1);
    await applySamples(ctx, kc);
    const networkReport = await showLabNetwork(ctx, kc, network, hosts.hosts);
    const faultControl = await startLabFaultControl(
      ctx,
      hosts,
      options.faultControlFile ?? faultControlFilePath(options.dir),
      {
        kubeconfig: cluster.kubeconfigPath,
        namespace: labNamespace,
        dashboard: `${operator.dashboardUrl}/`,
      },
    );
    // A new payload in the directory: pushed, and the operator restarted with its reference.
    const stopWatching = watchLabPayload(payloadDir, async () => {
      try {
        pushed = await pushPayload(ctx, payloadDir, registry);
        const next = await installChart(ctx, cluster, registry, pushed.reference, ports, 'upgrade');
        await stopOperatorProcess(operator);
        operator = await startOperatorProcess(ctx, cluster, kc, next, ports);
      } catch (error) {
        ctx.say(`the new payload was not rolled out: ${(error as Error).message}`);
      }
    });
    ctx.stops.push(async () => stopWatching());
    return {
      dir: ctx.dir,
      cluster,
      kc,
      registry,
      hosts,
      pullHost,
      adHost,
      get operator() {
        return operator.operator;
      },
      get operatorLog() {
        return operator.operatorLog;
      },
      operatorUser: operator.operatorUser,
      webhookUser: operator.webhookUser,
      operatorKubeconfig: operator.operatorKubeconfig,
      statusUrl: operator.statusUrl,
      dashboardUrl: operator.dashboardUrl,
      helm: release.helm,
      payload: {
        dir: payloadDir,
        standIn: !options.payloadDir,
        get pushed() {
          return pushed;
        },
      },
      faultControl,
      sshKeyFile,
      network: { mode: network.mode, report: networkReport },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/**
 * Both results once both settle: the first failure is thrown only after the other has ended
 * (and pushed its stops), so stopping the lab never races a step still starting something.
 */
async function both<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [ra, rb] = await Promise.allSettled([a, b]);
  if (ra.status === 'rejected') throw ra.reason;
  if (rb.status === 'rejected') throw rb.reason;
  return [ra.value, rb.value];
}

async function createContext(options: LabOptions): Promise<LabContext> {
  const started = Date.now();
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'winfleet-lab-')));
  await mkdir(dir, { recursive: true });
  const stops: LabContext['stops'] = [];
  // A temp dir goes when the lab stops; a dir the user named stays.
  if (!options.dir) stops.push(() => rm(dir, { recursive: true, force: true }));
  const networkMode = options.network ?? 'flannel-vxlan';
  return {
    dir,
    say: options.say,
    since: () => `${((Date.now() - started) / 1000).toFixed(1)}s`,
    stops,
    networkMode,
    packets: packetsDecisionHere(networkMode),
  };
}

/**
 * The control plane and one Linux worker, so Linux pods have somewhere to run (kwok's, unless
 * the lab shows packets: then lab-network.ts registers it, its pods the lab's to run).
 */
async function startControlPlane({ dir, say, since, stops, packets }: LabContext) {
  const cluster = await startCluster({
    dir: join(dir, 'cluster'),
    keepDir: false,
    onProgress: (m) => say(`control plane: ${m}`),
    // Every ServiceAccount request is audited, so the lab can say whether the chart's RBAC
    // refused the operator anything.
    auditPolicy: serviceAccountsAuditPolicy,
  });
  stops.push(() => cluster.stop());
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  if (!packets.show) {
    await createLinuxNode(kc, { name: labLinuxNode });
    say(`Linux worker ${labLinuxNode} is Ready (${since()})`);
  }
  return { cluster, kc };
}

async function startRegistry({ say, stops }: LabContext): Promise<MirrorRegistry> {
  const registry = await startMirrorRegistry();
  stops.push(() => registry.stop());
  say(
    `registry mirror ${registry.registry.url} holds ${registry.seeded.length} synthetic images for ${Object.keys(registry.mirrors).join(', ')}`,
  );
  return registry;
}

/** The payload directory the operator joins hosts with: the one given, or stand-in files. */
async function preparePayload({ dir, say }: LabContext, given?: string): Promise<string> {
  if (given) {
    say(`payload: ${given}`);
    return given;
  }
  const payloadDir = join(dir, 'payload');
  await writeStandInPayload(payloadDir);
  say(
    'payload: stand-in files (WINFLEET_PAYLOAD_DIR=<dir from make payload> uses real Windows binaries)',
  );
  return payloadDir;
}

/**
 * The payload directory pushed to the lab registry with `winfleet payload push`, tagged with
 * its version; the operator runs with the reference it prints.
 */
async function pushPayload(
  { say, since }: LabContext,
  payloadDir: string,
  registry: MirrorRegistry,
): Promise<PushedLabPayload> {
  const payload = JSON.parse(await readFile(join(payloadDir, 'payload.json'), 'utf8')) as {
    version: string;
  };
  const pushed = await pushLabPayload(payloadDir, registry.registry.host, payload.version);
  say(`${pushed.command} (${since()})`);
  say(`  → ${pushed.reference}`);
  return pushed;
}

/** The values the lab installs the chart with and runs its operator with. */
interface LabRelease {
  values: Record<string, unknown>;
  webhookPort: number;
  /** The helm binary it was installed with. */
  helm: string;
}

/** The operator's loopback ports, kept across restarts (a new payload restarts it). */
interface OperatorPorts {
  webhook: number;
  status: number;
  dashboard: number;
  /** The webhook process's own status server. */
  webhookStatus: number;
}

/**
 * The chart, installed with helm as a platform team would (CRDs, ServiceAccount, RBAC, the
 * operator's configuration: the registry mirror and short intervals for a lab; the payload
 * from the registry, pinned by digest), its webhook registered at the loopback port the lab's
 * operator will serve on. `upgrade` changes an installed release (a new payload reference).
 */
async function installChart(
  { say, since, networkMode }: LabContext,
  cluster: Cluster,
  registry: MirrorRegistry,
  payloadReference: string,
  ports: Pick<OperatorPorts, 'webhook'>,
  verb: 'install' | 'upgrade' = 'install',
): Promise<LabRelease> {
  if (verb === 'install')
    say('helm: the pinned helm (bash hack/build-tools.sh helm; a few minutes the first time)');
  const helm = await helmPath();
  const values = {
    crds: { install: true },
    webhook: { url: `https://127.0.0.1:${ports.webhook}` },
    payload: { source: 'registry', registry: { reference: payloadReference } },
    config: {
      images: { mirrors: registry.mirrors },
      hosts: { agentCheckIntervalSeconds: 5 },
      runtimeClasses: { gracePeriodSeconds: 60 },
      // flannel-vxlan: the cluster holds Flannel's objects (lab-network.ts); routed: no CNI,
      // every simulated node on its own spec.podCIDR.
      network: { mode: networkMode },
    },
  };
  // A new payload's upgrade keeps what a person set on the release (proxy, CAs: docs/lab.md).
  await helmInstall(
    { kubeconfig: cluster.kubeconfigPath, namespace: labNamespace, values, reuseValues: true },
    verb,
  );
  say(
    `${verb === 'install' ? 'installed' : 'upgraded'} chart ${chartDir} as release ${releaseName} in ${labNamespace} with ${helm} (${since()})`,
  );
  return { values, webhookPort: ports.webhook, helm };
}

/**
 * The operator in its own process, run as the chart's Deployment runs it (its args from
 * `helm template`) and as the chart's ServiceAccount (a TokenRequest token, nothing else),
 * reaching the lab registry over plain HTTP and keeping fetched payload files in the lab's
 * directory; resolves once /readyz answers. The caller stops it.
 */
async function startOperatorProcess(
  { dir, say }: LabContext,
  cluster: Cluster,
  kc: k8s.KubeConfig,
  release: LabRelease,
  ports: OperatorPorts,
) {
  // The lab lives as long as its cluster, so one long-lived token does.
  const sa = await serviceAccountKubeconfig(kc, {
    namespace: labNamespace,
    name: chartServiceAccount,
    server: cluster.server,
    caFile: cluster.pki.caCert,
    path: join(dir, 'operator.kubeconfig'),
    expirationSeconds: 365 * 24 * 3600,
  });
  const webhookAccount = await serviceAccountKubeconfig(kc, {
    namespace: labNamespace,
    name: chartWebhookServiceAccount,
    server: cluster.server,
    caFile: cluster.pki.caCert,
    path: join(dir, 'webhook.kubeconfig'),
    expirationSeconds: 365 * 24 * 3600,
  });
  const operatorLog = join(dir, 'operator.log');
  const webhookLog = join(dir, 'webhook.log');
  const { child, args, statusUrl, dashboardUrl, webhook } = await startChartOperator({
    kubeconfig: sa.path,
    namespace: labNamespace,
    values: release.values,
    webhookPort: release.webhookPort,
    statusPort: ports.status,
    dashboardPort: ports.dashboard,
    // The chart's cache is a pod's emptyDir; the lab registry is plain HTTP on loopback.
    extraArgs: ['--payload-plain-http', '--payload-cache-dir', join(dir, 'payload-cache')],
    logFile: operatorLog,
    // The webhook in its own process and ServiceAccount, as the chart runs it.
    webhook: {
      kubeconfig: webhookAccount.path,
      admin: kc,
      certDir: join(dir, 'webhook-tls'),
      statusPort: ports.webhookStatus,
      logFile: webhookLog,
    },
  });
  say(`operator command line (the chart's args, then the lab's): ${args.join(' ')}`);
  if (webhook)
    say(
      `webhook running in its own process (pid ${webhook.child.pid}) as ${webhookAccount.username}, log ${webhookLog}`,
    );
  say(
    `operator running (pid ${child.pid}) as ${sa.username}, webhook on https://127.0.0.1:${release.webhookPort}, log ${operatorLog}`,
  );
  return {
    operator: child,
    webhook,
    webhookUser: webhookAccount.username,
    operatorLog,
    operatorUser: sa.username,
    operatorKubeconfig: sa.path,
    statusUrl,
    dashboardUrl: dashboardUrl!,
  };
}

/** Stops the operator's process and the webhook's. */
async function stopOperatorProcess(running: {
  operator: ChildProcess;
  webhook?: { stop(): Promise<void> };
}): Promise<void> {
  await running.webhook?.stop();
  await stopProcess(running.operator);
}

/**
 * One simulated Windows host per release, accepting the operator's SSH key and reaching the
 * lab's fake domain (their pool does not join them to it).
 */
async function startHosts(
  { dir, say, stops }: LabContext,
  releases: string[],
  key: TestKey,
  activeDirectory: SimDomain,
): Promise<SimulatedHosts> {
  const hosts = await startSimulatedHosts({
    count: releases.length,
    releases,
    authorizedKeys: [key.publicKey],
    dir: join(dir, 'hosts'),
    activeDirectory,
  });
  stops.push(() => hosts.stop());
  for (const h of hosts.hosts)
    say(`simulated Windows Server ${h.release} host ${h.name} at ${h.address}:${h.port} (ssh)`);
  return hosts;
}

/**
 * Creates a WindowsHost per simulated host and waits until all are Ready, printing each host's
 * progress as its conditions change.
 */
async function joinHosts(ctx: LabContext, kc: k8s.KubeConfig, hosts: SimulatedHosts) {
  const { say, since } = ctx;
  // The document's handler is a placeholder ("the name of the corresponding CRI configuration"):
  // a user following it writes the handler containerd has on Windows nodes, or containerd refuses
  // the pod's sandbox (no runtime for "example-container-runtime-handler" is configured).
  const runtimeClasses = loadFixture('seed-001-runtimeclasses.yml').map((object) =>
    (object as { handler?: string }).handler === 'example-container-runtime-handler'
      ? { ...object, handler: 'runhcs-wcow-process' }
      : object,
  );
  await applyManifests(kc, runtimeClasses, { fieldManager: 'kubectl' });
  say(
    'applied seed-001-runtimeclasses.yml (a user-created windows-2019 RuntimeClass, before any host joins; its placeholder handler replaced by runhcs-wcow-process, as its document says to)',
  );
  // Created in the pool (labelled), not labelled afterwards: the AD host joins meanwhile.
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const host of hosts.hosts) {
    const object = windowsHostFor(host, labNamespace);
    object.metadata.labels = labPoolLabel;
    await objects.create(object);
  }
  say(`created ${hosts.hosts.length} WindowsHosts in WindowsNodePool ${labPoolName}; joining…`);
  const seen = new Map<string, string>();
  const names = new Set(hosts.hosts.map((h) => h.name.toLowerCase()));
  await waitFor(
    async () => {
      // The pull-joined host's WindowsHost appears meanwhile; it is waited for by its Node.
      const list = (await listWindowsHosts(kc, labNamespace)).filter((h) =>
        names.has(h.metadata.name),
      );
      for (const host of list) {
        const state = conditionSummary(host);
        if (seen.get(host.metadata.name) !== state) {
          seen.set(host.metadata.name, state);
          say(
            `  ${host.metadata.name.padEnd(16)} ${state.padEnd(16)} ${host.status?.windowsVersion ?? ''} (${since()})`,
          );
        }
      }
      return (
        list.length === hosts.hosts.length && list.every((h) => conditionSummary(h) === 'Ready')
      );
    },
    { description: 'every simulated host to join', timeoutMs: 180_000, intervalMs: 250 },
  );
  say(`all ${hosts.hosts.length} hosts joined as Ready nodes (${since()})`);
}

/**
 * The fault control channel over the lab's hosts, and its control file (mode 0600) for
 * `npm run lab:fault`; the file goes when the lab stops.
 */
async function startLabFaultControl(
  { say, stops }: LabContext,
  hosts: SimulatedHosts,
  file: string,
  about: Omit<FaultControlFile, 'url' | 'token'>,
): Promise<{ url: string; file: string }> {
  const control = await startFaultControl(labFaultHosts(hosts));
  stops.push(() => control.stop());
  await writeFaultControlFile(file, { url: control.url, token: control.token, ...about });
  stops.push(() => removeFaultControlFile(file, control.token));
  say(`fault control on ${control.url} (token in ${file}, mode 0600)`);
  return { url: control.url, file };
}

/** The lab's pool: every lab host, one down at a time (what `make lab` prints how to roll). */
export const labPoolName = 'lab';

/** Its hosts carry this label: the SSH ones from the lab, the pull-joined one from its pool. */
const labPoolLabel = { 'winfleet.io/lab-pool': labPoolName };

const labPoolSpec = {
  selector: { matchLabels: labPoolLabel },
  // Required to take join tokens: the machine joining by command is a simwin-N.
  join: { nodeNamePattern: '^simwin-[0-9]+(-[0-9]+)?$' },
  maxUnavailable: 1,
  drainTimeout: '5m',
};

/** Waits for the lab's pool to count `count` hosts. */
async function waitForLabPool(
  { say, since }: LabContext,
  kc: k8s.KubeConfig,
  count: number,
): Promise<void> {
  await waitFor(
    async () => (await readPool(kc, labNamespace, labPoolName)).status?.hosts === count,
    { description: `WindowsNodePool ${labPoolName} counting ${count} hosts`, timeoutMs: 30_000 },
  );
  say(`WindowsNodePool ${labPoolName}: ${count} hosts, maxUnavailable 1 (${since()})`);
}

/**
 * `winfleet join-command --pool lab --format aws`, and a machine that boots with its output
 * (pull-joined-host.ts); the caller waits for its Node.
 */
async function startPullHost(
  { dir, say, since, stops }: LabContext,
  kubeconfig: string,
): Promise<PullJoinedHost> {
  const pulled = await startPullJoinedHost({ dir, kubeconfig, pool: labPoolName });
  stops.push(() => pulled.hosts.stop());
  say(
    `${pulled.command}: join token ${pulled.tokenId}; simulated Windows Server ${pulled.host.release} host ${pulled.host.name} at ${pulled.host.address} boots with it (no SSH) (${since()})`,
  );
  return pulled;
}

function conditionSummary(host: WindowsHost): string {
  const order = ['Reachable', 'Bootstrapped', 'NodeRegistered', 'Ready'];
  const reached = order.filter((type) =>
    host.status?.conditions?.some((c) => c.type === type && c.status === 'True'),
  );
  const degraded = host.status?.conditions?.find(
    (c) => c.type === 'Degraded' && c.status === 'True',
  );
  return degraded ? `Degraded: ${degraded.reason}` : (reached.at(-1) ?? 'Pending');
}

/**
 * Applies the lab samples in their own namespace. An object the API server refuses (the
 * webhook, for one) is reported and the rest are still applied.
 */
async function applySamples({ say }: LabContext, kc: k8s.KubeConfig): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: samplesNamespace } } }).catch(() => {});
  await waitFor(
    async () =>
      (await core.readNamespacedServiceAccount({
        name: 'default',
        namespace: samplesNamespace,
      })) && true,
    {
      description: 'the samples namespace',
    },
  );
  for (const sample of labSamples) {
    const objects = loadFixture(sample);
    const refused: string[] = [];
    for (const object of objects) {
      try {
        await applyManifests(kc, [object], {
          namespace: samplesNamespace,
          fieldManager: 'kubectl',
        });
      } catch (error) {
        refused.push(`${object.kind}/${object.metadata?.name}`);
        say(
          `  ${sample}: ${object.kind}/${object.metadata?.name} refused: ${statusMessage(error)}`,
        );
      }
    }
    say(sampleOutcome(sample, objects.length, refused));
  }
}

/**
 * One line on what became of a sample file: "applied" only when every object was, so the line
 * never contradicts a refusal printed above it.
 */
export function sampleOutcome(sample: string, total: number, refused: string[]): string {
  if (refused.length === 0) return `applied ${sample}`;
  if (refused.length === total)
    return `applied nothing from ${sample}: refused ${refused.join(', ')}`;
  return `applied ${total - refused.length} of ${total} objects from ${sample}; refused ${refused.join(', ')}`;
}

/** The message of a Kubernetes Status in an API error's body, else the body as it is. */
function statusMessage(error: unknown): string {
  const body = String((error as { body?: string }).body ?? error);
  try {
    return (JSON.parse(body) as { message?: string }).message ?? body;
  } catch {
    return body;
  }
}

/**
 * What the API server's audit log says about the operator so far: how many requests it made
 * as the chart's ServiceAccount and each one answered 403 (the chart's RBAC refused it).
 */
export async function operatorAuditReport(
  lab: Pick<Lab, 'cluster' | 'operatorKubeconfig' | 'operatorUser'> & { webhookUser?: string },
): Promise<{ requests: number; refused: string[] }> {
  const events = await auditLogUpTo(
    lab.cluster.auditLogPath!,
    loadKubeConfig(lab.operatorKubeconfig),
  );
  // The operator's and the webhook's ServiceAccounts: winfleet's own.
  const requests = [
    ...requestsBy(events, lab.operatorUser),
    ...(lab.webhookUser ? requestsBy(events, lab.webhookUser) : []),
  ];
  return {
    requests: requests.length,
    refused: forbiddenRequests(requests).map(describeAuditEvent),
  };
}

/**
 * Lines describing where the sample pods run: pod, status, node, node OS and build, pod IP (a
 * host-network pod's marked "(host)"), the node's pod CIDR, image.
 */
export async function placementReport(kc: k8s.KubeConfig): Promise<string[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const nodes = new Map((await core.listNode()).items.map((n) => [n.metadata!.name!, n]));
  const pods = (await core.listNamespacedPod({ namespace: samplesNamespace })).items;
  const rows = pods.map((pod) => {
    const node = pod.spec?.nodeName ? nodes.get(pod.spec.nodeName) : undefined;
    const labels = node?.metadata?.labels ?? {};
    const where = node
      ? `${labels['kubernetes.io/os']} ${labels['node.kubernetes.io/windows-build'] ?? ''}`.trim()
      : '';
    const image = pod.spec?.containers?.[0]?.image ?? '';
    const ip = pod.status?.podIP
      ? `${pod.status.podIP}${pod.spec?.hostNetwork ? '(host)' : ''}`
      : '-';
    return [
      pod.metadata?.name ?? '',
      pod.status?.phase || '-',
      pod.spec?.nodeName ?? '(unscheduled)',
      where || '-',
      ip,
      node?.spec?.podCIDR ?? '-',
      image,
    ];
  });
  const columns = 6;
  const widths = [...Array(columns).keys()].map((i) =>
    Math.max(...rows.map((r) => r[i]!.length), 4),
  );
  return rows
    .sort((a, b) => a[0]!.localeCompare(b[0]!))
    .map(
      (r) =>
        `  ${r
          .slice(0, columns)
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')}  ${r[columns]}`,
    );
}

/**
 * `kubectl logs` of one running sample pod on a Windows node, through the API server and the
 * host's kubelet API on :10250 (which the agent's firewall rule opens): a heading line, then
 * the log indented. The first answer can wait for the kubelet's serving certificate (a CSR the
 * operator approves), so it is retried for up to `timeoutMs`; a failure is reported, not thrown.
 */
export async function windowsPodLogReport(
  kc: k8s.KubeConfig,
  timeoutMs = 60_000,
): Promise<string[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const windowsNodes = new Set(
    (await core.listNode({ labelSelector: 'kubernetes.io/os=windows' })).items.map(
      (n) => n.metadata!.name!,
    ),
  );
  const pod = (await core.listNamespacedPod({ namespace: samplesNamespace })).items
    .filter((p) => p.status?.phase === 'Running' && windowsNodes.has(p.spec?.nodeName ?? ''))
    .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!))[0];
  if (!pod) return ['No sample pod runs on a Windows node, so there are no Windows logs to show'];
  const name = pod.metadata!.name!;
  const heading = `kubectl logs -n ${samplesNamespace} ${name}  (on ${pod.spec!.nodeName}):`;
  try {
    const log = await waitFor(
      () => core.readNamespacedPodLog({ name, namespace: samplesNamespace }),
      { description: `the logs of ${name}`, timeoutMs, intervalMs: 1000 },
    );
    return [
      heading,
      ...log
        .trimEnd()
        .split('\n')
        .map((line) => `  ${line}`),
    ];
  } catch (error) {
    return [`${heading} failed: ${(error as Error).message}`];
  }
}
