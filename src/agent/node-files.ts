/**
 * The configuration files a Windows node needs, rendered from the node settings: the
 * bootstrap kubeconfig, the KubeletConfiguration, containerd's config and the CNI config.
 * Kubelet settings follow the seeds and WMCO: the Windows taint registered by the kubelet,
 * system-reserved sized for Windows, no QoS cgroups, no node-allocatable enforcement, and
 * containerd over its named pipe.
 */

import type * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { WinfleetError } from '../errors/catalog.ts';
import { cidrCovers, formatIpv4, formatIpv4Cidr, parseIpv4Cidr } from '../net/ipv4-cidr.ts';
import { cniNetworkName, hostPaths } from '../servicesmanifest/host-paths.ts';
import {
  defaultNodeNetwork,
  type NodeNetwork,
  ovnHybrid,
} from '../servicesmanifest/node-network.ts';
import type { NodeVariable } from '../servicesmanifest/services-manifest.ts';
import { hyperVHandler, hyperVIsolationLabel } from '../windows/isolation.ts';
import { type BootstrapConfig, kubeDir, type NodeSettings, paths } from './agent-config.ts';

/**
 * A kubeconfig with everything inline: one cluster (`server`, its CA as PEM), one user
 * (`user`'s fields: a token, or client-certificate-data and client-key-data), and the context
 * joining them. The bootstrap kubeconfig and kube-proxy's are both this shape.
 * @package
 */
export function inlineKubeconfig(options: {
  server: string;
  caPem: string;
  userName: string;
  contextName: string;
  user: Record<string, string>;
}): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'cluster',
        cluster: {
          server: options.server,
          'certificate-authority-data': Buffer.from(options.caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: options.userName, user: options.user }],
    contexts: [
      { name: options.contextName, context: { cluster: 'cluster', user: options.userName } },
    ],
    'current-context': options.contextName,
  });
}

/** @package */
export function bootstrapKubeconfig(config: BootstrapConfig): string {
  return inlineKubeconfig({
    server: config.apiServer,
    caPem: config.caCertificate,
    userName: 'kubelet-bootstrap',
    contextName: 'bootstrap',
    user: { token: config.bootstrapToken },
  });
}

/** @package */
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
    // Graceful node shutdown on Windows (KEP-4802, WindowsGracefulNodeShutdown, beta and on by
    // default from 1.34): without a grace period the kubelet's shutdown manager is a stub
    // (nodeshutdown_manager_windows.go NewManager: "disabled as no shutdown grace period is
    // configured"), so a reboot nobody drained (an administrator's, Windows Update's) kills
    // pods without their termination grace. With it the kubelet (a service through
    // --windows-service, even as kube-log-runner.exe's child) accepts SERVICE_CONTROL_PRESHUTDOWN,
    // raises its service's preshutdown timeout to the total (40 s) and ends regular pods in the
    // first 30 s, critical ones in the last 10 s. Older kubelets ignore it (gate off).
    shutdownGracePeriod: '40s',
    shutdownGracePeriodCriticalPods: '10s',
  });
}

/**
 * containerd's config.toml: its named pipe, registry hosts, and the CNI directories of the
 * node's network mode: winfleet's own (C:\k\cni) unless the cluster's CNI brings its Windows
 * agent (external), whose DaemonSet installs into the directories it names (Calico's
 * Installation.spec.windowsNodes.cniConfigDir and cniBinDir, Antrea's C:\etc\cni\net.d and
 * C:\opt\cni\bin).
 *
 * With `hyperV` (the host's pool allows Hyper-V isolation: its Node's label
 * winfleet.io/hyperv-isolation=true) it also declares the CRI runtime handler
 * runhcs-wcow-hypervisor: the runhcs shim (runtime_type io.containerd.runhcs.v1) with
 * SandboxIsolation = 1, hcsshim's HYPERVISOR (cmd/containerd-shim-runhcs-v1/options
 * runhcs.proto), as containerd's own Windows Hyper-V CI configures it; the default
 * process-isolated runhcs-wcow-process is declared beside it, so that naming runtimes keeps it.
 */
