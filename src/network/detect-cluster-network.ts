/**
 * What pod network the cluster runs, decided from what it shows (cluster-view.ts): which CNIs
 * (cni-signatures.ts; a look-alike outside its CNI's namespaces is ignored and listed), their
 * Windows components, Flannel's net-conf.json (flannel-net-conf.ts) from the configured
 * ConfigMap only, the Tigera operator's Installation (encapsulation and the Windows CNI
 * directories), OpenShift's hybrid overlay, and a kube-proxy DaemonSet for Windows. Pure: no
 * API calls; every `where` names the object it came from, for messages.
 *
 * Sources of the rules, beyond cni-signatures.ts:
 * - Tigera Installation: tigera/operator api/v1/installation_types.go (only the Installation
 *   named "default" is reconciled: pkg/controller/utils `DefaultInstanceKey`;
 *   spec.calicoNetwork.windowsDataplane "HNS" renders calico-node-windows, "Disabled" or unset
 *   does not; spec.windowsNodes.cniBinDir/cniConfigDir "must match" containerd's bin_dir and
 *   conf_dir); pkg/render/windows.go (calico-node-windows mounts them as hostPath volumes
 *   cni-bin-dir and cni-net-dir; `DefaultWindowsCNIDirectories`: /opt/cni/bin and
 *   /etc/cni/net.d, /k/azurecni/… on AKS, /Program Files/Amazon/EKS/cni… on EKS);
 *   pkg/controller/installation/validation.go (the IPv4 pool's encapsulation must be VXLAN or
 *   None with Windows; the first IPv4 pool counts: render.GetIPv4Pool).
 * - Antrea on Windows writes its CNI files to c:/opt/cni/bin and c:/etc/cni/net.d
 *   (build/yamls/antrea-windows-with-ovs.yml, Install-WindowsCNI.ps1) and makes a Transparent
 *   HNS network with OVS: no HNS Overlay network (pkg/agent/util/net_windows.go).
 * - OpenShift hybrid networking: Network.operator.openshift.io "cluster",
 *   spec.defaultNetwork.ovnKubernetesConfig.hybridOverlayConfig.hybridClusterNetwork; it "must
 *   be configured during the installation" (OpenShift docs, "Configuring hybrid networking").
 */
import type { ClusterView, ConfigMapView, DaemonSetView, Lookup } from './cluster-view.ts';
import { refOf, shown } from './cluster-view.ts';
import {
  type CniId,
  type CniSignature,
  cniSignatures,
  isKubeProxyWindows,
  lookalike,
} from './cni-signatures.ts';
import { type NetConfParse, parseFlannelNetConf } from './flannel-net-conf.ts';

/** @package */
export interface DetectedCni {
  id: CniId;
  title: string;
  /** Its DaemonSets (namespace/name) in the namespaces it uses. */
  daemonSets: string[];
  /** Its Windows DaemonSet (placed on Windows nodes), if it has one. */
  windows?: DaemonSetView;
  /** For messages: "DaemonSet calico-system/calico-node". */
  where: string;
}

/** Flannel's net-conf.json, from the one ConfigMap winfleet reads. */
export type FlannelDetection =
  | { state: 'read'; source: string; netConf: string; parse: NetConfParse }
  | { state: 'problem'; problem: string; fix: string };

export interface CalicoDetection {
  /** Installation "default": where it was or why not. */
  installation: 'found' | 'absent' | 'unreadable';
  installationWhy?: string;
  /** spec.calicoNetwork.windowsDataplane ("HNS", "Disabled"); undefined: not set or not read. */
  windowsDataplane?: string;
  /** The first IPv4 pool's encapsulation ("VXLAN", "None", "IPIP", …); undefined: not known. */
  encapsulation?: string;
  /** The Windows CNI directories, and where they were read. */
  cniConfDir?: string;
  cniBinDir?: string;
  dirsFrom?: string;
}

