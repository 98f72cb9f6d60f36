/**
 * The services manifest winfleet publishes for a payload: where each binary goes on the host
 * and how each node service runs — containerd and the kubelet during bootstrap, then
 * kube-proxy, csi-proxy and windows_exporter — with the kubelet flags the seeds and WMCO use,
 * and what the cluster's network mode needs (src/network/node-network.ts): flanneld for
 * flannel-vxlan and flannel-host-gw, hybrid-overlay-node for ovn-hybrid, kube-proxy on the mode's network (with a source VIP on an overlay) or none.
 */
import { createHash } from 'node:crypto';
import { WinfleetError } from '../errors/catalog.ts';
import { type NodeHostSettings, withHostSettings } from '../hostsettings/node-host-settings.ts';
import { hostPaths, kubeDir } from '../servicesmanifest/host-paths.ts';
import {
  defaultNodeNetwork,
  kubeProxyNetwork,
  type NodeNetwork,
  needsSourceVip,
  runsFlanneld,
  runsHybridOverlay,
} from '../servicesmanifest/node-network.ts';
import type {
  ManifestFile,
  ManifestLogRunner,
  ManifestService,
  ServicesManifest,
} from '../servicesmanifest/services-manifest.ts';
import {
  logRunnerFileName,
  logRunnerPrograms,
  operatorInstalledFiles,
  type Payload,
  type PayloadFile,
  serviceShimFileName,
} from './payload.ts';

/** Where each known payload file is installed. CNI plugins go to C:\k\cni\bin. */
export function installPath(name: string): string {
  const lower = name.toLowerCase();
  // ctr.exe, containerd's client, beside it (the agent's pre-pull runs it).
  if (lower === 'containerd.exe' || lower === 'ctr.exe' || lower.startsWith('containerd-shim'))
    return `${hostPaths.containerdDir}\\${name}`;
  if (
    [
      'win-bridge.exe',
      'win-overlay.exe',
      'host-local.exe',
      'sdnbridge.exe',
      'sdnoverlay.exe',
      'flannel.exe',
    ].includes(lower)
  ) {
    return `${hostPaths.cniBin}\\${name}`;
  }
  return `${kubeDir}\\${name}`;
}

/** A service of a payload file. */
type ServiceTemplate = Omit<ManifestService, 'binary' | 'logRunner'>;

/**
 * How kube-log-runner.exe (v0.36.5) keeps the log of a program of logRunnerPrograms, which logs
 * only to standard error (a service has none), as WMCO and the Kubernetes GCE Windows nodes run
 * the kubelet and kube-proxy: C:\k\logs\<service>.log, rotated at 100 MB (-log-file-size, a
 * resource.Quantity; its default 0 never rotates), rotated files removed after 7 days
 * (-log-file-age, a Go duration).
 */
export function serviceLog(serviceName: string): Omit<ManifestLogRunner, 'binary'> {
  return { logFile: `${hostPaths.logs}\\${serviceName}.log`, maxSize: '100M', maxAge: '168h' };
}

