/**
 * The mode a Windows node joins the pod network with: `network.mode` of winfleet-config held
 * against what the cluster runs (detect-cluster-network.ts). Where the two disagree, or the
 * cluster's network cannot carry Windows pods, nothing is joined: the refusal names the
 * configured mode, what was seen and where, and the fix. `auto` picks the mode from the
 * cluster and never picks `routed`; `routed` (what winfleet's nodes did before modes) is taken
 * only when configured, and refused on a cluster whose CNI is known not to route each node's
 * spec.podCIDR. The operator's join and `winfleet check` both go by this, so check never
 * passes a network the mode does not join.
 *
 * Rules and their sources (upstream files as in /work/shared/design/NETWORKING.md):
 * - Flannel: flannel-net-conf.ts; a Flannel DaemonSet on Windows nodes already runs flanneld
 *   there, which winfleet's flannel modes would run a second time.
 * - Flannel host-gw: every node on one L2 segment (pkg/backend/hostgw/hostgw_windows.go refuses
 *   a public IP other than the interface's): not checkable from the cluster.
 * - Calico: the Tigera operator renders calico-node-windows only with
 *   spec.calicoNetwork.windowsDataplane: HNS (installation_types.go) and refuses an IPv4 pool
 *   encapsulation other than VXLAN or None with Windows (validation.go); windowsNodes'
 *   directories must match containerd's conf_dir and bin_dir (installation_types.go).
 * - Antrea: antrea-agent-windows (docs/windows.md); no kube-proxy on Windows since v1.13,
 *   AntreaProxy's proxyAll replaces it (docs/windows.md).
 * - kube-proxy: each winkernel kube-proxy deletes every HNS load balancer when it starts
 *   (kubernetes v1.36.5 pkg/proxy/winkernel/proxier.go:706), so two on one node undo each other.
 * - OVN-Kubernetes: hybrid networking is set when the cluster is installed and cannot be
 *   switched on after (OpenShift docs); the hybrid overlay's VNI is 4097.
 * - Routed: the network must route every node's spec.podCIDR to that node (NETWORKING.md §6);
 *   Flannel (any backend), Calico VXLAN, Antrea, OVN-Kubernetes and Canal do not.
 */

import {
  hybridOverlayVni,
  type NetworkMode,
  type NetworkResolution,
  type ResolvedNetwork,
  windowsVxlan,
} from '../api/network-mode.ts';
import { JoinFailureReason } from '../api/reasons.ts';
import type { NetworkConfig } from '../config/winfleet-config.ts';
import { normalizeWindowsDir, sameWindowsDir } from '../windows/windows-paths.ts';
import { refOf } from './cluster-view.ts';
import { cniSignatures, lookalike } from './cni-signatures.ts';
import type { DetectedCni, DetectedNetwork } from './detect-cluster-network.ts';
import { vxlanSettings, windowsVxlanProblems } from './flannel-net-conf.ts';

export type { NetworkConfig };

export type Refusal = Extract<NetworkResolution, { ok: false }>;

function refuse(
  reason:
    | typeof JoinFailureReason.NetworkModeMismatch
    | typeof JoinFailureReason.NetworkUnsupported,
  seen: string,
  fix: string,
): Refusal {
  return { ok: false, reason, seen, fix, message: `${seen}. ${fix}` };
}
const mismatch = (seen: string, fix: string) =>
  refuse(JoinFailureReason.NetworkModeMismatch, seen, fix);
const unsupported = (seen: string, fix: string) =>
  refuse(JoinFailureReason.NetworkUnsupported, seen, fix);

/** "Flannel VXLAN", "Flannel host-gw", "Flannel (backend udp)", or "Flannel" when net-conf.json was not read. */
function flannelTitle(detected: DetectedNetwork): string {
  const f = detected.flannel;
  if (f?.state !== 'read' || !f.parse.ok) return 'Flannel';
  const backend = f.parse.conf.backend;
  if (backend === 'vxlan') return 'Flannel VXLAN';
  if (backend === 'host-gw') return 'Flannel host-gw';
  return `Flannel (backend ${f.parse.conf.backendAsWritten ?? 'udp: no Backend'})`;
}

