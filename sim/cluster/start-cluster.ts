/**
 * Starts a whole Kubernetes cluster on loopback from the binaries built from Go modules:
 * etcd, kube-apiserver, kube-controller-manager, kube-scheduler and two kwok processes (one for
 * kwok-only nodes, one for the nodes of simulated Windows hosts). Each cluster gets its own
 * free ports and directory, so several can run side by side.
 */

import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { ensureBinaries } from './binaries.ts';
import { type ClusterPkiFiles, createClusterPki } from './cluster-pki.ts';
import { ComponentProcess } from './component-process.ts';
import { freePorts } from './free-port.ts';
import { ComponentStartError, waitHealthy } from './health.ts';
import { renderKubeconfig } from './kubeconfig.ts';
import { grantKubeletApiAccess } from './kubelet-api-access.ts';
import { createOwnedTempDir, removeOwnedTempDir } from './owned-temp-dir.ts';

/** Nodes that carry this annotation are kept alive by kwok, which also plays their pods. */
export const kwokNodeAnnotation = { key: 'kwok.x-k8s.io/node', value: 'fake' } as const;
/**
 * Nodes of simulated Windows hosts carry this one while their kubelet stand-in is up and Ready:
 * a second kwok runs the containers of their pods, whose sandboxes and IPs come from the host
 * (sim/hosts/sim-cni.ts). It never writes their status: the stand-in posts it and renews their
 * Lease (sim/hosts/node-status.ts, node-lease.ts), so a silent host goes Unknown as on a real
 * cluster.
 */
export const hostNodeAnnotation = { key: 'kwok.x-k8s.io/node', value: 'winfleet-host' } as const;
export const serviceCidr = '10.96.0.0/12';
/** First address of the service range: the `kubernetes` Service. */
export const kubernetesServiceIp = '10.96.0.1';
/**
 * The cluster's pod CIDR (kube-controller-manager --cluster-cidr), apart from the service range:
 * every node gets a /24 of it as spec.podCIDR, and its pods take their IPs from that.
 */
export const podCidr = '10.244.0.0/16';
/** The size of each node's pod CIDR (--node-cidr-mask-size): 256 nodes of up to 254 pods. */
export const nodeCidrMaskSize = 24;

export interface ClusterOptions {
  /** Directory for PKI, data and logs; a new temp dir by default. */
  dir?: string;
  /** Keep `dir` after stop (default: false for a temp dir, true for a given dir). */
  keepDir?: boolean;
  /** Directory holding the binaries; built or found by ensureBinaries() by default. */
  binDir?: string;
  /** Give up when the cluster is not healthy after this long (default 120 s). */
  startTimeoutMs?: number;
  /** Progress lines, e.g. console.error. Silent by default. */
  onProgress?: (message: string) => void;
  /**
   * An API server audit policy (an audit.k8s.io/v1 Policy object). With it, the API server
   * writes an audit log of JSON lines to `<dir>/logs/audit.log` (Cluster.auditLogPath), in
   * blocking mode so that an answered request's event is already in the file. None by default.
   */
  auditPolicy?: AuditPolicy;
  /**
   * Bootstrap-token authentication in the API server (default true). Off, the cluster is like
   * the managed offerings that do not take bootstrap tokens: a token answers 401.
   */
  bootstrapTokenAuth?: boolean;
  /**
   * kube-controller-manager's --allocate-node-cidrs (default true). Off, Nodes get no
   * spec.podCIDR, as on OpenShift with OVN-Kubernetes and on EKS.
   */
  allocateNodeCidrs?: boolean;
  /**
   * Sizing for large simulated fleets (bench:scale); the defaults suit the tests. Each field
   * replaces the matching default above.
   */
  scale?: ScaleOptions;
}