const serviceTemplates: Record<string, ServiceTemplate> = {
  'containerd.exe': {
    name: 'containerd',
    displayName: 'containerd container runtime',
    description: 'Runs the containers of Kubernetes pods (winfleet)',
    args: [
      '--run-service',
      '--config',
      hostPaths.containerdConfig,
      '--log-file',
      `${hostPaths.logs}\\containerd.log`,
    ],
    dependencies: [],
    priority: 0,
    bootstrap: true,
  },
  'kubelet.exe': {
    name: 'kubelet',
    displayName: 'Kubernetes kubelet',
    description: 'Registers this host as a Kubernetes node and runs its pods (winfleet)',
    args: [
      `--config=${hostPaths.kubeletConfig}`,
      `--bootstrap-kubeconfig=${hostPaths.bootstrapKubeconfig}`,
      `--kubeconfig=${hostPaths.kubeconfig}`,
      `--cert-dir=${hostPaths.certDir}`,
      '--hostname-override={{nodeName}}',
      '--node-ip={{nodeIP}}',
      '--node-labels={{nodeLabels}}',
      '--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS',
      '--windows-service',
      '--v=2',
    ],
    dependencies: ['containerd'],
    priority: 1,
    bootstrap: true,
  },
  'kube-proxy.exe': {
    name: 'kube-proxy',
    displayName: 'Kubernetes kube-proxy',
    description: 'Programs Service load balancing on this node (winfleet)',
    args: [
      '--windows-service',
      // Its own credentials (system:node-proxier): the node's cannot list EndpointSlices.
      `--kubeconfig=${hostPaths.kubeProxyKubeconfig}`,
      '--hostname-override={{nodeName}}',
      '--proxy-mode=kernelspace',
      // Without it (or KUBE_NETWORK) kube-proxy on Windows exits at start; the mode's network
      // (servicesManifestFor), and --source-vip={{sourceVip}} after it on an overlay.
      '--network-name={{network}}',
      // The cluster-wide pod CIDR (config hosts.podCIDR), not the node's.
      '--cluster-cidr={{podCIDR}}',
      '--v=2',
    ],
    dependencies: ['kubelet'],
    priority: 2,
    bootstrap: false,
  },
  // The flannel modes only (servicesManifestFor: flannel-vxlan, flannel-host-gw): flanneld.exe (flannel-io/flannel) with the kube
  // subnet manager, as RKE2 runs it on Windows (pkg/windows/flannel.go), with the node's own
  // credentials (the Node authorizer lets it patch its own Node's annotations, list and watch
  // Nodes). It has no Windows service support: winfleet-service.exe runs it.
  'flanneld.exe': {
    name: 'flanneld',
    displayName: 'flanneld',
    description: 'Joins this node to the cluster’s Flannel VXLAN pod network (winfleet)',
    args: [
      '--kube-subnet-mgr',
      `--kubeconfig-file=${hostPaths.kubeconfig}`,
      '--iface={{nodeIP}}',
      `--net-config-path=${kubeDir}\\flannel\\net-conf.json`,
      // Where flannel's CNI plugin reads it (flannelCniConfig's subnetFile).
      `--subnet-file=${hostPaths.flannelSubnetFile}`,
      '--ip-masq=false',
    ],
    env: { NODE_NAME: '{{nodeName}}' },
    dependencies: ['kubelet'],
    priority: 2,
    bootstrap: false,
  },
  // ovn-hybrid only: hybrid-overlay-node.exe (ovn-org/ovn-kubernetes go-controller/hybrid-overlay,
  // cmd/hybrid-overlay-node), as WMCO runs it (pkg/services/services.go
  // hybridOverlayConfiguration): --node and --windows-service (its own service support), its log
  // file (--logfile, pkg/config/config.go), and the API server through a kubeconfig
  // (--k8s-kubeconfig): the node's own, as for flanneld, where WMCO gives it a certificate of its
  // own (--bootstrap-kubeconfig, --cert-dir). It lists and watches Nodes and patches its own
  // Node's annotations (node_windows.go initSelf). winfleet cannot build it (its module is not
  // served here): the payload must carry it (servicesManifestFor refuses otherwise).
  'hybrid-overlay-node.exe': {
    name: 'hybrid-overlay-node',
    displayName: 'hybrid-overlay-node',
    description: 'Joins this node to OVN-Kubernetes’ hybrid overlay pod network (winfleet)',
    args: [
      '--node={{nodeName}}',
      `--k8s-kubeconfig=${hostPaths.kubeconfig}`,
      '--windows-service',
      `--logfile=${hostPaths.logs}\\hybrid-overlay-node.log`,
    ],
    dependencies: ['kubelet'],
    priority: 2,
    bootstrap: false,
  },
  'csi-proxy.exe': {
    name: 'csi-proxy',
    displayName: 'CSI Proxy',
    description: 'Lets containerized CSI node plugins manage storage on this host (winfleet)',
    args: ['-windows-service', `-log_file=${hostPaths.logs}\\csi-proxy.log`, '-logtostderr=false'],
    dependencies: [],
    priority: 2,
    bootstrap: false,
  },
  'windows_exporter.exe': {
    name: 'windows_exporter',
    displayName: 'windows_exporter',
    description: 'Exports this host’s metrics for Prometheus (winfleet)',
    // The collectors windows_exporter v0.31.3 has (pkg/collector/map.go; "cs" went in v0.30),
    // and a log file: as a service it would log to the event log.
    args: [
      '--collectors.enabled=cpu,cpu_info,container,logical_disk,memory,net,os,service,system',
      `--log.file=${hostPaths.logs}\\windows_exporter.log`,
    ],
    dependencies: [],
    priority: 3,
    bootstrap: false,
  },
};