export function containerdConfig(
  network: NodeNetwork = defaultNodeNetwork,
  options: { hyperV?: boolean } = {},
): string {
  const toml = (path: string) => path.replaceAll('\\', '\\\\');
  const binDir =
    network.mode === 'external' ? toml(network.cniBinDir) : `${toml(kubeDir)}\\\\cni\\\\bin`;
  const confDir =
    network.mode === 'external' ? toml(network.cniConfDir) : `${toml(kubeDir)}\\\\cni\\\\config`;
  return [
    'version = 2',
    `root = "C:\\\\ProgramData\\\\containerd\\\\root"`,
    `state = "C:\\\\ProgramData\\\\containerd\\\\state"`,
    '',
    '[grpc]',
    '  address = "\\\\\\\\.\\\\pipe\\\\containerd-containerd"',
    '',
    '[plugins."io.containerd.grpc.v1.cri".cni]',
    `  bin_dir = "${binDir}"`,
    `  conf_dir = "${confDir}"`,
    '',
    // Registry mirrors and their CAs: one hosts.toml directory per registry (host-settings.ts).
    '[plugins."io.containerd.grpc.v1.cri".registry]',
    `  config_path = "${hostPaths.containerdCertsDir.replaceAll('\\', '\\\\')}"`,
    '',
    ...(options.hyperV ? hyperVRuntimes : []),
  ].join('\n');
}

const criRuntimes = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes';
const hyperVRuntimes = [
  '[plugins."io.containerd.grpc.v1.cri".containerd]',
  '  default_runtime_name = "runhcs-wcow-process"',
  '',
  `${criRuntimes}.runhcs-wcow-process]`,
  '  runtime_type = "io.containerd.runhcs.v1"',
  '',
  `${criRuntimes}.${hyperVHandler}]`,
  '  runtime_type = "io.containerd.runhcs.v1"',
  '',
  `${criRuntimes}.${hyperVHandler}.options]`,
  '  SandboxIsolation = 1',
  '',
];

/** Whether Node (or bootstrap) labels carry winfleet.io/hyperv-isolation=true. */
export function hyperVLabelled(labels: Record<string, string> | undefined): boolean {
  return labels?.[hyperVIsolationLabel] === 'true';
}

/** Whether a config.toml declares the Hyper-V handler (containerdConfig with hyperV). */
export function declaresHyperV(configToml: string | undefined): boolean {
  return (configToml ?? '').includes(`${criRuntimes}.${hyperVHandler}]`);
}

/** This node's pod subnet, checked: the CIDR in canonical form and its gateway address. */
export interface NodePodSubnet {
  cidr: string;
  /** The subnet's first address: the HNS network's gateway, which host-local never hands out. */
  gateway: string;
}

/**
 * Checks a Node's spec.podCIDR (written by the controller manager, so read as untrusted input)
 * against the cluster's pod CIDR (config hosts.podCIDR, `settings.podCIDR`): an IPv4 network
 * address with no host bits, at most /30 (host-local needs room after the gateway) and inside
 * the cluster CIDR. Throws a WinfleetError naming the field and the fix.
 * @package
 */
export function nodePodSubnet(settings: NodeSettings, nodePodCIDR: string): NodePodSubnet {
  const cluster = parseIpv4Cidr(settings.podCIDR);
  if (!cluster) {
    throw new WinfleetError(
      'WF_AGENT_CONFIG_INVALID',
      `The cluster pod CIDR (hosts.podCIDR) "${settings.podCIDR}" is not an IPv4 CIDR; fix it in the winfleet configuration`,
    );
  }
  const node = parseIpv4Cidr(nodePodCIDR);
  if (!node || node.address !== node.network || node.prefix > 30) {
    throw new WinfleetError(
      'WF_AGENT_STEP_FAILED',
      `Node ${settings.nodeName} has spec.podCIDR ${JSON.stringify(nodePodCIDR)}, which is not an IPv4 network of /30 or larger; winfleet supports IPv4 pod networks allocated by kube-controller-manager (--allocate-node-cidrs=true --cluster-cidr=${settings.podCIDR})`,
    );
  }
  if (!cidrCovers(cluster, node)) {
    throw new WinfleetError(
      'WF_AGENT_STEP_FAILED',
      `Node ${settings.nodeName} has spec.podCIDR ${nodePodCIDR}, outside the cluster pod CIDR ${settings.podCIDR} (hosts.podCIDR); set hosts.podCIDR to kube-controller-manager's --cluster-cidr`,
    );
  }
  return { cidr: formatIpv4Cidr(node), gateway: formatIpv4(node.network + 1) };
}

