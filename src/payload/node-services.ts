/**
 * The services manifest winfleet publishes for a payload: where each binary goes on the host
 * and how each node service runs — containerd and the kubelet during bootstrap, then
 * kube-proxy, csi-proxy and windows_exporter — with the kubelet flags the seeds and WMCO use.
 */

import { type NodeHostSettings, withHostSettings } from '../hostsettings/node-host-settings.ts';
import { cniNetworkName, hostPaths, kubeDir } from '../servicesmanifest/host-paths.ts';
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
} from './payload.ts';

/** Where each known payload file is installed. CNI plugins go to C:\k\cni\bin. */
export function installPath(name: string): string {
  const lower = name.toLowerCase();
  if (lower === 'containerd.exe' || lower.startsWith('containerd-shim'))
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
      // Without it (or KUBE_NETWORK) kube-proxy on Windows exits at start.
      `--network-name=${cniNetworkName}`,
      // The cluster-wide pod CIDR (config hosts.podCIDR), not the node's.
      '--cluster-cidr={{podCIDR}}',
      '--v=2',
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

/**
 * The manifest for `payload`, with `kubeletPriorityClass` in the kubelet's flags and the
 * configuration's host settings (node-host-settings.ts), each giving it its own version.
 */
export function servicesManifestFor(
  payload: Payload,
  options: { kubeletPriorityClass?: string; hostSettings?: NodeHostSettings } = {},
): ServicesManifest {
  const files: ManifestFile[] = [];
  const services: ManifestService[] = [];
  const runner = payload.files.find((f) => f.name.toLowerCase() === logRunnerFileName);
  for (const file of payload.files) {
    // The agent and its service shim are installed by the operator itself (payload-sync.ts).
    if (operatorInstalledFiles.includes(file.name.toLowerCase())) continue;
    const path = installPath(file.name);
    files.push({ payload: file.name, path, sha256: file.sha256 });
    const template = serviceTemplates[file.name.toLowerCase()];
    if (template) {
      const args = template.args.map((a) =>
        a.startsWith('--windows-priorityclass=') && options.kubeletPriorityClass
          ? `--windows-priorityclass=${options.kubeletPriorityClass}`
          : a,
      );
      const logged = logRunnerPrograms.includes(file.name.toLowerCase());
      if (logged && !runner)
        throw new RangeError(
          `Payload ${payload.version} has ${file.name} but not ${logRunnerFileName}, which keeps its log (a service has no console); rebuild the payload with make payload`,
        );
      services.push({
        ...template,
        args,
        binary: path,
        ...(logged && runner
          ? { logRunner: { binary: installPath(runner.name), ...serviceLog(template.name) } }
          : {}),
      });
    }
  }
  // Dependencies on services this payload does not carry are dropped (e.g. no containerd in a test payload).
  const present = new Set(services.map((s) => s.name));
  for (const s of services) s.dependencies = s.dependencies.filter((d) => present.has(d));
  // A different kubelet priority class is a different manifest, so it gets its own version.
  const priority = options.kubeletPriorityClass ?? 'ABOVE_NORMAL_PRIORITY_CLASS';
  const suffix =
    priority === 'ABOVE_NORMAL_PRIORITY_CLASS'
      ? ''
      : `-${priority
          .replace(/_PRIORITY_CLASS$/, '')
          .replace('_', '')
          .toLowerCase()}`;
  return withHostSettings(
    { version: `${payload.version}${suffix}`, services, files },
    options.hostSettings,
  );
}