/** Options of `servicesManifestFor`. */
interface ManifestOptions {
  kubeletPriorityClass?: string;
  hostSettings?: NodeHostSettings;
  network?: NodeNetwork;
}

/**
 * The manifest for `payload`, with `kubeletPriorityClass` in the kubelet's flags and the
 * configuration's host settings (node-host-settings.ts), each giving it its own version.
 */
export function servicesManifestFor(
  payload: Payload,
  options: ManifestOptions = {},
): ServicesManifest {
  const network = options.network ?? defaultNodeNetwork;
  const files: ManifestFile[] = [];
  const services: ManifestService[] = [];
  const proxyNetwork = kubeProxyNetwork(network);
  if (
    runsHybridOverlay(network) &&
    !payload.files.some((f) => f.name.toLowerCase() === 'hybrid-overlay-node.exe')
  )
    throw new WinfleetError(
      'WF_PAYLOAD_INVALID',
      `Payload ${payload.version} has no hybrid-overlay-node.exe, which network.mode ovn-hybrid runs on every Windows node; winfleet cannot build it: build the payload with WINFLEET_HYBRID_OVERLAY_NODE=<path of hybrid-overlay-node.exe> make payload (the file WMCO ships in its image at /payload/hybrid-overlay-node.exe, or built from ovn-org/ovn-kubernetes go-controller/hybrid-overlay/cmd/hybrid-overlay-node with GOOS=windows)`,
    );
  for (const file of payload.files) {
    // The agent and its service shim are installed by the operator itself (payload-sync.ts).
    if (operatorInstalledFiles.includes(file.name.toLowerCase())) continue;
    const path = installPath(file.name);
    files.push({ payload: file.name, path, sha256: file.sha256 });
    const template = serviceTemplates[file.name.toLowerCase()];
    const lower = file.name.toLowerCase();
    if (template && wantedService(lower, network, proxyNetwork)) {
      const args = serviceArgs(template, lower, network, proxyNetwork, options);
      services.push(payloadService(payload, file, template, args, path, files));
    }
  }
  // Dependencies on services this payload does not carry are dropped (e.g. no containerd in a test payload).
  const present = new Set(services.map((s) => s.name));
  for (const s of services) s.dependencies = s.dependencies.filter((d) => present.has(d));
  return withHostSettings(
    {
      version: manifestVersion(payload, options, network),
      services,
      files,
      ...(network.mode === 'routed' ? {} : { network }),
    },
    options.hostSettings,
  );
}

/** Whether the network mode runs a payload file's service (other modes' are left out). */
function wantedService(
  lower: string,
  network: NodeNetwork,
  proxyNetwork: string | undefined,
): boolean {
  // Services of other modes are left out (their binaries are installed all the same).
  return (
    (lower !== 'flanneld.exe' || runsFlanneld(network)) &&
    (lower !== 'hybrid-overlay-node.exe' || runsHybridOverlay(network)) &&
    (lower !== 'kube-proxy.exe' || proxyNetwork !== undefined)
  );
}

