/**
 * Test support (no product code imports it): clusters as the network detection sees them,
 * built from the objects each CNI's upstream manifests or operator create (names, namespaces,
 * placement, hostPath volumes as in cni-signatures.ts and detect-cluster-network.ts).
 */

import type { NetworkConfig } from '../config/winfleet-config.ts';
import type { ClusterView, ConfigMapView, DaemonSetView } from './cluster-view.ts';
import { type DetectOptions, detectClusterNetwork } from './detect-cluster-network.ts';

/** @package */
export function daemonSet(
  ref: string,
  options: Partial<Omit<DaemonSetView, 'namespace' | 'name'>> = {},
): DaemonSetView {
  const [namespace, name] = ref.split('/') as [string, string];
  return {
    namespace,
    name,
    os: 'linux',
    hostProcess: false,
    images: [],
    hostPaths: {},
    configMaps: [],
    ...options,
  };
}

export function netConf(backend: object, network = '10.244.0.0/16'): string {
  return JSON.stringify({ Network: network, Backend: backend });
}

export function flannelConfigMap(text: string, namespace = 'kube-flannel'): ConfigMapView {
  return { namespace, name: 'kube-flannel-cfg', data: { 'net-conf.json': text } };
}

export function view(parts: Partial<ClusterView> = {}): ClusterView {
  return {
    daemonSets: [],
    flannelConfigMaps: [],
    flannelLookedAt: ['kube-flannel/kube-flannel-cfg', 'kube-system/kube-flannel-cfg'],
    tigeraInstallation: { state: 'absent' },
    openshiftNetwork: { state: 'absent' },
    ...parts,
  };
}

/** network of winfleet-config with the defaults, `overrides` on top. */
export function networkConfig(
  overrides: {
    mode?: NetworkConfig['mode'];
    external?: Partial<NetworkConfig['external']>;
    flannel?: NetworkConfig['flannel'];
  } = {},
): NetworkConfig {
  return {
    mode: overrides.mode ?? 'auto',
    flannel: overrides.flannel ?? { configMap: { name: 'kube-flannel-cfg' } },
    external: {
      cniConfDir: 'C:\\etc\\cni\\net.d',
      cniBinDir: 'C:\\opt\\cni\\bin',
      kubeProxy: 'auto',
      ...overrides.external,
    },
  };
}

export function detect(v: ClusterView, config: NetworkConfig = networkConfig()) {
  const options: DetectOptions = {
    flannelConfigMap: config.flannel.configMap,
    ...(config.external.daemonSet ? { externalDaemonSet: config.external.daemonSet } : {}),
  };
  return detectClusterNetwork(v, options);
}

// The clusters, as upstream installs them.
export const flannelDs = daemonSet('kube-flannel/kube-flannel-ds', {
  images: ['docker.io/flannel/flannel:v0.28.10', 'docker.io/flannel/flannel-cni-plugin:v1.8.0'],
  configMaps: ['kube-flannel-cfg'],
});
/** @package */
export const flannelWindowsDs = daemonSet('kube-flannel/kube-flannel-ds-windows-amd64', {
  os: 'windows',
  hostProcess: true,
  images: ['sigwindowstools/flannel:v0.21.5-hostprocess'],
});
export const calicoDs = daemonSet('calico-system/calico-node', {
  images: ['quay.io/calico/node:v3.31.0'],
});
export const calicoWindowsDs = daemonSet('calico-system/calico-node-windows', {
  os: 'windows',
  hostProcess: true,
  images: ['quay.io/calico/node-windows:v3.31.0'],
  hostPaths: { 'cni-bin-dir': '/opt/cni/bin', 'cni-net-dir': '/etc/cni/net.d' },
});
export const antreaDs = daemonSet('kube-system/antrea-agent', {
  images: ['antrea/antrea-agent-ubuntu:v2.4.0'],
});
export const antreaWindowsDs = daemonSet('kube-system/antrea-agent-windows', {
  os: 'windows',
  hostProcess: true,
  images: ['antrea/antrea-windows:v2.4.0'],
  hostPaths: { 'var-log-antrea': '/var/log/antrea/' },
});
/** @package */
export const ciliumDs = daemonSet('kube-system/cilium', {
  images: ['quay.io/cilium/cilium:v1.18.0'],
});
/** @package */
export const ovnDs = daemonSet('openshift-ovn-kubernetes/ovnkube-node');
export const kubeProxyWindowsDs = daemonSet('kube-system/kube-proxy-windows', {
  os: 'windows',
  hostProcess: true,
  images: ['sigwindowstools/kube-proxy:v1.34.0-calico-hostprocess'],
});

/** Installation default as the Tigera operator leaves it with Windows on. */
export function tigeraInstallation(spec: object = {}): ClusterView['tigeraInstallation'] {
  return {
    state: 'found',
    object: {
      apiVersion: 'operator.tigera.io/v1',
      kind: 'Installation',
      metadata: { name: 'default' },
      spec: {
        calicoNetwork: {
          windowsDataplane: 'HNS',
          ipPools: [{ cidr: '192.168.0.0/16', encapsulation: 'VXLAN' }],
        },
        serviceCIDRs: ['10.96.0.0/12'],
        ...spec,
      },
    },
  };
}