export interface OvnDetection {
  /** Hybrid overlay configured: true, false, or not known. */
  hybridOverlay: boolean | undefined;
  where: string;
  /** hybridOverlayConfig.hybridOverlayVXLANPort when set (a port number); absent: 4789. */
  vxlanPort?: number;
}

/** @package */
export interface DetectedNetwork {
  cnis: DetectedCni[];
  flannel?: FlannelDetection;
  calico?: CalicoDetection;
  ovn?: OvnDetection;
  /** A DaemonSet running kube-proxy on Windows nodes (namespace/name). */
  kubeProxyWindows?: string;
  /** network.external.daemonSet, when configured: the DaemonSet, or that it is missing. */
  externalDaemonSet?: { ref: string; daemonSet?: DaemonSetView };
  /** Look-alikes not trusted ("DaemonSet team-a/calico-node-windows: Calico runs in calico-system, kube-system"). */
  ignored: string[];
  /** How many DaemonSets were looked at. */
  daemonSetCount: number;
}

/** @package */
export interface DetectOptions {
  /** network.flannel.configMap. */
  flannelConfigMap: { namespace?: string; name: string };
  /** network.external.daemonSet ("namespace/name"). */
  externalDaemonSet?: string;
}

/** Where flannel's ConfigMap may be read: the configured namespace, else kube-flannel then kube-system. */
export function flannelConfigMapNamespaces(options: DetectOptions['flannelConfigMap']): string[] {
  return options.namespace ? [options.namespace] : ['kube-flannel', 'kube-system'];
}

/** @package */
export function detectClusterNetwork(view: ClusterView, options: DetectOptions): DetectedNetwork {
  const ignored: string[] = [];
  const found = new Map<CniId, { signature: CniSignature; all: DaemonSetView[] }>();
  let kubeProxy: string | undefined;
  for (const ds of view.daemonSets) {
    if (isKubeProxyWindows(ds)) {
      kubeProxy ??= refOf(ds);
      continue;
    }
    const signature = lookalike(ds);
    if (!signature) continue;
    if (!signature.namespaces.includes(ds.namespace)) {
      ignored.push(
        `DaemonSet ${refOf(ds)} looks like ${signature.title}'s, which runs in ${signature.namespaces.join(' or ')}: ignored`,
      );
      continue;
    }
    const entry = found.get(signature.id) ?? { signature, all: [] };
    entry.all.push(ds);
    found.set(signature.id, entry);
  }

  const flannelOptions = options.flannelConfigMap;
  const allowed = flannelConfigMapNamespaces(flannelOptions);
  const trusted: ConfigMapView[] = [];
  for (const cm of view.flannelConfigMaps) {
    if (cm.name === flannelOptions.name && allowed.includes(cm.namespace)) trusted.push(cm);
    else
      ignored.push(
        `ConfigMap ${refOf(cm)}: not where network.flannel.configMap says (${allowed.map((n) => `${n}/${flannelOptions.name}`).join(' or ')}): ignored`,
      );
  }
  const flannelDaemonSets = found.get('flannel')?.all ?? [];
  if (trusted.length > 0 && !found.has('flannel'))
    found.set('flannel', {
      signature: cniSignatures.find((s) => s.id === 'flannel')!,
      all: [],
    });

  const cnis: DetectedCni[] = [...found.values()].map(({ signature, all }) => {
    const windows = all.find(
      (ds) =>
        ds.os === 'windows' ||
        (signature.windowsName !== undefined && ds.name === signature.windowsName),
    );
    const refs = all.map(refOf);
    const configMap =
      signature.id === 'flannel' && trusted[0] ? `ConfigMap ${refOf(trusted[0])}` : undefined;
    const where = [
      ...(refs.length > 0 ? [`DaemonSet${refs.length > 1 ? 's' : ''} ${refs.join(', ')}`] : []),
      ...(configMap ? [configMap] : []),
    ].join('; ');
    return {
      id: signature.id,
      title: signature.title,
      daemonSets: refs,
      ...(windows ? { windows } : {}),
      where,
    };
  });

  const detected: DetectedNetwork = { cnis, ignored, daemonSetCount: view.daemonSets.length };
  if (kubeProxy) detected.kubeProxyWindows = kubeProxy;
  if (found.has('flannel'))
    detected.flannel = flannelNetConf(trusted, flannelDaemonSets, view.flannelLookedAt, options);
  if (found.has('calico'))
    detected.calico = calicoDetection(
      view.tigeraInstallation,
      cnis.find((c) => c.id === 'calico'),
    );
  if (found.has('ovn-kubernetes')) detected.ovn = ovnDetection(view.openshiftNetwork);
  if (options.externalDaemonSet) {
    const ref = options.externalDaemonSet;
    const daemonSet = view.daemonSets.find((ds) => refOf(ds) === ref);
    detected.externalDaemonSet = { ref, ...(daemonSet ? { daemonSet } : {}) };
  }
  return detected;
}