/**
 * Checks the hybrid overlay subnet OVN-Kubernetes' master wrote on the Node
 * (`k8s.ovn.org/hybrid-overlay-node-subnet`, allocated from hybridClusterNetwork, which is not
 * hosts.podCIDR): read as untrusted input, an IPv4 network address with no host bits, at most
 * /30. Its first address is the hybrid overlay's gateway (node_windows.go initSelf
 * `util.NextIP(nodeSubnet.IP)`). Throws a WinfleetError naming the annotation and the fix.
 */
export function nodeHybridSubnet(settings: NodeSettings, annotation: string): NodePodSubnet {
  const node = parseIpv4Cidr(annotation);
  if (!node || node.address !== node.network || node.prefix > 30)
    throw new WinfleetError(
      'WF_AGENT_STEP_FAILED',
      `Node ${settings.nodeName} has ${ovnHybrid.subnetAnnotation} ${JSON.stringify(annotation)}, which is not an IPv4 network of /30 or larger; OVN-Kubernetes' master allocates it from hybridOverlayConfig.hybridClusterNetwork: check that setting (an IPv4 cidr and a hostPrefix of 30 or less)`,
    );
  return { cidr: formatIpv4Cidr(node), gateway: formatIpv4(node.network + 1) };
}

/**
 * This node's pod subnet in its network mode: the hybrid overlay subnet annotation in
 * ovn-hybrid, else spec.podCIDR. undefined while the Node has none; throws (RangeError) on one
 * that is not usable, naming why.
 * @package
 */
export function nodeSubnetFor(
  settings: NodeSettings,
  node: k8s.V1Node | undefined,
  network: NodeNetwork,
): NodePodSubnet | undefined {
  if (network.mode === 'ovn-hybrid') {
    const annotation = node?.metadata?.annotations?.[ovnHybrid.subnetAnnotation];
    return annotation === undefined ? undefined : nodeHybridSubnet(settings, annotation);
  }
  const podCIDR = node?.spec?.podCIDR;
  return podCIDR ? nodePodSubnet(settings, podCIDR) : undefined;
}

/**
 * The CNI network config for this node: sdnbridge, which puts pods on an HNS L2Bridge network,
 * with host-local IPAM over the node's own pod subnet (its Node's spec.podCIDR). The
 * cluster-wide pod CIDR here would make every node hand out the same addresses.
 *
 * The endpoint policies are those of windows-container-networking's own sdnbridge examples
 * (example/l2bridge.conf and example/flannel_l2bridge.conf at v0.3.2, the version the payload
 * builds):
 * - OutBoundNAT, except to the cluster pod CIDR and the service CIDR: traffic to pods and
 *   Services keeps the pod's address, traffic leaving the cluster is NATed to the node's. (The
 *   l2bridge.conf example also exempts the host's own LAN subnet; winfleet knows only the node
 *   IP, not its prefix, so that traffic is NATed.)
 * - SDNRoute with NeedEncap for the service CIDR, so Service traffic goes through the host's
 *   virtual switch, where kube-proxy programs its load balancers.
 * - SDNRoute with NeedEncap for the node IP (/32), so pods reach their own host.
 *
 * sdnbridge (non-dual-stack) passes host-local only the `type`, `subnet` and `routes` of `ipam`
 * (it re-serializes its own IpamConfig), so nothing else is written there. The default route's
 * gateway is the subnet's first address: what host-local reserves as the gateway, and what
 * sdnbridge gives the HNS network (from routes[0]).
 */
