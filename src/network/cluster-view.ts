/**
 * What the cluster shows of its pod network, as plain data: the view detect-cluster-network.ts
 * decides on (a pure function, so every rule is unit-tested without a cluster) and
 * read-cluster-network.ts fills from the API server. Each DaemonSet is reduced to what tells a
 * CNI apart: its name and namespace, the OS its pods are placed on (nodeSelector or required
 * node affinity on `kubernetes.io/os`, the label the kubelet sets: k8s.io/api
 * core/v1 well_known_labels.go `LabelOSStable`), whether it runs HostProcess pods
 * (`securityContext.windowsOptions.hostProcess`, KEP-1981), its images, its hostPath volumes
 * (where it writes on the node) and the ConfigMaps it mounts.
 */
import type * as k8s from '@kubernetes/client-node';

/** @package */
export interface DaemonSetView {
  namespace: string;
  name: string;
  /** The OS its pods are placed on: from nodeSelector or required node affinity; any: neither says. */
  os: 'windows' | 'linux' | 'any';
  /** Any of its pods' containers is a HostProcess container. */
  hostProcess: boolean;
  /** Every image of its containers and init containers. */
  images: string[];
  /** hostPath volumes: volume name → path on the node. */
  hostPaths: Record<string, string>;
  /** ConfigMaps mounted as volumes. */
  configMaps: string[];
}

/** @package */
export interface ConfigMapView {
  namespace: string;
  name: string;
  data: Record<string, string>;
}

/** An object the reader looked for: found, not there (no such object or API), or not readable. */
export type Lookup<T> =
  | { state: 'found'; object: T }
  | { state: 'absent' }
  | { state: 'unreadable'; why: string };

export interface ClusterView {
  /** Every DaemonSet of every namespace. */
  daemonSets: DaemonSetView[];
  /**
   * The flannel ConfigMaps read, in the order looked at (configured namespace, or kube-flannel
   * then kube-system); with what was tried, for messages.
   */
  flannelConfigMaps: ConfigMapView[];
  /** Where the flannel ConfigMap was looked for: "kube-flannel/kube-flannel-cfg, kube-system/kube-flannel-cfg". */
  flannelLookedAt: string[];
  /** Tigera operator's Installation `default` (operator.tigera.io/v1). */
  tigeraInstallation: Lookup<unknown>;
  /** OpenShift's Network `cluster` (operator.openshift.io/v1). */
  openshiftNetwork: Lookup<unknown>;
}

const osLabels = ['kubernetes.io/os', 'beta.kubernetes.io/os'];

/** The OS a pod template is placed on. */
function placementOs(spec: k8s.V1PodSpec | undefined): DaemonSetView['os'] {
  for (const label of osLabels) {
    const value = spec?.nodeSelector?.[label];
    if (value === 'windows' || value === 'linux') return value;
  }
  const terms =
    spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
      ?.nodeSelectorTerms ?? [];
  // Terms are ORed: the set is one OS only when every term requires that same OS.
  const perTerm = terms.map((term) => {
    const values = (term.matchExpressions ?? [])
      .filter((e) => osLabels.includes(e.key) && e.operator === 'In')
      .flatMap((e) => e.values ?? []);
    return values.length === 1 && (values[0] === 'windows' || values[0] === 'linux')
      ? values[0]
      : 'any';
  });
  if (perTerm.length > 0 && perTerm.every((os) => os === perTerm[0]) && perTerm[0] !== 'any')
    return perTerm[0] as 'windows' | 'linux';
  return 'any';
}

/** A DaemonSet as the detection sees it. */
export function daemonSetView(ds: k8s.V1DaemonSet): DaemonSetView {
  const spec = ds.spec?.template?.spec;
  const containers = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
  const hostPaths: Record<string, string> = {};
  const configMaps: string[] = [];
  for (const volume of spec?.volumes ?? []) {
    if (volume.hostPath?.path !== undefined) hostPaths[volume.name] = volume.hostPath.path;
    if (volume.configMap?.name) configMaps.push(volume.configMap.name);
  }
  return {
    namespace: ds.metadata?.namespace ?? '',
    name: ds.metadata?.name ?? '',
    os: placementOs(spec),
    hostProcess:
      spec?.securityContext?.windowsOptions?.hostProcess === true ||
      containers.some((c) => c.securityContext?.windowsOptions?.hostProcess === true),
    images: containers.map((c) => c.image ?? '').filter((i) => i !== ''),
    hostPaths,
    configMaps,
  };
}

/** namespace/name */
export const refOf = (o: { namespace: string; name: string }) => `${o.namespace}/${o.name}`;

/**
 * A string from the cluster as a message may quote it: control characters shown as "?", cut
 * to `max` characters. What a ConfigMap or custom resource holds is user input; a message
 * (a condition's, an Event's, the check's) must stay short and on one line.
 * @package
 */
export function shown(text: string, max = 40): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: they are what is replaced
  const printable = text.replace(/[\x00-\x1f\x7f]/g, '?');
  return printable.length > max ? `${printable.slice(0, max)}…` : printable;
}