/** A ConfigMap's keys for a message: at most five, quoted. */
function keyList(keys: string[]): string {
  if (keys.length === 0) return 'no keys';
  const listed = keys.slice(0, 5).map((k) => `"${shown(k)}"`);
  return `${listed.join(', ')}${keys.length > 5 ? ` and ${keys.length - 5} more` : ''}`;
}

/** The one net-conf.json to go by, or why there is none. */
function flannelNetConf(
  configMaps: ConfigMapView[],
  daemonSets: DaemonSetView[],
  lookedAt: string[],
  options: DetectOptions,
): FlannelDetection {
  const { name } = options.flannelConfigMap;
  const withKey = configMaps.filter((cm) => cm.data['net-conf.json'] !== undefined);
  const mounted = [...new Set(daemonSets.flatMap((ds) => ds.configMaps))];
  if (withKey.length === 0) {
    const first = configMaps[0];
    if (first)
      return {
        state: 'problem',
        problem: `ConfigMap ${refOf(first)} has no key net-conf.json (it has ${keyList(Object.keys(first.data))})`,
        fix: `Put Flannel's network configuration under key net-conf.json of ConfigMap ${refOf(first)}, or point network.flannel.configMap at the ConfigMap flanneld reads`,
      };
    const hint = mounted.filter((m) => m !== name);
    return {
      state: 'problem',
      problem: `Flannel runs (${daemonSets.map(refOf).join(', ')}) but there is no ConfigMap ${lookedAt.join(' or ') || name}${hint.length > 0 ? `; its DaemonSet mounts ConfigMap ${hint.join(', ')}` : ''}`,
      fix: `Set network.flannel.configMap (namespace and name) to the ConfigMap with Flannel's net-conf.json${hint.length > 0 ? `, e.g. name: ${hint[0]}` : ''} (the operator's RBAC must allow reading it: the chart takes the name from config.network.flannel.configMap.name)`,
    };
  }
  let chosen = withKey[0]!;
  if (withKey.length > 1 && new Set(withKey.map((cm) => cm.data['net-conf.json'])).size > 1) {
    // Two namespaces hold different ones: the one beside flanneld's DaemonSet is flanneld's.
    const beside = withKey.filter((cm) => daemonSets.some((ds) => ds.namespace === cm.namespace));
    if (beside.length !== 1)
      return {
        state: 'problem',
        problem: `ConfigMaps ${withKey.map(refOf).join(' and ')} both hold a net-conf.json, and they differ`,
        fix: `Set network.flannel.configMap.namespace to the namespace whose ${name} flanneld reads (the namespace of its DaemonSet), or delete the stale one`,
      };
    chosen = beside[0]!;
  }
  const netConf = chosen.data['net-conf.json']!;
  return {
    state: 'read',
    source: `ConfigMap ${refOf(chosen)}`,
    netConf,
    parse: parseFlannelNetConf(netConf),
  };
}

type JsonObject = Record<string, unknown>;
const objectAt = (value: unknown, ...path: string[]): JsonObject | undefined => {
  let at: unknown = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as JsonObject)[key];
  }
  return typeof at === 'object' && at !== null && !Array.isArray(at)
    ? (at as JsonObject)
    : undefined;
};
const stringAt = (object: JsonObject | undefined, key: string): string | undefined =>
  typeof object?.[key] === 'string' ? (object[key] as string) : undefined;