/** A template's arguments with the VXLAN port, kubelet priority class and kube-proxy network filled in. */
function serviceArgs(
  template: ServiceTemplate,
  lower: string,
  network: NodeNetwork,
  proxyNetwork: string | undefined,
  options: ManifestOptions,
): string[] {
  const vxlanPort = network.mode === 'ovn-hybrid' ? network.vxlanPort : undefined;
  return template.args.flatMap((a) => {
    if (a === '--windows-service' && lower === 'hybrid-overlay-node.exe' && vxlanPort)
      return [a, `--hybrid-overlay-vxlan-port=${vxlanPort}`];
    if (a.startsWith('--windows-priorityclass=') && options.kubeletPriorityClass)
      return [`--windows-priorityclass=${options.kubeletPriorityClass}`];
    if (a === '--network-name={{network}}') {
      const vip = needsSourceVip(network) ? ['--source-vip={{sourceVip}}'] : [];
      return [`--network-name=${proxyNetwork}`, ...vip];
    }
    return [a];
  });
}

/**
 * The service of one payload file: flanneld under the service shim (whose file it adds to
 * `files`), the programs that need one under the log runner, others as they are.
 */
function payloadService(
  payload: Payload,
  file: PayloadFile,
  template: ServiceTemplate,
  args: string[],
  path: string,
  files: ManifestFile[],
): ManifestService {
  const lower = file.name.toLowerCase();
  if (lower === 'flanneld.exe') {
    const shim = payload.files.find((f) => f.name.toLowerCase() === serviceShimFileName);
    if (!shim)
      throw new WinfleetError(
        'WF_PAYLOAD_INVALID',
        `Payload ${payload.version} has flanneld.exe but not ${serviceShimFileName}, which runs it as a service; rebuild the payload with make payload`,
      );
    const shimPath = `${kubeDir}\\${shim.name}`;
    if (!files.some((f) => f.path === shimPath))
      files.push({ payload: shim.name, path: shimPath, sha256: shim.sha256 });
    return {
      ...template,
      args,
      binary: path,
      serviceShim: {
        binary: shimPath,
        logDir: `${hostPaths.logs}\\${template.name}`,
        stopTimeout: '10s',
      },
    };
  }
  const runner = payload.files.find((f) => f.name.toLowerCase() === logRunnerFileName);
  const logged = logRunnerPrograms.includes(file.name.toLowerCase());
  if (logged && !runner)
    throw new WinfleetError(
      'WF_PAYLOAD_INVALID',
      `Payload ${payload.version} has ${file.name} but not ${logRunnerFileName}, which keeps its log (a service has no console); rebuild the payload with make payload`,
    );
  return {
    ...template,
    args,
    binary: path,
    ...(logged && runner
      ? { logRunner: { binary: installPath(runner.name), ...serviceLog(template.name) } }
      : {}),
  };
}

/** The manifest's version: the payload's, then the kubelet priority class and network mode when not the defaults. */
function manifestVersion(payload: Payload, options: ManifestOptions, network: NodeNetwork): string {
  // A different kubelet priority class is a different manifest, so it gets its own version.
  const priority = options.kubeletPriorityClass ?? 'ABOVE_NORMAL_PRIORITY_CLASS';
  const suffix =
    priority === 'ABOVE_NORMAL_PRIORITY_CLASS'
      ? ''
      : `-${priority
          .replace(/_PRIORITY_CLASS$/, '')
          .replace('_', '')
          .toLowerCase()}`;
  // A network mode other than routed is its own manifest too.
  const networkSuffix =
    network.mode === 'routed'
      ? ''
      : `-n${createHash('sha256').update(JSON.stringify(network)).digest('hex').slice(0, 8)}`;
  return `${payload.version}${suffix}${networkSuffix}`;
}