/** One CNI for messages: "Calico (DaemonSet calico-system/calico-node)". */
export function describeCni(cni: DetectedCni, detected: DetectedNetwork): string {
  if (cni.id === 'flannel') {
    const source = detected.flannel?.state === 'read' ? detected.flannel.source : undefined;
    return `${flannelTitle(detected)} (${source ?? cni.where})`;
  }
  return `${cni.title} (${cni.where})`;
}

/** Everything detected, for messages. */
export function describeDetected(detected: DetectedNetwork): string {
  if (detected.cnis.length === 0) {
    const ignored = detected.ignored.length > 0 ? `; ${detected.ignored.join('; ')}` : '';
    return `no CNI winfleet recognises (no Flannel ConfigMap, and no Flannel, Calico, Antrea, Cilium, OVN-Kubernetes, Canal, Weave Net or kube-router DaemonSet where those run, among ${detected.daemonSetCount} DaemonSet(s))${ignored}`;
  }
  return detected.cnis.map((c) => describeCni(c, detected)).join(', ');
}

/** The mode that fits the detected network, for fixes ("external"); undefined: none fits. */
function fittingMode(detected: DetectedNetwork): NetworkMode | undefined {
  if (detected.cnis.length !== 1) return undefined;
  const cni = detected.cnis[0]!;
  switch (cni.id) {
    case 'flannel': {
      if (cni.windows) return 'external';
      const f = detected.flannel;
      if (f?.state !== 'read' || !f.parse.ok) return undefined;
      if (f.parse.conf.backend === 'vxlan') return 'flannel-vxlan';
      if (f.parse.conf.backend === 'host-gw') return 'flannel-host-gw';
      return undefined;
    }
    case 'calico':
    case 'antrea':
      return 'external';
    case 'ovn-kubernetes':
      return 'ovn-hybrid';
    default:
      return undefined;
  }
}

const useMode = (detected: DetectedNetwork, instead = 'auto') => {
  const mode = fittingMode(detected);
  return mode
    ? `Set network.mode to ${mode} (or ${instead}) in winfleet-config`
    : 'Set network.mode in winfleet-config to the mode of the CNI your pods use';
};

/** Resolves `network.mode` against the cluster. */
export function resolveNetwork(
  config: NetworkConfig,
  detected: DetectedNetwork,
): NetworkResolution {
  switch (config.mode) {
    case 'auto':
      return resolveAuto(config, detected);
    case 'flannel-vxlan':
    case 'flannel-host-gw':
      return resolveFlannel(detected, config.mode);
    case 'external':
      return resolveExternal(config, detected);
    case 'ovn-hybrid':
      return resolveOvn(config, detected);
    case 'routed':
      return resolveRouted(detected);
  }
}

function resolveAuto(config: NetworkConfig, detected: DetectedNetwork): NetworkResolution {
  const seen = describeDetected(detected);
  if (detected.cnis.some((c) => c.id === 'ovn-kubernetes')) return resolveOvn(config, detected);
  if (detected.cnis.length === 0)
    return mismatch(
      `network.mode is auto, and the cluster shows ${seen}`,
      'Set network.mode in winfleet-config: routed if your network routes each node’s spec.podCIDR to that node (a router, BGP or cloud routes; winfleet cannot verify it), or external with network.external.daemonSet naming the Windows DaemonSet of a CNI winfleet does not know; or install a CNI with Windows support (Flannel VXLAN with "VNI": 4096 and "Port": 4789, Calico with the Tigera operator’s Windows data plane, Antrea with antrea-agent-windows)',
    );
  if (detected.cnis.length > 1)
    return mismatch(
      `network.mode is auto, and the cluster shows more than one CNI: ${seen}`,
      'Set network.mode in winfleet-config to the mode of the one your pods use (flannel-vxlan or flannel-host-gw for Flannel, external for Calico or Antrea), or remove the other’s leftovers',
    );
  const cni = detected.cnis[0]!;
  const signature = cniSignatures.find((s) => s.id === cni.id)!;
  if (!signature.windows) return noWindowsDataPlane(cni, detected, 'auto');
  if (cni.id === 'flannel') {
    if (cni.windows) return resolveExternal(config, detected);
    const f = detected.flannel;
    if (f?.state === 'read' && f.parse.ok && f.parse.conf.backend === 'host-gw')
      return resolveFlannel(detected, 'flannel-host-gw');
    return resolveFlannel(detected, 'flannel-vxlan', true);
  }
  return resolveExternal(config, detected);
}