export function cniConfig(settings: NodeSettings, nodePodCIDR: string): string {
  const subnet = nodePodSubnet(settings, nodePodCIDR);
  const endpointPolicy = (Type: string, Settings: Record<string, unknown>) => ({
    Name: 'EndpointPolicy',
    Value: { Type, Settings },
  });
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: cniNetworkName,
      plugins: [
        {
          type: 'sdnbridge',
          capabilities: { portMappings: true, dns: true },
          ipam: {
            type: 'host-local',
            subnet: subnet.cidr,
            routes: [{ dst: '0.0.0.0/0', gw: subnet.gateway }],
          },
          dns: { Nameservers: [settings.clusterDNS], Search: [`svc.${settings.clusterDomain}`] },
          AdditionalArgs: [
            endpointPolicy('OutBoundNAT', {
              Exceptions: [settings.podCIDR, settings.serviceCIDR],
            }),
            endpointPolicy('SDNRoute', {
              DestinationPrefix: settings.serviceCIDR,
              NeedEncap: true,
            }),
            endpointPolicy('SDNRoute', {
              DestinationPrefix: `${settings.nodeIP}/32`,
              NeedEncap: true,
            }),
          ],
        },
      ],
    },
    null,
    2,
  );
}

/** Where flanneld reads the cluster's net-conf.json on the node (its --net-config-path). */
export const flannelNetConfPath = `${kubeDir}\\flannel\\net-conf.json`;

/**
 * The CNI config of a flannel-vxlan node: flannel's CNI plugin, which reads the subnet flanneld
 * leased (subnet.env) and delegates to win-overlay on flanneld's Overlay network flannel.<VNI>,
 * with the endpoint policies RKE2 and sig-windows-tools give it (rancher/rke2
 * pkg/windows/flannel.go flannelCniConflistTemplate): OutBoundNAT except to the cluster pod
 * CIDR and the service CIDR, SDNRoute with NeedEncap for the service CIDR, and ProviderAddress
 * the node's IP (the VXLAN tunnel's outer source). flannel sets the delegate's name and IPAM
 * itself (host-local on the leased subnet).
 *
 * The payload's flannel.exe is containernetworking/plugins v0.9.1's plugins/meta/flannel (RKE2
 * ships flannel-io/cni-plugin, which the module proxy refuses), whose CNI library (v0.8.1)
 * supports spec versions 0.1.0 to 0.4.0 and refuses any other with "incompatible CNI
 * versions", so the list is 0.4.0 (flannel hands the delegate the same version; win-overlay
 * v1.9.1 supports it). Its subnetFile and dataDir default to /run/flannel/subnet.env and
 * /var/lib/cni/flannel, which Windows resolves on the plugin's current drive: both are given
 * (flanneld gets the same --subnet-file, node-services.ts).
 */
/** The CNI spec version of flannel's config: the newest flannel.exe v0.9.1 supports. */
export const flannelCniVersion = '0.4.0';

/** @package */
export function flannelCniConfig(settings: NodeSettings, vni: number): string {
  return flannelConfigList(`flannel.${vni}`, 'win-overlay', [
    endpointPolicy('OutBoundNAT', { Exceptions: [settings.podCIDR, settings.serviceCIDR] }),
    endpointPolicy('SDNRoute', { DestinationPrefix: settings.serviceCIDR, NeedEncap: true }),
    endpointPolicy('ProviderAddress', { ProviderAddress: settings.nodeIP }),
  ]);
}

/**
 * The CNI config of a flannel-host-gw node: flannel's CNI plugin delegating to win-bridge
 * (flannel_windows.go's default delegate, containernetworking/plugins v0.9.1) on flanneld's
 * L2Bridge network. win-bridge (v1.9.1) gives each pod the lease's .2 as its gateway (the host's
 * bridge endpoint `<network>_ep` that flanneld made) and adds an OutBoundNAT exception for the
 * cluster network when flanneld's --ip-masq is on; the policies are those an l2bridge delegate
 * needs, as winfleet's sdnbridge config has them (cniConfig above): OutBoundNAT except to the
 * cluster pod CIDR and the service CIDR, SDNRoute with NeedEncap for the service CIDR (through
 * the virtual switch, where kube-proxy's load balancers are) and for the node's own IP (/32), so
 * that pods reach their host. No ProviderAddress: nothing is encapsulated.
 * @package
 */
