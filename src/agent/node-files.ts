/**
 * The configuration files a Windows node needs, rendered from the node settings: the
 * bootstrap kubeconfig, the KubeletConfiguration, containerd's config and the CNI config.
 * Kubelet settings follow the seeds and WMCO: the Windows taint registered by the kubelet,
 * system-reserved sized for Windows, no QoS cgroups, no node-allocatable enforcement, and
 * containerd over its named pipe.
 */
import { stringify } from 'yaml';
import type { NodeVariable } from '../servicesmanifest/services-manifest.ts';
import { type BootstrapConfig, kubeDir, type NodeSettings, paths } from './agent-config.ts';

export function bootstrapKubeconfig(config: BootstrapConfig): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'cluster',
        cluster: {
          server: config.apiServer,
          'certificate-authority-data': Buffer.from(config.caCertificate).toString('base64'),
        },
      },
    ],
    users: [{ name: 'kubelet-bootstrap', user: { token: config.bootstrapToken } }],
    contexts: [{ name: 'bootstrap', context: { cluster: 'cluster', user: 'kubelet-bootstrap' } }],
    'current-context': 'bootstrap',
  });
}

export function kubeletConfiguration(settings: NodeSettings): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    authentication: {
      x509: { clientCAFile: paths.caCert },
      webhook: { enabled: true },
      anonymous: { enabled: false },
    },
    authorization: { mode: 'Webhook' },
    clusterDNS: [settings.clusterDNS],
    clusterDomain: settings.clusterDomain,
    containerRuntimeEndpoint: 'npipe://./pipe/containerd-containerd',
    imageServiceEndpoint: 'npipe://./pipe/containerd-containerd',
    registerWithTaints: settings.taints.map((t) => ({
      key: t.key,
      ...(t.value !== undefined ? { value: t.value } : {}),
      effect: t.effect,
    })),
    systemReserved: settings.kubelet.systemReserved,
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    maxPods: settings.kubelet.maxPods,
    rotateCertificates: true,
    serverTLSBootstrap: true,
    resolvConf: '',
    hairpinMode: 'promiscuous-bridge',
    evictionHard: { 'memory.available': '500Mi', 'nodefs.available': '10%' },
  });
}

export function containerdConfig(): string {
  return [
    'version = 2',
    `root = "C:\\\\ProgramData\\\\containerd\\\\root"`,
    `state = "C:\\\\ProgramData\\\\containerd\\\\state"`,
    '',
    '[grpc]',
    '  address = "\\\\\\\\.\\\\pipe\\\\containerd-containerd"',
    '',
    '[plugins."io.containerd.grpc.v1.cri".cni]',
    `  bin_dir = "${kubeDir.replaceAll('\\', '\\\\')}\\\\cni\\\\bin"`,
    `  conf_dir = "${kubeDir.replaceAll('\\', '\\\\')}\\\\cni\\\\config"`,
    '',
  ].join('\n');
}

export function cniConfig(settings: NodeSettings): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'winfleet',
      plugins: [
        {
          type: 'sdnbridge',
          capabilities: { portMappings: true, dns: true },
          ipam: { type: 'host-local', subnet: settings.podCIDR },
          dns: { Nameservers: [settings.clusterDNS], Search: [`svc.${settings.clusterDomain}`] },
          AdditionalArgs: [
            {
              Name: 'EndpointPolicy',
              Value: {
                Type: 'OutBoundNAT',
                Settings: { Exceptions: [settings.serviceCIDR, settings.podCIDR] },
              },
            },
          ],
        },
      ],
    },
    null,
    2,
  );
}

/** The values of {{variables}} in service arguments for this node. */
export function nodeVariableValues(settings: NodeSettings): Record<NodeVariable, string> {
  return {
    nodeName: settings.nodeName,
    nodeIP: settings.nodeIP,
    nodeLabels: Object.entries(settings.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    hostname: settings.hostname,
    kubeDir,
    clusterDNS: settings.clusterDNS,
    clusterDomain: settings.clusterDomain,
    serviceCIDR: settings.serviceCIDR,
    podCIDR: settings.podCIDR,
    apiServer: settings.apiServer,
  };
}