function noWindowsDataPlane(cni: DetectedCni, detected: DetectedNetwork, mode: string): Refusal {
  return unsupported(
    `network.mode is ${mode}, and the cluster runs ${describeCni(cni, detected)}, which has no Windows data plane: Windows nodes cannot join its pod network`,
    cni.id === 'kube-router' || cni.id === 'cilium'
      ? `Set network.mode: routed only if ${cni.title} (or your network) routes each node's spec.podCIDR to that node without encapsulation and its IPAM uses spec.podCIDR; else use a CNI with Windows support (Flannel VXLAN, Calico, Antrea)`
      : 'Use a CNI with Windows support: Flannel VXLAN ("VNI": 4096, "Port": 4789), Calico with the Tigera operator’s Windows data plane, or Antrea',
  );
}

/** Other CNIs seen beside the one the mode uses. */
function alsoSeen(detected: DetectedNetwork, used: DetectedCni['id']): string[] {
  const others = detected.cnis.filter((c) => c.id !== used);
  return others.length === 0
    ? []
    : [
        `Also seen: ${others.map((c) => describeCni(c, detected)).join(', ')}; network.mode uses ${cniSignatures.find((s) => s.id === used)?.title}: remove the other’s leftovers if pods do not use it`,
      ];
}

/** A kube-proxy DaemonSet for Windows beside winfleet's own kube-proxy. */
function kubeProxyClash(detected: DetectedNetwork): string[] {
  return detected.kubeProxyWindows
    ? [
        `DaemonSet ${detected.kubeProxyWindows} runs kube-proxy on Windows nodes, and winfleet runs its own there: each deletes every HNS load balancer when it starts (winkernel proxier.go), so Services break. Delete the DaemonSet, or use network.mode external with network.external.kubeProxy: off`,
      ]
    : [];
}

function resolveFlannel(
  detected: DetectedNetwork,
  mode: 'flannel-vxlan' | 'flannel-host-gw',
  auto = false,
): NetworkResolution {
  const configured = auto ? 'auto' : mode;
  const flannel = detected.cnis.find((c) => c.id === 'flannel');
  if (!flannel)
    return mismatch(
      `network.mode is ${mode}, but Flannel does not run in the cluster: it shows ${describeDetected(detected)}`,
      `${useMode(detected)}, or install Flannel (${mode === 'flannel-vxlan' ? 'Backend "Type": "vxlan", "VNI": 4096, "Port": 4789' : 'Backend "Type": "host-gw"'} in net-conf.json)`,
    );
  if (flannel.windows)
    return mismatch(
      `network.mode is ${mode}, but Flannel's own Windows DaemonSet ${refOf(flannel.windows)} runs flanneld on Windows nodes, as winfleet does in ${mode}: two flanneld on one node fight over its network`,
      'Set network.mode: external to use that DaemonSet (network.external.* for its directories), or delete the DaemonSet to let winfleet run flanneld',
    );
  const f = detected.flannel;
  if (!f || f.state === 'problem')
    return unsupported(
      `network.mode is ${configured}, and Flannel runs, but its net-conf.json cannot be read: ${f?.state === 'problem' ? f.problem : 'no ConfigMap'}`,
      f?.state === 'problem' ? f.fix : 'Set network.flannel.configMap',
    );
  if (!f.parse.ok)
    return unsupported(
      `network.mode is ${configured}, but net-conf.json of ${f.source} is not valid: ${f.parse.problems.join('; ')}`,
      `Fix key net-conf.json of ${f.source} as each problem says, then restart the Flannel pods`,
    );
  const conf = f.parse.conf;
  const title = `${flannelTitle(detected)} (${f.source})`;
  const wanted = mode === 'flannel-vxlan' ? 'vxlan' : 'host-gw';
  if (conf.backend !== 'vxlan' && conf.backend !== 'host-gw')
    return unsupported(
      `network.mode is ${configured}, and the cluster runs ${title}: flanneld on Windows has only the vxlan and host-gw backends`,
      `Set "Backend": {"Type": "vxlan", "VNI": ${windowsVxlan.minVni}, "Port": ${windowsVxlan.port}} in net-conf.json of ${f.source} and restart the Flannel pods (a backend change re-creates every node's Flannel network)`,
    );
  if (conf.backend !== wanted)
    return mismatch(
      `network.mode is ${mode}, but the cluster runs ${title} (Backend.Type "${conf.backendAsWritten}")`,
      `Set network.mode: ${conf.backend === 'vxlan' ? 'flannel-vxlan' : 'flannel-host-gw'} (or auto) in winfleet-config`,
    );
  const warnings = [...alsoSeen(detected, 'flannel'), ...kubeProxyClash(detected)];
  if (wanted === 'vxlan') {
    const problems = windowsVxlanProblems(conf);
    if (problems.length > 0)
      return unsupported(
        `network.mode is ${configured}, and the cluster runs ${title}, which Windows nodes cannot join: ${problems.join('; ')}`,
        `Set "Backend": {"Type": "vxlan", "VNI": ${windowsVxlan.minVni}, "Port": ${windowsVxlan.port}} in net-conf.json of ${f.source} and restart the Flannel pods on every node (a new VNI re-creates flannel.<VNI> on each)`,
      );
  }
  const { vni, port } = wanted === 'vxlan' ? vxlanSettings(conf) : { vni: 0, port: 0 };
  const network: ResolvedNetwork = {
    mode,
    detected: title,
    flannel: {
      backend: wanted,
      vni,
      port,
      network: conf.network,
      netConf: f.netConf,
      source: f.source,
    },
  };
  return { ok: true, network, ...(warnings.length > 0 ? { warnings } : {}) };
}

