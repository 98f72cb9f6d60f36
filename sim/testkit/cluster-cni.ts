/**
 * A CNI's cluster objects in a test cluster, as its upstream manifests make them, for the
 * operator's detection to find (src/network/detect-cluster-network.ts): Flannel's kube-flannel
 * namespace, its ConfigMap kube-flannel-cfg with net-conf.json and its DaemonSet kube-flannel-ds
 * (flannel-io/flannel Documentation/kube-flannel.yml); Calico's calico-node in calico-system
 * (the Tigera operator's). The DaemonSets select no node here (a label no node has), so kwok
 * runs no pod of theirs: what carries packets is the netlab world's real flanneld.
 */
import * as k8s from '@kubernetes/client-node';
import { isAlreadyExists } from '../../src/kube/client.ts';

async function ensureNamespace(core: k8s.CoreV1Api, name: string): Promise<void> {
  try {
    await core.createNamespace({ body: { metadata: { name } } });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}

function linuxDaemonSet(name: string, image: string): k8s.V1DaemonSet {
  return {
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          hostNetwork: true,
          nodeSelector: { 'kubernetes.io/os': 'linux', 'winfleet.io/test-cni': 'no-node' },
          containers: [{ name, image }],
        },
      },
    },
  };
}

/** Flannel's objects with this net-conf.json (default: VXLAN, VNI 4096, port 4789). */
export async function installFlannelObjects(
  kc: k8s.KubeConfig,
  netConf = '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}',
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await ensureNamespace(core, 'kube-flannel');
  const configMap = {
    metadata: { name: 'kube-flannel-cfg', namespace: 'kube-flannel' },
    data: { 'net-conf.json': netConf, 'cni-conf.json': '{"name":"cbr0","cniVersion":"0.3.1"}' },
  };
  try {
    await core.createNamespacedConfigMap({ namespace: 'kube-flannel', body: configMap });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    await core.replaceNamespacedConfigMap({
      name: 'kube-flannel-cfg',
      namespace: 'kube-flannel',
      body: configMap,
    });
  }
  try {
    await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDaemonSet({
      namespace: 'kube-flannel',
      body: linuxDaemonSet('kube-flannel-ds', 'ghcr.io/flannel-io/flannel:v0.28.10'),
    });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}

/** Calico's node DaemonSet, as the Tigera operator makes it (no Windows one). */
export async function installCalicoObjects(kc: k8s.KubeConfig): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await ensureNamespace(core, 'calico-system');
  try {
    await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDaemonSet({
      namespace: 'calico-system',
      body: linuxDaemonSet('calico-node', 'quay.io/calico/node:v3.31.0'),
    });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}

/**
 * Calico with its Windows data plane, as the Tigera operator renders it (pkg/render/windows.go):
 * calico-node in calico-system, calico-node-windows (HostProcess) mounting the CNI directories
 * C:\opt\cni\bin and C:\etc\cni\net.d as hostPath volumes, and — with `kubeProxyWindows` —
 * kube-system/kube-proxy-windows, the DaemonSet Calico's Windows guide installs. Neither
 * DaemonSet runs a pod here: the test plays calico-node-windows on the host itself.
 */
export async function installCalicoWindowsObjects(
  kc: k8s.KubeConfig,
  options: { kubeProxyWindows?: boolean } = {},
): Promise<void> {
  await installCalicoObjects(kc);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const windows = (name: string, image: string, volumes: Record<string, string>) => {
    const ds = linuxDaemonSet(name, image);
    const pod = ds.spec!.template.spec!;
    pod.nodeSelector = { 'kubernetes.io/os': 'windows', 'winfleet.io/test-cni': 'no-node' };
    pod.securityContext = {
      windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\system' },
    };
    pod.volumes = Object.entries(volumes).map(([volume, path]) => ({
      name: volume,
      hostPath: { path },
    }));
    return ds;
  };
  const create = async (namespace: string, body: k8s.V1DaemonSet) => {
    try {
      await apps.createNamespacedDaemonSet({ namespace, body });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  };
  await create(
    'calico-system',
    windows('calico-node-windows', 'quay.io/calico/node-windows:v3.31.0', {
      'cni-bin-dir': '/opt/cni/bin',
      'cni-net-dir': '/etc/cni/net.d',
    }),
  );
  if (options.kubeProxyWindows)
    await create(
      'kube-system',
      windows('kube-proxy-windows', 'sigwindowstools/kube-proxy:v1.34.0-calico-hostprocess', {}),
    );
}