/** Cluster sizing for thousands of kwok nodes on a 2-core machine. */
export interface ScaleOptions {
  /** kube-controller-manager --cluster-cidr and kwok --cidr (default podCidr). */
  podCidr?: string;
  /** --node-cidr-mask-size (default nodeCidrMaskSize): with podCidr, how many nodes fit. */
  nodeCidrMaskSize?: number;
  /**
   * kwok's node Lease duration (default 40 s); kwok renews each Lease every quarter of it, as
   * the kubelet does, so a longer lease means fewer writes per node.
   */
  kwokNodeLeaseSeconds?: number;
  /**
   * kube-controller-manager --node-monitor-grace-period (default its own, 50 s): must exceed
   * the renewal interval, or nodes whose Lease is renewed less often go NotReady.
   */
  nodeMonitorGracePeriodSeconds?: number;
  /** kube-controller-manager --kube-api-qps (default its own, 20): it assigns pod CIDRs. */
  controllerManagerQps?: number;
  /**
   * Leases kwok renews at once (KwokConfiguration nodeLeaseParallelism, default its own, 4):
   * 10,000 nodes renewing every 75 s are 133 writes a second, more than 4 at a time keep up
   * with on a busy API server.
   */
  kwokNodeLeaseParallelism?: number;
  /** kwok's log level (default INFO, a line per Lease renewal and Node patch). */
  kwokLogLevel?: 'INFO' | 'WARN';
}

/** An audit.k8s.io/v1 Policy, as the API server reads it from --audit-policy-file. */
export interface AuditPolicy {
  apiVersion: 'audit.k8s.io/v1';
  kind: 'Policy';
  omitStages?: string[];
  rules: Record<string, unknown>[];
}

export interface ClusterPorts {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  kwok: number;
  /** The kwok that plays the nodes of simulated Windows hosts. */
  kwokHosts: number;
}

/** A running cluster. */
export interface Cluster {
  dir: string;
  kubeconfigPath: string;
  server: string;
  pki: ClusterPkiFiles;
  ports: ClusterPorts;
  components: ComponentProcess[];
  /** Milliseconds from start to every component healthy. */
  startupMs: number;
  /** The API server's audit log, when ClusterOptions.auditPolicy was given. */
  auditLogPath?: string;
  stop(): Promise<void>;
}

const stagesFile = fileURLToPath(new URL('./kwok-stages.yaml', import.meta.url));
const podReadyStagesFile = fileURLToPath(new URL('./kwok-stages-pod-ready.yaml', import.meta.url));
const hostPodStagesFile = fileURLToPath(new URL('./kwok-stages-host-pods.yaml', import.meta.url));
const running = new Set<Cluster>();
let exitHookInstalled = false;
const tempPrefix = 'winfleet-cluster-';

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort on process exit: kill synchronously (setpriv --pdeathsig covers SIGKILL).
  process.on('exit', () => {
    for (const cluster of running) for (const c of cluster.components) c.killNow();
  });
}

/** A KwokConfiguration with these options, written to `dir`; its path. */
async function writeKwokOptions(dir: string, options: Record<string, unknown>): Promise<string> {
  const path = join(dir, 'kwok-options.yaml');
  await writeFile(
    path,
    stringify({ apiVersion: 'config.kwok.x-k8s.io/v1alpha1', kind: 'KwokConfiguration', options }),
  );
  return path;
}

/** Starts a cluster and resolves when every component is healthy. */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  // The seven ports are free when chosen and bound by the components a moment later: another
  // process on the machine can take one between the two. A cluster in its own directory then
  // starts again on new ports (a directory the caller gave may hold a half-started etcd).
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(options);
    } catch (error) {
      const portTaken =
        error instanceof ComponentStartError && /address already in use/.test(error.logTail);
      if (!portTaken || options.dir !== undefined || attempt >= 3) throw error;
      options.onProgress?.(
        `${(error as ComponentStartError).component}'s port was taken meanwhile; starting again on new ports`,
      );
    }
  }
}