/** Where a known CNI's Windows component writes its CNI config and binaries. */
interface CniDirs {
  conf?: string;
  bin?: string;
  from: string;
}

/** A generic DaemonSet's CNI directories, from its hostPath volumes. */
function hostPathDirs(hostPaths: Record<string, string>, where: string): CniDirs {
  const entries = Object.entries(hostPaths);
  const conf = entries.find(
    ([name, path]) => /net\.d[\\/]*$/i.test(path) || /^cni-?(net|conf|config)/i.test(name),
  )?.[1];
  const bin = entries.find(
    ([name, path]) => /cni[\\/]+bin[\\/]*$/i.test(path) || /^cni-?bin/i.test(name),
  )?.[1];
  return {
    ...(conf ? { conf } : {}),
    ...(bin ? { bin } : {}),
    from: `the hostPath volumes of ${where}`,
  };
}

/** Antrea's Install-WindowsCNI.ps1 copies to these (antrea-windows-with-ovs.yml). */
const antreaDirs: CniDirs = {
  conf: 'c:/etc/cni/net.d',
  bin: 'c:/opt/cni/bin',
  from: "Antrea's Install-WindowsCNI.ps1 (antrea-windows-with-ovs.yml)",
};

/** Calico's Windows CNI directories as detected. */
function calicoDirs(calico: NonNullable<DetectedNetwork['calico']>): CniDirs {
  return {
    ...(calico.cniConfDir ? { conf: calico.cniConfDir } : {}),
    ...(calico.cniBinDir ? { bin: calico.cniBinDir } : {}),
    from: calico.dirsFrom ?? 'Calico',
  };
}

/** The CNI an external network runs on Windows nodes: its name, DaemonSet and directories. */
interface ExternalCni {
  ok: true;
  cniTitle: string;
  cniId: DetectedCni['id'] | undefined;
  windowsDs: NonNullable<DetectedCni['windows']>;
  dirs: CniDirs | undefined;
}