export function flannelHostGwCniConfig(settings: NodeSettings, networkName: string): string {
  return flannelConfigList(networkName, 'win-bridge', [
    endpointPolicy('OutBoundNAT', { Exceptions: [settings.podCIDR, settings.serviceCIDR] }),
    endpointPolicy('SDNRoute', { DestinationPrefix: settings.serviceCIDR, NeedEncap: true }),
    endpointPolicy('SDNRoute', { DestinationPrefix: `${settings.nodeIP}/32`, NeedEncap: true }),
  ]);
}

/**
 * The CNI config of an ovn-hybrid node: win-overlay on hybrid-overlay-node's Overlay network
 * OVNKubernetesHybridOverlayNetwork, host-local on the Node's hybrid overlay subnet, with the
 * endpoint policies WMCO gives it (openshift/windows-machine-config-operator
 * pkg/nodeconfig/payload/payload.go networkConfTemplate): OutBoundNAT except to the service
 * CIDR, SDNRoute with NeedEncap for the service CIDR, and ProviderAddress the node's IP (WMCO
 * takes the network's ManagementIP, the host address the overlay is bound to). WMCO writes spec
 * version 0.2.0 as one network config; the same plugin is written here as a list (0.4.0, as for
 * flannel: win-overlay v1.9.1 supports both), which containerd's CNI loader reads alike. The
 * gateway host-local reserves is the subnet's first address, hybrid-overlay-node's gateway.
 * @package
 */
export function ovnHybridCniConfig(settings: NodeSettings, subnet: NodePodSubnet): string {
  return JSON.stringify(
    {
      cniVersion: flannelCniVersion,
      name: ovnHybrid.networkName,
      plugins: [
        {
          type: 'win-overlay',
          apiVersion: 2,
          capabilities: { portMappings: true, dns: true },
          ipam: {
            type: 'host-local',
            subnet: subnet.cidr,
            routes: [{ dst: '0.0.0.0/0', gw: subnet.gateway }],
          },
          dns: { Nameservers: [settings.clusterDNS], Search: [`svc.${settings.clusterDomain}`] },
          Policies: [
            endpointPolicy('OutBoundNAT', { Exceptions: [settings.serviceCIDR] }),
            endpointPolicy('SDNRoute', {
              DestinationPrefix: settings.serviceCIDR,
              NeedEncap: true,
            }),
            endpointPolicy('ProviderAddress', { ProviderAddress: settings.nodeIP }),
          ],
        },
      ],
    },
    null,
    2,
  );
}

function endpointPolicy(Type: string, Settings: Record<string, unknown>) {
  return { Name: 'EndpointPolicy', Value: { Type, Settings } };
}

/** flannel's config list: one flannel plugin delegating to `delegate` on network `name`. */
function flannelConfigList(
  name: string,
  delegate: 'win-overlay' | 'win-bridge',
  policies: ReturnType<typeof endpointPolicy>[],
): string {
  return JSON.stringify(
    {
      cniVersion: flannelCniVersion,
      name,
      plugins: [
        {
          type: 'flannel',
          subnetFile: hostPaths.flannelSubnetFile,
          dataDir: hostPaths.flannelDataDir,
          capabilities: { portMappings: true, dns: true },
          delegate: { type: delegate, apiVersion: 2, Policies: policies },
        },
      ],
    },
    null,
    2,
  );
}

/**
 * The values of {{variables}} in service arguments for this node; `sourceVip` is empty until
 * the agent reserved it (source-vip.ts).
 * @package
 */
export function nodeVariableValues(
  settings: NodeSettings,
  runtime: { sourceVip?: string } = {},
): Record<NodeVariable, string> {
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
    sourceVip: runtime.sourceVip ?? '',
  };
}