/** The Tigera operator's default Windows CNI directories for a provider (DefaultWindowsCNIDirectories). */
function tigeraDefaultDirs(provider: string | undefined): { conf: string; bin: string } {
  if (provider === 'AKS') return { conf: '/k/azurecni/netconf', bin: '/k/azurecni/bin' };
  if (provider === 'EKS')
    return { conf: '/Program Files/Amazon/EKS/cni/config', bin: '/Program Files/Amazon/EKS/cni' };
  return { conf: '/etc/cni/net.d', bin: '/opt/cni/bin' };
}

function calicoDetection(
  installation: Lookup<unknown>,
  calico: DetectedCni | undefined,
): CalicoDetection {
  const detection: CalicoDetection = { installation: installation.state };
  if (installation.state === 'unreadable') detection.installationWhy = installation.why;
  const spec = installation.state === 'found' ? objectAt(installation.object, 'spec') : undefined;
  const computed =
    installation.state === 'found'
      ? objectAt(installation.object, 'status', 'computed')
      : undefined;
  const network = objectAt(spec, 'calicoNetwork') ?? objectAt(computed, 'calicoNetwork');
  const dataplane = stringAt(network, 'windowsDataplane');
  if (dataplane !== undefined) detection.windowsDataplane = shown(dataplane);
  const pools = network?.ipPools;
  if (Array.isArray(pools)) {
    const v4 = pools.find(
      (p) =>
        typeof (p as JsonObject)?.cidr === 'string' &&
        !String((p as JsonObject).cidr).includes(':'),
    ) as JsonObject | undefined;
    const encapsulation = stringAt(v4, 'encapsulation');
    if (encapsulation !== undefined) detection.encapsulation = shown(encapsulation);
  }
  const hostPaths = calico?.windows?.hostPaths;
  if (hostPaths?.['cni-net-dir'] !== undefined || hostPaths?.['cni-bin-dir'] !== undefined) {
    detection.cniConfDir = hostPaths['cni-net-dir'];
    detection.cniBinDir = hostPaths['cni-bin-dir'];
    detection.dirsFrom = `the hostPath volumes cni-net-dir and cni-bin-dir of DaemonSet ${refOf(calico!.windows!)}`;
  } else if (installation.state === 'found') {
    const windowsNodes = objectAt(spec, 'windowsNodes') ?? objectAt(computed, 'windowsNodes');
    const defaults = tigeraDefaultDirs(stringAt(spec, 'kubernetesProvider'));
    detection.cniConfDir = stringAt(windowsNodes, 'cniConfigDir') ?? defaults.conf;
    detection.cniBinDir = stringAt(windowsNodes, 'cniBinDir') ?? defaults.bin;
    detection.dirsFrom =
      'Installation default spec.windowsNodes.cniConfigDir and cniBinDir (the Tigera operator’s defaults where unset)';
  }
  return detection;
}

function ovnDetection(network: Lookup<unknown>): OvnDetection {
  const where = 'Network.operator.openshift.io cluster';
  if (network.state !== 'found')
    return {
      hybridOverlay: undefined,
      where:
        network.state === 'absent' ? `no ${where}` : `${where} could not be read (${network.why})`,
    };
  const hybrid = objectAt(
    network.object,
    'spec',
    'defaultNetwork',
    'ovnKubernetesConfig',
    'hybridOverlayConfig',
  );
  const clusterNetwork = hybrid?.hybridClusterNetwork;
  const port = hybrid?.hybridOverlayVXLANPort;
  return {
    hybridOverlay: Array.isArray(clusterNetwork) && clusterNetwork.length > 0,
    where: `${where} spec.defaultNetwork.ovnKubernetesConfig.hybridOverlayConfig`,
    ...(typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535
      ? { vxlanPort: port }
      : {}),
  };
}