/** `network.mode: external` (or `auto` picking it): the CNI's Windows DaemonSet held against winfleet's nodes. */
function resolveExternal(config: NetworkConfig, detected: DetectedNetwork): NetworkResolution {
  const external = config.external;
  const configured = config.mode;
  const warnings: string[] = [];
  const cni = detected.externalDaemonSet
    ? namedExternalCni(configured, detected, warnings)
    : detectedExternalCni(configured, detected, warnings);
  if (!cni.ok) return cni;
  const { cniTitle, cniId } = cni;
  const windowsRef = refOf(cni.windowsDs);
  const overlay = externalOverlay(configured, cniId, detected, warnings);
  if (typeof overlay === 'object') return overlay;
  const dirsRefusal = checkCniDirs(config, cni, windowsRef, warnings);
  if (dirsRefusal) return dirsRefusal;
  const kubeProxy = externalKubeProxy(external, cniId, detected, warnings);
  const networkName = external.networkName ?? externalNetworkName(cniId, detected);
  if (networkName === undefined && kubeProxy)
    warnings.push(
      `kube-proxy needs the name of the HNS network ${cniTitle} makes: set network.external.networkName`,
    );
  const detectedText = `${cniTitle} with Windows DaemonSet ${windowsRef}`;
  const network: ResolvedNetwork = {
    mode: 'external',
    detected: detectedText,
    external: {
      cni: cniTitle,
      cniConfDir: external.cniConfDir,
      cniBinDir: external.cniBinDir,
      kubeProxy,
      ...(networkName !== undefined ? { networkName } : {}),
      windowsDaemonSet: windowsRef,
      ...(overlay !== undefined ? { overlay } : {}),
    },
  };
  return { ok: true, network, ...(warnings.length > 0 ? { warnings } : {}) };
}

/** The CNI of the DaemonSet network.external.daemonSet names (which must exist and run on Windows). */
function namedExternalCni(
  configured: string,
  detected: DetectedNetwork,
  warnings: string[],
): ExternalCni | Refusal {
  const { ref, daemonSet } = detected.externalDaemonSet!;
  if (!daemonSet)
    return mismatch(
      `network.mode is ${configured} and network.external.daemonSet is ${ref}, but there is no DaemonSet ${ref}`,
      `Set network.external.daemonSet to the namespace/name of your CNI's Windows DaemonSet (kubectl get daemonsets -A), or deploy it`,
    );
  if (daemonSet.os === 'linux')
    return mismatch(
      `network.mode is ${configured}, but network.external.daemonSet ${ref} is placed on Linux nodes (kubernetes.io/os=linux): it is not a Windows component`,
      'Set network.external.daemonSet to the DaemonSet that runs on Windows nodes (nodeSelector kubernetes.io/os: windows, HostProcess pods)',
    );
  const signature = lookalike(daemonSet);
  // Its own hostPath volumes first: the detected Calico's may be another DaemonSet's.
  let dirs =
    signature?.id === 'antrea' ? antreaDirs : hostPathDirs(daemonSet.hostPaths, `DaemonSet ${ref}`);
  if (signature?.id === 'calico' && !dirs.conf && !dirs.bin && detected.calico?.dirsFrom)
    dirs = calicoDirs(detected.calico);
  if (!daemonSet.hostProcess)
    warnings.push(
      `DaemonSet ${ref} runs no HostProcess container: a CNI's Windows component needs one to set up the node's network`,
    );
  return {
    ok: true,
    cniId: signature?.id,
    cniTitle: signature ? signature.title : `the CNI of DaemonSet ${ref}`,
    windowsDs: daemonSet,
    dirs,
  };
}