async function startClusterOnce(options: ClusterOptions): Promise<Cluster> {
  const started = Date.now();
  const progress = options.onProgress ?? (() => {});
  const binDir = options.binDir ?? ensureBinaries();
  const ownDir = options.dir === undefined;
  const dir = options.dir ? resolve(options.dir) : await createOwnedTempDir(tempPrefix);
  const keepDir = options.keepDir ?? !ownDir;
  const scale = options.scale ?? {};
  const clusterPodCidr = scale.podCidr ?? podCidr;
  installExitHook();
  const deadline = started + (options.startTimeoutMs ?? 120_000);

  const [pkiDir, logDir, dataDir] = ['pki', 'logs', 'etcd-data'].map((d) => join(dir, d)) as [
    string,
    string,
    string,
  ];
  await Promise.all([mkdir(pkiDir, { recursive: true }), mkdir(logDir, { recursive: true })]);
  const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok, kwokHosts] =
    (await freePorts(7)) as [number, number, number, number, number, number, number];
  const ports: ClusterPorts = {
    etcdClient,
    etcdPeer,
    apiserver,
    controllerManager,
    scheduler,
    kwok,
    kwokHosts,
  };
  progress('creating PKI');
  const pki = await createClusterPki(pkiDir, kubernetesServiceIp);
  const server = `https://127.0.0.1:${apiserver}`;
  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  await writeFile(
    kubeconfigPath,
    renderKubeconfig({
      server,
      caFile: pki.caCert,
      user: 'winfleet-admin',
      clientCertFile: pki.adminCert,
      clientKeyFile: pki.adminKey,
    }),
    { mode: 0o600 },
  );
  const stages = join(dir, 'kwok-stages.yaml');
  const podReadyStages = join(dir, 'kwok-stages-pod-ready.yaml');
  const hostPodStages = join(dir, 'kwok-stages-host-pods.yaml');
  await copyFile(stagesFile, stages);
  await copyFile(podReadyStagesFile, podReadyStages);
  await copyFile(hostPodStagesFile, hostPodStages);
  const audit = options.auditPolicy
    ? { policy: join(dir, 'audit-policy.yaml'), log: join(logDir, 'audit.log') }
    : undefined;
  if (audit) await writeFile(audit.policy, stringify(options.auditPolicy));

  const components: ComponentProcess[] = [];
  const cluster: Cluster = {
    dir,
    kubeconfigPath,
    server,
    pki,
    ports,
    components,
    startupMs: 0,
    auditLogPath: audit?.log,
    async stop() {
      running.delete(cluster);
      // Reverse order: clients first, etcd last.
      for (const component of [...components].reverse()) await component.stop();
      if (ownDir && !keepDir) await removeOwnedTempDir(dir);
      else if (!keepDir) await rm(dir, { recursive: true, force: true });
    },
  };
  running.add(cluster);
  const start = (name: string, args: string[], binary = name) => {
    const component = new ComponentProcess({
      name,
      binary: join(binDir, binary),
      args,
      logFile: join(logDir, `${name}.log`),
    });
    components.push(component);
    return component;
  };
  const [ca, adminCert, adminKey] = await Promise.all(
    [pki.caCert, pki.adminCert, pki.adminKey].map((file) => readFile(file, 'utf8')),
  );
  const asAdmin = { ca: ca!, cert: adminCert!, key: adminKey! };
  const componentTls = { ca: ca! };

  try {
    progress('starting etcd');
    const etcd = start('etcd', [
      '--name=etcd',
      `--data-dir=${dataDir}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=etcd=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    await waitHealthy(etcd, `http://127.0.0.1:${etcdClient}/health`, undefined, deadline);

    progress('starting kube-apiserver');
    const kubeApiserver = start('kube-apiserver', [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiserver}`,
      `--tls-cert-file=${pki.apiserverCert}`,
      `--tls-private-key-file=${pki.apiserverKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-cluster-ip-range=${serviceCidr}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      ...(options.bootstrapTokenAuth === false ? [] : ['--enable-bootstrap-token-auth']),
      '--endpoint-reconciler-type=none',
      '--allow-privileged=true',
      '--profiling=false',
      // To kubelets (kubectl logs, exec): by the Node's InternalIP, with the API server's own
      // client certificate, the kubelet's serving certificate checked against the cluster CA.
      `--kubelet-client-certificate=${pki.kubeletClientCert}`,
      `--kubelet-client-key=${pki.kubeletClientKey}`,
      `--kubelet-certificate-authority=${pki.caCert}`,
      '--kubelet-preferred-address-types=InternalIP',
      ...(audit
        ? [
            `--audit-policy-file=${audit.policy}`,
            `--audit-log-path=${audit.log}`,
            '--audit-log-format=json',
            '--audit-log-mode=blocking',
            // One file: no rotation, so a reader sees every event.
            '--audit-log-maxsize=0',
          ]
        : []),
    ]);
    await waitHealthy(kubeApiserver, `${server}/readyz`, asAdmin, deadline);
    await grantKubeletApiAccess(loadKubeConfig(kubeconfigPath));

    progress('starting kube-controller-manager, kube-scheduler and two kwok');
    const controllerManagerProcess = start('kube-controller-manager', [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${controllerManager}`,
      `--tls-cert-file=${pki.componentCert}`,
      `--tls-private-key-file=${pki.componentKey}`,
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      `--root-ca-file=${pki.caCert}`,
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--service-cluster-ip-range=${serviceCidr}`,
      // Each node gets its own pod CIDR (spec.podCIDR), which its CNI config and kwok use.
      `--allocate-node-cidrs=${options.allocateNodeCidrs ?? true}`,
      `--cluster-cidr=${clusterPodCidr}`,
      `--node-cidr-mask-size=${scale.nodeCidrMaskSize ?? nodeCidrMaskSize}`,
      ...(scale.nodeMonitorGracePeriodSeconds
        ? [`--node-monitor-grace-period=${scale.nodeMonitorGracePeriodSeconds}s`]
        : []),
      ...(scale.controllerManagerQps
        ? [
            `--kube-api-qps=${scale.controllerManagerQps}`,
            `--kube-api-burst=${scale.controllerManagerQps * 2}`,
          ]
        : []),
      '--controllers=*,bootstrapsigner,tokencleaner',
      '--leader-elect=false',
      '--profiling=false',
    ]);
    const schedulerProcess = start('kube-scheduler', [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${scheduler}`,
      `--tls-cert-file=${pki.componentCert}`,
      `--tls-private-key-file=${pki.componentKey}`,
      '--leader-elect=false',
      '--profiling=false',
    ]);
    const kwokOptions = scale.kwokNodeLeaseParallelism
      ? [
          `--config=${await writeKwokOptions(dir, {
            // A KwokConfiguration given replaces kwok's defaults: the others, as kwok sets them.
            podPlayStageParallelism: 4,
            nodePlayStageParallelism: 4,
            podsOnNodeSyncParallelism: 1,
            nodeLeaseParallelism: scale.kwokNodeLeaseParallelism,
          })}`,
        ]
      : [];
    const kwokProcess = start('kwok', [
      `--kubeconfig=${kubeconfigPath}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-annotation-selector=${kwokNodeAnnotation.key}=${kwokNodeAnnotation.value}`,
      `--cidr=${clusterPodCidr}`,
      `--config=${stages}`,
      `--config=${podReadyStages}`,
      `--server-address=127.0.0.1:${kwok}`,
      `--node-lease-duration-seconds=${scale.kwokNodeLeaseSeconds ?? 40}`,
      ...kwokOptions,
      ...(scale.kwokLogLevel ? [`--v=${scale.kwokLogLevel}`] : []),
      // Default InternalIP of kwok nodes that declare none.
      '--node-ip=127.0.0.1',
    ]);
    const kwokHostsProcess = start(
      'kwok-hosts',
      [
        `--kubeconfig=${kubeconfigPath}`,
        '--manage-all-nodes=false',
        `--manage-nodes-with-annotation-selector=${hostNodeAnnotation.key}=${hostNodeAnnotation.value}`,
        `--cidr=${clusterPodCidr}`,
        `--config=${stages}`,
        `--config=${hostPodStages}`,
        `--server-address=127.0.0.1:${kwokHosts}`,
        // No leases: each host's kubelet stand-in renews its own (sim/hosts/node-lease.ts), and
        // a kwok that holds leases ignores nodes whose annotation arrives after registration.
        '--node-lease-duration-seconds=0',
      ],
      'kwok',
    );
    await Promise.all([
      waitHealthy(
        controllerManagerProcess,
        `https://127.0.0.1:${controllerManager}/healthz`,
        componentTls,
        deadline,
      ),
      waitHealthy(
        schedulerProcess,
        `https://127.0.0.1:${scheduler}/healthz`,
        componentTls,
        deadline,
      ),
      waitHealthy(kwokProcess, `http://127.0.0.1:${kwok}/healthz`, undefined, deadline),
      waitHealthy(kwokHostsProcess, `http://127.0.0.1:${kwokHosts}/healthz`, undefined, deadline),
    ]);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  cluster.startupMs = Date.now() - started;
  progress(`cluster healthy in ${(cluster.startupMs / 1000).toFixed(1)}s`);
  return cluster;
}