/** The one Windows-capable CNI the cluster runs, with its Windows DaemonSet. */
function detectedExternalCni(
  configured: string,
  detected: DetectedNetwork,
  warnings: string[],
): ExternalCni | Refusal {
  const capable = detected.cnis.filter(
    (c) => cniSignatures.find((s) => s.id === c.id)?.windows && c.id !== 'ovn-kubernetes',
  );
  const ovn = detected.cnis.find((c) => c.id === 'ovn-kubernetes');
  if (ovn && capable.length === 0)
    return mismatch(
      `network.mode is ${configured}, but the cluster runs ${describeCni(ovn, detected)}, which Windows nodes join through its hybrid overlay`,
      'Set network.mode: ovn-hybrid (or auto) in winfleet-config',
    );
  if (capable.length === 0) {
    const without = detected.cnis[0];
    if (without) return noWindowsDataPlane(without, detected, configured);
    return mismatch(
      `network.mode is ${configured}, but no CNI with a Windows component runs: the cluster shows ${describeDetected(detected)}`,
      'Install a CNI with a Windows DaemonSet (Calico with the Tigera operator’s windowsDataplane: HNS, or Antrea’s antrea-agent-windows), or set network.external.daemonSet to the namespace/name of your CNI’s Windows DaemonSet',
    );
  }
  const withWindows = capable.filter((c) => c.windows);
  const chosen =
    withWindows.length === 1 ? withWindows[0]! : capable.length === 1 ? capable[0]! : undefined;
  if (!chosen)
    return mismatch(
      `network.mode is ${configured}, and the cluster shows more than one CNI: ${capable.map((c) => describeCni(c, detected)).join(', ')}`,
      'Set network.external.daemonSet to the namespace/name of the Windows DaemonSet of the CNI your pods use, or remove the other’s leftovers',
    );
  if (!chosen.windows) return missingWindowsDaemonSet(chosen, detected, configured);
  warnings.push(...alsoSeen(detected, chosen.id));
  let dirs: CniDirs;
  if (chosen.id === 'antrea') dirs = antreaDirs;
  else if (chosen.id === 'calico' && detected.calico?.dirsFrom) dirs = calicoDirs(detected.calico);
  else dirs = hostPathDirs(chosen.windows.hostPaths, `DaemonSet ${refOf(chosen.windows)}`);
  return { ok: true, cniId: chosen.id, cniTitle: chosen.title, windowsDs: chosen.windows, dirs };
}

/**
 * The data plane's encapsulation: whether it is an HNS Overlay network (undefined when not
 * known), or the refusal of an encapsulation Windows nodes cannot join.
 */
function externalOverlay(
  configured: string,
  cniId: DetectedCni['id'] | undefined,
  detected: DetectedNetwork,
  warnings: string[],
): boolean | undefined | Refusal {
  if (cniId === 'calico') {
    const calico = detected.calico;
    const encapsulation = calico?.encapsulation;
    if (encapsulation === 'VXLAN') return true;
    if (encapsulation === 'None') return false;
    if (encapsulation !== undefined)
      return unsupported(
        `network.mode is ${configured}, and Calico's IPv4 pool uses encapsulation ${encapsulation} (Installation default spec.calicoNetwork.ipPools), which Calico for Windows does not support (the Tigera operator refuses it with Windows nodes)`,
        'Use encapsulation VXLAN (or None with BGP) for the IPv4 pool in Installation default spec.calicoNetwork.ipPools',
      );
    warnings.push(
      `Calico's encapsulation is not known (${
        calico?.installation === 'unreadable'
          ? `Installation default could not be read: ${calico.installationWhy}`
          : calico?.installation === 'found'
            ? 'no IPv4 pool with an encapsulation in Installation default'
            : 'no Tigera operator Installation: Calico from manifests is not read'
      }): whether Windows Server 2019 needs KB4489899 for overlay cannot be judged`,
    );
    return undefined;
  }
  if (cniId === 'antrea') return false;
  if (cniId === 'flannel' && detected.flannel?.state === 'read' && detected.flannel.parse.ok) {
    const conf = detected.flannel.parse.conf;
    const overlay = conf.backend === 'vxlan';
    if (overlay) {
      const problems = windowsVxlanProblems(conf);
      if (problems.length > 0)
        return unsupported(
          `network.mode is ${configured}, and Flannel's net-conf.json of ${detected.flannel.source} is one Windows nodes cannot join: ${problems.join('; ')}`,
          `Set "Backend": {"Type": "vxlan", "VNI": ${windowsVxlan.minVni}, "Port": ${windowsVxlan.port}} in net-conf.json of ${detected.flannel.source} and restart the Flannel pods`,
        );
    }
    return overlay;
  }
  return undefined;
}

/** The CNI's directories against containerd's: a refusal when they differ, warnings when unknown. */
function checkCniDirs(
  config: NetworkConfig,
  cni: ExternalCni,
  windowsRef: string,
  warnings: string[],
): Refusal | undefined {
  const { cniTitle, cniId, dirs } = cni;
  for (const [which, field, installationField] of [
    ['conf', 'cniConfDir', 'cniConfigDir'],
    ['bin', 'cniBinDir', 'cniBinDir'],
  ] as const) {
    const theirs = dirs?.[which];
    const ours = config.external[field];
    const what = which === 'conf' ? 'CNI configuration' : 'CNI plugins';
    if (theirs === undefined) {
      warnings.push(
        `Cannot tell where ${windowsRef} puts its ${what} (${dirs?.from ?? 'nothing to read'}): make sure it is network.external.${field} (${ours}), where containerd looks`,
      );
      continue;
    }
    const normal = normalizeWindowsDir(theirs);
    if (!normal.ok) {
      warnings.push(`Cannot read where ${windowsRef} puts its ${what}: ${normal.why}`);
      continue;
    }
    if (!sameWindowsDir(theirs, ours))
      return mismatch(
        `network.mode is ${config.mode}, and ${cniTitle}'s Windows DaemonSet ${windowsRef} puts its ${what} in ${normal.path} (${dirs!.from}), but containerd on winfleet's nodes looks in ${ours} (network.external.${field})`,
        `Set network.external.${field}: "${normal.path.replaceAll('\\', '\\\\')}" in winfleet-config${cniId === 'calico' ? `, or Installation default spec.windowsNodes.${installationField} to ${ours}` : ''}`,
      );
  }
  return undefined;
}

/** kube-proxy: winfleet's own, unless the CNI brings one or replaces it; warns on clashes. */
function externalKubeProxy(
  external: NetworkConfig['external'],
  cniId: DetectedCni['id'] | undefined,
  detected: DetectedNetwork,
  warnings: string[],
): boolean {
  const cniReplacesProxy = cniId === 'antrea';
  let kubeProxy: boolean;
  if (external.kubeProxy === 'auto') kubeProxy = !detected.kubeProxyWindows && !cniReplacesProxy;
  else kubeProxy = external.kubeProxy === 'on';
  if (kubeProxy && detected.kubeProxyWindows)
    warnings.push(
      ...kubeProxyClash(detected).map((w) =>
        w.replace('or use network.mode external with ', 'or set '),
      ),
    );
  if (kubeProxy && cniReplacesProxy)
    warnings.push(
      'Antrea proxies Services on Windows itself (AntreaProxy proxyAll, no kube-proxy since Antrea v1.13) and network.external.kubeProxy is on: set it to auto or off',
    );
  if (!kubeProxy && !detected.kubeProxyWindows && !cniReplacesProxy)
    warnings.push(
      'network.external.kubeProxy is off and no kube-proxy DaemonSet runs on Windows nodes (kube-system/kube-proxy-windows): Services will not work from Windows pods unless the CNI proxies them',
    );
  return kubeProxy;
}

/** The HNS network the CNI makes, when known from its signature or Flannel's net-conf.json. */
function externalNetworkName(
  cniId: DetectedCni['id'] | undefined,
  detected: DetectedNetwork,
): string | undefined {
  const signature = cniSignatures.find((s) => s.id === cniId);
  const flannelName =
    cniId === 'flannel' && detected.flannel?.state === 'read' && detected.flannel.parse.ok
      ? detected.flannel.parse.conf.backend === 'vxlan'
        ? `flannel.${vxlanSettings(detected.flannel.parse.conf).vni}`
        : 'cbr0'
      : undefined;
  return signature?.networkName ?? flannelName;
}

function missingWindowsDaemonSet(
  cni: DetectedCni,
  detected: DetectedNetwork,
  configured: string,
): Refusal {
  const seen = `network.mode is ${configured}, and the cluster runs ${describeCni(cni, detected)}, but no Windows DaemonSet of it${cni.id === 'calico' ? ' (calico-node-windows in calico-system)' : cni.id === 'antrea' ? ' (kube-system/antrea-agent-windows)' : ''}: nothing would set up the pod network on Windows nodes`;
  const ignored = detected.ignored.length > 0 ? ` (${detected.ignored.join('; ')})` : '';
  if (cni.id === 'calico') {
    const calico = detected.calico;
    const how =
      calico?.installation === 'found'
        ? `In Installation default set spec.calicoNetwork.windowsDataplane: HNS (it is ${calico.windowsDataplane ?? 'unset, which means Disabled'}), spec.serviceCIDRs, and spec.windowsNodes.cniConfigDir/cniBinDir to containerd's directories (network.external.cniConfDir/cniBinDir); the Tigera operator then renders calico-node-windows`
        : 'Install Calico with the Tigera operator and set Installation default spec.calicoNetwork.windowsDataplane: HNS (with spec.serviceCIDRs and spec.windowsNodes); the operator then renders calico-node-windows';
    return mismatch(`${seen}${ignored}`, how);
  }
  if (cni.id === 'antrea')
    return mismatch(
      `${seen}${ignored}`,
      "Apply your Antrea release's antrea-windows-with-ovs.yml (or antrea-windows-containerd.yml): it creates DaemonSet kube-system/antrea-agent-windows; the nodes also need the Hyper-V role (Antrea docs/windows.md)",
    );
  return mismatch(
    `${seen}${ignored}`,
    cni.id === 'flannel'
      ? 'Set network.mode: flannel-vxlan or flannel-host-gw (or auto), in which winfleet runs flanneld itself'
      : 'Deploy its Windows DaemonSet, or set network.external.daemonSet to it',
  );
}

function resolveOvn(config: NetworkConfig, detected: DetectedNetwork): NetworkResolution {
  const configured = config.mode;
  const ovn = detected.cnis.find((c) => c.id === 'ovn-kubernetes');
  if (!ovn)
    return mismatch(
      `network.mode is ${configured}, but OVN-Kubernetes does not run in the cluster: it shows ${describeDetected(detected)}`,
      useMode(detected),
    );
  const hybrid = detected.ovn;
  if (hybrid?.hybridOverlay === false)
    return unsupported(
      `network.mode is ${configured}, and the cluster runs ${describeCni(ovn, detected)} without hybrid networking (${hybrid.where} not set): Windows nodes get no hybrid overlay subnet`,
      'Hybrid networking is set when the cluster is installed (Network.operator.openshift.io cluster: spec.defaultNetwork.ovnKubernetesConfig.hybridOverlayConfig.hybridClusterNetwork, in cluster-network-03-config.yml) and cannot be switched on after; Windows nodes need a cluster installed with it',
    );
  const warnings = [
    ...(hybrid?.hybridOverlay === undefined
      ? [
          `Cannot tell whether hybrid networking is configured (${hybrid?.where ?? 'not read'}): Windows nodes need spec.defaultNetwork.ovnKubernetesConfig.hybridOverlayConfig`,
        ]
      : []),
    ...alsoSeen(detected, 'ovn-kubernetes'),
    ...kubeProxyClash(detected),
  ];
  return {
    ok: true,
    network: {
      mode: 'ovn-hybrid',
      detected: `OVN-Kubernetes with hybrid overlay (${ovn.where})`,
      ovnHybrid: {
        hybridOverlayVni,
        ...(hybrid?.vxlanPort !== undefined ? { vxlanPort: hybrid.vxlanPort } : {}),
      },
    },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** CNIs known not to route each node's spec.podCIDR without encapsulation. */
function notRouted(cni: DetectedCni, detected: DetectedNetwork): boolean {
  switch (cni.id) {
    case 'flannel':
    case 'antrea':
    case 'ovn-kubernetes':
    case 'canal':
    case 'weave-net':
      return true;
    case 'calico':
      return (
        detected.calico?.encapsulation !== undefined && detected.calico.encapsulation !== 'None'
      );
    default:
      return false;
  }
}

function resolveRouted(detected: DetectedNetwork): NetworkResolution {
  const blocking = detected.cnis.filter((c) => notRouted(c, detected));
  if (blocking.length > 0)
    return mismatch(
      `network.mode is routed, but the cluster's pods use ${blocking.map((c) => describeCni(c, detected)).join(', ')}, which does not route each node's spec.podCIDR to that node: a routed Windows node would reach none of its pods`,
      `${useMode(detected, 'auto')}; routed is for networks that route every node's spec.podCIDR (a router, BGP or cloud routes)`,
    );
  const seen = describeDetected(detected);
  return {
    ok: true,
    network: { mode: 'routed', detected: seen },
    warnings: [
      `network.mode is routed, which winfleet cannot verify (the cluster shows ${seen}): make sure your network routes every node's spec.podCIDR to that node (a router, BGP or cloud routes), as winfleet's node puts its pods on its spec.podCIDR on an L2Bridge network`,
      ...kubeProxyClash(detected),
    ],
  };
}
